"""A pytest plugin (`-p pipeline.smoke.op_trace`) that records which of a kernel's ops
each test calls, for the "tested by the project's own tests only" tier.

Every test's call runs under torch.profiler (CPU activity only: the dispatcher's
record of every operator called, custom ones included, whatever the device or
torch.compile did); the ops of the namespace `PIPELINE_TRACE_NAMESPACE` seen in
a passing test, and in a failing one, are written as JSON to `PIPELINE_TRACE_OUT`
when the session ends.
"""

from __future__ import annotations

import json
import os

import pytest

_called: dict[str, set[str]] = {}  # test id -> ops of the namespace it called (this process only)
_outcome: dict[str, bool] = {}


def _namespace() -> str:
    return os.environ.get("PIPELINE_TRACE_NAMESPACE", "")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    namespace = _namespace()
    if not namespace:
        yield
        return
    import torch

    prefix = f"{namespace}::"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        yield
    try:
        names = {e.name for e in prof.events()}
    except Exception:  # a profiler that could not collect: the test simply counts for no op
        names = set()
    _called[item.nodeid] = {n[len(prefix):].split(".")[0] for n in names if n.startswith(prefix)}


def pytest_runtest_logreport(report):
    if report.when == "call":
        _outcome[report.nodeid] = report.passed
    elif report.failed:  # a failing setup or teardown fails the test
        _outcome[report.nodeid] = False


def pytest_sessionfinish(session):
    out = os.environ.get("PIPELINE_TRACE_OUT")
    if not out:
        return
    passed: dict[str, int] = {}
    failed: dict[str, int] = {}
    for test, ops in _called.items():
        into = passed if _outcome.get(test, False) else failed
        for op in ops:
            into[op] = into.get(op, 0) + 1
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"passed": passed, "failed": failed}, f)

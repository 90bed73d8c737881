"""A project's own pytest tests, run against the build being smoke-tested.

kernels-community projects ship tests marked `kernels_ci` that load the kernel
either with `import <python_name>` or with `kernels.get_kernel("org/name")`.
They run in a fresh process the pipeline supervises (a timeout, its own process
group), with the variant importable under the kernel's Python name (a link in a
temporary directory on PYTHONPATH), `LOCAL_KERNELS` pointing every repository id
the tests name (and `kernels-community/<name>`) at the build tree, the Hub
offline, and `<NAME>_BUILD_DIR` set (what our kernels' conftest reads). Where no
test is marked, every test under `tests/` runs.

A test that fails only because it calls an op the variant ships no kernel of for this
device (the dispatcher's "Could not run ... backend"), or because it needs a GPU this
host lacks ("Torch not compiled with CUDA enabled"), counts as "not available", not
failed: it tests another variant. A test module that cannot import a package the tests
need (einops, say) gives no verdict either; the report names the package. `op_trace` records which of the kernel's ops the passing tests called: an op no
contract covers but those tests call is "tested by the project's own tests
only", a weaker tier than a contract. They add to the contracts, never replace them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from pipeline.smoke.report import ProjectTests

MARKER = "kernels_ci"
TIMEOUT_S = 600
_GET_KERNEL = re.compile(r"""get_kernel\(\s*["']([\w.-]+/[\w.-]+)["']""")


def _test_files(project_root: Path) -> list[Path]:
    tests = Path(project_root) / "tests"
    if not tests.is_dir():
        return []
    return sorted(p for p in tests.rglob("test_*.py") if p.is_file())


def has_kernels_ci_tests(project_root: Path) -> bool:
    return any(MARKER in p.read_text(encoding="utf-8", errors="replace") for p in _test_files(project_root))


def repo_ids(project_root: Path, kernel_name: str) -> list[str]:
    """The Hub repositories the tests load with get_kernel, and kernels-community's own name."""
    found = {f"kernels-community/{kernel_name}"}
    for path in _test_files(project_root):
        found.update(_GET_KERNEL.findall(path.read_text(encoding="utf-8", errors="replace")))
    return sorted(found)


def _env(link_dir: Path, build_root: Path, python_name: str, ids: list[str], namespace: str, trace: Path) -> dict:
    env = dict(os.environ)
    import pipeline

    here = str(Path(pipeline.__file__).resolve().parent.parent)  # for -p pipeline.smoke.op_trace
    env["PYTHONPATH"] = os.pathsep.join([str(link_dir), here, *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the build tree stays as the build left it
    env[f"{python_name.upper()}_BUILD_DIR"] = str(build_root)
    root = str(Path(build_root).resolve())
    env["LOCAL_KERNELS"] = ":".join(f"{repo}={root}" for repo in ids)
    env["HF_HUB_OFFLINE"] = "1"  # nothing from the network: the build under test or nothing
    env["PIPELINE_TRACE_NAMESPACE"] = namespace
    env["PIPELINE_TRACE_OUT"] = str(trace)
    return env


# How the dispatcher says an op has no kernel for a device: such a failing test tests an op
# this variant does not ship for the device ("not available"), not a wrong kernel.
_NO_KERNEL = re.compile(r"Could not run '(?:[\w.]+)::(\w+)' with arguments from the '(\w+)' backend")
# A test that needs a GPU this host does not have (kernels-community's kernels_ci tests of an op
# often pin "cuda:0"): it tests another variant, not this one.
_NO_GPU = re.compile(r"Torch not compiled with CUDA enabled|No CUDA GPUs are available|Found no NVIDIA driver")
# A test module that cannot be imported for want of a package the tests need (not one the
# kernel needs at load time: validate checks those): no verdict either way.
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def _counts(junit: Path, unavailable: tuple[str, ...] = (), package: str = "") -> tuple[int, int, int, int, tuple]:
    """(ran, failed, skipped, failed only by calling an op the variant does not ship here,
    modules the tests need and this environment lacks)."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    absent, missing = 0, []
    for case in root.iter("testcase"):
        for bad in list(case.findall("failure")) + list(case.findall("error")):
            text = (bad.get("message") or "") + "\n" + (bad.text or "")
            ops = {m.group(1) for m in _NO_KERNEL.finditer(text)}
            lacking = [m.group(1) for m in _MISSING.finditer(text)
                       if m.group(1).split(".")[0] not in (package, "_ops") and not m.group(1).startswith("_")]
            if lacking:
                missing.extend(lacking)
                absent += 1
                break
            if (ops and ops <= set(unavailable)) or (not ops and _NO_GPU.search(text)):
                absent += 1
                break
    return total - skipped, failed - absent, skipped, absent, tuple(dict.fromkeys(missing))


def _traced(trace: Path) -> tuple[str, ...]:
    """Ops that passing tests called and no failing test did."""
    try:
        data = json.loads(trace.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    failed = set(data.get("failed", {}))
    return tuple(sorted(op for op in data.get("passed", {}) if op not in failed))


def _run(cmd: list[str], cwd: str, env: dict, timeout_s: float) -> tuple[int | None, str]:
    """(return code or None on timeout, output); the tests' whole process group is killed on a timeout."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out or ""


def run_project_tests(project_root: Path, variant_dir: Path, build_root: Path, python_name: str, *,
                      namespace: str = "", kernel_name: str | None = None, unavailable: tuple[str, ...] = (),
                      timeout_s: float = TIMEOUT_S) -> ProjectTests | None:
    """Run `pytest -m kernels_ci tests/` (every test under tests/ where none is marked);
    None when the project has no tests."""
    project_root = Path(project_root).resolve()  # pytest runs in a temporary directory
    files = _test_files(project_root)
    if not files:
        return None
    marked = has_kernels_ci_tests(project_root)
    with tempfile.TemporaryDirectory(prefix="pipeline-project-tests-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / python_name).symlink_to(Path(variant_dir).resolve(), target_is_directory=True)
        junit, trace = tmp_path / "junit.xml", tmp_path / "ops.json"
        tests_dir = Path(project_root) / "tests"
        select = ["-m", MARKER] if marked else []
        cmd = [sys.executable, "-m", "pytest", "-q", *select, "-p", "no:cacheprovider", "-p", "pipeline.smoke.op_trace",
               "-o", "addopts=", "--rootdir", str(project_root), f"--junitxml={junit}", str(tests_dir)]
        shown = f"python -m pytest {' '.join(select) + ' ' if select else ''}{tests_dir}"
        env = _env(tmp_path, build_root, python_name, repo_ids(project_root, kernel_name or python_name),
                   namespace, trace)
        code, out = _run(cmd, tmp, env, timeout_s)
        if code is None:
            return ProjectTests(shown, 0, 1, 0, output=f"timed out after {timeout_s:g} s")
        if code == 5 or not junit.is_file():  # 5: nothing collected
            tail = "\n".join(out.strip().splitlines()[-15:])
            if code == 5:
                return None
            crashed = f"the tests' process ended with code {code}" + (" (a signal)" if code < 0 else "")
            return ProjectTests(shown, 0, 1, 0, output=f"{crashed}\n{tail}")
        ran, failed, skipped, absent, missing = _counts(junit, unavailable, python_name)
        tail = "" if code == 0 or not failed else "\n".join(re.sub(r"\s+$", "", out).splitlines()[-20:])
        return ProjectTests(shown, max(ran - absent, 0), failed, skipped, output=tail, ops=_traced(trace),
                            unavailable=absent, missing=missing)

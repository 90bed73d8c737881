"""Importing a kernel project's case file (tests/smoke_cases.py, benchmarks/bench_cases.py).

The cases live with the kernel, not in the package, so they are imported from
their path under a name unique to that path; any failure becomes the calling
stage's error, pointing at the file.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from pipeline.errors import PipelineError


def import_case_function(path: Path, function: str, *, error: type[PipelineError], code: str):
    """Import `path` and return its `function` (not called)."""
    path = Path(path)
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"_pipeline_{function}_{digest}", path)
    if spec is None or spec.loader is None:
        raise error("cannot import the case file", path=str(path), code=code)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        return getattr(module, function)
    except Exception as exc:
        raise error(f"the case file failed: {type(exc).__name__}: {exc}", path=str(path), code=code) from None


def call_cases(make, path: Path, *, error: type[PipelineError], code: str, arguments: dict | None = None) -> list:
    """`list(make(**arguments))`, a failure being the stage's error pointing at `path`."""
    try:
        return list(make(**(arguments or {})))
    except Exception as exc:
        raise error(f"the case file failed: {type(exc).__name__}: {exc}", path=str(path), code=code) from None


def load_case_list(path: Path, function: str, *, error: type[PipelineError], code: str) -> list:
    """Import `path` and return `list(module.<function>())`."""
    return call_cases(import_case_function(path, function, error=error, code=code), path, error=error, code=code)

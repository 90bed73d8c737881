"""Shared by test_smoke.py and test_bench.py (no tests here): CPU builds of
rmsnorm, each made once per test process, and patched copies with planted bugs."""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RMSNORM = REPO / "kernels-src" / "rmsnorm"

# Bugs an agent-written kernel typically has, planted in the CPU source.
PLANTS = {
    # scale_row's masked tail: the last partial vector keeps un-normalised x.
    "skip-tail": (r"  if \(d < n\) \{\n    const int64_t rest = n - d;", "  if (false) {\n    const int64_t rest = n - d;"),
    # the weight never multiplies (main loop and tail).
    "ignore-weight": (r" \* vinv \* fVec::loadu\(w \+ d(, rest)?\)", " * vinv"),
}

_TMP = Path(tempfile.mkdtemp(prefix="pipeline-rmsnorm-builds-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def build(project_root: Path, out: Path) -> Path:
    from pipeline.build import build_project
    from pipeline.project import load_project

    result = build_project(load_project(project_root), out, backend="local")
    if not result.variants:
        raise AssertionError("the build produced no variant")
    return out


@functools.lru_cache(maxsize=None)
def good_build() -> Path:
    return build(RMSNORM, _TMP / "good" / "build")


@functools.lru_cache(maxsize=None)
def planted_build(name: str) -> Path:
    pattern, replacement = PLANTS[name]
    root = _TMP / name / "rmsnorm"
    shutil.copytree(RMSNORM, root, ignore=shutil.ignore_patterns("build", "__pycache__", "results"))
    src = root / "rmsnorm_cpu" / "rmsnorm_cpu.cpp"
    text, n = re.subn(pattern, replacement, src.read_text())
    if n < 1:
        raise AssertionError(f"planting {name}: pattern not found in {src.name}; update PLANTS")
    src.write_text(text)
    return build(root, root / "build")

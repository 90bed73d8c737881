"""Builds shared by the whole test run (no tests here): one per kernel source and backend.

A project is copied to `<root>/<name>-<backend>-<sha256 of its files>/<name>` and built
into `build/` beside that copy (not inside it: like a build of the workspace's kernel
elsewhere, the CLI finds its project by name in the workspace), under a file lock: the first pytest-xdist worker that asks builds it,
the others wait and then find a no-op rebuild. The copy's path depends only on its
content, so the local builder's object cache (kept in `<root>/cache`, whatever a test
sets PIPELINE_CACHE_DIR to) makes the next run's build a no-op too; a changed source gets
a new directory.

`<root>` is $PIPELINE_TEST_BUILDS, else `<the build cache>/test-builds`
(~/.cache/kernel-pipeline/test-builds by default), fixed when this module is imported.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
from pathlib import Path
from typing import Iterator


def _builds_root() -> Path:
    if os.environ.get("PIPELINE_TEST_BUILDS"):
        return Path(os.environ["PIPELINE_TEST_BUILDS"])
    from pipeline.build.cache import cache_root

    return cache_root() / "test-builds"


ROOT = _builds_root().resolve()


def source_hash(root: Path) -> str:
    """sha256 of the relative path and bytes of every file the builder counts as the project's
    (pipeline.build.source.project_files: no build output or caches)."""
    from pipeline.build.source import project_files

    h = hashlib.sha256()
    for rel in project_files(root):
        h.update(rel.encode() + b"\0" + hashlib.sha256(Path(root, rel).read_bytes()).digest())
    return h.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _slot(project_root: Path, backend: str) -> tuple[Path, Path]:
    """(the copy's directory, its lock file) for this source and backend. A copy is its own slot:
    it is not hashed again (a build may leave files beside build/)."""
    project_root = Path(project_root).resolve()
    if project_root.parent.parent == ROOT.resolve():
        key = project_root.parent.name
    else:
        key = f"{project_root.name}-{backend}-{source_hash(project_root)[:16]}"
    return ROOT / key / project_root.name, ROOT / f"{key}.lock"


def _copy_in(project_root: Path, copy: Path) -> None:
    """The project's files (as source_hash counts them) at `copy`, written whole or not at all."""
    from pipeline.build.source import project_files

    if copy.is_dir():  # this run's or an earlier one's: the same bytes
        return
    staging = copy.parent / f".{copy.name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    for rel in project_files(project_root):
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(project_root, rel), staging / rel)
    staging.rename(copy)


@functools.lru_cache(maxsize=None)
def shared_source(project_root: Path, backend: str = "local") -> Path:
    """The content-keyed copy of `project_root` that `shared_build` builds."""
    copy, lock = _slot(project_root, backend)
    with _locked(lock):
        _copy_in(Path(project_root), copy)
    return copy


@functools.lru_cache(maxsize=None)
def shared_build(project_root: Path, backend: str = "local") -> Path:
    """The build directory of `project_root`'s host variant, built once for the run (and
    kept for the next) whichever worker asks first. Callers must not write into it."""
    from pipeline.build import build_project
    from pipeline.project import load_project

    copy = shared_source(Path(project_root), backend)
    _, lock = _slot(copy, backend)
    with _locked(lock), _env(PIPELINE_CACHE_DIR=str(ROOT / "cache"), MAX_JOBS=os.environ.get("MAX_JOBS", "1")):
        result = build_project(load_project(copy), copy.parent / "build", backend=backend)
    if not result.variants:
        raise AssertionError(f"the build of {project_root} produced no variant")
    return copy.parent / "build"

"""Markers: gpu, nix, cuda_build, slow (see pyproject.toml). Tests whose machine
cannot run them are skipped with the reason, so `.ci/run` can say what it skipped."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import sys

import pytest

# Shared helpers (hubtesting, values, world_guard, *_support) live in tests/, beside this file;
# the test files live in tests/unit/ and tests/integration/.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import world_guard  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
UNIT_DIR = Path(__file__).resolve().parent / "unit"


FIXTURES_DIR = Path(__file__).resolve().parent / "fixtures"


def pytest_ignore_collect(collection_path, config):
    """tests/fixtures/ holds kernel projects whose own tests need their build importable:
    smoke runs them against a build (with the project as rootdir), this suite never does."""
    if config.rootpath == REPO_ROOT and (collection_path == FIXTURES_DIR or FIXTURES_DIR in collection_path.parents):
        return True
    return None


@pytest.fixture(autouse=True)
def _unit_tests_cannot_touch_the_world(request, monkeypatch):
    """tests/unit/: no process, no network, no build. PIPELINE_GUARD_ALL=1 guards every test:
    a test of tests/integration/ that passes under it belongs in tests/unit/."""
    path = Path(str(request.node.fspath)).resolve()
    if UNIT_DIR in path.parents or os.environ.get("PIPELINE_GUARD_ALL"):
        world_guard.guard(monkeypatch)


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def _cuda_build_available() -> tuple[bool, str]:
    try:
        import torch
    except Exception:
        return False, "torch is not installed"
    if torch.version.cuda is None:
        return False, f"torch {torch.__version__} is not a CUDA build"
    cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    if not (shutil.which("nvcc") or Path(cuda_home, "bin", "nvcc").exists()):
        return False, "nvcc not found (set CUDA_HOME)"
    return True, ""


# Files whose builds and publishes take minutes, handed to the workers first so that the short
# tests fill in at the end. With addopts' `--dist loadgroup --no-loadscope-reorder` and no
# xdist_group marks, each test goes to the next free worker in this order (a file's module
# fixtures are made on each worker that runs its tests; builds are shared by tests/shared_builds.py).
FIRST = ("test_build_cuda.py", "test_publish_rmsnorm.py", "test_smoke.py", "test_hub_compat.py",
         "test_model_check.py", "test_init.py", "test_kernels_cpu.py", "test_contracts_kernels.py",
         "test_contracts_kc.py", "test_publish.py", "test_build.py", "test_migrate.py", "test_noarch.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: collection order within
    gpu = _cuda_available()
    nix = shutil.which("nix") is not None
    cuda_build, cuda_reason = _cuda_build_available()
    for item in items:
        if "gpu" in item.keywords and not gpu:
            item.add_marker(pytest.mark.skip(reason="gpu: no CUDA device on this machine"))
        if "nix" in item.keywords and not nix:
            item.add_marker(pytest.mark.skip(reason="nix: nix is not on PATH"))
        if "cuda_build" in item.keywords and not cuda_build:
            # cuda_build(own_interpreter=True): the test runs the build with a
            # separate CUDA-torch interpreter (PIPELINE_CUDA_PYTHON) and skips itself.
            marker = item.get_closest_marker("cuda_build")
            if not (marker is not None and marker.kwargs.get("own_interpreter")):
                item.add_marker(pytest.mark.skip(reason=f"cuda_build: {cuda_reason}"))


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT

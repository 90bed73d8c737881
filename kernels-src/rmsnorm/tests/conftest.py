"""Tests run against a built variant: RMSNORM_BUILD_DIR (a build tree holding
variant directories), else this project's build/ directory."""

import os
from pathlib import Path

import pytest
import torch

PROJECT = Path(__file__).resolve().parents[1]


def pytest_configure(config):
    config.addinivalue_line("markers", "kernels_ci: quick kernel tests run against a built variant")


@pytest.fixture(scope="session")
def build_dir() -> Path:
    path = Path(os.environ.get("RMSNORM_BUILD_DIR", PROJECT / "build"))
    if not path.is_dir():
        pytest.skip(f"no build at {path}: run `python -m pipeline build {PROJECT}` or set RMSNORM_BUILD_DIR")
    return path


@pytest.fixture(scope="session")
def rmsnorm(build_dir):
    kernels = pytest.importorskip("kernels")
    return kernels.get_local_kernel(build_dir)


@pytest.fixture(scope="session")
def device(rmsnorm) -> torch.device:
    cuda = "_cuda_" in rmsnorm.ops.__name__ or rmsnorm.ops.__name__.endswith("_cuda")
    return torch.device("cuda" if cuda and torch.cuda.is_available() else "cpu")

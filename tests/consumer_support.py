"""Shared by the consumer tests: a committed copy of kernels-src/rmsnorm,
`pipeline` run by a given interpreter, and consumer venvs that skip the test
(with the reason) only when the package index cannot be reached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.consumers import ConsumerEnv, ConsumerSpec, ensure_env
from pipeline.errors import VerifyError
from shared_builds import shared_build

REPO = Path(__file__).resolve().parents[1]
RMSNORM = REPO / "kernels-src" / "rmsnorm"


def rmsnorm_copy(tmp_path: Path) -> Path:
    """kernels-src/rmsnorm in a fresh git repository (a clean tree: ids without _dirty)."""
    kernel = tmp_path / "rmsnorm"
    shutil.copytree(RMSNORM, kernel, ignore=shutil.ignore_patterns("build", "result", "__pycache__", "*.pyc"))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "rmsnorm"]):
        subprocess.run(["git", *args], cwd=kernel, check=True, capture_output=True, env=env)
    return kernel


def rmsnorm_build() -> Path:
    """kernels-src/rmsnorm's host variant built once for the run (tests/shared_builds.py), for
    `publish --build-dir` in tests of what follows the build; test_publish_rmsnorm.py builds
    it through publish, with a fresh build cache."""
    return shared_build(RMSNORM)


def consumer_env(spec: ConsumerSpec) -> ConsumerEnv:
    try:
        return ensure_env(spec)
    except VerifyError as exc:
        if exc.code == "consumer-index-unreachable":
            pytest.skip(f"the package index is unreachable, so {spec.label} cannot be installed: {exc.message}")
        raise


def pipeline_env(hub, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_ENDPOINT", "HF_TOKEN", "PYTHONPATH")}
    env.update(HF_TOKEN=hub.admin_token, PYTHONPATH=str(REPO), PIPELINE_BUILD_BACKEND="local", **extra)
    return env


def run_pipeline(python, *args: str, env: dict, timeout: int = 1500) -> subprocess.CompletedProcess:
    return subprocess.run([str(python), "-m", "pipeline", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout)


def json_of(proc: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"exit {proc.returncode}, no JSON: {proc.stdout[-1500:]}\n{proc.stderr[-3000:]}") from None

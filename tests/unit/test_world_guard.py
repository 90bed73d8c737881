"""The guard of tests/unit/: a unit test that starts a process, opens a connection or runs a build fails at once."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

import pipeline.build
from pipeline.project import load_project
from world_guard import WorldTouched


def test_a_process_is_refused():
    with pytest.raises(WorldTouched, match="start a process"):
        subprocess.run(["true"])


def test_the_network_is_refused():
    with socket.socket() as s, pytest.raises(WorldTouched, match="network"):
        s.connect(("127.0.0.1", 9))


def test_a_build_is_refused(tmp_path):
    project = load_project(Path(__file__).resolve().parents[1] / "fixtures" / "tiny-add")
    with pytest.raises(WorldTouched, match="start a process"):
        pipeline.build.build_project(project, tmp_path / "out", backend="local")
    assert not (tmp_path / "out").exists()

"""The guard of tests/unit/: a unit test that starts a process, opens a connection or runs a build fails at once."""

from __future__ import annotations

import socket
import subprocess

import pytest

import pipeline.build
from world_guard import WorldTouched


def test_a_process_is_refused():
    with pytest.raises(WorldTouched, match="start a process"):
        subprocess.run(["true"])


def test_the_network_is_refused():
    with socket.socket() as s, pytest.raises(WorldTouched, match="network"):
        s.connect(("127.0.0.1", 9))


def test_a_build_is_refused(tmp_path):
    with pytest.raises(WorldTouched, match="build"):
        pipeline.build.build_project(None, tmp_path)

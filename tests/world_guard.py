"""The guard that keeps unit tests from touching the world (cibuildwheel's
`mock_protection`, in our terms): inside a unit test, starting a process
(and so any build), or opening a network connection, raises at once."""

from __future__ import annotations

import socket
import subprocess

import pytest


class WorldTouched(RuntimeError):
    """A unit test reached for a process, the network or a build."""


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise WorldTouched(f"unit tests cannot {what}: move this test to tests/integration/")

    return refuse


def guard(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("start a process"))
    monkeypatch.setattr(socket.socket, "connect", _refuse("open a network connection"))
    monkeypatch.setattr(socket.socket, "connect_ex", _refuse("open a network connection"))
    monkeypatch.setattr(socket.socket, "bind", _refuse("listen on a socket"))
    monkeypatch.setattr("os.system", _refuse("run a shell command"))
    monkeypatch.setattr("os.execv", _refuse("exec a program"))
    # A build runs compilers (ninja, g++, nvcc, nix) as processes, so the first guard stops it.
    # (Patching pipeline.build.build_project instead would leak: a module first imported under
    # the guard keeps the patched name.)

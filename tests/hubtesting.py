"""Helpers to run the hub as a separate process (tests, benchmarks): the real
CLI, `python -m pipeline hub serve`, so a test can kill it with SIGKILL.

A plain module (tests/ is on sys.path under pytest): `from hubtesting import ServerProcess`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def subprocess_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child python that imports `pipeline` from this checkout."""
    dropped = ("HF_TOKEN", "HF_ENDPOINT", "HUGGING_FACE_HUB_TOKEN", "PIPELINE_HUB_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


class ServerProcess:
    """`python -m pipeline hub serve --port 0` in a child process."""

    def __init__(self, root: Path, *, token: str, trust: tuple[str, ...] = (), log_level: str = "info") -> None:
        self.root = Path(root)
        self.token = token
        self.trust = trust
        self.log_level = log_level
        self.proc: subprocess.Popen | None = None
        self.endpoint = ""
        self.log_lines: list[str] = []

    def start(self, timeout: float = 60) -> ServerProcess:
        cmd = [
            sys.executable,
            "-m",
            "pipeline",
            "hub",
            "serve",
            "--root",
            str(self.root),
            "--port",
            "0",
            "--log-level",
            self.log_level,
        ]
        for ns in self.trust:
            cmd += ["--trust", ns]
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env({"PIPELINE_HUB_TOKEN": self.token}),  # never on the command line
            cwd=REPO_ROOT,
        )
        # Drain stderr on a thread: a full pipe would block the server's logging.
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("HF_ENDPOINT="):
                self.endpoint = line.strip().split("=", 1)[1]
                return self
        self.kill()
        raise RuntimeError("hub server did not start:\n" + "\n".join(self.log_lines[-30:]))

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log_lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def peak_rss_kib(self) -> int:
        """VmHWM: the most resident memory the server process has had."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def kill(self) -> None:
        """SIGKILL: no cleanup runs, as in a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

"""The pipeline's side of a worker process that runs untrusted kernel code.

Kernel code may segfault, abort, loop forever or leave the GPU in a sticky
error state; none of that may take the pipeline down. So smoke and bench hand
their cases to `python -m pipeline.smoke.worker` and talk to it over a pipe
(pickled tuples, never the worker's stdout: a kernel may print). Every receive
has a deadline; a worker that dies or misses one is killed with its whole
process group and reported as a `WorkerGone` naming the signal, the exit code
or the timeout, with the last lines it wrote to stderr. The caller records the
case that was running and starts a fresh worker for the rest.

Nothing of the pipeline's state lives in the worker: it gets a spec, answers
requests and keeps only what it needs to answer them (the loaded kernel, its
cases).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pipeline
from pipeline.errors import PipelineError

STDERR_LINES = 4
# Lines a dying process writes that say why (faulthandler, libstdc++, glibc, CUDA).
_TELLING = ("Fatal Python error", "terminate called", "what():", "Aborted", "Segmentation fault", "CUDA error",
            "illegal", "Assertion", "assert", "double free", "corrupted", "stack smashing", "Killed")


@dataclass(frozen=True)
class Failure:
    """A PipelineError (or another exception) that ended a request, as plain data (defined here,
    not in the worker's __main__, so that both sides unpickle it)."""

    message: str
    code: str = ""
    path: str | None = None
    hint: str | None = None

    @classmethod
    def of(cls, exc: BaseException) -> "Failure":
        if isinstance(exc, PipelineError):
            return cls(exc.message, exc.code, exc.path, exc.hint)
        text = f"{type(exc).__name__}: {exc}".strip()
        return cls(text.splitlines()[0][:500] if text else type(exc).__name__)


@dataclass(frozen=True)
class Exit:
    """How a worker ended without answering."""

    kind: str  # "crash" (a signal), "exit" (it exited), "timeout" (it missed a deadline)
    detail: str  # "SIGSEGV (signal 11)", "exit code 3", "no answer within 60 s"
    stderr: str = ""  # the telling lines of what it wrote to stderr, if any

    def describe(self) -> str:
        return self.detail + (f"; it wrote: {self.stderr}" if self.stderr else "")


class WorkerGone(Exception):
    def __init__(self, exit: Exit):
        super().__init__(exit.describe())
        self.exit = exit


def signal_name(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "signal"
        return f"{name} (signal {-returncode})"
    if returncode > 128:  # a shell's way of reporting a signal
        return signal_name(128 - returncode)
    return f"exit code {returncode}"


def _worker_env(extra: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ)
    # The worker imports this very pipeline package, wherever it was imported from.
    root = str(Path(pipeline.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # importing a variant must not write into the build tree
    env["PYTHONFAULTHANDLER"] = "1"  # a segfault prints the Python stack: the telling line
    env.update(extra or {})
    return env


class Worker:
    """One worker process. `request` sends a message; `receive` waits for the next one."""

    def __init__(self, *, env: dict[str, str] | None = None, python: str | None = None):
        self._env = env
        self._python = python or sys.executable
        self._proc: subprocess.Popen | None = None
        self._conn: Connection | None = None
        self._log = None
        self.started = 0  # how many processes this worker has started (1 + restarts)

    def start(self) -> None:
        import socket

        parent, child = socket.socketpair()
        self._log = tempfile.TemporaryFile(mode="w+b", prefix="pipeline-worker-")
        try:
            self._proc = subprocess.Popen(
                [self._python, "-m", "pipeline.smoke.worker", str(child.fileno())], pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, env=_worker_env(self._env),
                start_new_session=True)  # its own process group: a kill takes whatever it started
        finally:
            child.close()
        self._conn = Connection(parent.detach())
        self.started += 1

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def request(self, verb: str, payload: Any = None) -> None:
        if not self.alive:
            self.start()
        try:
            self._conn.send((verb, payload))
        except (BrokenPipeError, ConnectionResetError, OSError):
            raise WorkerGone(self._ended()) from None

    def receive(self, deadline_s: float) -> tuple:
        """The worker's next message, or WorkerGone when it dies or `deadline_s` passes first."""
        end = time.monotonic() + deadline_s
        while True:
            left = end - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerGone(Exit("timeout", f"no answer within {deadline_s:g} s", self._stderr_tail()))
            try:
                if self._conn.poll(min(left, 0.25)):
                    return self._conn.recv()
            except (EOFError, ConnectionResetError, OSError):
                raise WorkerGone(self._ended()) from None
            if self._proc.poll() is not None and not self._conn.poll(0):
                raise WorkerGone(self._ended())

    def _ended(self) -> Exit:
        try:
            code = self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # the pipe closed but the process lingers
            self.kill()
            code = self._proc.returncode
        tail = self._stderr_tail()
        self._close()
        return Exit("crash" if code is not None and (code < 0 or code > 128) else "exit",
                    signal_name(code if code is not None else -9), tail)

    def _stderr_tail(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.flush()
            self._log.seek(0, os.SEEK_END)
            size = self._log.tell()
            self._log.seek(max(0, size - 8192))
            lines = self._log.read().decode("utf-8", "replace").splitlines()
        except (OSError, ValueError):
            return ""
        telling = [ln.strip() for ln in lines if any(t in ln for t in _TELLING)]
        return " | ".join(dict.fromkeys(telling[:STDERR_LINES]))[:400]

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self._proc.kill()
            self._proc.wait()
        self._close(keep_log=True)

    def _close(self, keep_log: bool = False) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._log is not None and not keep_log:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        """Ask the worker to finish; kill it if it does not within a few seconds."""
        if self.alive:
            try:
                self._conn.send(("stop", None))
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, AttributeError):
                pass
        self.kill()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

"""Headless Chromium for the page tests, driven over the DevTools protocol on a
pipe (`--remote-debugging-pipe`: commands on the child's fd 3, answers on fd 4,
each a JSON message ended by NUL). No port, no websocket library, no driver.

    with Browser.start(tmp_path / "profile") as browser:
        browser.goto(url)
        browser.evaluate("document.title"), browser.screenshot(path)

Chromium runs with the flags it needs on a closed network as root (no sandbox,
no GPU, no first-run, no background networking) and a new, empty profile.
`events` keeps what the page reported: console calls, uncaught exceptions,
JavaScript dialogs, log entries (Content-Security-Policy refusals among them).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)
WIDTH = 1280
PAGE_EVENTS = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Page.javascriptDialogOpening", "Log.entryAdded")


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


def _high_fd(fd: int) -> int:
    """`fd` moved to 10 or above, so that bash's `3<&N 4>&M` cannot overwrite one with the other."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    def __init__(self, proc: subprocess.Popen, to_browser: int, from_browser: int, stderr_path: Path) -> None:
        self.proc = proc
        self._out = to_browser
        self._in = from_browser
        self._buffer = b""
        self._next_id = 0
        self._session = ""
        self.stderr_path = stderr_path
        self.events: list[dict] = []

    @classmethod
    def start(cls, profile: Path, *, timeout: float = 60) -> Browser:
        exe = chromium_path()
        if exe is None:
            raise BrowserError("chromium is not installed")
        profile.mkdir(parents=True, exist_ok=False)  # a new, empty profile every time
        cmd_r, cmd_w = os.pipe()  # we write commands, chromium reads them on fd 3
        ans_r, ans_w = os.pipe()  # chromium answers on fd 4
        cmd_r, ans_w = _high_fd(cmd_r), _high_fd(ans_w)
        stderr_path = profile.parent / f"{profile.name}.stderr.log"
        args = [exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WIDTH},900", "about:blank"]
        with open(stderr_path, "wb") as err:
            proc = subprocess.Popen(
                ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{cmd_r} 4>&{ans_w} {cmd_r}<&- {ans_w}>&-', *args],
                pass_fds=(cmd_r, ans_w), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
            )
        os.close(cmd_r)
        os.close(ans_w)
        browser = cls(proc, cmd_w, ans_r, stderr_path)
        try:
            browser._attach(timeout)
        except BaseException:
            browser.close()
            raise
        return browser

    def _attach(self, timeout: float) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, timeout=timeout, session=False)
        attached = self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                             session=False)
        self._session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    # -- the protocol ----------------------------------------------------------------
    def _send(self, message: dict) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._out, data):]

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time (see " + str(self.stderr_path) + ")")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    raise BrowserError("chromium closed the DevTools pipe (see " + str(self.stderr_path) + ")")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def _record(self, message: dict) -> None:
        if message.get("method") in PAGE_EVENTS:
            self.events.append(message)

    def call(self, method: str, params: dict | None = None, *, timeout: float = 30, session: bool = True) -> dict:
        self._next_id += 1
        message: dict = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        self._send(message)
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._record(answer)

    def wait_for(self, event: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            self._record(message)
            if message.get("method") == event:
                return message.get("params", {})

    # -- what the tests use --------------------------------------------------------------
    def goto(self, url: str, timeout: float = 30) -> None:
        """Load `url` and wait for its load event (images included)."""
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"{url}: {result['errorText']}")
        self.wait_for("Page.loadEventFired", timeout)

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (DevTools runs it even
        where the page's Content-Security-Policy allows no script)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page (not only the window) as a PNG."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)") or 900)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": min(max(height, 600), 8000), "deviceScaleFactor": 1, "mobile": False})
        try:
            data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        finally:
            self.call("Emulation.clearDeviceMetricsOverride")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", session=False, timeout=5)
                except (BrowserError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        finally:
            for fd in (self._out, self._in):
                try:
                    os.close(fd)
                except OSError:
                    pass

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""Running the hub: one process per root (an exclusive lock on the root), crash
recovery at start, then uvicorn serving the Starlette app.

`serve()` blocks (the CLI); `EmbeddedHub` runs the same server on a background
thread (tests, `publish`).
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from pipeline.errors import HubError
from pipeline.hub.app import build_app
from pipeline.hub.auth import AuthStore
from pipeline.hub.context import Hub
from pipeline.hub.recovery import recover
from pipeline.hub.registry import Storage
from pipeline.hub.routes import routes
from pipeline.hub.xet_store import XetStore

log = logging.getLogger("pipeline.hub")


class RootLock:
    """An exclusive flock on `<root>/server.lock`: two servers on one root would
    each think they may clean up the other's unfinished work at start."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / "server.lock"
        self._file = None

    def acquire(self) -> RootLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "?"
            f.close()
            raise HubError(
                f"another hub server (pid {holder}) is already serving {self.path.parent}",
                hint="stop it, or give this one another --root",
                code="hub-root-busy",
            ) from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        self._file = f
        return self

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


@dataclass
class Prepared:
    hub: Hub
    lock: RootLock
    admin_token: str  # "" when an admin token exists already and none was given
    admin_token_created: bool
    recovered: list[str]


def prepare(root: Path, *, admin_token: str | None = None, trusted_namespaces=()) -> Prepared:
    """Lock the root, repair what a crash left, make sure an admin token exists."""
    root = Path(root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)  # repositories, tokens and content are no other local user's business
    lock = RootLock(root).acquire()
    try:
        storage = Storage(root)
        auth = AuthStore(root)
        xet = XetStore(root)
        recovered = recover(storage, xet)
        for note in recovered:
            log.warning("recovery: %s", note)
        token, created = auth.ensure_admin(admin_token)
        for ns in trusted_namespaces:
            auth.set_trusted(ns, True)
    except BaseException:
        lock.release()
        raise
    return Prepared(Hub(storage, auth, xet), lock, token, created, recovered)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say so, and without it
    # every reply on a kept-alive connection waits ~40 ms (Nagle against the client's delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HubError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            hint="pick another --port (0 = any free port)",
            code="hub-bind",
        ) from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def endpoint_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def uvicorn_server(hub: Hub) -> uvicorn.Server:
    config = uvicorn.Config(
        build_app(routes(hub)),
        log_config=None,  # our logging, set up by the caller
        access_log=False,  # AccessLog middleware logs each request once, with its duration
        lifespan="off",
        timeout_keep_alive=30,
        server_header=False,
    )
    return uvicorn.Server(config)


def serve(
    root: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    admin_token: str | None = None,
    trusted_namespaces=(),
    on_ready: Callable[[str, Prepared], None] | None = None,
) -> None:
    prepared = prepare(root, admin_token=admin_token, trusted_namespaces=trusted_namespaces)
    try:
        sock = bind(host, port)
        server = uvicorn_server(prepared.hub)
        if on_ready is not None:
            on_ready(endpoint_of(sock), prepared)
        server.run(sockets=[sock])
    finally:
        prepared.lock.release()


class EmbeddedHub:
    """The real hub server on a background thread of this process.

        with EmbeddedHub(tmp_path / "hub", trusted_namespaces=["my-org"]) as hub:
            os.environ.update(hub.client_env())   # HF_ENDPOINT
            HfApi(endpoint=hub.endpoint, token=hub.admin_token).create_repo(...)

    Without `admin_token`, a session token with write access everywhere is made
    at start and revoked at stop, so no usable token stays on disk.
    """

    def __init__(
        self,
        root: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        admin_token: str | None = None,
        trusted_namespaces=(),
    ) -> None:
        self.root = Path(root)
        self.host = host
        self.port = port
        self._given_token = admin_token
        self.trusted_namespaces = tuple(trusted_namespaces)
        self._prepared: Prepared | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._session_token = ""
        self.endpoint = ""

    @property
    def admin_token(self) -> str:
        return self._given_token or self._session_token

    @property
    def auth(self) -> AuthStore:
        if self._prepared is None:
            raise HubError("the embedded hub is not started")
        return self._prepared.hub.auth

    def start(self) -> EmbeddedHub:
        if self._thread is not None:
            return self
        prepared = prepare(self.root, admin_token=self._given_token, trusted_namespaces=self.trusted_namespaces)
        self._prepared = prepared
        try:
            if not self._given_token:
                self._session_token = prepared.hub.auth.create_token(
                    "*", "write", user="admin", name="embedded-session", admin=True
                )
            sock = bind(self.host, self.port)
            self.endpoint = endpoint_of(sock)
            self.port = sock.getsockname()[1]
            self._server = uvicorn_server(prepared.hub)
            self._thread = threading.Thread(
                target=self._server.run, kwargs={"sockets": [sock]}, name=f"hub-{self.port}", daemon=True
            )
            self._thread.start()
            deadline = time.monotonic() + 30
            while not self._server.started:
                if not self._thread.is_alive() or time.monotonic() > deadline:
                    raise HubError("the embedded hub did not start", code="hub-start")
                time.sleep(0.01)
        except BaseException:
            self.stop()
            raise
        log.info("embedded hub serving %s at %s", self.root, self.endpoint)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._prepared is not None:
            if self._session_token:
                self._prepared.hub.auth.revoke(self._session_token)
                self._session_token = ""
            self._prepared.lock.release()
        self._server = self._thread = self._prepared = None

    def __enter__(self) -> EmbeddedHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- administration ------------------------------------------------------------
    def create_token(self, namespace: str, scope: str = "write", *, user: str | None = None) -> str:
        """A token with `scope` ("read" | "write") on `namespace` ("*" = every one)."""
        return self.auth.create_token(namespace, scope, user=user)

    def revoke_token(self, token: str) -> bool:
        return self.auth.revoke(token)

    def trust(self, namespace: str, trusted: bool = True) -> None:
        """Set `trustedKernelPublisher` for a namespace (what kernels.get_kernel checks)."""
        self.auth.set_trusted(namespace, trusted)

    def client_env(self) -> dict[str, str]:
        """Environment that points huggingface_hub (and kernels) at this hub."""
        return client_env(self.endpoint)


def client_env(endpoint: str) -> dict[str, str]:
    # The hub speaks both Xet (what huggingface_hub uses when hf_xet is
    # installed) and Git LFS (without it), so the endpoint is all a client needs.
    return {"HF_ENDPOINT": endpoint}

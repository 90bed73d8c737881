"""Where a publish (or verify) goes: `--endpoint` > `HF_ENDPOINT` > the
Hugging Face Hub when a token is configured > the embedded Hub, started for
the run (DESIGN.md's order). The command prints which one, and why."""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Literal

from huggingface_hub import get_token
from huggingface_hub.errors import HFValidationError
from huggingface_hub.utils import validate_repo_id

from pipeline.errors import HubError, PublishError

HF_HUB_ENDPOINT = "https://huggingface.co"
# The embedded Hub's default port and root (those of `hub serve`), so that the
# HF_ENDPOINT line printed after a publish to it still works once the same data
# is served again.
DEFAULT_HUB_PORT = 8000

TargetSource = Literal["--endpoint", "HF_ENDPOINT", "token", "embedded"]


@dataclass(frozen=True)
class Target:
    """Where a publish goes, and why."""

    source: TargetSource
    endpoint: str | None  # None until the embedded Hub is started
    token: str | None
    hub_root: Path | None = None
    hub_port: int | None = None

    @property
    def embedded(self) -> bool:
        return self.source == "embedded"

    def describe(self) -> str:
        if self.source == "--endpoint":
            return f"{self.endpoint} (from --endpoint)"
        if self.source == "HF_ENDPOINT":
            return f"{self.endpoint} (from HF_ENDPOINT)"
        if self.source == "token":
            return f"{self.endpoint} (the Hugging Face Hub: a token is configured)"
        where = self.endpoint or f"http://127.0.0.1:{self.hub_port}"
        return f"{where} (the embedded Hub, started for this run; data in {self.hub_root})"

    def to_json(self) -> dict:
        return {"source": self.source, "endpoint": self.endpoint, "token": bool(self.token),
                "hub_root": str(self.hub_root) if self.hub_root else None, "hub_port": self.hub_port}


def configured_token(env: dict | None = None) -> str | None:
    """`HF_TOKEN`, or the token `hf auth login` stored."""
    env = os.environ if env is None else env
    if env.get("HF_TOKEN"):
        return env["HF_TOKEN"]
    return get_token() or None


def resolve_target(endpoint: str | None = None, *, env: dict | None = None, token: str | None = None,
                   hub_root: Path | None = None, hub_port: int | None = None) -> Target:
    env = os.environ if env is None else env
    token = token if token is not None else configured_token(env)
    if endpoint:
        return Target("--endpoint", endpoint.rstrip("/"), token)
    if env.get("HF_ENDPOINT"):
        return Target("HF_ENDPOINT", env["HF_ENDPOINT"].rstrip("/"), token)
    if token:
        return Target("token", HF_HUB_ENDPOINT, token)
    port = DEFAULT_HUB_PORT if hub_port is None else hub_port
    if port and not port_free(port):
        port = free_port()  # something else listens there: another port, named before the Hub starts
    if hub_root is None:
        from pipeline.hub import default_root  # the hub's server stack loads only when it is the target

        hub_root = default_root()
    return Target("embedded", None, None, hub_root=Path(hub_root), hub_port=port)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def started_target(target: Target, *, trusted_namespaces: tuple[str, ...] = ()) -> Iterator[Target]:
    """The target with its endpoint and token; starts (and afterwards stops)
    the embedded Hub when that is the target."""
    if not target.embedded:
        yield target
        return
    from pipeline.hub import EmbeddedHub  # starlette, uvicorn, the Xet store: only for the embedded Hub

    hub = EmbeddedHub(target.hub_root, host="127.0.0.1", port=target.hub_port or 0,
                      trusted_namespaces=trusted_namespaces)
    try:
        hub.start()
    except HubError as exc:
        if exc.code == "hub-root-busy":
            raise PublishError(
                f"the embedded Hub's data ({target.hub_root}) is being served by another process",
                code="hub-start-failed", hint="publish through it: HF_ENDPOINT=<its url> HF_TOKEN=<its admin token> "
                                  "python -m pipeline publish ..., or stop it first") from None
        raise PublishError(f"cannot start the embedded Hub: {exc.message}", code="hub-start-failed", hint=exc.hint) from None
    try:
        yield replace(target, endpoint=hub.endpoint, token=hub.admin_token, hub_port=hub.port)
    finally:
        hub.stop()


def split_repo_id(spec: str, default_namespace: str | None) -> tuple[str, str]:
    """`ORG/NAME` or `NAME` (the workspace's namespace) -> (repo_id, name), checked
    by huggingface_hub's own rules before anything slow runs."""
    if spec.count("/") > 1 or spec.startswith("/") or spec.endswith("/"):
        raise PublishError(f"{spec!r} is not a repository id", code="repo-id-invalid", hint="write it as ORG/NAME")
    if "/" in spec:
        org, name = spec.split("/")
    else:
        if not default_namespace:
            raise PublishError(f"{spec!r} has no namespace", code="repo-id-invalid",
                               hint="write ORG/NAME, or set [workspace].namespace in build.toml")
        org, name = default_namespace, spec
    if not org or not name:
        raise PublishError(f"{spec!r} is not a repository id", code="repo-id-invalid", hint="write it as ORG/NAME")
    repo_id = f"{org}/{name}"
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise PublishError(f"{repo_id!r} is not a valid repository id: {exc}", code="repo-id-invalid",
                           hint="use letters, digits, '-', '_' and '.' (no spaces), e.g. my-org/rmsnorm") from None
    return repo_id, name

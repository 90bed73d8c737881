"""Tokens, scopes and who may do what.

Tokens live in `<root>/auth/tokens.json`, stored as sha256 digests (the file
never holds a usable token). Each token belongs to a user name and grants
`read` or `write` per namespace (`*` = every namespace). The file is re-read
when it changes on disk, so `hub token create` works while a server runs.

Reads of public repositories need no token. A private repository is invisible
(404 RepoNotFound) to anyone without read scope on its namespace.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pipeline.fsutil import atomic_write_text
from pipeline.hub.errors import BadRequest, Forbidden, InvalidToken, RepoNotFound, Unauthorized
from pipeline.hub.paths import name_part

Scope = Literal["read", "write"]
SCOPES: tuple[str, ...] = ("read", "write")
ADMIN_USER = "admin"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    # The "hf_" prefix makes it look like what users paste into HF_TOKEN.
    return "hf_" + secrets.token_urlsafe(30).replace("-", "x").replace("_", "y")


@dataclass(frozen=True)
class Principal:
    """Who is asking. `anonymous` has no scopes at all."""

    user: str
    token_name: str = ""
    scopes: tuple[tuple[str, str], ...] = ()  # (namespace or "*", "read"|"write")
    admin: bool = False

    @property
    def anonymous(self) -> bool:
        return not self.user

    def scope_for(self, namespace: str) -> str | None:
        best = None
        for ns, scope in self.scopes:
            if ns in ("*", namespace):
                if scope == "write":
                    return "write"
                best = scope
        return best

    def can_read(self, namespace: str) -> bool:
        return self.scope_for(namespace) in ("read", "write")

    def can_write(self, namespace: str) -> bool:
        return self.scope_for(namespace) == "write"


ANONYMOUS = Principal(user="")


@dataclass(frozen=True)
class TokenRecord:
    digest: str
    user: str
    name: str
    scopes: tuple[tuple[str, str], ...]
    admin: bool
    created_at: str

    def to_json(self) -> dict:
        return {
            "digest": self.digest,
            "user": self.user,
            "name": self.name,
            "scopes": [list(s) for s in self.scopes],
            "admin": self.admin,
            "created_at": self.created_at,
        }

    @staticmethod
    def from_json(d: dict) -> TokenRecord:
        return TokenRecord(
            digest=str(d["digest"]),
            user=str(d["user"]),
            name=str(d.get("name", "")),
            scopes=tuple((str(ns), str(sc)) for ns, sc in d.get("scopes", [])),
            admin=bool(d.get("admin", False)),
            created_at=str(d.get("created_at", "")),
        )

    def principal(self) -> Principal:
        return Principal(user=self.user, token_name=self.name, scopes=self.scopes, admin=self.admin)


@dataclass
class _Cache:
    mtime_ns: int = -1
    tokens: dict[str, TokenRecord] = field(default_factory=dict)
    trusted: frozenset[str] = frozenset()


class AuthStore:
    """Tokens and per-namespace settings (trustedKernelPublisher) under `<root>/auth/`."""

    def __init__(self, root: Path) -> None:
        self.dir = Path(root) / "auth"
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        self.tokens_file = self.dir / "tokens.json"
        self.namespaces_file = self.dir / "namespaces.json"
        self._lock = threading.Lock()
        self._tokens = _Cache()
        self._ns = _Cache()
        self.secret = self._load_secret()

    # -- files ---------------------------------------------------------------
    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        # Serialises writers across processes (server, `hub token create`).
        with open(self.dir / ".lock", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _load_secret(self) -> bytes:
        path = self.dir / "url-signing.key"
        with self._write_lock():
            if not path.exists():
                atomic_write_text(path, secrets.token_hex(32))
                os.chmod(path, 0o600)
        return bytes.fromhex(path.read_text().strip())

    @staticmethod
    def _read_json(path: Path, default: dict) -> dict:
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return default

    def _records(self) -> dict[str, TokenRecord]:
        with self._lock:
            try:
                mtime = self.tokens_file.stat().st_mtime_ns
            except FileNotFoundError:
                mtime = 0
            if mtime != self._tokens.mtime_ns:
                data = self._read_json(self.tokens_file, {"tokens": []})
                self._tokens = _Cache(mtime, {r.digest: r for r in map(TokenRecord.from_json, data["tokens"])})
            return self._tokens.tokens

    def _write_records(self, records: list[TokenRecord]) -> None:
        atomic_write_text(self.tokens_file, json.dumps({"tokens": [r.to_json() for r in records]}, indent=2))
        os.chmod(self.tokens_file, 0o600)

    # -- tokens --------------------------------------------------------------
    def create_token(
        self,
        namespace: str,
        scope: str = "write",
        *,
        user: str | None = None,
        name: str = "",
        token: str | None = None,
        admin: bool = False,
    ) -> str:
        """Create a token with `scope` on `namespace` ("*" = all); returns the token (shown once)."""
        if scope not in SCOPES:
            raise BadRequest(f"scope must be one of {SCOPES}, not {scope!r}")
        if namespace != "*":
            name_part(namespace, "namespace")
        user = user or (ADMIN_USER if namespace == "*" else namespace)
        name_part(user, "user name")
        token = token or new_token()
        if len(token) < 16:
            raise BadRequest("a token must be at least 16 characters long")
        record = TokenRecord(
            digest=_digest(token),
            user=user,
            name=name or f"{user}-{scope}",
            scopes=((namespace, scope),),
            admin=admin,
            created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        )
        with self._write_lock():
            records = [r for r in self._read_records_now() if r.digest != record.digest]
            self._write_records([*records, record])
        return token

    def _read_records_now(self) -> list[TokenRecord]:
        data = self._read_json(self.tokens_file, {"tokens": []})
        return [TokenRecord.from_json(d) for d in data["tokens"]]

    def ensure_admin(self, token: str | None) -> tuple[str, bool]:
        """The admin token: `token` if given (registered if new), else the stored
        one's... which cannot be recovered, so a fresh one is created only when no
        admin exists. Returns (token or "", created_now)."""
        if token:
            if _digest(token) not in self._records():
                self.create_token("*", "write", user=ADMIN_USER, name="admin", token=token, admin=True)
            return token, False
        if any(r.admin for r in self._records().values()):
            return "", False
        return self.create_token("*", "write", user=ADMIN_USER, name="admin", admin=True), True

    def revoke(self, token: str) -> bool:
        digest = _digest(token)
        with self._write_lock():
            records = self._read_records_now()
            kept = [r for r in records if r.digest != digest]
            self._write_records(kept)
        return len(kept) != len(records)

    def list_tokens(self) -> list[TokenRecord]:
        return list(self._records().values())

    def authenticate(self, authorization: str | None) -> Principal | None:
        """Principal for an `Authorization: Bearer` header; None if the header
        names a token the hub does not know; ANONYMOUS when there is none."""
        if not authorization:
            return ANONYMOUS
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        record = self._records().get(_digest(token.strip()))
        return record.principal() if record else None

    # -- namespaces ----------------------------------------------------------
    def trusted_namespaces(self) -> frozenset[str]:
        with self._lock:
            try:
                mtime = self.namespaces_file.stat().st_mtime_ns
            except FileNotFoundError:
                mtime = 0
            if mtime != self._ns.mtime_ns:
                data = self._read_json(self.namespaces_file, {"trusted": []})
                self._ns = _Cache(mtime, {}, frozenset(data.get("trusted", [])))
            return self._ns.trusted

    def set_trusted(self, namespace: str, trusted: bool = True) -> None:
        """Mark a namespace as a trusted kernel publisher (what `kernels` checks)."""
        name_part(namespace, "namespace")
        with self._write_lock():
            data = self._read_json(self.namespaces_file, {"trusted": []})
            current = set(data.get("trusted", []))
            current = current | {namespace} if trusted else current - {namespace}
            atomic_write_text(self.namespaces_file, json.dumps({"trusted": sorted(current)}, indent=2))

    # -- signed URLs (the LFS PUT carries no Authorization header) -------------
    def sign(self, *parts: str, ttl_s: int = 6 * 3600) -> tuple[int, str]:
        expires = int(time.time()) + ttl_s
        mac = hmac.new(self.secret, "\0".join([*parts, str(expires)]).encode(), hashlib.sha256).hexdigest()
        return expires, mac

    def check_signature(self, *parts: str, expires: str, signature: str) -> bool:
        try:
            exp = int(expires)
        except (TypeError, ValueError):
            return False
        if exp < time.time():
            return False
        mac = hmac.new(self.secret, "\0".join([*parts, str(exp)]).encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(mac, signature or "")


# -- decisions -----------------------------------------------------------------
def require_known(principal: Principal | None) -> Principal:
    if principal is None:
        raise InvalidToken("Invalid credentials in Authorization header")
    return principal


def check_read(principal: Principal, namespace: str, *, private: bool, what: str) -> None:
    """Private repositories do not exist for those who cannot read them."""
    if private and not principal.can_read(namespace):
        raise RepoNotFound(f"Repository Not Found for {what}")


def check_write(principal: Principal | None, namespace: str, *, private: bool, what: str) -> Principal:
    if principal is None:
        raise InvalidToken("Invalid credentials in Authorization header")
    if principal.anonymous:
        raise Unauthorized(f"You must be authenticated with a write token to modify {what}")
    if principal.can_write(namespace):
        return principal
    if private and not principal.can_read(namespace):
        raise RepoNotFound(f"Repository Not Found for {what}")
    raise Forbidden(f"Your token ({principal.token_name}) has no write access to the namespace '{namespace}'")

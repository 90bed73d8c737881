"""`git clone` and `git fetch` over smart HTTP, read-only:

    GET  /P{repo}[.git]/info/refs?service=git-upload-pack
    POST /P{repo}[.git]/git-upload-pack

served by `git upload-pack --stateless-rpc` on the bare repository (protocol
v0, which every git speaks). Who may read is decided as for the API; git sends
credentials only after a 401, so a request without any gets 401 with a Basic
challenge where the API would say 404 (a private or missing repository), and
then the token is taken from the password. Pushing is refused with 403.
"""

from __future__ import annotations

import base64
import os
import subprocess
import zlib
from collections.abc import Iterator

import anyio
from starlette.concurrency import iterate_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from pipeline.hub.auth import ANONYMOUS, Principal, check_read
from pipeline.hub.context import Hub
from pipeline.hub.errors import BadRequest, Forbidden, InvalidToken, PayloadTooLarge, RepoNotFound, Unauthorized
from pipeline.hub.http import read_body
from pipeline.hub.repository import Repository

MAX_NEGOTIATION = 64 * 1024 * 1024  # want/have lines of one fetch, unpacked
_READ = 64 * 1024


def _pkt(line: str) -> bytes:
    data = line.encode()
    return f"{len(data) + 4:04x}".encode() + data


def _principal(hub: Hub, request: Request) -> Principal | None:
    """Bearer like the API, or Basic with the token as the password (what git's credential helpers send)."""
    header = request.headers.get("authorization") or ""
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return hub.principal(request)
    try:
        _, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return hub.auth.authenticate(f"Bearer {password}") if password else ANONYMOUS


def _challenge(message: str) -> Unauthorized:
    err = Unauthorized(message)
    err.extra_headers = {"WWW-Authenticate": 'Basic realm="kernel hub"'}
    return err


def _open(hub: Hub, request: Request) -> Repository:
    rid = hub.file_rid(request)
    who = _principal(hub, request)
    if who is None:
        raise InvalidToken("Invalid credentials in Authorization header")
    try:
        repo = hub.storage.open(rid)
        check_read(who, rid.namespace, private=repo.meta.private, what=f"{rid.type} {rid.id}")
    except RepoNotFound:
        if who.anonymous:
            raise _challenge(f"authentication required for {rid.type} {rid.id}") from None
        raise
    return repo


def _upload_pack(repo: Repository, *args: str) -> list[str]:
    return ["git", "-c", "uploadpack.allowAnySHA1InWant=false", "upload-pack", "--stateless-rpc", *args, str(repo.dir)]


async def info_refs(hub: Hub, request: Request) -> Response:
    service = request.query_params.get("service")
    if service == "git-receive-pack":
        raise Forbidden("this hub's git endpoint is read-only: change files with huggingface_hub (upload, commit)")
    if service != "git-upload-pack":
        raise BadRequest("only smart HTTP is served: ask for ?service=git-upload-pack")
    repo = _open(hub, request)
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(_upload_pack(repo, "--advertise-refs"), capture_output=True, env=_env())
    )
    if done.returncode != 0:
        raise RepoNotFound(f"cannot read {repo.rid.id}: {done.stderr.decode(errors='replace').strip()}")
    body = _pkt("# service=git-upload-pack\n") + b"0000" + done.stdout
    headers = {"Cache-Control": "no-cache"}
    return Response(body, media_type="application/x-git-upload-pack-advertisement", headers=headers)


def _unpacked(request: Request, body: bytes) -> bytes:
    if request.headers.get("content-encoding", "").lower() not in ("gzip", "x-gzip"):
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, MAX_NEGOTIATION)
    except zlib.error:
        raise BadRequest("request body is not valid gzip") from None
    if inflater.unconsumed_tail:
        raise PayloadTooLarge(f"fetch negotiation is larger than {MAX_NEGOTIATION} bytes")
    return data


def _env() -> dict[str, str]:
    # No user or system git config, no inherited GIT_* variables: the repository's own settings only.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def _stream(cmd: list[str], stdin: bytes) -> Iterator[bytes]:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env())
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
        while block := proc.stdout.read(_READ):
            yield block
    finally:
        proc.kill()  # a client that went away must not leave upload-pack running
        proc.wait()


async def upload_pack(hub: Hub, request: Request) -> Response:
    repo = _open(hub, request)
    body = _unpacked(request, await read_body(request, MAX_NEGOTIATION))
    chunks = iterate_in_threadpool(_stream(_upload_pack(repo), body))
    headers = {"Cache-Control": "no-cache"}
    return StreamingResponse(chunks, media_type="application/x-git-upload-pack-result", headers=headers)


async def receive_pack(hub: Hub, request: Request) -> Response:
    raise Forbidden("this hub's git endpoint is read-only: change files with huggingface_hub (upload, commit)")

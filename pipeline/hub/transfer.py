"""The Git LFS endpoints: the batch API with its signed PUT (uploads, streamed
into the LFS store and verified), verify, and object downloads (from the LFS
store or, for a file uploaded with Xet, its reconstruction).

Each endpoint is a function of the `Hub` (context.py) and the request.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

import pipeline.hub.paths as paths
from pipeline.hub.content import find
from pipeline.hub.context import Hub
from pipeline.hub.downloads import serve_content
from pipeline.hub.errors import BadRequest, EntryNotFound, LfsObjectMissing, Unauthorized
from pipeline.hub.http import base_url, json_body
from pipeline.hub.repository import Repository

log = logging.getLogger("pipeline.hub")

MAX_LFS_OBJECT = 64 * 1024**3


def _batch_entry(hub: Hub, request: Request, repo: Repository, operation: str, base: str, obj: object) -> dict:
    """One object of a batch answer: its actions, or its own error."""
    oid = obj.get("oid") if isinstance(obj, dict) else None
    size = obj.get("size") if isinstance(obj, dict) else None
    try:
        oid = paths.sha256_hex(oid)
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_LFS_OBJECT:
            raise BadRequest(f"size must be an integer between 0 and {MAX_LFS_OBJECT}")
    except BadRequest as exc:
        return {
            "oid": str(oid),
            "size": size if isinstance(size, int) else 0,
            "error": {"code": 422, "message": exc.message},
        }
    entry: dict = {"oid": oid, "size": size, "authenticated": True}
    found = find(repo, hub.xet, oid)
    present = found is not None and found.size == size
    if operation == "upload" and not present:
        expires, sig = hub.auth.sign(str(repo.rid), oid, str(size))
        query = urlencode({"size": size, "expires": expires, "sig": sig})
        entry["actions"] = {
            "upload": {"href": f"{base}/{oid}?{query}", "expires_in": expires},
            "verify": {"href": f"{base}/verify"},
        }
    elif operation == "download" and present:
        auth = request.headers.get("authorization")
        header = {"header": {"Authorization": auth}} if auth else {}
        entry["actions"] = {"download": {"href": f"{base}/{oid}", **header}}
    elif operation == "download":
        entry["error"] = {"code": 404, "message": "Object does not exist"}
    return entry


async def lfs_batch(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("objects"), list):
        raise BadRequest("expected a Git LFS batch request")
    operation = body.get("operation")
    if operation == "upload":
        repo, _ = hub.open_write(request, rid)
    elif operation == "download":
        repo = hub.open_read(request, rid)
    else:
        raise BadRequest(f"unknown LFS operation {operation!r}")
    transfers = body.get("transfers")
    transfers = ["basic"] if transfers is None else transfers
    if not isinstance(transfers, list) or "basic" not in transfers:
        raise BadRequest("this hub offers the 'basic' LFS transfer only")
    if body.get("hash_algo", "sha256") != "sha256":
        raise BadRequest("this hub stores sha256 LFS objects only")
    base = f"{base_url(request)}/{rid.url_prefix}{rid.id}.git/info/lfs/objects"
    objects = [_batch_entry(hub, request, repo, operation, base, obj) for obj in body["objects"]]
    return JSONResponse(
        {"transfer": "basic", "objects": objects, "hash_algo": "sha256"}, media_type="application/vnd.git-lfs+json"
    )


async def lfs_put(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    oid = paths.sha256_hex(request.path_params["oid"])
    q = request.query_params
    size = q.get("size", "")
    if not hub.auth.check_signature(str(rid), oid, size, expires=q.get("expires", ""), signature=q.get("sig", "")):
        raise Unauthorized("upload URL is not valid (bad or expired signature): ask the batch API for a new one")
    repo = hub.storage.open(rid)
    try:
        await repo.lfs.ingest(oid, int(size), request.stream())
    except ClientDisconnect:
        log.warning("%s: client went away while uploading %s; nothing was stored", rid, oid[:12])
        return Response(status_code=400)
    log.info("%s: stored LFS object %s (%s bytes)", rid, oid[:12], size)
    return Response(status_code=200)

async def lfs_verify(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    repo, _ = hub.open_write(request, rid)
    body = await json_body(request)
    oid = paths.sha256_hex(body.get("oid") if isinstance(body, dict) else None)
    size = body.get("size")
    found = find(repo, hub.xet, oid)
    if found is None or (isinstance(size, int) and found.size != size):
        raise LfsObjectMissing(f"LFS object {oid} is not stored with size {size}")
    return JSONResponse({"oid": oid, "size": size})

async def lfs_get(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    repo = hub.open_read(request, rid)
    oid = paths.sha256_hex(request.path_params["oid"])
    found = find(repo, hub.xet, oid)
    if found is None:
        raise EntryNotFound(f"LFS object {oid} not found")
    return serve_content(hub, request, found, {"ETag": f'"{oid}"', "Accept-Ranges": "bytes"})

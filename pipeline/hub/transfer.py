"""The endpoints that move file bytes: the Git LFS batch API with its signed
PUT (uploads, streamed into the LFS store and verified) and `/resolve`
(downloads, with the headers huggingface_hub's cache relies on).

Each endpoint is a function of the `Hub` (context.py) and the request.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response

import pipeline.hub.paths as paths
from pipeline.hub.context import Hub
from pipeline.hub.errors import BadRequest, EntryNotFound, LfsObjectMissing, Unauthorized
from pipeline.hub.http import base_url, json_body, rev_param
from pipeline.hub.repository import Repository

log = logging.getLogger("pipeline.hub")

MAX_LFS_OBJECT = 64 * 1024**3


class LfsFileResponse(FileResponse):
    chunk_size = 1024 * 1024  # fewer thread hops per byte than Starlette's 64 KiB


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
    present = repo.lfs.has(oid, size)
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
    transfers = body.get("transfers") or ["basic"]
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
    if not repo.lfs.has(oid, size if isinstance(size, int) else None):
        raise LfsObjectMissing(f"LFS object {oid} is not stored with size {size}")
    return JSONResponse({"oid": oid, "size": size})

async def lfs_get(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    repo = hub.open_read(request, rid)
    oid = paths.sha256_hex(request.path_params["oid"])
    if not repo.lfs.has(oid):
        raise EntryNotFound(f"LFS object {oid} not found")
    return LfsFileResponse(repo.lfs.path(oid), media_type="application/octet-stream", headers={"ETag": f'"{oid}"'})

# -- downloads ---------------------------------------------------------------------
async def resolve(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    p = request.path_params
    repo = hub.open_read(request, rid)
    commit = repo.resolve(rev_param(request))
    path = paths.file_path(p["path"])
    entry = await anyio.to_thread.run_sync(repo.entry, commit, path)
    if entry is None or entry.type != "file":
        err = EntryNotFound(f"Entry Not Found: '{path}' at revision {commit}")
        err.extra_headers = {"X-Repo-Commit": commit}  # the client caches the absence per commit
        raise err
    headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes", "Cache-Control": "private, max-age=0"}
    if entry.lfs is not None:
        target = repo.lfs.path(entry.lfs.oid)
        if not target.is_file():
            raise LfsObjectMissing(f"the LFS object of '{path}' is missing from this hub's store")
        headers.update(
            {
                "ETag": f'"{entry.lfs.oid}"',
                "X-Linked-Etag": f'"{entry.lfs.oid}"',
                "X-Linked-Size": str(entry.lfs.size),
            }
        )
        return LfsFileResponse(
            target, media_type="application/octet-stream", headers=headers, filename=path.rsplit("/", 1)[-1]
        )
    headers["ETag"] = f'"{entry.oid}"'
    if request.method == "HEAD":
        headers["Content-Length"] = str(entry.size)
        return Response(status_code=200, headers=headers, media_type="application/octet-stream")
    data = await anyio.to_thread.run_sync(repo.read_blob, entry.oid)
    return Response(data, headers=headers, media_type="application/octet-stream")

"""The endpoints that move file bytes: the Git LFS batch API with its signed
PUT (uploads, streamed into the LFS store and verified) and `/resolve`
(downloads, with the headers huggingface_hub's cache relies on).

A mixin of `routes.Hub`: it uses the Hub's helpers (open_read, open_write,
json_body, base, rev_param) and its `storage` and `auth`.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response

from pipeline.hub import paths
from pipeline.hub.app import invalid_params
from pipeline.hub.errors import BadRequest, EntryNotFound, LfsObjectMissing, Unauthorized

log = logging.getLogger("pipeline.hub")

MAX_LFS_OBJECT = 64 * 1024**3


class LfsFileResponse(FileResponse):
    chunk_size = 1024 * 1024  # fewer thread hops per byte than Starlette's 64 KiB


class TransferEndpoints:
    """Git LFS and /resolve endpoints (mixed into routes.Hub)."""

    # -- Git LFS ---------------------------------------------------------------------
    def _lfs_rid(self, request: Request) -> paths.RepoId:
        invalid_params(request)
        p = request.path_params
        return paths.repo_id("kernel" if p.get("kind") else "model", p["ns"], p["name"])

    async def lfs_batch(self, request: Request) -> Response:
        rid = self._lfs_rid(request)
        body = await self.json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("objects"), list):
            raise BadRequest("expected a Git LFS batch request")
        operation = body.get("operation")
        if operation == "upload":
            repo, _ = self.open_write(request, rid)
        elif operation == "download":
            repo = self.open_read(request, rid)
        else:
            raise BadRequest(f"unknown LFS operation {operation!r}")
        if "basic" not in (body.get("transfers") or ["basic"]):
            raise BadRequest("this hub offers the 'basic' LFS transfer only")
        if body.get("hash_algo", "sha256") != "sha256":
            raise BadRequest("this hub stores sha256 LFS objects only")
        base = f"{self.base(request)}/{rid.url_prefix}{rid.id}.git/info/lfs/objects"
        objects = []
        for obj in body["objects"]:
            oid, size = (
                obj.get("oid") if isinstance(obj, dict) else None,
                obj.get("size") if isinstance(obj, dict) else None,
            )
            try:
                oid = paths.sha256_hex(oid)
                if not isinstance(size, int) or not 0 <= size <= MAX_LFS_OBJECT:
                    raise BadRequest(f"size must be an integer between 0 and {MAX_LFS_OBJECT}")
            except BadRequest as exc:
                objects.append(
                    {
                        "oid": str(oid),
                        "size": size if isinstance(size, int) else 0,
                        "error": {"code": 422, "message": exc.message},
                    }
                )
                continue
            entry: dict = {"oid": oid, "size": size, "authenticated": True}
            present = repo.lfs.has(oid, size)
            if operation == "upload" and not present:
                expires, sig = self.auth.sign(str(rid), oid, str(size))
                query = urlencode({"size": size, "expires": expires, "sig": sig})
                entry["actions"] = {
                    "upload": {"href": f"{base}/{oid}?{query}", "expires_in": expires},
                    "verify": {"href": f"{base}/verify"},
                }
            elif operation == "download":
                if present:
                    auth = request.headers.get("authorization")
                    entry["actions"] = {
                        "download": {"href": f"{base}/{oid}", **({"header": {"Authorization": auth}} if auth else {})}
                    }
                else:
                    entry["error"] = {"code": 404, "message": "Object does not exist"}
            objects.append(entry)
        return JSONResponse(
            {"transfer": "basic", "objects": objects, "hash_algo": "sha256"}, media_type="application/vnd.git-lfs+json"
        )

    async def lfs_put(self, request: Request) -> Response:
        rid = self._lfs_rid(request)
        oid = paths.sha256_hex(request.path_params["oid"])
        q = request.query_params
        size = q.get("size", "")
        if not self.auth.check_signature(str(rid), oid, size, expires=q.get("expires", ""), signature=q.get("sig", "")):
            raise Unauthorized("upload URL is not valid (bad or expired signature): ask the batch API for a new one")
        repo = self.storage.open(rid)
        try:
            await repo.lfs.ingest(oid, int(size), request.stream())
        except ClientDisconnect:
            log.warning("%s: client went away while uploading %s; nothing was stored", rid, oid[:12])
            return Response(status_code=400)
        log.info("%s: stored LFS object %s (%s bytes)", rid, oid[:12], size)
        return Response(status_code=200)

    async def lfs_verify(self, request: Request) -> Response:
        rid = self._lfs_rid(request)
        repo, _ = self.open_write(request, rid)
        body = await self.json_body(request)
        oid = paths.sha256_hex(body.get("oid") if isinstance(body, dict) else None)
        size = body.get("size")
        if not repo.lfs.has(oid, size if isinstance(size, int) else None):
            raise LfsObjectMissing(f"LFS object {oid} is not stored with size {size}")
        return JSONResponse({"oid": oid, "size": size})

    async def lfs_get(self, request: Request) -> Response:
        rid = self._lfs_rid(request)
        repo = self.open_read(request, rid)
        oid = paths.sha256_hex(request.path_params["oid"])
        if not repo.lfs.has(oid):
            raise EntryNotFound(f"LFS object {oid} not found")
        return LfsFileResponse(repo.lfs.path(oid), media_type="application/octet-stream", headers={"ETag": f'"{oid}"'})

    # -- downloads ---------------------------------------------------------------------
    async def resolve(self, request: Request) -> Response:
        invalid_params(request)
        p = request.path_params
        rid = paths.repo_id("kernel" if p.get("kind") else "model", p["ns"], p["name"])
        repo = self.open_read(request, rid)
        commit = repo.resolve(self.rev_param(request))
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

"""`/resolve/{rev}/{path}`: file bytes with the headers huggingface_hub's
cache relies on (X-Repo-Commit, ETag, X-Linked-Etag, X-Linked-Size), Range on
every file, and for a file stored with Xet the X-Xet-Hash and the route to a
Xet read token, so hf_xet downloads it through the CAS instead."""

from __future__ import annotations

import anyio
from starlette.concurrency import iterate_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse

import pipeline.hub.paths as paths
from pipeline.hub.content import Content, find
from pipeline.hub.context import Hub
from pipeline.hub.errors import EntryNotFound, LfsObjectMissing
from pipeline.hub.http import base_url, rev_param
from pipeline.hub.ranges import parse_range
from pipeline.hub.repository import Entry, Repository

OCTETS = "application/octet-stream"


class LfsFileResponse(FileResponse):
    chunk_size = 1024 * 1024  # fewer thread hops per byte than Starlette's 64 KiB


def _xet_headers(request: Request, repo: Repository, commit: str, content: Content) -> dict[str, str]:
    if content.xet_hash is None:
        return {}
    route = f"{base_url(request)}/api/{repo.rid.type}s/{repo.rid.id}/xet-read-token/{commit}"
    return {"X-Xet-Hash": content.xet_hash, "X-Xet-Refresh-Route": route, "Link": f'<{route}>; rel="xet-auth"'}


def _streamed(hub: Hub, request: Request, content: Content, headers: dict[str, str]) -> Response:
    wanted = parse_range(request.headers.get("range"), content.size) if content.size else None
    start, end = (wanted.start, wanted.end) if wanted else (0, content.size)
    headers = {**headers, "Content-Length": str(end - start)}
    if wanted:
        headers["Content-Range"] = wanted.content_range(content.size)
    status = 206 if wanted else 200
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers, media_type=OCTETS)
    body = iterate_in_threadpool(content.iter_bytes(hub.xet, start, end))
    return StreamingResponse(body, status_code=status, headers=headers, media_type=OCTETS)


def _large_file(hub: Hub, request: Request, repo: Repository, commit: str, entry: Entry, headers: dict) -> Response:
    assert entry.lfs is not None
    content = find(repo, hub.xet, entry.lfs.oid)
    if content is None:
        raise LfsObjectMissing(f"the LFS object of '{entry.path}' is missing from this hub's store")
    oid = entry.lfs.oid
    headers = {**headers, "ETag": f'"{oid}"', "X-Linked-Etag": f'"{oid}"', "X-Linked-Size": str(content.size)}
    headers.update(_xet_headers(request, repo, commit, content))
    return serve_content(hub, request, content, headers, filename=entry.path.rsplit("/", 1)[-1])


def serve_content(hub: Hub, request: Request, content: Content, headers: dict, filename: str | None = None) -> Response:
    """An LFS object from disk (FileResponse does Range), or a Xet file streamed from its chunks."""
    if content.path is not None:
        return LfsFileResponse(content.path, media_type=OCTETS, headers=headers, filename=filename)
    return _streamed(hub, request, content, headers)


async def resolve(hub: Hub, request: Request) -> Response:
    rid = hub.file_rid(request)
    repo = hub.open_read(request, rid)
    commit = repo.resolve(rev_param(request))
    path = paths.file_path(request.path_params["path"])
    entry = await anyio.to_thread.run_sync(repo.entry, commit, path)
    if entry is None or entry.type != "file":
        err = EntryNotFound(f"Entry Not Found: '{path}' at revision {commit}")
        err.extra_headers = {"X-Repo-Commit": commit}  # the client caches the absence per commit
        raise err
    headers = {"X-Repo-Commit": commit, "Accept-Ranges": "bytes", "Cache-Control": "private, max-age=0"}
    if entry.lfs is not None:
        return _large_file(hub, request, repo, commit, entry, headers)
    headers["ETag"] = f'"{entry.oid}"'
    wanted = parse_range(request.headers.get("range"), entry.size) if entry.size else None
    if request.method == "HEAD":
        headers["Content-Length"] = str(entry.size)
        return Response(status_code=200, headers=headers, media_type=OCTETS)
    data = await anyio.to_thread.run_sync(repo.read_blob, entry.oid)
    if wanted is None:
        return Response(data, headers=headers, media_type=OCTETS)
    headers["Content-Range"] = wanted.content_range(entry.size)
    return Response(data[wanted.start : wanted.end], status_code=206, headers=headers, media_type=OCTETS)

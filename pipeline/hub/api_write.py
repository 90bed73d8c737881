"""Endpoints that change a repository: branches, the preupload check and the
NDJSON commit (parsed by commits.py)."""

from __future__ import annotations

import base64
import binascii
import logging

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

import pipeline.hub.paths as paths
from pipeline.hub.commits import AddBlob, Header, InlineFile, Item, Operation, PayloadParser, commit
from pipeline.hub.content import size_of
from pipeline.hub.context import Hub
from pipeline.hub.errors import BadRequest, NotImplementedByHub, RevisionNotFound
from pipeline.hub.http import base_url, flag, invalid_params, json_body, json_object, rev_param
from pipeline.hub.objects import ObjectStore, Quarantine
from pipeline.hub.repository import Repository

log = logging.getLogger("pipeline.hub")

# Above this size, or when its first 512 bytes hold a NUL (binary: .so, .bin),
# a file goes through Git LFS; the Hub uses the same 10 MB line.
LFS_THRESHOLD = 10 * 1024 * 1024


async def create_branch(hub: Hub, request: Request) -> Response:
    repo, _ = hub.open_write(request, hub.api_rid(request))
    branch = paths.branch_ref(request.path_params["branch"])
    body = await json_body(request)
    start = body.get("startingPoint") if isinstance(body, dict) else None
    if start is not None:
        start = paths.revision(start)
    await anyio.to_thread.run_sync(repo.create_branch, branch, start)
    return JSONResponse({})


async def delete_branch(hub: Hub, request: Request) -> Response:
    repo, _ = hub.open_write(request, hub.api_rid(request))
    await anyio.to_thread.run_sync(repo.delete_branch, paths.branch_ref(request.path_params["branch"]))
    return JSONResponse({})


def _upload_mode(repo: Repository, commit_id: str, f: object) -> dict:
    if not isinstance(f, dict):
        raise BadRequest("each file must be an object")
    path = paths.file_path(f.get("path"))
    try:
        sample = f.get("sample")
        sample = base64.b64decode("" if sample is None else sample, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise BadRequest(f"sample of '{path}' is not base64") from None
    size = f.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise BadRequest(f"size of '{path}' must be a non-negative integer")
    mode = "lfs" if size > LFS_THRESHOLD or b"\0" in sample else "regular"
    existing = repo.entry(commit_id, path)
    oid = None
    if existing is not None and existing.type == "file":
        oid = existing.lfs.oid if existing.lfs else existing.oid
    return {"path": path, "uploadMode": mode, "shouldIgnore": False, "oid": oid}


async def preupload(hub: Hub, request: Request) -> Response:
    repo, _ = hub.open_write(request, hub.api_rid(request))
    commit_id = repo.resolve(rev_param(request))
    body = await json_body(request)
    files = body.get("files") if isinstance(body, dict) else None
    if not isinstance(files, list):
        raise BadRequest("expected {'files': [...]}")
    out = [_upload_mode(repo, commit_id, f) for f in files]
    return JSONResponse({"files": out, "commitOid": commit_id})


async def create_tag(hub: Hub, request: Request) -> Response:
    repo, who = hub.open_write(request, hub.api_rid(request))
    revision = paths.revision(request.path_params["rev"])
    body = await json_object(request)
    tag = paths.tag_name(body.get("tag"))
    message = body.get("message")
    message = "" if message is None else message
    if not isinstance(message, str):
        raise BadRequest("tag message must be a string")
    await anyio.to_thread.run_sync(repo.create_tag, tag, revision, message, who.user)
    return JSONResponse({})


async def delete_tag(hub: Hub, request: Request) -> Response:
    repo, _ = hub.open_write(request, hub.api_rid(request))
    invalid_params(request)
    await anyio.to_thread.run_sync(repo.delete_tag, paths.tag_name(request.path_params["tag"]))
    return JSONResponse({})


async def _read_payload(repo: Repository, request: Request, objects: ObjectStore) -> tuple[Header, list[Operation]]:
    """Parse the streamed NDJSON body, storing each inline file as it arrives."""
    parser = PayloadParser()
    header: Header | None = None
    operations: list[Operation] = []

    async def take(items: list[Item]) -> None:
        nonlocal header
        for item in items:
            if isinstance(item, Header):
                header = item
            elif isinstance(item, InlineFile):
                blob = await anyio.to_thread.run_sync(repo.write_blob, item.data, objects)
                operations.append(AddBlob(item.path, blob))
            else:
                operations.append(item)

    async for chunk in request.stream():
        await take(parser.feed(chunk))
    await take(parser.finish())
    if header is None:
        raise BadRequest("commit has no 'header' line")
    return header, operations


async def commit_endpoint(hub: Hub, request: Request) -> Response:
    rid = hub.api_rid(request)
    repo, who = hub.open_write(request, rid)
    invalid_params(request)
    branch = paths.branch_ref(request.path_params["rev"])
    if flag(request, "create_pr"):
        raise NotImplementedByHub("pull requests are not supported by this hub: commit to a branch")
    if repo.branch_head(branch) is None:
        raise RevisionNotFound(f"Invalid rev id: {branch} (create the branch before committing to it)")
    quarantine = repo.objects.quarantine()
    try:
        sha, summary = await _commit_request(hub, request, repo, branch, who.user, quarantine)
    except ClientDisconnect:
        log.warning("%s: client went away during a commit to %s; nothing was committed", rid, branch)
        return Response(status_code=400)
    finally:
        quarantine.discard()
    log.info("%s: %s -> %s", rid, branch, sha[:12])
    return JSONResponse(
        {
            "success": True,
            "commitOid": sha,
            "commitMessage": summary,
            "hookOutput": "",
            "commitUrl": f"{base_url(request)}/{rid.url_prefix}{rid.id}/commit/{sha}",
            "pullRequestUrl": None,
        }
    )


async def _commit_request(
    hub: Hub, request: Request, repo: Repository, branch: str, author: str, objects: Quarantine
) -> tuple[str, str]:
    header, operations = await _read_payload(repo, request, objects)
    sha = await anyio.to_thread.run_sync(
        lambda: commit(
            repo,
            branch,
            operations,
            summary=header.summary,
            description=header.description,
            parent=header.parent,
            author=author,
            size_of=lambda oid: size_of(repo, hub.xet, oid),
            objects=objects,
        )
    )
    return sha, header.summary

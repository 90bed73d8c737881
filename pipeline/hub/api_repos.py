"""Repository endpoints that read (repo_info, refs, tree, paths-info,
commits) plus creating and deleting a repository."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, quote, urlencode

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

import pipeline.hub.paths as paths
from pipeline.hub.context import Hub
from pipeline.hub.errors import BadRequest, Conflict, Forbidden, InvalidToken, Unauthorized
from pipeline.hub.http import base_url, flag, json_object, parse_json, read_body, rev_param
from pipeline.hub.objects import CommitInfo
from pipeline.hub.repository import Entry, Repository
from pipeline.hub.xet_hash import to_hex
from pipeline.hub.xet_store import RepoXet

log = logging.getLogger("pipeline.hub")

TREE_PAGE = 1000
TREE_PAGE_EXPAND = 50
COMMITS_PAGE = 100


def _field(body: dict, key: str) -> str | None:
    """An optional string field of a JSON body (absent, null or "" -> None)."""
    value = body.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadRequest(f"'{key}' must be a string")
    return value


async def create_repo(hub: Hub, request: Request) -> Response:
    body = await json_object(request)
    who = hub.principal(request)
    if who is None:
        raise InvalidToken("Invalid credentials in Authorization header")
    if who.anonymous:
        raise Unauthorized("You must be authenticated with a write token to create a repository")
    rid = paths.repo_id(_field(body, "type") or "model", _field(body, "organization") or who.user, body.get("name"))
    if not who.can_write(rid.namespace):
        raise Forbidden(f"Your token ({who.token_name}) has no write access to the namespace '{rid.namespace}'")
    visibility = body.get("visibility")
    private = bool(body.get("private")) if visibility is None else visibility == "private"
    url = f"{base_url(request)}/{rid.url_prefix}{rid.id}"
    try:
        await anyio.to_thread.run_sync(lambda: hub.storage.create(rid, private=private, author=who.user))
    except Conflict as exc:
        exc.extra_body = {"url": url}  # create_repo(exist_ok=True) reads the url from the 409
        raise
    log.info("created %s %s (%s)", rid.type, rid.id, "private" if private else "public")
    return JSONResponse({"url": url, "name": rid.id, "id": rid.id})


async def delete_repo(hub: Hub, request: Request) -> Response:
    body = await json_object(request)
    who = hub.principal(request)
    ns = _field(body, "organization") or (who.user if who else "")
    rid = paths.repo_id(_field(body, "type") or "model", ns, body.get("name"))
    hub.open_write(request, rid)
    await anyio.to_thread.run_sync(hub.storage.delete, rid)
    return JSONResponse({})


def _sibling(entry: Entry, blobs: bool) -> dict:
    s: dict = {"rfilename": entry.path}
    if blobs:
        s.update(size=entry.size, blobId=entry.oid)
        if entry.lfs:
            s["lfs"] = {"sha256": entry.lfs.oid, "size": entry.lfs.size, "pointerSize": entry.lfs.pointer_size}
    return s


def _info(repo: Repository, commit: str, blobs: bool) -> dict:
    rid, meta = repo.rid, repo.meta
    files = [e for e in repo.list_tree(commit, recursive=True) if e.type == "file"]
    info = {
        "_id": rid.id,
        "id": rid.id,
        "modelId": rid.id,
        "author": rid.namespace,
        "sha": commit,
        "lastModified": repo.commit_info(commit).date,
        "createdAt": meta.created_at,
        "private": meta.private,
        "gated": False,
        "disabled": False,
        "downloads": 0,
        "likes": 0,
        "tags": [],
        "siblings": [_sibling(e, blobs) for e in files],
        "usedStorage": sum(e.size for e in files),
    }
    if rid.type == "kernel":
        # As the Hugging Face Hub answers for kernel repositories (clients list files with
        # /tree); huggingface_hub 1.10's KernelInfo fails on siblings it does not expect.
        del info["siblings"]
    return info


async def repo_info(hub: Hub, request: Request) -> Response:
    repo = hub.open_read(request, hub.api_rid(request))
    commit = repo.resolve(rev_param(request))
    return JSONResponse(await anyio.to_thread.run_sync(_info, repo, commit, flag(request, "blobs")))


async def refs(hub: Hub, request: Request) -> Response:
    repo = hub.open_read(request, hub.api_rid(request))

    def ref(kind: str, name: str, sha: str) -> dict:
        return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": sha}

    body = {
        "branches": [ref("heads", n, s) for n, s in repo.branches()],
        "tags": [ref("tags", n, s) for n, s in repo.tags()],
        "converts": [],
    }
    if flag(request, "include_prs"):
        body["pullRequests"] = []
    return JSONResponse(body)


def entry_json(repo: Repository, entry: Entry) -> dict:
    """A tree entry as the Hub lists it; `xetHash` for a file stored with Xet
    (snapshot_download then skips the per-file HEAD)."""
    d = entry.to_json()
    if entry.lfs is not None:
        h = RepoXet(repo.dir).file_by_sha256(entry.lfs.oid)
        if h is not None:
            d["xetHash"] = to_hex(h)
    return d


def expanded(repo: Repository, commit: str, entry: Entry) -> dict:
    d = entry_json(repo, entry)
    last = repo.last_commit(commit, entry.path)
    d["lastCommit"] = {"id": last.id, "title": last.title, "date": last.date}
    return d


def _cursor(request: Request) -> int:
    try:
        start = int(request.query_params.get("cursor", "0") or 0)
    except ValueError:
        raise BadRequest("invalid cursor") from None
    if start < 0:
        raise BadRequest("invalid cursor")
    return start


async def tree(hub: Hub, request: Request) -> Response:
    rid = hub.api_rid(request)
    repo = hub.open_read(request, rid)
    commit = repo.resolve(rev_param(request))
    path = request.path_params.get("path") or ""
    path = paths.file_path(path, folder=True) if path else ""
    recursive, expand = flag(request, "recursive"), flag(request, "expand")
    entries = await anyio.to_thread.run_sync(lambda: repo.list_tree(commit, path, recursive=recursive))
    start = _cursor(request)
    size = TREE_PAGE_EXPAND if expand else TREE_PAGE
    page = entries[start : start + size]
    if expand:
        body = await anyio.to_thread.run_sync(lambda: [expanded(repo, commit, e) for e in page])
    else:
        body = [entry_json(repo, e) for e in page]
    headers = {}
    if start + size < len(entries):
        # The next page names the commit, not the branch: pages stay consistent
        # even if the branch moves between two requests.
        query = urlencode({"recursive": str(recursive).lower(), "expand": str(expand).lower(), "cursor": start + size})
        suffix = "/" + quote(path, safe="") if path else ""
        url = f"{base_url(request)}/api/{rid.type}s/{rid.id}/tree/{commit}{suffix}?{query}"
        headers["Link"] = f'<{url}>; rel="next"'
    return JSONResponse(body, headers=headers)


def _paths_info_request(request: Request, raw: bytes) -> tuple[list, bool]:
    if request.headers.get("content-type", "").startswith("application/json"):
        body = parse_json(raw)
        if not isinstance(body, dict):
            raise BadRequest("expected a JSON object")
        wanted, expand = body.get("paths", []), bool(body.get("expand"))
    else:
        form = parse_qs(raw.decode("utf-8", "replace"))
        wanted, expand = form.get("paths", []), form.get("expand", ["false"])[0].lower() == "true"
    if isinstance(wanted, str):
        wanted = [wanted]
    if not isinstance(wanted, list):
        raise BadRequest("'paths' must be a list of paths")
    return wanted, expand


async def paths_info(hub: Hub, request: Request) -> Response:
    repo = hub.open_read(request, hub.api_rid(request))
    commit = repo.resolve(rev_param(request))
    wanted, expand = _paths_info_request(request, await read_body(request))
    out = []
    for p in wanted:
        entry = repo.entry(commit, paths.file_path(p, folder=True))
        if entry is not None:
            out.append(expanded(repo, commit, entry) if expand else entry_json(repo, entry))
    return JSONResponse(out)


def _commit_json(c: CommitInfo) -> dict:
    return {
        "id": c.id,
        "title": c.title,
        "message": c.message.split("\n", 1)[1].strip() if "\n" in c.message else "",
        "authors": [{"user": c.author}],
        "date": c.date,
    }


async def commits(hub: Hub, request: Request) -> Response:
    rid = hub.api_rid(request)
    repo = hub.open_read(request, rid)
    commit = repo.resolve(rev_param(request))
    try:
        page = int(request.query_params.get("p", "0") or 0)
    except ValueError:
        raise BadRequest("invalid page number") from None
    if page < 0:
        raise BadRequest("invalid page number")
    first = page * COMMITS_PAGE
    history = await anyio.to_thread.run_sync(repo.log, commit, first + COMMITS_PAGE + 1)
    headers = {}
    if len(history) > first + COMMITS_PAGE:
        # Like the tree: the next page names the commit, so pages stay consistent.
        url = f"{base_url(request)}/api/{rid.type}s/{rid.id}/commits/{commit}?p={page + 1}"
        headers["Link"] = f'<{url}>; rel="next"'
    return JSONResponse([_commit_json(c) for c in history[first : first + COMMITS_PAGE]], headers=headers)

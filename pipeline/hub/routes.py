"""The Hub HTTP API subset that huggingface_hub and kernels use.

Endpoints (T = models | kernels; P = "" for models, "kernels/" for kernels):

    GET  /api/whoami-v2                         token owner and scopes
    POST /api/repos/create, DELETE /api/repos/delete
    POST /api/validate-yaml                     README.md front matter check
    GET  /api/organizations/{ns}/overview       trustedKernelPublisher (kernels)
    GET  /api/T/{repo}[/revision/{rev}]         repo_info
    GET  /api/T/{repo}/refs                     list_repo_refs
    GET  /api/T/{repo}/tree/{rev}[/{path}]      list_repo_tree
    POST /api/T/{repo}/paths-info/{rev}         get_paths_info
    GET  /api/T/{repo}/commits/{rev}            list_repo_commits
    POST /api/T/{repo}/preupload/{rev}          upload mode per file (regular | lfs)
    POST /api/T/{repo}/commit/{rev}             NDJSON commit
    POST|DELETE /api/T/{repo}/branch/{branch}   create_branch / delete_branch
    *    /api/T/{repo}/xet-*-token/...          501: this hub speaks Git LFS, not Xet
    POST /P{repo}.git/info/lfs/objects/batch    Git LFS batch API (basic transfer)
    PUT  /P{repo}.git/info/lfs/objects/{oid}    signed upload URL, streamed + verified
    POST /P{repo}.git/info/lfs/objects/verify
    GET  /P{repo}.git/info/lfs/objects/{oid}    download (batch "download")
    GET|HEAD /P{repo}/resolve/{rev}/{path}      file bytes, X-Repo-Commit, ETag, X-Linked-*

The Git LFS and /resolve endpoints live in transfer.py (a mixin of Hub).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from pipeline.hub import paths
from pipeline.hub.app import RawRoute, invalid_params
from pipeline.hub.auth import ANONYMOUS, AuthStore, Principal, check_read, check_write
from pipeline.hub.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    InvalidToken,
    NotImplementedByHub,
    PayloadTooLarge,
    RepoNotFound,
    RevisionNotFound,
    Unauthorized,
)
from pipeline.hub.storage import (
    DEFAULT_BRANCH,
    AddBlob,
    AddLfs,
    DeleteFile,
    DeleteFolder,
    Entry,
    Operation,
    Repository,
    Storage,
)
from pipeline.hub.transfer import TransferEndpoints

log = logging.getLogger("pipeline.hub")

# Above this size, or when its first 512 bytes hold a NUL (binary: .so, .bin),
# a file goes through Git LFS; the Hub uses the same 10 MB line.
LFS_THRESHOLD = 10 * 1024 * 1024
MAX_JSON_BODY = 16 * 1024 * 1024
MAX_COMMIT_LINE = 24 * 1024 * 1024  # one base64 inline file (regular files are <= 10 MB)
MAX_INLINE_TOTAL = 1024 * 1024 * 1024
TREE_PAGE = 1000
TREE_PAGE_EXPAND = 50
XET_MESSAGE = (
    "This hub does not implement Xet storage. Set HF_HUB_DISABLE_XET=1 in the client's environment so that"
    " huggingface_hub uploads large files through Git LFS."
)


@dataclass
class Hub(TransferEndpoints):
    storage: Storage
    auth: AuthStore

    # -- helpers -----------------------------------------------------------------
    def principal(self, request: Request) -> Principal | None:
        return self.auth.authenticate(request.headers.get("authorization"))

    def reader(self, request: Request) -> Principal:
        # A token the hub does not know reads like no token: public reads never
        # need one, and a leftover HF_TOKEN for huggingface.co must not break them.
        return self.principal(request) or ANONYMOUS

    def _rid(self, request: Request) -> paths.RepoId:
        invalid_params(request)
        p = request.path_params
        return paths.repo_id(paths.repo_type_from_plural(p["types"]), p["ns"], p["name"])

    def open_read(self, request: Request, rid: paths.RepoId) -> Repository:
        repo = self.storage.open(rid)
        check_read(self.reader(request), rid.namespace, private=repo.meta.private, what=f"{rid.type} {rid.id}")
        return repo

    def open_write(self, request: Request, rid: paths.RepoId) -> tuple[Repository, Principal]:
        repo = self.storage.open(rid)
        who = check_write(
            self.principal(request), rid.namespace, private=repo.meta.private, what=f"{rid.type} {rid.id}"
        )
        return repo, who

    @staticmethod
    def base(request: Request) -> str:
        return str(request.base_url).rstrip("/")

    @staticmethod
    async def json_body(request: Request) -> Any:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_JSON_BODY:
                raise PayloadTooLarge(f"request body is larger than {MAX_JSON_BODY} bytes")
        if not body.strip():
            return {}
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f"request body is not valid JSON: {exc}") from None

    @staticmethod
    def flag(request: Request, name: str) -> bool:
        return request.query_params.get(name, "").lower() in ("1", "true", "yes")

    @staticmethod
    def rev_param(request: Request) -> str:
        invalid_params(request)
        return paths.revision(request.path_params.get("rev") or DEFAULT_BRANCH)

    # -- account -----------------------------------------------------------------
    async def whoami(self, request: Request) -> Response:
        who = self.principal(request)
        if who is None:
            raise InvalidToken("Invalid credentials in Authorization header")
        if who.anonymous:
            raise Unauthorized("Authorization header is required to call whoami")
        namespaces = sorted({ns for ns, _ in who.scopes if ns != "*"})
        role = "write" if any(s == "write" for _, s in who.scopes) else "read"
        return JSONResponse(
            {
                "type": "user",
                "id": who.user,
                "name": who.user,
                "fullname": who.user,
                "email": None,
                "emailVerified": False,
                "isPro": False,
                "canPay": False,
                "orgs": [
                    {"type": "org", "name": ns, "fullname": ns, "roleInOrg": who.scope_for(ns)} for ns in namespaces
                ],
                "auth": {
                    "type": "access_token",
                    "accessToken": {
                        "displayName": who.token_name,
                        "role": role,
                        "scopes": [{"namespace": ns, "scope": sc} for ns, sc in who.scopes],
                        "admin": who.admin,
                    },
                },
            }
        )

    async def organization_overview(self, request: Request) -> Response:
        invalid_params(request)
        ns = paths.name_part(request.path_params["ns"], "organization")
        trusted = ns in self.auth.trusted_namespaces()
        known = (
            trusted
            or ns in self.storage.namespaces()
            or any(ns == scope_ns for r in self.auth.list_tokens() for scope_ns, _ in r.scopes)
        )
        if not known:
            raise RepoNotFound(f"Organization {ns} not found")
        return JSONResponse(
            {
                "name": ns,
                "fullname": ns,
                "avatarUrl": "",
                "type": "org",
                "isVerified": False,
                "trustedKernelPublisher": trusted,
            }
        )

    async def validate_yaml(self, request: Request) -> Response:
        body = await self.json_body(request)
        content = body.get("content", "") if isinstance(body, dict) else ""
        errors = []
        if isinstance(content, str) and content.startswith("---"):
            end = content.find("\n---", 3)
            if end < 0:
                errors.append({"message": "README.md front matter is not closed with '---'"})
            else:
                try:
                    import yaml

                    data = yaml.safe_load(content[3:end])
                    if data is not None and not isinstance(data, dict):
                        errors.append({"message": "README.md front matter must be a YAML mapping"})
                except Exception as exc:  # yaml.YAMLError and friends
                    errors.append({"message": f"README.md front matter is not valid YAML: {exc}"})
        if errors:
            return JSONResponse({"errors": errors, "warnings": []}, status_code=400)
        return JSONResponse({"errors": [], "warnings": []})

    # -- repositories ----------------------------------------------------------
    async def create_repo(self, request: Request) -> Response:
        body = await self.json_body(request)
        if not isinstance(body, dict):
            raise BadRequest("expected a JSON object")
        who = self.principal(request)
        if who is None:
            raise InvalidToken("Invalid credentials in Authorization header")
        if who.anonymous:
            raise Unauthorized("You must be authenticated with a write token to create a repository")
        rid = paths.repo_id(body.get("type") or "model", body.get("organization") or who.user, body.get("name", ""))
        if not who.can_write(rid.namespace):
            raise Forbidden(f"Your token ({who.token_name}) has no write access to the namespace '{rid.namespace}'")
        visibility = body.get("visibility")
        private = bool(body.get("private")) if visibility is None else visibility == "private"
        url = f"{self.base(request)}/{rid.url_prefix}{rid.id}"
        try:
            await anyio.to_thread.run_sync(lambda: self.storage.create(rid, private=private, author=who.user))
        except Conflict as exc:
            exc.extra_body = {"url": url}  # create_repo(exist_ok=True) reads the url from the 409
            raise
        log.info("created %s %s (%s)", rid.type, rid.id, "private" if private else "public")
        return JSONResponse({"url": url, "name": rid.id, "id": rid.id})

    async def delete_repo(self, request: Request) -> Response:
        body = await self.json_body(request)
        if not isinstance(body, dict):
            raise BadRequest("expected a JSON object")
        who = self.principal(request)
        ns = body.get("organization") or (who.user if who else "")
        rid = paths.repo_id(body.get("type") or "model", ns, body.get("name", ""))
        self.open_write(request, rid)
        await anyio.to_thread.run_sync(self.storage.delete, rid)
        return JSONResponse({})

    def _info(self, request: Request, repo: Repository, commit: str) -> dict:
        rid, meta = repo.rid, repo.meta
        blobs = self.flag(request, "blobs")
        info = repo.commit_info(commit)
        siblings = []
        for e in repo.list_tree(commit, recursive=True):
            if e.type != "file":
                continue
            s: dict = {"rfilename": e.path}
            if blobs:
                s.update(size=e.size, blobId=e.oid)
                if e.lfs:
                    s["lfs"] = {"sha256": e.lfs.oid, "size": e.lfs.size, "pointerSize": e.lfs.pointer_size}
            siblings.append(s)
        return {
            "_id": rid.id,
            "id": rid.id,
            "modelId": rid.id,
            "author": rid.namespace,
            "sha": commit,
            "lastModified": info.date,
            "createdAt": meta.created_at,
            "private": meta.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": siblings,
            "usedStorage": sum(e.size for e in repo.list_tree(commit, recursive=True)),
        }

    async def repo_info(self, request: Request) -> Response:
        rid = self._rid(request)
        repo = self.open_read(request, rid)
        commit = repo.resolve(self.rev_param(request))
        return JSONResponse(await anyio.to_thread.run_sync(self._info, request, repo, commit))

    async def refs(self, request: Request) -> Response:
        repo = self.open_read(request, self._rid(request))

        def ref(kind: str, name: str, sha: str) -> dict:
            return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": sha}

        body = {
            "branches": [ref("heads", n, s) for n, s in repo.branches()],
            "tags": [ref("tags", n, s) for n, s in repo.tags()],
            "converts": [],
        }
        if self.flag(request, "include_prs"):
            body["pullRequests"] = []
        return JSONResponse(body)

    def _expand(self, repo: Repository, commit: str, entry: Entry) -> dict:
        d = entry.to_json()
        last = repo.last_commit(commit, entry.path)
        d["lastCommit"] = {"id": last.id, "title": last.title, "date": last.date}
        return d

    async def tree(self, request: Request) -> Response:
        rid = self._rid(request)
        repo = self.open_read(request, rid)
        rev = self.rev_param(request)
        commit = repo.resolve(rev)
        path = request.path_params.get("path") or ""
        path = paths.file_path(path, folder=True) if path else ""
        recursive, expand = self.flag(request, "recursive"), self.flag(request, "expand")
        entries = await anyio.to_thread.run_sync(lambda: repo.list_tree(commit, path, recursive=recursive))
        try:
            start = int(request.query_params.get("cursor", "0") or 0)
        except ValueError:
            raise BadRequest("invalid cursor") from None
        size = TREE_PAGE_EXPAND if expand else TREE_PAGE
        page = entries[start : start + size]
        if expand:
            body = await anyio.to_thread.run_sync(lambda: [self._expand(repo, commit, e) for e in page])
        else:
            body = [e.to_json() for e in page]
        headers = {}
        if start + size < len(entries):
            # The next page names the commit, not the branch: pages stay consistent
            # even if the branch moves between two requests.
            query = urlencode(
                {"recursive": str(recursive).lower(), "expand": str(expand).lower(), "cursor": start + size}
            )
            suffix = "/" + quote(path, safe="") if path else ""
            url = f"{self.base(request)}/api/{rid.type}s/{rid.id}/tree/{commit}{suffix}?{query}"
            headers["Link"] = f'<{url}>; rel="next"'
        return JSONResponse(body, headers=headers)

    async def paths_info(self, request: Request) -> Response:
        repo = self.open_read(request, self._rid(request))
        commit = repo.resolve(self.rev_param(request))
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_JSON_BODY:
                raise PayloadTooLarge("request body too large")
        if request.headers.get("content-type", "").startswith("application/json"):
            try:
                body = json.loads(raw or b"{}")
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise BadRequest("request body is not valid JSON") from None
            if not isinstance(body, dict):
                raise BadRequest("expected a JSON object")
            wanted, expand = body.get("paths", []), bool(body.get("expand"))
        else:
            form = parse_qs(raw.decode("utf-8", "replace"))
            wanted, expand = form.get("paths", []), form.get("expand", ["false"])[0].lower() == "true"
        if isinstance(wanted, str):
            wanted = [wanted]
        out = []
        for p in wanted:
            entry = repo.entry(commit, paths.file_path(p, folder=True))
            if entry is not None:
                out.append(self._expand(repo, commit, entry) if expand else entry.to_json())
        return JSONResponse(out)

    async def commits(self, request: Request) -> Response:
        repo = self.open_read(request, self._rid(request))
        commit = repo.resolve(self.rev_param(request))
        history = await anyio.to_thread.run_sync(repo.log, commit)
        return JSONResponse(
            [
                {
                    "id": c.id,
                    "title": c.title,
                    "message": c.message.split("\n", 1)[1].strip() if "\n" in c.message else "",
                    "authors": [{"user": c.author}],
                    "date": c.date,
                }
                for c in history
            ]
        )

    # -- writing -------------------------------------------------------------------
    async def create_branch(self, request: Request) -> Response:
        rid = self._rid(request)
        repo, _ = self.open_write(request, rid)
        branch = paths.branch_name(request.path_params["branch"])
        body = await self.json_body(request)
        start = body.get("startingPoint") if isinstance(body, dict) else None
        if start is not None:
            start = paths.revision(start)
        await anyio.to_thread.run_sync(repo.create_branch, branch, start)
        return JSONResponse({})

    async def delete_branch(self, request: Request) -> Response:
        rid = self._rid(request)
        repo, _ = self.open_write(request, rid)
        await anyio.to_thread.run_sync(repo.delete_branch, paths.branch_name(request.path_params["branch"]))
        return JSONResponse({})

    async def preupload(self, request: Request) -> Response:
        rid = self._rid(request)
        repo, _ = self.open_write(request, rid)
        commit = repo.resolve(self.rev_param(request))
        body = await self.json_body(request)
        files = body.get("files") if isinstance(body, dict) else None
        if not isinstance(files, list):
            raise BadRequest("expected {'files': [...]}")
        out = []
        for f in files:
            if not isinstance(f, dict):
                raise BadRequest("each file must be an object")
            path = paths.file_path(f.get("path"))
            try:
                sample = base64.b64decode(f.get("sample") or "", validate=True)
            except (binascii.Error, ValueError):
                raise BadRequest(f"sample of '{path}' is not base64") from None
            size = f.get("size")
            if not isinstance(size, int) or size < 0:
                raise BadRequest(f"size of '{path}' must be a non-negative integer")
            mode = "lfs" if size > LFS_THRESHOLD or b"\0" in sample else "regular"
            existing = repo.entry(commit, path)
            oid = None
            if existing is not None and existing.type == "file":
                oid = existing.lfs.oid if existing.lfs else existing.oid
            out.append({"path": path, "uploadMode": mode, "shouldIgnore": False, "oid": oid})
        return JSONResponse({"files": out, "commitOid": commit})

    async def commit(self, request: Request) -> Response:
        rid = self._rid(request)
        repo, who = self.open_write(request, rid)
        invalid_params(request)
        branch = paths.branch_name(request.path_params["rev"])
        if self.flag(request, "create_pr"):
            raise NotImplementedByHub("pull requests are not supported by this hub: commit to a branch")
        if repo.branch_head(branch) is None:
            raise RevisionNotFound(f"Invalid rev id: {branch} (create the branch before committing to it)")

        header: dict | None = None
        operations: list[Operation] = []
        inline_total = 0

        async def handle(line: bytes) -> None:
            nonlocal header, inline_total
            if not line.strip():
                return
            try:
                item = json.loads(line)
                key, value = item["key"], item["value"]
            except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
                raise BadRequest('commit body must be NDJSON lines {"key": ..., "value": {...}}') from None
            if not isinstance(value, dict):
                raise BadRequest(f"'{key}' value must be an object")
            if key == "header":
                header = value
            elif key == "file":
                path = paths.file_path(value.get("path"))
                content = value.get("content", "")
                encoding = value.get("encoding", "utf-8")
                try:
                    data = base64.b64decode(content, validate=True) if encoding == "base64" else content.encode("utf-8")
                except (binascii.Error, ValueError, AttributeError):
                    raise BadRequest(f"content of '{path}' is not valid {encoding}") from None
                inline_total += len(data)
                if inline_total > MAX_INLINE_TOTAL:
                    raise PayloadTooLarge("inline files of one commit exceed 1 GiB: upload large files through LFS")
                blob = await anyio.to_thread.run_sync(repo.write_blob, data)
                operations.append(AddBlob(path, blob))
            elif key == "lfsFile":
                path = paths.file_path(value.get("path"))
                if value.get("algo", "sha256") != "sha256":
                    raise BadRequest(f"unsupported LFS hash algorithm {value.get('algo')!r}")
                size = value.get("size")
                if size is not None and (not isinstance(size, int) or size < 0):
                    raise BadRequest(f"size of '{path}' must be a non-negative integer")
                operations.append(AddLfs(path, paths.sha256_hex(value.get("oid")), size))
            elif key == "deletedFile":
                operations.append(DeleteFile(paths.file_path(value.get("path"))))
            elif key == "deletedFolder":
                operations.append(DeleteFolder(paths.file_path(value.get("path"), folder=True)))
            else:
                raise BadRequest(f"unknown commit operation {key!r}")

        buffer = bytearray()
        try:
            async for chunk in request.stream():
                buffer += chunk
                while (i := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:i])
                    del buffer[: i + 1]
                    await handle(line)
                if len(buffer) > MAX_COMMIT_LINE:
                    raise PayloadTooLarge(f"a commit line is longer than {MAX_COMMIT_LINE} bytes")
            await handle(bytes(buffer))
        except ClientDisconnect:
            log.warning("%s: client went away during a commit to %s; nothing was committed", rid, branch)
            return Response(status_code=400)
        if header is None:
            raise BadRequest("commit has no 'header' line")
        summary = header.get("summary") or ""
        if not isinstance(summary, str) or not summary.strip():
            raise BadRequest("commit summary is required")
        description = header.get("description") or ""
        parent = header.get("parentCommit")
        if parent is not None and not paths.is_commit_id(str(parent)):
            raise BadRequest(f"parentCommit {parent!r} is not a commit id")
        sha = await anyio.to_thread.run_sync(
            lambda: repo.commit(
                branch,
                operations,
                summary=summary,
                description=str(description),
                parent=parent,
                author=who.user,
            )
        )
        log.info("%s: %s -> %s (%d operations)", rid, branch, sha[:12], len(operations))
        return JSONResponse(
            {
                "success": True,
                "commitOid": sha,
                "commitMessage": summary,
                "hookOutput": "",
                "commitUrl": f"{self.base(request)}/{rid.url_prefix}{rid.id}/commit/{sha}",
                "pullRequestUrl": None,
            }
        )

    async def xet_token(self, request: Request) -> Response:
        raise NotImplementedByHub(XET_MESSAGE)


def routes(hub: Hub) -> list[RawRoute]:
    seg = r"[^/]+"
    api = rf"/api/(?P<types>models|kernels)/(?P<ns>{seg})/(?P<name>{seg})"
    # Files: kernels live under /kernels/, models at the root (as on the Hub).
    lfs = rf"/(?P<kind>kernels/)?(?P<ns>{seg})/(?P<name>{seg})\.git/info/lfs/objects"
    return [
        RawRoute(r"/api/whoami-v2", hub.whoami, ("GET",)),
        RawRoute(r"/api/repos/create", hub.create_repo, ("POST",)),
        RawRoute(r"/api/repos/delete", hub.delete_repo, ("DELETE",)),
        RawRoute(r"/api/validate-yaml", hub.validate_yaml, ("POST",)),
        RawRoute(rf"/api/organizations/(?P<ns>{seg})/overview", hub.organization_overview, ("GET",)),
        RawRoute(api, hub.repo_info, ("GET",)),
        RawRoute(rf"{api}/revision/(?P<rev>{seg})", hub.repo_info, ("GET",)),
        RawRoute(rf"{api}/refs", hub.refs, ("GET",)),
        RawRoute(rf"{api}/tree/(?P<rev>{seg})(?:/(?P<path>.+))?", hub.tree, ("GET",)),
        RawRoute(rf"{api}/paths-info/(?P<rev>{seg})", hub.paths_info, ("POST",)),
        RawRoute(rf"{api}/commits/(?P<rev>{seg})", hub.commits, ("GET",)),
        RawRoute(rf"{api}/preupload/(?P<rev>{seg})", hub.preupload, ("POST",)),
        RawRoute(rf"{api}/commit/(?P<rev>{seg})", hub.commit, ("POST",)),
        RawRoute(rf"{api}/branch/(?P<branch>{seg})", hub.create_branch, ("POST",)),
        RawRoute(rf"{api}/branch/(?P<branch>{seg})", hub.delete_branch, ("DELETE",)),
        RawRoute(rf"{api}/xet-(?:read|write)-token(?:/.*)?", hub.xet_token, ("GET", "POST")),
        RawRoute(rf"{lfs}/batch", hub.lfs_batch, ("POST",)),
        RawRoute(rf"{lfs}/verify", hub.lfs_verify, ("POST",)),
        RawRoute(rf"{lfs}/(?P<oid>[0-9a-f]{{64}})", hub.lfs_put, ("PUT",)),
        RawRoute(rf"{lfs}/(?P<oid>[0-9a-f]{{64}})", hub.lfs_get, ("GET",)),
        RawRoute(
            rf"/(?P<kind>kernels/)(?P<ns>{seg})/(?P<name>{seg})/resolve/(?P<rev>{seg})/(?P<path>.+)",
            hub.resolve,
            ("GET",),
        ),
        RawRoute(rf"/(?P<ns>{seg})/(?P<name>{seg})/resolve/(?P<rev>{seg})/(?P<path>.+)", hub.resolve, ("GET",)),
    ]

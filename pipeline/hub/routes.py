"""The Hub HTTP API subset that huggingface_hub, hf_xet, git and kernels use:
the route table. Each endpoint is a function `(hub, request)` in one module
per concern.

Endpoints (T = models | kernels; P = "" for models, "kernels/" for kernels):

    api_account  GET  /api/whoami-v2                         token owner and scopes
                 GET  /api/organizations/{ns}/overview       trustedKernelPublisher (kernels)
                 POST /api/validate-yaml                     README.md front matter check
    api_repos    POST /api/repos/create, DELETE /api/repos/delete
                 GET  /api/T/{repo}[/revision/{rev}]         repo_info
                 GET  /api/T/{repo}/refs                     list_repo_refs
                 GET  /api/T/{repo}/tree/{rev}[/{path}]      list_repo_tree
                 POST /api/T/{repo}/paths-info/{rev}         get_paths_info
                 GET  /api/T/{repo}/commits/{rev}            list_repo_commits
    api_write    POST /api/T/{repo}/preupload/{rev}          upload mode per file (regular | lfs)
                 POST /api/T/{repo}/commit/{rev}             NDJSON commit
                 POST|DELETE /api/T/{repo}/branch/{branch}   create_branch / delete_branch
                 POST /api/T/{repo}/tag/{rev}, DELETE /api/T/{repo}/tag/{tag}   create_tag / delete_tag
    transfer     POST /P{repo}.git/info/lfs/objects/batch    Git LFS batch API (basic transfer)
                 PUT  /P{repo}.git/info/lfs/objects/{oid}    signed upload URL, streamed + verified
                 POST /P{repo}.git/info/lfs/objects/verify
                 GET  /P{repo}.git/info/lfs/objects/{oid}    download (batch "download")
    downloads    GET|HEAD /P{repo}/resolve/{rev}/{path}      file bytes, X-Repo-Commit, ETag, X-Linked-*, X-Xet-*
    xet_api      GET  /api/T/{repo}/xet-{read|write}-token/{rev}, and the CAS under /_xet (see xet_api)
    githttp      GET  /P{repo}[.git]/info/refs, POST .../git-upload-pack   git clone / fetch (read-only)

Pages for people (pages, page_session, page_html; after the API, so an API
route always wins):

    pages        GET  /, /kernels, /P{repo}, /P{repo}/tree/{rev}[/{path}], /P{repo}/commits/{rev}
    page_session GET|POST /_hub/token, POST /_hub/logout     a token kept in an HttpOnly cookie
    pages        GET  /_hub/hub.css                          the one stylesheet (page_html)

A revision is a branch, a tag, a commit id or a full ref name (refs/heads/..,
refs/tags/..), percent-encoded as one path segment.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from starlette.requests import Request
from starlette.responses import Response

import pipeline.hub.api_account as api_account
import pipeline.hub.api_repos as api_repos
import pipeline.hub.api_write as api_write
import pipeline.hub.downloads as downloads
import pipeline.hub.githttp as githttp
import pipeline.hub.page_session as page_session
import pipeline.hub.pages as pages
import pipeline.hub.transfer as transfer
import pipeline.hub.xet_api as xet_api
from pipeline.hub.app import RawRoute
from pipeline.hub.context import Hub

Handler = Callable[[Hub, Request], Awaitable[Response]]


def routes(hub: Hub) -> list[RawRoute]:
    seg = r"[^/]+"
    api = rf"/api/(?P<types>models|kernels)/(?P<ns>{seg})/(?P<name>{seg})"
    # Files: kernels live under /kernels/, models at the root (as on the Hub).
    lfs = rf"/(?P<kind>kernels/)?(?P<ns>{seg})/(?P<name>{seg})\.git/info/lfs/objects"
    resolve = rf"/(?P<ns>{seg})/(?P<name>{seg})/resolve/(?P<rev>{seg})/(?P<path>.+)"
    git = rf"/(?P<kind>kernels/)?(?P<ns>{seg})/(?P<name>[^/]+?)(?:\.git)?"
    page = rf"/(?P<kind>kernels/)?(?P<ns>{seg})/(?P<name>{seg})"
    # The CAS: `/_xet/<store id>/...` as the Xet token names it (`xet_api.cas_url`), or `/_xet/...`.
    xet = r"/_xet(?:/(?P<store>[0-9a-f]{16}))?"
    table: list[tuple[str, Handler, tuple[str, ...]]] = [
        (r"/api/whoami-v2", api_account.whoami, ("GET",)),
        (r"/api/repos/create", api_repos.create_repo, ("POST",)),
        (r"/api/repos/delete", api_repos.delete_repo, ("DELETE",)),
        (r"/api/validate-yaml", api_account.validate_yaml, ("POST",)),
        (rf"/api/organizations/(?P<ns>{seg})/overview", api_account.organization_overview, ("GET",)),
        (api, api_repos.repo_info, ("GET",)),
        (rf"{api}/revision/(?P<rev>{seg})", api_repos.repo_info, ("GET",)),
        (rf"{api}/refs", api_repos.refs, ("GET",)),
        (rf"{api}/tree/(?P<rev>{seg})(?:/(?P<path>.+))?", api_repos.tree, ("GET",)),
        (rf"{api}/paths-info/(?P<rev>{seg})", api_repos.paths_info, ("POST",)),
        (rf"{api}/commits/(?P<rev>{seg})", api_repos.commits, ("GET",)),
        (rf"{api}/preupload/(?P<rev>{seg})", api_write.preupload, ("POST",)),
        (rf"{api}/commit/(?P<rev>{seg})", api_write.commit_endpoint, ("POST",)),
        (rf"{api}/branch/(?P<branch>{seg})", api_write.create_branch, ("POST",)),
        (rf"{api}/branch/(?P<branch>{seg})", api_write.delete_branch, ("DELETE",)),
        (rf"{api}/tag/(?P<rev>{seg})", api_write.create_tag, ("POST",)),
        (rf"{api}/tag/(?P<tag>{seg})", api_write.delete_tag, ("DELETE",)),
        (rf"{api}/xet-(?P<scope>read|write)-token(?:/(?P<rev>{seg}))?", xet_api.xet_token, ("GET",)),
        (rf"{xet}/v1/reconstructions/(?P<file>{seg})", xet_api.reconstruction, ("GET",)),
        (rf"{xet}/v1/chunks/(?P<prefix>{seg})/(?P<chunk>{seg})", xet_api.dedup_query, ("GET",)),
        (rf"{xet}/v1/xorbs/(?P<prefix>{seg})/(?P<xorb>{seg})", xet_api.xorb_upload, ("POST",)),
        (rf"{xet}/v1/xorbs/(?P<prefix>{seg})/(?P<xorb>{seg})", xet_api.xorb_head, ("HEAD",)),
        (rf"{xet}/v1/shards", xet_api.shard_upload, ("POST",)),
        (rf"{xet}/data/(?P<xorb>{seg})", xet_api.xorb_data, ("GET",)),
        (rf"{xet}/v2/.*", xet_api.not_v1, ("GET", "POST", "HEAD")),
        (rf"{lfs}/batch", transfer.lfs_batch, ("POST",)),
        (rf"{lfs}/verify", transfer.lfs_verify, ("POST",)),
        (rf"{lfs}/(?P<oid>[0-9a-f]{{64}})", transfer.lfs_put, ("PUT",)),
        (rf"{lfs}/(?P<oid>[0-9a-f]{{64}})", transfer.lfs_get, ("GET",)),
        (rf"/(?P<kind>kernels/){resolve[1:]}", downloads.resolve, ("GET",)),
        (resolve, downloads.resolve, ("GET",)),
        (rf"{git}/info/refs", githttp.info_refs, ("GET",)),
        (rf"{git}/git-upload-pack", githttp.upload_pack, ("POST",)),
        (rf"{git}/git-receive-pack", githttp.receive_pack, ("POST",)),
        (r"/_hub/token", page_session.token_form, ("GET",)),
        (r"/_hub/token", page_session.token_login, ("POST",)),
        (r"/_hub/logout", page_session.logout, ("POST",)),
        (r"/_hub/hub\.css", pages.stylesheet, ("GET",)),
        (r"/", pages.home, ("GET",)),
        (r"/kernels/?", pages.listing, ("GET",)),
        (page, pages.repo_page, ("GET",)),
        (rf"{page}/tree/(?P<rev>{seg})(?:/(?P<path>.+))?", pages.tree_page, ("GET",)),
        (rf"{page}/commits/(?P<rev>{seg})", pages.commits_page, ("GET",)),
    ]
    return [RawRoute(pattern, partial(_store_checked(handler) if pattern.startswith(xet) else handler, hub), methods)
            for pattern, handler, methods in table]


def _store_checked(handler: Handler) -> Handler:
    async def checked(hub: Hub, request: Request) -> Response:
        xet_api.same_store(hub, request)
        return await handler(hub, request)

    return checked

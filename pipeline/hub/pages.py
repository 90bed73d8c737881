"""The pages a person reads in a browser, server-rendered (P = "kernels/" for
kernels, "" for models, as on huggingface.co):

    GET /kernels                          every kernel the viewer may see (?q= filters by name)
    GET /P{ns}/{name}                     the card, versions, the variants of one version (?version=N),
                                          signatures, the get_kernel lines for this hub
    GET /P{ns}/{name}/tree/{rev}[/{path}] files with sizes, Xet/LFS marks and download links
    GET /P{ns}/{name}/commits/{rev}       history (?p= pages)
    GET /                                 -> /kernels

Who may see what is decided as for the API (Hub.open_read): a private
repository is a 404 page to a viewer whose token (page_session's cookie)
cannot read its namespace, and it is not listed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from urllib.parse import quote

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

import pipeline.hub.catalog as catalog
import pipeline.hub.paths as paths
from pipeline.hub.card_html import CardRenderer, RepoLinks
from pipeline.hub.context import Hub
from pipeline.hub.errors import BadRequest, EntryNotFound, HubApiError, RevisionNotFound
from pipeline.hub.http import base_url, rev_param
from pipeline.hub.page_html import SECURITY_HEADERS, error_page, page, stylesheet_response
from pipeline.hub.page_session import viewer_name
from pipeline.hub.repository import DEFAULT_BRANCH, Entry, Repository
from pipeline.hub.xet_store import RepoXet

COMMITS_PAGE = 50
MAX_FILTER = 100


@dataclass(frozen=True)
class RepoUrls:
    """The URLs of one repository's pages and files (`rev` is one percent-encoded segment)."""

    rid: paths.RepoId

    @property
    def base(self) -> str:
        return f"/{self.rid.url_prefix}{self.rid.id}"

    def tree(self, rev: str, path: str = "") -> str:
        return f"{self.base}/tree/{quote(rev, safe='')}" + (f"/{quote(path, safe='/')}" if path else "")

    def commits(self, rev: str) -> str:
        return f"{self.base}/commits/{quote(rev, safe='')}"

    def file(self, rev: str, path: str) -> str:
        return f"{self.base}/resolve/{quote(rev, safe='')}/{quote(path, safe='/')}"

    def version(self, number: int) -> str:
        return f"{self.base}?version={number}"


def html_errors(handler):
    """A refusal (missing, private, bad name) as an HTML page with its status, not JSON."""

    @functools.wraps(handler)
    async def wrapped(hub: Hub, request: Request) -> Response:
        try:
            return await handler(hub, request)
        except HubApiError as exc:
            return error_page(request, exc, viewer_name(hub, request))

    return wrapped


async def stylesheet(hub: Hub, request: Request) -> Response:
    return stylesheet_response()


async def home(hub: Hub, request: Request) -> Response:
    return RedirectResponse("/kernels", status_code=303, headers=SECURITY_HEADERS)


@html_errors
async def listing(hub: Hub, request: Request) -> Response:
    who = hub.reader(request)
    query = request.query_params.get("q", "").strip()[:MAX_FILTER]
    kernels = await anyio.to_thread.run_sync(catalog.visible_kernels, hub.storage, who, hub.auth.trusted_namespaces())
    shown = [k for k in kernels if query.lower() in k.id.lower()] if query else kernels
    return page(request, "listing.html", viewer_name=who.user, kernels=shown, total=len(kernels), query=query)


def _open(hub: Hub, request: Request) -> Repository:
    return hub.open_read(request, hub.file_rid(request))


def _chosen_version(versions: list[catalog.Version], wanted: str | None) -> catalog.Version | None:
    if not wanted:
        return versions[0] if versions else None
    if not wanted.isdigit():
        raise BadRequest(f"version must be a number, not {wanted[:20]!r}")
    for v in versions:
        if v.number == int(wanted):
            return v
    raise RevisionNotFound(f"this repository has no version {int(wanted)} (no branch v{int(wanted)})")


def repo_view(hub: Hub, repo: Repository, wanted_version: str | None, endpoint: str) -> dict:
    """Everything the repository page shows (runs in a worker thread)."""
    urls = RepoUrls(repo.rid)
    versions = catalog.versions(repo) if repo.rid.type == "kernel" else []
    chosen = _chosen_version(versions, wanted_version)
    main = repo.resolve(DEFAULT_BRANCH)
    shown = chosen.commit if chosen else main
    return dict(
        rid=repo.rid,
        urls=urls,
        private=repo.meta.private,
        trusted=repo.rid.namespace in hub.auth.trusted_namespaces(),
        card=catalog.derived(repo, "card", main, lambda: card_html(repo, main)),
        versions=versions,
        chosen=chosen,
        variants=catalog.derived(repo, "variants", shown, lambda: catalog.variants(repo, shown))
        if repo.rid.type == "kernel" else [],
        variants_rev=chosen.branch if chosen else DEFAULT_BRANCH,
        branches=repo.branches(),
        last=repo.commit_info(main),
        endpoint=endpoint,
    )


def card_html(repo: Repository, commit: str) -> str | None:
    """README.md at `commit`, rendered; its relative links and images point at that commit."""
    text = catalog.card_text(repo, commit)
    if text is None:
        return None
    urls = RepoUrls(repo.rid)
    return CardRenderer().render(text, RepoLinks(file=lambda p: urls.file(commit, p), folder=lambda p: urls.tree(commit, p)))


@html_errors
async def repo_page(hub: Hub, request: Request) -> Response:
    repo = _open(hub, request)
    try:
        view = await anyio.to_thread.run_sync(
            repo_view, hub, repo, request.query_params.get("version"), base_url(request)
        )
    finally:
        repo.close()
    return page(request, "repo.html", viewer_name=viewer_name(hub, request), **view)


def _mark(repo: Repository, entry: Entry) -> str:
    if entry.lfs is None:
        return ""
    return "Xet" if RepoXet(repo.dir).file_by_sha256(entry.lfs.oid) is not None else "LFS"


def tree_view(repo: Repository, rev: str, path: str, trusted: frozenset[str]) -> dict | str:
    """The folder's entries, or the download URL when `path` is a file."""
    commit = repo.resolve(rev)
    urls = RepoUrls(repo.rid)
    if path:
        entry = repo.entry(commit, path)
        if entry is None:
            raise EntryNotFound(f"no file or folder '{path}' at revision {rev}")
        if entry.type == "file":
            return urls.file(rev, path)
    entries = sorted(repo.list_tree(commit, path), key=lambda e: (e.type != "directory", e.path))
    rows = [(e, e.path.rsplit("/", 1)[-1], _mark(repo, e)) for e in entries]
    crumbs, acc = [], []
    for segment in path.split("/") if path else []:
        acc.append(segment)
        crumbs.append((segment, "/".join(acc)))
    return dict(rid=repo.rid, urls=urls, private=repo.meta.private, trusted=repo.rid.namespace in trusted,
                rev=rev, commit=commit, path=path,
                rows=rows, crumbs=crumbs, branches=repo.branches(), tags=repo.tags(),
                last=repo.commit_info(commit))


@html_errors
async def tree_page(hub: Hub, request: Request) -> Response:
    rev = rev_param(request)
    raw = request.path_params.get("path") or ""
    path = paths.file_path(raw, folder=True) if raw else ""
    repo = _open(hub, request)
    try:
        view = await anyio.to_thread.run_sync(tree_view, repo, rev, path, hub.auth.trusted_namespaces())
    finally:
        repo.close()
    if isinstance(view, str):
        return RedirectResponse(view, status_code=303, headers=SECURITY_HEADERS)
    return page(request, "tree.html", viewer_name=viewer_name(hub, request), **view)


@html_errors
async def commits_page(hub: Hub, request: Request) -> Response:
    rev = rev_param(request)
    number = request.query_params.get("p", "0")
    if not number.isdigit() or len(number) > 6:
        raise BadRequest("the page number must be a number")
    first = int(number) * COMMITS_PAGE
    repo = _open(hub, request)
    try:
        commit = repo.resolve(rev)
        history = await anyio.to_thread.run_sync(repo.log, commit, first + COMMITS_PAGE + 1)
        private = repo.meta.private
    finally:
        repo.close()
    return page(request, "commits.html", viewer_name=viewer_name(hub, request), rid=repo.rid,
                urls=RepoUrls(repo.rid), private=private, trusted=repo.rid.namespace in hub.auth.trusted_namespaces(),
                rev=rev, commits=history[first : first + COMMITS_PAGE],
                page_number=int(number), more=len(history) > first + COMMITS_PAGE)

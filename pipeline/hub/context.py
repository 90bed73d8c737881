"""What every endpoint works with: the repositories, the tokens, and the
checks that decide who may read or write a repository.

A browser that signed in on the pages (page_session) sends its token in the
`hub_token` cookie (HttpOnly, SameSite=Strict). The cookie counts for reads
only, where no Authorization header is sent: a page, an image of a private
card, a download link. Writes take the Authorization header alone, so no other
site can make a browser write with it."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.requests import Request

import pipeline.hub.paths as paths
from pipeline.hub.auth import ANONYMOUS, AuthStore, Principal, check_read, check_write
from pipeline.hub.http import invalid_params
from pipeline.hub.registry import Storage
from pipeline.hub.repository import Repository
from pipeline.hub.xet_store import XetStore


TOKEN_COOKIE = "hub_token"


@dataclass
class Hub:
    storage: Storage
    auth: AuthStore
    xet: XetStore = field(default=None)  # type: ignore[assignment]  # defaults to the store under storage.root

    def __post_init__(self) -> None:
        if self.xet is None:
            self.xet = XetStore(self.storage.root)

    def principal(self, request: Request) -> Principal | None:
        return self.auth.authenticate(request.headers.get("authorization"))

    def reader(self, request: Request) -> Principal:
        # A token the hub does not know reads like no token: public reads never
        # need one, and a leftover HF_TOKEN for huggingface.co must not break them.
        header = request.headers.get("authorization")
        if not header and request.cookies.get(TOKEN_COOKIE):
            header = f"Bearer {request.cookies[TOKEN_COOKIE]}"
        return self.auth.authenticate(header) or ANONYMOUS

    def api_rid(self, request: Request) -> paths.RepoId:
        """The repository of an /api/{types}/{ns}/{name}/... path."""
        invalid_params(request)
        p = request.path_params
        return paths.repo_id(paths.repo_type_from_plural(p["types"]), p["ns"], p["name"])

    def file_rid(self, request: Request) -> paths.RepoId:
        """The repository of a /[kernels/]{ns}/{name}... path (resolve, LFS, git)."""
        invalid_params(request)
        p = request.path_params
        return paths.repo_id("kernel" if p.get("kind") else "model", p["ns"], p["name"])

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

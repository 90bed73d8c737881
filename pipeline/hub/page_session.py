"""Signing in on the pages: a token of this hub, given once in a form, kept in
an HttpOnly, SameSite=Strict cookie (no script can read it, no other site's
page sends it), so private repositories the token may read appear on the
pages. Without it the pages show public repositories only.

    GET  /_hub/token    the form (and who is signed in)
    POST /_hub/token    check the token, set the cookie, back to the listing
    POST /_hub/logout   clear the cookie

A form posted from another origin is refused (the browser's Origin header).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pipeline.hub.context import TOKEN_COOKIE, Hub
from pipeline.hub.http import read_body
from pipeline.hub.page_html import SECURITY_HEADERS, page

LISTING = "/kernels"
MAX_FORM = 4096


def viewer_name(hub: Hub, request: Request) -> str:
    return hub.reader(request).user


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is None:  # not a browser's form post (curl, tests): nothing to forge
        return True
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _back_to_listing() -> Response:
    return RedirectResponse(LISTING, status_code=303, headers=SECURITY_HEADERS)


async def token_form(hub: Hub, request: Request) -> Response:
    who = hub.reader(request)
    return page(request, "token.html", viewer_name=who.user, error="", scopes=who.scopes)


async def token_login(hub: Hub, request: Request) -> Response:
    if not _same_origin(request):
        return page(request, "token.html", status=403, error="this form was posted from another site", scopes=())
    form = parse_qs((await read_body(request, MAX_FORM)).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0].strip()
    who = hub.auth.authenticate(f"Bearer {token}") if token else None
    if who is None or who.anonymous:
        return page(request, "token.html", status=401, error="this hub does not know that token", scopes=())
    response = _back_to_listing()
    response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict", path="/",
                        secure=request.url.scheme == "https")
    return response


async def logout(hub: Hub, request: Request) -> Response:
    if not _same_origin(request):
        return page(request, "token.html", status=403, error="this form was posted from another site", scopes=())
    response = _back_to_listing()
    response.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
    return response

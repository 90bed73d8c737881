"""The ASGI application: Starlette routing on the raw request path, request
logging, and the one place where domain errors become HTTP responses.

Routes match `scope["raw_path"]`, not the decoded path: huggingface_hub sends
revisions and tree paths percent-encoded with `safe=""` ("feature%2Fx"), and
only the raw path keeps the difference between a `/` separator and an encoded
one. Each matched group is percent-decoded afterwards.
"""

from __future__ import annotations

import errno
import logging
import re
import time
from collections.abc import Awaitable, Callable
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, NoMatchFound, request_response
from starlette.types import ASGIApp, Receive, Scope, Send

from pipeline.hub.errors import HubApiError, InsufficientStorage, error_parts

log = logging.getLogger("pipeline.hub")
access_log = logging.getLogger("pipeline.hub.access")

Endpoint = Callable[[Request], Awaitable[Response]]


class RawRoute(BaseRoute):
    """A route whose pattern is a regex over the raw (still encoded) path."""

    def __init__(self, pattern: str, endpoint: Endpoint, methods: tuple[str, ...]) -> None:
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.endpoint = endpoint
        self.methods = set(methods) | ({"HEAD"} if "GET" in methods else set())
        self.app = request_response(endpoint)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] != "http":
            return Match.NONE, {}
        raw = scope.get("raw_path") or scope["path"].encode()
        m = self.regex.fullmatch(raw.split(b"?", 1)[0].decode("latin-1"))
        if not m:
            return Match.NONE, {}
        try:
            params = {k: unquote(v, errors="strict") for k, v in m.groupdict().items() if v is not None}
        except UnicodeDecodeError:
            params = {"__invalid__": "path is not valid UTF-8"}
        child = {"endpoint": self.endpoint, "path_params": params}
        return (Match.FULL if scope["method"] in self.methods else Match.PARTIAL), child

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in self.methods:
            response = JSONResponse(
                {"error": "Method not allowed"}, status_code=405, headers={"Allow": ", ".join(sorted(self.methods))}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params):  # pragma: no cover - not used
        raise NoMatchFound(name, path_params)


def hub_error_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HubApiError)
    status, headers, body = error_parts(exc)
    log.debug("%s %s -> %d %s", request.method, request.url.path, status, exc.message)
    headers.update(getattr(exc, "extra_headers", {}) or {})
    body.update(getattr(exc, "extra_body", {}) or {})
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers)
    return JSONResponse(body, status_code=status, headers=headers)


def os_error_response(request: Request, exc: Exception) -> Response:
    """A full disk is the operator's problem, not a bug: 507 with a message
    (the writer that failed has already removed its temporary files)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        log.error("%s %s: %s", request.method, request.url.path, exc)
        full = InsufficientStorage(f"the hub's disk is full ({exc.strerror}): free space and retry")
        return hub_error_response(request, full)
    log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    return JSONResponse({"error": "Internal Server Error"}, status_code=500)


class AccessLog:
    """Logs `METHOD path status ms` for every request (query strings left out:
    signed upload URLs carry their signature there)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 0}

        async def send_wrapper(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            ms = (time.perf_counter() - start) * 1000
            path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
            access_log.info("%s %s %s %.1fms", scope["method"], path, status["code"] or "-", ms)


def build_app(routes: list[RawRoute]) -> ASGIApp:
    async def not_found(request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": "Not Found"}, status_code=404)

    app = Starlette(
        routes=routes,
        exception_handlers={HubApiError: hub_error_response, OSError: os_error_response, 404: not_found},
    )
    return AccessLog(app)

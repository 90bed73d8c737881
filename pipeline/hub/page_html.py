"""Rendering the pages: the jinja2 templates (autoescaped: every name, path
and commit message is escaped), the security headers every page carries, and
the HTML error page.

The Content-Security-Policy allows no script at all (`default-src 'none'`),
styles only from this hub's own stylesheet, images from this hub and, for a
card that links them, from http(s) addresses; forms post only here, and no
other site may frame a page. The pages need no JavaScript.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from pipeline.hub.errors import HubApiError, error_parts

TEMPLATES = Path(__file__).with_name("templates")
STYLESHEET = "/_hub/hub.css"
CSP = "; ".join([
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self' http: https:",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
])
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",  # pages may show private repositories
}


def human_size(n: int | None) -> str:
    if n is None:
        return ""
    size = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{n} B"  # pragma: no cover - the loop always returns


def short_date(iso: str) -> str:
    """'2026-05-01T12:34:56Z' -> '2026-05-01 12:34 UTC' (the text itself when it is not a date)."""
    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M UTC")
    except (ValueError, AttributeError):
        return iso or ""


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,  # every template, every value
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        size=human_size,
        date=short_date,
        seg=lambda s: quote(str(s), safe=""),  # one path segment (a revision)
        path=lambda s: quote(str(s), safe="/"),  # a path inside a repository
    )
    env.globals["stylesheet"] = STYLESHEET
    return env


def page(request: Request, template: str, *, status: int = 200, viewer_name: str = "", **context) -> Response:
    html = environment().get_template(template).render(viewer=viewer_name, **context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def error_page(request: Request, exc: HubApiError, viewer_name: str = "") -> Response:
    status, _, body = error_parts(exc)
    return page(request, "error.html", status=status, viewer_name=viewer_name, status_code=status,
                message=body.get("error", "error"), signed_in=bool(viewer_name))


def stylesheet_response() -> Response:
    css = (TEMPLATES / "hub.css").read_text()
    return Response(css, media_type="text/css", headers={"Cache-Control": "max-age=3600",
                                                         "X-Content-Type-Options": "nosniff"})

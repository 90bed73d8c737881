"""Reading requests: bodies with size limits, JSON, query flags, the path
parameters every endpoint shares. Everything a client sends that cannot be
read is a BadRequest (400) or PayloadTooLarge (413), never a 500."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

import pipeline.hub.jsonlimit as jsonlimit
import pipeline.hub.paths as paths
from pipeline.hub.errors import BadRequest, PayloadTooLarge
from pipeline.hub.repository import DEFAULT_BRANCH

MAX_JSON_BODY = 16 * 1024 * 1024


def invalid_params(request: Request) -> None:
    if "__invalid__" in request.path_params:
        raise BadRequest(request.path_params["__invalid__"])


async def read_body(request: Request, limit: int = MAX_JSON_BODY) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise PayloadTooLarge(f"request body is larger than {limit} bytes")
    return bytes(body)


def parse_json(raw: bytes) -> Any:
    return {} if not raw.strip() else jsonlimit.loads(raw)


async def json_body(request: Request) -> Any:
    return parse_json(await read_body(request))


async def json_object(request: Request) -> dict:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BadRequest("expected a JSON object")
    return body


def flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "").lower() in ("1", "true", "yes")


def rev_param(request: Request) -> str:
    invalid_params(request)
    return paths.revision(request.path_params.get("rev") or DEFAULT_BRANCH)


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")

"""JSON from clients, bounded: malformed JSON, or JSON nested deeper than
MAX_DEPTH, is a BadRequest (400), never a RecursionError (500)."""

from __future__ import annotations

import json
from typing import Any

from pipeline.hub.errors import BadRequest

MAX_DEPTH = 64  # the Hub's own payloads nest 4 levels at most


def depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def loads(raw: bytes | str, what: str = "request body") -> Any:
    try:
        value = json.loads(raw)
    except RecursionError:
        raise BadRequest(f"{what} nests JSON deeper than {MAX_DEPTH} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc}") from None
    if depth(value) > MAX_DEPTH:
        raise BadRequest(f"{what} nests JSON deeper than {MAX_DEPTH} levels")
    return value

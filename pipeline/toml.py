"""TOML reading with line numbers for error messages (tomllib, or tomli before 3.11)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError


def loads(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def error_line(exc: Exception) -> int | None:
    """The line tomllib names in its message ('... (at line 3, column 7)')."""
    match = re.search(r"line (\d+)", str(exc))
    return int(match.group(1)) if match else None


def key_line(text: str, key: str, table: str | None = None) -> int | None:
    """Best-effort line of `key = ...` (inside `[table]` when given), for messages.

    tomllib keeps no positions; a textual search is good enough to point a user
    at the line they wrote.
    """
    lines = text.splitlines()
    in_table = table is None
    header = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+")
    for number, line in enumerate(lines, start=1):
        m = header.match(line)
        if m:
            in_table = table is None or m.group(1).strip() == table
            if table is not None and m.group(1).strip() == table and key == "":
                return number
            continue
        if in_table and re.match(rf"^\s*\"?{re.escape(key)}\"?\s*=", line):
            return number
    return None


def read_text(path: Path) -> str:
    data = path.read_bytes()
    if b"\x00" in data:
        raise UnicodeDecodeError("utf-8", data, 0, 1, "binary file (NUL byte)")
    return data.decode("utf-8")

"""Where things are in a text file: line numbers for messages, and 'did you mean'."""

from __future__ import annotations

import difflib
import re
from typing import Iterable

from pipeline import toml

_HEADER = re.compile(r"^[ \t]*\[+[ \t]*([^\]\n]+?)[ \t]*\]+")


def line_of(text: str, pattern: str, flags: int = re.M) -> int | None:
    m = re.search(pattern, text, flags)
    return text.count("\n", 0, m.start()) + 1 if m else None


def table_line(text: str, table: str) -> int | None:
    return line_of(text, rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\]")


def table_end_line(text: str, table: str) -> int | None:
    """The last key line of `[table]` (the closing `]` of a multi-line list counts), or its header."""
    start = table_line(text, table)
    if start is None:
        return None
    last = start
    for number, line in enumerate(text.splitlines()[start:], start=start + 1):
        if _HEADER.match(line):
            break
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            last = number
    return last


def key_line_any(text: str, key: str) -> int | None:
    """The first `key = ...` line, or a `[... key]` / `[... .key.]` header, in any table."""
    k = re.escape(key)
    return (line_of(text, rf'^[ \t]*"?{k}"?[ \t]*=')
            or line_of(text, rf'^[ \t]*\[+[^\]\n]*(?:[.\[ \t"]){k}(?:["\t .\]])'))


def kernel_key_line(text: str, kernel: str, key: str) -> int | None:
    return toml.key_line(text, key, f"kernel.{kernel}") or toml.key_line(text, key, f'kernel."{kernel}"')


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""

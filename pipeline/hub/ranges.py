"""HTTP Range for every download: one `bytes=` range answered with 206 and
Content-Range, a range past the end with 416, anything else (several ranges,
another unit) with the whole file, as RFC 9110 allows."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.hub.errors import RangeNotSatisfiable

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int  # exclusive

    @property
    def length(self) -> int:
        return self.end - self.start

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end - 1}/{size}"


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The range a `Range` header asks for within `size` bytes; None = the whole file."""
    if not header:
        return None
    m = _RANGE.fullmatch(header.strip())
    if m is None or (not m.group(1) and not m.group(2)):
        return None
    first, last = m.group(1), m.group(2)
    if not first:  # "bytes=-N": the last N bytes
        n = int(last)
        if n == 0:
            err = RangeNotSatisfiable(f"range {header!r} is empty")
            err.extra_headers = {"Content-Range": f"bytes */{size}"}
            raise err
        return ByteRange(max(0, size - n), size)
    start = int(first)
    end = size if not last else min(size, int(last) + 1)
    if start >= size or end <= start:
        err = RangeNotSatisfiable(f"range {header!r} starts past the end of the file ({size} bytes)")
        err.extra_headers = {"Content-Range": f"bytes */{size}"}
        raise err
    return ByteRange(start, end)

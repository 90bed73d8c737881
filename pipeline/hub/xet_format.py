"""The binary objects of the Xet protocol (version 1.0): xorbs (a run of
compressed chunks) and shards (file reconstructions plus xorb listings).

Everything here is pure: bytes in, frozen values out, `XetFormatError` (a
BadRequest, 400) for anything malformed. Chunk decompression uses the `lz4`
package's frame format, as xet-core writes it.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

import lz4.frame

from pipeline.hub.errors import BadRequest
from pipeline.hub.xet_hash import Chunk, chunk_hash, keyed

CHUNK_HEADER = 8
MAX_CHUNK = 128 * 1024  # a chunk's unpacked size limit
MAX_XORB = 65 * 1024 * 1024  # serialized chunks: 64 MiB of data plus their headers (up to 8192 x 8 bytes)
XORB_FOOTER_IDENT = b"XETBLOB"  # xet-core appends its own index after the chunks; we read the chunks

SHARD_TAG = bytes(
    [72, 70, 82, 101, 112, 111, 77, 101, 116, 97, 68, 97, 116, 97, 0, 85,
     105, 103, 69, 106, 123, 129, 87, 131, 165, 189, 217, 92, 205, 209, 74, 169]
)  # fmt: skip  "HFRepoMetaData\0" + magic bytes (spec "Shard", MDB_SHARD_HEADER_TAG)
SHARD_HEADER_VERSION = 2
SHARD_FOOTER_VERSION = 1
SHARD_FOOTER_SIZE = 200
ENTRY = 48
BOOKEND = b"\xff" * 32 + bytes(16)
FLAG_VERIFICATION = 1 << 31
FLAG_METADATA_EXT = 1 << 30
MAX_SHARD = 64 * 1024 * 1024

NONE, LZ4, BG4_LZ4 = 0, 1, 2


class XetFormatError(BadRequest): ...


class XetCheckFailed(BadRequest): ...  # well-formed, but a hash does not match (the spec answers 400)


# -- xorbs ----------------------------------------------------------------------------
@dataclass(frozen=True)
class XorbChunk:
    hash: bytes
    offset: int  # of its header in the xorb
    stored: int  # header + compressed bytes
    size: int  # unpacked


def ungroup4(data: bytes) -> bytes:
    """Undo byte grouping: group i holds the bytes at positions i, i+4, i+8 ..."""
    n = len(data)
    out = bytearray(n)
    start = 0
    for i in range(4):
        count = n // 4 + (1 if i < n % 4 else 0)
        out[i::4] = data[start : start + count]
        start += count
    return bytes(out)


def decode_chunk(scheme: int, payload: bytes, size: int) -> bytes:
    try:
        if scheme == NONE:
            data = payload
        elif scheme == LZ4:
            data = lz4.frame.decompress(payload)
        elif scheme == BG4_LZ4:
            data = ungroup4(lz4.frame.decompress(payload))
        else:
            raise XetFormatError(f"unknown chunk compression scheme {scheme}")
    except RuntimeError as exc:  # lz4.frame's error for corrupt input
        raise XetFormatError(f"chunk does not decompress: {exc}") from None
    if len(data) != size:
        raise XetFormatError(f"chunk unpacks to {len(data)} bytes, its header says {size}")
    return data


def chunk_header(data: bytes | memoryview, offset: int) -> tuple[int, int, int]:
    """(compression scheme, compressed size, unpacked size) of the chunk at `offset`."""
    if offset + CHUNK_HEADER > len(data):
        raise XetFormatError(f"truncated chunk header at byte {offset}")
    version, c0, c1, c2, scheme, u0, u1, u2 = bytes(data[offset : offset + CHUNK_HEADER])
    if version != 0:
        raise XetFormatError(f"chunk header version {version} at byte {offset} (expected 0)")
    compressed, size = c0 | c1 << 8 | c2 << 16, u0 | u1 << 8 | u2 << 16
    if size > MAX_CHUNK or offset + CHUNK_HEADER + compressed > len(data):
        raise XetFormatError(f"chunk at byte {offset} is larger than the protocol allows or truncated")
    return scheme, compressed, size


def read_chunk(data: bytes | memoryview, offset: int) -> tuple[bytes, int]:
    """(unpacked bytes, offset of the next chunk) of the chunk at `offset`."""
    scheme, compressed, size = chunk_header(data, offset)
    start = offset + CHUNK_HEADER
    return decode_chunk(scheme, bytes(data[start : start + compressed]), size), start + compressed


def parse_xorb(body: bytes | memoryview) -> tuple[list[XorbChunk], int]:
    """The chunks of a serialized xorb (bytes, or a memoryview of a mapped file),
    each hashed from its unpacked bytes, and where the chunk data ends (a footer,
    if any, follows)."""
    view = memoryview(body)
    chunks: list[XorbChunk] = []
    offset = 0
    ident = len(XORB_FOOTER_IDENT)
    while offset < len(view) and view[offset : offset + ident] != XORB_FOOTER_IDENT:
        data, nxt = read_chunk(view, offset)
        chunks.append(XorbChunk(chunk_hash(data), offset, nxt - offset, len(data)))
        offset = nxt
        if offset > MAX_XORB:
            raise XetFormatError(f"xorb chunk data exceeds {MAX_XORB} bytes")
    if not chunks:
        raise XetFormatError("xorb holds no chunks")
    return chunks, offset


# -- shards ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Term:
    xorb: bytes
    size: int  # unpacked bytes of the chunk range
    start: int  # chunk index, inclusive
    end: int  # chunk index, exclusive
    verification: bytes | None


@dataclass(frozen=True)
class FileInfo:
    hash: bytes
    terms: tuple[Term, ...]
    sha256: bytes | None

    @property
    def size(self) -> int:
        return sum(t.size for t in self.terms)


@dataclass(frozen=True)
class XorbInfo:
    hash: bytes
    chunks: tuple[Chunk, ...]


@dataclass(frozen=True)
class Shard:
    files: tuple[FileInfo, ...]
    xorbs: tuple[XorbInfo, ...]


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise XetFormatError(f"shard is truncated at byte {self.pos}")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def _read_file(r: _Reader, file_hash: bytes, flags: int, count: int) -> FileInfo:
    raw_terms = [struct.unpack("<32sIIII", r.take(ENTRY)) for _ in range(count)]
    checks: list[bytes | None] = [None] * count
    if flags & FLAG_VERIFICATION:
        checks = [r.take(ENTRY)[:32] for _ in range(count)]
    sha256 = r.take(ENTRY)[:32] if flags & FLAG_METADATA_EXT else None
    terms = []
    for (xorb, _flags, size, start, end), check in zip(raw_terms, checks):
        if end <= start:
            raise XetFormatError(f"a term of file {file_hash.hex()} has an empty chunk range [{start}, {end})")
        terms.append(Term(xorb, size, start, end, check))
    return FileInfo(file_hash, tuple(terms), sha256)


def _read_xorb(r: _Reader, xorb: bytes, count: int) -> XorbInfo:
    chunks = []
    for _ in range(count):
        h, _start, size, _flags, _unused = struct.unpack("<32sIIII", r.take(ENTRY))
        chunks.append((h, size))
    return XorbInfo(xorb, tuple(chunks))


def parse_shard(data: bytes) -> Shard:
    """A shard as uploaded (footer optional), read linearly (spec "Shard", option 1)."""
    if len(data) > MAX_SHARD:
        raise XetFormatError(f"shard is larger than {MAX_SHARD} bytes")
    r = _Reader(data)
    tag, version, _footer_size = struct.unpack("<32sQQ", r.take(48))
    if tag != SHARD_TAG or version != SHARD_HEADER_VERSION:
        raise XetFormatError("not a shard (wrong magic tag or header version)")
    files, xorbs = [], []
    while (entry := r.take(ENTRY)) != BOOKEND:
        h, flags, count, _ = struct.unpack("<32sII8s", entry)
        files.append(_read_file(r, h, flags, count))
    while (entry := r.take(ENTRY)) != BOOKEND:
        h, _flags, count, _in_cas, _on_disk = struct.unpack("<32sIIII", entry)
        xorbs.append(_read_xorb(r, h, count))
    if any(f.terms and f.terms[0].verification is None for f in files) and any(
        f.terms and f.terms[0].verification is not None for f in files
    ):
        raise XetFormatError("verification entries must be on every file of a shard or on none")
    return Shard(tuple(files), tuple(xorbs))


def _truncated(h: bytes) -> int:
    return int.from_bytes(h[:8], "little")  # how xet-core's lookup tables key a hash


def dedup_shard(xorb: bytes, chunks: list[XorbChunk], stored: int, key: bytes, ttl_s: int = 7 * 86400) -> bytes:
    """The answer to a global dedup query: one xorb's chunk listing, chunk hashes
    keyed with `key` (the client keys its own hashes to find matches), and the
    footer with the lookup tables xet-core reads a downloaded shard through:
    xorb lookup (u64 key, u32 entry index) and chunk lookup (u64 key, u32 xorb
    entry index, u32 chunk index), sorted by key."""
    out = bytearray(struct.pack("<32sQQ", SHARD_TAG, SHARD_HEADER_VERSION, SHARD_FOOTER_SIZE))
    file_info = len(out)
    out += BOOKEND  # no files
    xorb_info = len(out)
    total = sum(c.size for c in chunks)
    out += struct.pack("<32sIIII", xorb, 0, len(chunks), total, stored)
    keyed_hashes, position = [], 0
    for c in chunks:
        keyed_hashes.append(keyed(c.hash, key))
        out += struct.pack("<32sIIII", keyed_hashes[-1], position, c.size, 0, 0)
        position += c.size
    out += BOOKEND
    file_lookup = xorb_lookup = len(out)  # no files: an empty file lookup
    out += struct.pack("<QI", _truncated(xorb), 0)
    chunk_lookup = len(out)
    for k, i in sorted((_truncated(h), i) for i, h in enumerate(keyed_hashes)):
        out += struct.pack("<QII", k, 0, i)
    footer = len(out)
    now = int(time.time())
    out += struct.pack("<9Q", SHARD_FOOTER_VERSION, file_info, xorb_info, file_lookup, 0, xorb_lookup, 1,
                       chunk_lookup, len(chunks))  # fmt: skip
    out += key + struct.pack("<QQ6QQQQQ", now, now + ttl_s, *([0] * 6), stored, 0, total, footer)
    return bytes(out)

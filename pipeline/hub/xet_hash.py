"""The hashes of the Xet protocol (spec "Hashing", protocol version 1.0):
blake3 keyed hashes of chunk data, merkle aggregation of (chunk hash, size)
pairs into xorb and file hashes, and the term verification hash a shard
upload must carry.

A hash is 32 raw bytes here. Its string form (URLs, JSON) is not the plain hex
of those bytes: each 8-byte group is read as a little-endian u64 and printed
as 16 hex digits (spec "Converting Hashes to Strings").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import blake3

# The protocol's keys (spec "Hashing").
DATA_KEY = bytes(
    [102, 151, 245, 119, 91, 149, 80, 222, 49, 53, 203, 172, 165, 151, 24, 28,
     157, 228, 33, 16, 155, 235, 43, 88, 180, 208, 176, 75, 147, 173, 242, 41]
)  # fmt: skip
INTERNAL_NODE_KEY = bytes(
    [1, 126, 197, 199, 165, 71, 41, 150, 253, 148, 102, 102, 180, 138, 2, 230,
     93, 221, 83, 111, 55, 199, 109, 210, 248, 99, 82, 230, 74, 83, 113, 63]
)  # fmt: skip
VERIFICATION_KEY = bytes(
    [127, 24, 87, 214, 206, 86, 237, 102, 18, 127, 249, 19, 231, 165, 195, 243,
     164, 205, 38, 213, 181, 219, 73, 230, 65, 36, 152, 127, 40, 251, 148, 195]
)  # fmt: skip
ZERO_KEY = bytes(32)
ZERO_HASH = bytes(32)

MEAN_BRANCHING = 4  # merkle nodes have 2 .. 2*4+1 children, cut where hash % 4 == 0
GLOBAL_DEDUP_MODULUS = 1024  # chunks whose hash % 1024 == 0 are indexed for global dedup

_HEX = re.compile(r"[0-9a-f]{64}")

Chunk = tuple[bytes, int]  # (chunk hash, unpacked size)


def to_hex(h: bytes) -> str:
    return "".join(f"{int.from_bytes(h[i : i + 8], 'little'):016x}" for i in range(0, 32, 8))


def from_hex(value: str) -> bytes | None:
    """The raw hash of a string form; None when `value` is not 64 lowercase hex digits."""
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        return None
    return b"".join(int(value[i : i + 16], 16).to_bytes(8, "little") for i in range(0, 64, 16))


def _low_u64(h: bytes) -> int:
    # The hash's last 8 bytes as a little-endian integer: what "hash % n" means.
    return int.from_bytes(h[24:32], "little")


def chunk_hash(data: bytes) -> bytes:
    return blake3.blake3(data, key=DATA_KEY).digest()


def keyed(h: bytes, key: bytes) -> bytes:
    """The protocol's HMAC: a blake3 keyed hash of the 32 hash bytes."""
    return blake3.blake3(h, key=key).digest()


def _merge(nodes: Sequence[Chunk]) -> Chunk:
    text = "".join(f"{to_hex(h)} : {size}\n" for h, size in nodes)
    return blake3.blake3(text.encode(), key=INTERNAL_NODE_KEY).digest(), sum(size for _, size in nodes)


def _next_cut(nodes: Sequence[Chunk], start: int) -> int:
    """End (exclusive) of the group of nodes that starts at `start`."""
    left = len(nodes) - start
    if left <= 2:
        return len(nodes)
    end = min(2 * MEAN_BRANCHING + 1, left)
    for i in range(2, end):
        if _low_u64(nodes[start + i][0]) % MEAN_BRANCHING == 0:
            return start + i + 1
    return start + end


def merkle_root(chunks: Sequence[Chunk]) -> bytes:
    """The aggregated hash of a sequence of chunks (the xorb hash)."""
    if not chunks:
        return ZERO_HASH
    level = list(chunks)
    while len(level) > 1:
        nxt, start = [], 0
        while start < len(level):
            end = _next_cut(level, start)
            nxt.append(_merge(level[start:end]))
            start = end
        level = nxt
    return level[0][0]


def xorb_hash(chunks: Sequence[Chunk]) -> bytes:
    return merkle_root(chunks)


def file_hash(chunks: Sequence[Chunk]) -> bytes:
    """The file hash: the merkle root, keyed again with 32 zero bytes."""
    return ZERO_HASH if not chunks else keyed(merkle_root(chunks), ZERO_KEY)


def verification_hash(chunk_hashes: Sequence[bytes]) -> bytes:
    return blake3.blake3(b"".join(chunk_hashes), key=VERIFICATION_KEY).digest()


def dedup_eligible(h: bytes) -> bool:
    """Chunks indexed for global deduplication besides each file's first chunk."""
    return _low_u64(h) % GLOBAL_DEDUP_MODULUS == 0

"""Content-addressed store for Git LFS objects, one per repository.

An upload is streamed to `lfs/tmp/` while it is hashed, and renamed to
`lfs/objects/<aa>/<bb>/<sha256>` only once its size and sha256 match the oid
the client announced; a client that dies mid-upload leaves only a temp file,
which the next start removes. Objects are per repository so that knowing a
hash never gives access to another repository's file.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from pipeline.hub.errors import BadRequest, ChecksumMismatch, PayloadTooLarge

POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1\n"
_POINTER = re.compile(rb"version https://git-lfs\.github\.com/spec/v1\noid sha256:([0-9a-f]{64})\nsize (\d+)\n")
# Chunks are gathered to this size before one trip to a worker thread, so a
# 500 MB upload costs ~500 thread hops rather than ~8000.
_WRITE_BATCH = 1 << 20


def pointer(oid: str, size: int) -> bytes:
    """The git blob that stands for an LFS object (git-lfs spec v1)."""
    return POINTER_PREFIX + f"oid sha256:{oid}\nsize {size}\n".encode()


def parse_pointer(data: bytes) -> tuple[str, int] | None:
    if len(data) > 200 or not data.startswith(POINTER_PREFIX):
        return None
    m = _POINTER.fullmatch(data)
    return (m.group(1).decode(), int(m.group(2))) if m else None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LfsStore:
    def __init__(self, repo_dir: Path) -> None:
        self.objects = Path(repo_dir) / "lfs" / "objects"
        self.tmp = Path(repo_dir) / "lfs" / "tmp"

    def path(self, oid: str) -> Path:
        return self.objects / oid[:2] / oid[2:4] / oid

    def size(self, oid: str) -> int | None:
        try:
            return self.path(oid).stat().st_size
        except FileNotFoundError:
            return None

    def has(self, oid: str, size: int | None = None) -> bool:
        actual = self.size(oid)
        return actual is not None and (size is None or actual == size)

    def clean_tmp(self) -> int:
        """Remove leftovers of interrupted uploads (only safe with no upload running)."""
        n = 0
        if self.tmp.is_dir():
            for p in self.tmp.iterdir():
                p.unlink(missing_ok=True)
                n += 1
        return n

    async def ingest(self, oid: str, size: int, chunks: AsyncIterator[bytes]) -> bool:
        """Stream `chunks` into the store as object `oid`. Returns False when the
        object was already there (the bytes are still read and checked)."""
        self.tmp.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f"{oid[:16]}.", dir=self.tmp)
        tmp = Path(tmp_name)
        f = os.fdopen(fd, "wb")
        digest = hashlib.sha256()
        received = 0
        pending: list[bytes] = []
        pending_len = 0

        def flush(parts: list[bytes]) -> None:
            block = b"".join(parts)
            digest.update(block)  # hashlib releases the GIL on large blocks
            f.write(block)

        try:
            async for chunk in chunks:
                if not chunk:
                    continue
                received += len(chunk)
                if received > size:
                    raise PayloadTooLarge(f"upload of {oid} is larger than the announced {size} bytes")
                pending.append(chunk)
                pending_len += len(chunk)
                if pending_len >= _WRITE_BATCH:
                    parts, pending, pending_len = pending, [], 0
                    await anyio.to_thread.run_sync(flush, parts)
            if pending:
                await anyio.to_thread.run_sync(flush, pending)
            if received != size:
                raise BadRequest(f"upload of {oid} ended after {received} of {size} bytes")
            if digest.hexdigest() != oid:
                raise ChecksumMismatch(f"uploaded bytes hash to {digest.hexdigest()}, not to the announced oid {oid}")
            await anyio.to_thread.run_sync(self._commit_tmp, f, tmp, oid)
            return True
        except BaseException:
            # Client gone, bad bytes or cancelled: nothing reaches the store.
            f.close()
            tmp.unlink(missing_ok=True)
            raise

    def _commit_tmp(self, f, tmp: Path, oid: str) -> None:
        f.flush()
        os.fsync(f.fileno())
        f.close()
        final = self.path(oid)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(tmp, 0o600)  # readable by the hub alone
        os.replace(tmp, final)  # same bytes if it was already there: replacing is harmless
        _fsync_dir(final.parent)

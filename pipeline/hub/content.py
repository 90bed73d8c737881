"""Where the bytes of a large file come from: its Git LFS object, or its Xet
reconstruction (a file uploaded with hf_xet is committed as an LFS pointer
naming its sha256; the repository's Xet index maps that sha256 to the file)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline.hub.repository import Repository
from pipeline.hub.xet_hash import to_hex
from pipeline.hub.xet_store import FileRecord, RepoXet, XetStore

_BLOCK = 1024 * 1024


@dataclass(frozen=True)
class Content:
    oid: str  # sha256
    size: int
    path: Path | None = None  # the LFS object, when there is one
    xet: FileRecord | None = None  # the Xet file, when there is one

    @property
    def xet_hash(self) -> str | None:
        return None if self.xet is None else to_hex(self.xet.hash)

    def iter_bytes(self, store: XetStore, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        end = self.size if end is None else end
        if self.path is None:
            assert self.xet is not None
            yield from store.read_file(self.xet, start, end)
            return
        with open(self.path, "rb") as f:
            f.seek(start)
            left = end - start
            while left > 0 and (block := f.read(min(_BLOCK, left))):
                left -= len(block)
                yield block


def xet_record(repo: Repository, store: XetStore, oid: str) -> FileRecord | None:
    h = RepoXet(repo.dir).file_by_sha256(oid)
    return None if h is None else store.file_record(h)


def find(repo: Repository, store: XetStore, oid: str) -> Content | None:
    """The stored content of LFS object `oid` in `repo`, from either store."""
    record = xet_record(repo, store, oid)
    size = repo.lfs.size(oid)
    if size is not None:
        return Content(oid, size, path=repo.lfs.path(oid), xet=record)
    if record is not None:
        return Content(oid, record.size, xet=record)
    return None


def size_of(repo: Repository, store: XetStore, oid: str) -> int | None:
    found = find(repo, store, oid)
    return None if found is None else found.size

"""The hub's Xet content-addressed store (CAS): every chunk stored once, for
every repository.

Layout under the hub's root (files 0600, directories under a 0700 root):

    xet/xorbs/aa/<xorb>.xorb     the chunk data of a verified xorb (footer dropped)
    xet/xorbs/aa/<xorb>.idx      its chunks: hash, offset, stored and unpacked size
    xet/files/aa/<file>.json     a verified file reconstruction: terms, size, sha256
    xet/chunks/aa/<chunk>        chunk -> xorb, for chunks global dedup can find
    xet/tmp/                     uploads being verified
    repos/.../<name>.git/xet/    which files (by xet hash and by sha256) and xorbs
                                 a repository may use (see RepoXet)

A xorb is stored only once its xorb hash, recomputed from its decompressed
chunks, matches the one in its URL; a file is registered only once its terms,
verification hashes, xet file hash and sha256 all check out against stored
xorbs. Knowing a hash never gives access: a repository reads only files
registered through a write token for it.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline.fsutil import atomic_write_bytes, atomic_write_text
from pipeline.hub.errors import BadRequest
from pipeline.hub.objects import LRU
from pipeline.hub.xet_format import FileInfo, Shard, XetCheckFailed, XetFormatError, XorbChunk, parse_xorb, read_chunk
from pipeline.hub.xet_hash import dedup_eligible, file_hash, from_hex, to_hex, verification_hash, xorb_hash

_IDX = struct.Struct("<32sIII")


@dataclass(frozen=True)
class StoredTerm:
    xorb: bytes
    start: int
    end: int
    size: int


@dataclass(frozen=True)
class FileRecord:
    hash: bytes
    size: int
    sha256: str
    terms: tuple[StoredTerm, ...]

    def to_json(self) -> str:
        terms = [[to_hex(t.xorb), t.start, t.end, t.size] for t in self.terms]
        return json.dumps({"size": self.size, "sha256": self.sha256, "terms": terms})

    @staticmethod
    def from_json(h: bytes, text: str) -> FileRecord:
        d = json.loads(text)
        terms = tuple(StoredTerm(from_hex(x) or b"", s, e, n) for x, s, e, n in d["terms"])
        return FileRecord(h, int(d["size"]), str(d["sha256"]), terms)


def _fanout(base: Path, h: bytes, suffix: str = "") -> Path:
    name = to_hex(h)
    return base / name[:2] / f"{name}{suffix}"


class RepoXet:
    """What one repository may use: its files (by xet hash and by sha256, the
    LFS oid its commits name) and the xorbs those files are made of."""

    def __init__(self, repo_dir: Path) -> None:
        self.dir = Path(repo_dir) / "xet"

    def file_by_sha256(self, sha256: str) -> bytes | None:
        try:
            return from_hex((self.dir / "sha256" / sha256).read_text().strip())
        except FileNotFoundError:
            return None

    def has_file(self, h: bytes) -> bool:
        return (self.dir / "files" / to_hex(h)).exists()

    def has_xorb(self, h: bytes) -> bool:
        return (self.dir / "xorbs" / to_hex(h)).exists()

    def add(self, record: FileRecord) -> None:
        for t in record.terms:
            _touch(self.dir / "xorbs" / to_hex(t.xorb))
        _touch(self.dir / "files" / to_hex(record.hash))
        target = self.dir / "sha256" / record.sha256
        if not target.exists():
            atomic_write_text(target, to_hex(record.hash))


def _touch(path: Path) -> None:
    if not path.exists():
        atomic_write_bytes(path, b"")


class XetStore:
    def __init__(self, root: Path) -> None:
        self.dir = Path(root) / "xet"
        self.xorbs = self.dir / "xorbs"
        self.files = self.dir / "files"
        self.chunks = self.dir / "chunks"
        self.tmp = self.dir / "tmp"
        for d in (self.xorbs, self.files, self.chunks, self.tmp):
            d.mkdir(parents=True, exist_ok=True)
        self._index_cache = LRU(1024)
        self.store_id = self._store_id()

    def _store_id(self) -> str:
        """This store's own id, made once per data root. It goes into the CAS URL: hf_xet keeps
        its dedup shards per CAS URL, so two Hubs served one after the other at the same address
        (a throwaway Hub per run at 127.0.0.1:8000) must not share one, or the client skips
        uploading what only the earlier store holds."""
        path = self.dir / "store-id"
        try:
            found = path.read_text(encoding="ascii").strip()
            if len(found) == 16 and all(c in "0123456789abcdef" for c in found):
                return found
        except OSError:
            pass
        new = os.urandom(8).hex()
        tmp = path.with_name(f".store-id.{os.getpid()}")
        tmp.write_text(new, encoding="ascii")
        try:
            os.link(tmp, path)  # first writer wins; a racing one reads the winner's id
        except FileExistsError:
            new = path.read_text(encoding="ascii").strip()
        finally:
            tmp.unlink(missing_ok=True)
        return new

    def clean_tmp(self) -> int:
        """Remove leftovers of interrupted uploads (only safe with no upload running)."""
        n = 0
        for p in self.tmp.iterdir():
            p.unlink(missing_ok=True)
            n += 1
        return n

    # -- xorbs ---------------------------------------------------------------------------
    def xorb_path(self, h: bytes) -> Path:
        return _fanout(self.xorbs, h, ".xorb")

    def has_xorb(self, h: bytes) -> bool:
        return self.xorb_path(h).is_file() and _fanout(self.xorbs, h, ".idx").is_file()

    def new_tmp(self) -> Path:
        fd, name = tempfile.mkstemp(prefix="xorb.", dir=self.tmp)
        os.close(fd)
        return Path(name)

    def put_xorb(self, h: bytes, body: bytes) -> bool:
        """Verify and store a serialized xorb given as bytes (see put_xorb_file)."""
        tmp = self.new_tmp()
        tmp.write_bytes(body)
        return self.put_xorb_file(h, tmp)

    def put_xorb_file(self, h: bytes, tmp: Path) -> bool:
        """Verify the serialized xorb received into `tmp` (one of new_tmp()) and
        move it into the store; False when it was stored already. `tmp` is gone
        afterwards either way. The file is mapped, not read: memory stays flat."""
        try:
            with open(tmp, "r+b") as f:
                if os.fstat(f.fileno()).st_size == 0:
                    raise XetFormatError("xorb holds no chunks")
                with mmap.mmap(f.fileno(), 0) as mapped:
                    with memoryview(mapped) as view:
                        chunks, end = parse_xorb(view)
                actual = xorb_hash([(c.hash, c.size) for c in chunks])
                if actual != h:
                    raise XetCheckFailed(f"xorb chunks hash to {to_hex(actual)}, not to {to_hex(h)} named in the URL")
                if self.has_xorb(h):
                    return False
                f.truncate(end)  # xet-core's footer repeats what the .idx holds
                f.flush()
                os.fsync(f.fileno())
            index = b"".join(_IDX.pack(c.hash, c.offset, c.stored, c.size) for c in chunks)
            self._write(_fanout(self.xorbs, h, ".idx"), index)
            self.xorb_path(h).parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, self.xorb_path(h))  # present last: a xorb exists once its data does
        finally:
            tmp.unlink(missing_ok=True)
        for c in chunks:
            if dedup_eligible(c.hash):
                self._index_chunk(c.hash, h)
        return True

    def _write(self, path: Path, data: bytes) -> None:
        # Temporaries in xet/tmp: a restart clears what a crash left there.
        atomic_write_bytes(path, data, tmp_dir=self.tmp)

    def xorb_index(self, h: bytes) -> list[XorbChunk] | None:
        cached = self._index_cache.get(h)
        if cached is not None:
            return cached
        try:
            raw = _fanout(self.xorbs, h, ".idx").read_bytes()
        except FileNotFoundError:
            return None
        out = [XorbChunk(*_IDX.unpack_from(raw, i)) for i in range(0, len(raw), _IDX.size)]
        self._index_cache.put(h, out)
        return out

    def read_chunks(self, h: bytes, start: int, end: int) -> Iterator[bytes]:
        """The unpacked bytes of chunks [start, end) of a stored xorb, one chunk at a time."""
        index = self.xorb_index(h) or []
        with open(self.xorb_path(h), "rb") as f:
            for c in index[start:end]:
                f.seek(c.offset)
                yield read_chunk(f.read(c.stored), 0)[0]

    # -- files -----------------------------------------------------------------------------
    def file_record(self, h: bytes) -> FileRecord | None:
        try:
            return FileRecord.from_json(h, _fanout(self.files, h, ".json").read_text())
        except FileNotFoundError:
            return None

    def read_file(self, record: FileRecord, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """Bytes [start, end) of a registered file, reconstructed from its terms."""
        end = record.size if end is None else end
        position = 0
        for term in record.terms:
            if position >= end:
                return
            if position + term.size <= start:
                position += term.size
                continue
            for chunk in self.read_chunks(term.xorb, term.start, term.end):
                lo, hi = max(start - position, 0), min(end - position, len(chunk))
                if lo < hi:
                    yield chunk[lo:hi]
                position += len(chunk)

    def register(self, shard: Shard, repo: RepoXet) -> int:
        """Check every file of an uploaded shard and make it readable in `repo`;
        returns how many files were new to the store."""
        new = 0
        for info in shard.files:
            record = self.file_record(info.hash)
            if record is None or info.sha256 is None or record.sha256 != to_hex(info.sha256):
                record = self._verify_file(info)
                self._write(_fanout(self.files, info.hash, ".json"), record.to_json().encode())
                new += 1
            if record.terms:
                first = self.xorb_index(record.terms[0].xorb) or []
                self._index_chunk(first[record.terms[0].start].hash, record.terms[0].xorb)
            repo.add(record)
        return new

    def _verify_file(self, info: FileInfo) -> FileRecord:
        name = to_hex(info.hash)
        if info.sha256 is None:
            raise XetFormatError(f"file {name} has no sha256 (metadata extension): it cannot be committed")
        chunks, terms = [], []
        for t in info.terms:
            index = self.xorb_index(t.xorb)
            if index is None:
                raise BadRequest(f"file {name} references xorb {to_hex(t.xorb)}, which was never uploaded")
            if t.end > len(index):
                raise XetFormatError(f"file {name}: chunk range [{t.start}, {t.end}) is outside xorb {to_hex(t.xorb)}")
            used = index[t.start : t.end]
            held = sum(c.size for c in used)
            if t.size != held:
                raise XetFormatError(f"file {name}: a term says {t.size} bytes, its chunks hold {held}")
            if t.verification is None or t.verification != verification_hash([c.hash for c in used]):
                raise XetCheckFailed(f"file {name}: a term's verification hash does not match its chunks")
            chunks.extend((c.hash, c.size) for c in used)
            terms.append(StoredTerm(t.xorb, t.start, t.end, t.size))
        if file_hash(chunks) != info.hash:
            raise XetCheckFailed(f"the chunks of file {name} hash to {to_hex(file_hash(chunks))}")
        # The shard stores the sha256 like a xet hash: its string form is the usual hex digest.
        record = FileRecord(info.hash, info.size, to_hex(info.sha256), tuple(terms))
        digest = hashlib.sha256()
        for block in self.read_file(record):
            digest.update(block)
        if digest.hexdigest() != record.sha256:
            raise XetCheckFailed(f"file {name} hashes to sha256 {digest.hexdigest()}, its shard says {record.sha256}")
        return record

    # -- global deduplication ------------------------------------------------------------
    def _index_chunk(self, chunk: bytes, xorb: bytes) -> None:
        path = _fanout(self.chunks, chunk)
        if not path.exists():
            self._write(path, to_hex(xorb).encode())

    def xorb_of_chunk(self, chunk: bytes) -> bytes | None:
        try:
            return from_hex(_fanout(self.chunks, chunk).read_text().strip())
        except FileNotFoundError:
            return None

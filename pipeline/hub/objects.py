"""The git object store of one repository: reading and writing blobs, trees
and commits through gitdb (pure Python, no `git` subprocess per request), and
making new objects durable before a ref points at them.

Object ids are immutable, so parsed trees and blob sizes are cached per hub
(`Caches`) and shared by every `Repository` opened on it.
"""

from __future__ import annotations

import ctypes
import io
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import gitdb
from git.objects.fun import tree_entries_from_data
from gitdb.base import IStream
from gitdb.util import bin_to_hex, hex_to_bin

from pipeline.hub.errors import RevisionNotFound
from pipeline.hub.lfs import parse_pointer

TREE_MODE = 0o40000
FILE_MODE = 0o100644
_FSYNC_ONE_BY_ONE = 16

Flat = dict[str, tuple[int, bytes]]  # path -> (mode, binary object id), files only


@dataclass(frozen=True)
class LfsInfo:
    oid: str
    size: int
    pointer_size: int


@dataclass(frozen=True)
class CommitInfo:
    id: str
    title: str
    message: str
    author: str
    date: str  # ISO 8601, UTC
    parents: tuple[str, ...]
    tree: str


class LRU:
    """A small thread-safe LRU keyed by git object id (immutable, so never stale)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        return None

    def put(self, key, value) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)


@dataclass
class Caches:
    trees: LRU = field(default_factory=lambda: LRU(4096))  # tree id -> parsed entries
    blobs: LRU = field(default_factory=lambda: LRU(65536))  # blob id -> (size, LfsInfo | None)
    # What the pages derive from one commit of one repository: (what, repo, commit id) -> value.
    # A rendered card (~100 kB for a generated one) takes 100+ ms to parse: parsed once per commit.
    pages: LRU = field(default_factory=lambda: LRU(256))


def iso_utc(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _syncfs(path: Path) -> bool:
    """syncfs(2) on the filesystem holding `path` (Linux); False if unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY)
        try:
            return libc.syncfs(fd) == 0
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        return False


def _tree_sort_key(item: tuple[str, int, bytes]) -> bytes:
    name, mode, _ = item
    # git orders a tree's entries by name, comparing a subtree as "name/".
    return name.encode() + (b"/" if mode == TREE_MODE else b"")


def _ident(author: str) -> str:
    return f"{author or 'anonymous'} <{author or 'anonymous'}@hub.local> {int(time.time())} +0000"


def parse_commit(sha: str, data: bytes) -> CommitInfo:
    head, _, body = data.decode("utf-8", "replace").partition("\n\n")
    tree, parents, author, stamp = "", [], "", 0
    for line in head.splitlines():
        key, _, value = line.partition(" ")
        if key == "tree":
            tree = value
        elif key == "parent":
            parents.append(value)
        elif key == "committer":
            when = value.rpartition("> ")[2]
            stamp = int(when.split()[0]) if when else 0
        elif key == "author":
            author = value.split(" <", 1)[0]
    return CommitInfo(
        id=sha,
        title=body.split("\n", 1)[0],
        message=body,
        author=author,
        date=iso_utc(stamp),
        parents=tuple(parents),
        tree=tree,
    )


class ObjectStore:
    """The objects of one bare repository."""

    def __init__(self, directory: Path, caches: Caches) -> None:
        self.dir = Path(directory)
        self.odb = gitdb.GitDB(str(self.dir / "objects"))
        self.caches = caches

    # -- reading -----------------------------------------------------------------
    def has(self, hexsha: str) -> bool:
        return self.odb.has_object(hex_to_bin(hexsha))

    def kind(self, hexsha: str) -> bytes:
        return self.odb.info(hex_to_bin(hexsha)).type

    def read(self, binsha: bytes) -> bytes:
        return self.odb.stream(binsha).read()

    def tree_entries(self, binsha: bytes) -> list[tuple[bytes, int, str]]:
        cached = self.caches.trees.get(binsha)
        if cached is None:
            cached = tree_entries_from_data(self.read(binsha))
            self.caches.trees.put(binsha, cached)
        return cached

    def blob_info(self, binsha: bytes) -> tuple[int, LfsInfo | None]:
        cached = self.caches.blobs.get(binsha)
        if cached is None:
            size = self.odb.info(binsha).size
            lfs = None
            if size <= 200:
                data = self.read(binsha)
                parsed = parse_pointer(data)
                if parsed is not None:
                    lfs = LfsInfo(oid=parsed[0], size=parsed[1], pointer_size=len(data))
            cached = (lfs.size if lfs else size, lfs)
            self.caches.blobs.put(binsha, cached)
        return cached

    def commit_info(self, sha: str) -> CommitInfo:
        stream = self.odb.stream(hex_to_bin(sha))
        if stream.type != b"commit":
            raise RevisionNotFound(f"{sha} is not a commit")
        return parse_commit(sha, stream.read())

    def flatten(self, tree: bytes) -> Flat:
        flat: Flat = {}

        def walk(binsha: bytes, prefix: str) -> None:
            for child, mode, name in self.tree_entries(binsha):
                if mode == TREE_MODE:
                    walk(child, f"{prefix}{name}/")
                else:
                    flat[f"{prefix}{name}"] = (mode, child)

        walk(tree, "")
        return flat

    def missing(self, sha: str) -> str | None:
        """What a commit lacks to be complete (itself, its tree, anything the tree
        reaches), or None when every object is in the store."""
        try:
            if not self.has(sha):
                return f"commit {sha} is missing"
            stack = [hex_to_bin(self.commit_info(sha).tree)]
            while stack:
                binsha = stack.pop()
                if not self.odb.has_object(binsha):
                    return f"tree {bin_to_hex(binsha).decode()} is missing"
                for child, mode, _ in tree_entries_from_data(self.read(binsha)):
                    if mode == TREE_MODE:
                        stack.append(child)
                    elif not self.odb.has_object(child):
                        return f"blob {bin_to_hex(child).decode()} is missing"
            return None
        except Exception as exc:  # a corrupt object reads as damage, never as a crash
            return f"cannot read the objects of {sha}: {exc}"

    # -- writing -------------------------------------------------------------------
    def store(self, kind: bytes, data: bytes, written: list[bytes]) -> bytes:
        istream = self.odb.store(IStream(kind, len(data), io.BytesIO(data)))
        written.append(istream.binsha)
        return istream.binsha

    def fsync(self, written: Sequence[bytes]) -> None:
        """Make new objects durable before the ref that reaches them moves.
        Many objects: one syncfs() of the filesystem beats one fsync each."""
        if len(set(written)) > _FSYNC_ONE_BY_ONE and _syncfs(self.dir):
            return
        dirs = set()
        for binsha in set(written):
            hexsha = bin_to_hex(binsha).decode()
            path = self.dir / "objects" / hexsha[:2] / hexsha[2:]
            if path.exists():
                _fsync_path(path)
                dirs.add(path.parent)
        for d in dirs:
            _fsync_path(d)

    def quarantine(self) -> Quarantine:
        return Quarantine(self)

    def write_tree(self, flat: Flat, written: list[bytes]) -> str:
        nested: dict = {}
        for path, (mode, binsha) in flat.items():
            *dirs, leaf = path.split("/")
            node = nested
            for d in dirs:
                node = node.setdefault(d, {})
            node[leaf] = (mode, binsha)

        def write(node: dict) -> bytes:
            items = []
            for name, value in node.items():
                if isinstance(value, dict):
                    items.append((name, TREE_MODE, write(value)))
                else:
                    items.append((name, value[0], value[1]))
            items.sort(key=_tree_sort_key)
            data = b"".join(f"{mode:o} {name}".encode() + b"\0" + binsha for name, mode, binsha in items)
            return self.store(b"tree", data, written)

        return bin_to_hex(write(nested)).decode()

    def write_tag(self, name: str, target: str, message: str, author: str, written: list[bytes]) -> str:
        lines = [f"object {target}", "type commit", f"tag {name}", f"tagger {_ident(author)}"]
        data = ("\n".join(lines) + "\n\n" + message.strip() + "\n").encode("utf-8")
        return bin_to_hex(self.store(b"tag", data, written)).decode()

    def write_commit(
        self, tree: str, parents: list[str], summary: str, description: str, author: str, written: list[bytes]
    ) -> str:
        ident = _ident(author)
        message = summary.strip() or "commit"
        if description.strip():
            message += "\n\n" + description.strip()
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {ident}", f"committer {ident}"]
        data = ("\n".join(lines) + "\n\n" + message + "\n").encode("utf-8")
        return bin_to_hex(self.store(b"commit", data, written)).decode()


class Quarantine(ObjectStore):
    """Objects of one request, written apart (`<repo>/incoming/<id>/`, as git
    quarantines a push) until the commit that needs them is ready: `fsync()`
    moves them into the store, `discard()` drops them. A failed commit, a disk
    that filled up, a client that went away: nothing is left in the store."""

    def __init__(self, store: ObjectStore) -> None:
        super().__init__(store.dir, store.caches)
        self.odb = store.odb  # reads see the repository's objects
        incoming = self.dir / "incoming"
        incoming.mkdir(exist_ok=True)
        self.path = Path(tempfile.mkdtemp(prefix="q.", dir=incoming))
        self._staged = gitdb.LooseObjectDB(str(self.path))

    def store(self, kind: bytes, data: bytes, written: list[bytes]) -> bytes:
        istream = self._staged.store(IStream(kind, len(data), io.BytesIO(data)))
        written.append(istream.binsha)
        return istream.binsha

    def fsync(self, written: Sequence[bytes]) -> None:
        """Move the staged objects into the repository, then make them durable."""
        moved = []
        for binsha in set(written):
            hexsha = bin_to_hex(binsha).decode()
            src = self.path / hexsha[:2] / hexsha[2:]
            if not src.exists():
                continue  # already in the store
            target = self.dir / "objects" / hexsha[:2] / hexsha[2:]
            target.parent.mkdir(exist_ok=True)
            os.replace(src, target)  # same bytes if it was there already
            moved.append(binsha)
        ObjectStore.fsync(self, moved)

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

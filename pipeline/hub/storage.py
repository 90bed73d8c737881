"""Hub repositories as bare git repositories (gitpython).

Layout under the hub's root:

    repos/<type>s/<namespace>/<name>.git/   a bare git repository
        hub.json                            visibility, creation time
        lfs/objects/aa/bb/<sha256>          LFS objects (see lfs.py)
    repos/.staging/                         repositories being created

A Hub commit is a git commit, a branch a git branch; an LFS file is a git-lfs
pointer blob in the tree plus its object in the repository's LFS store.

Writing a commit: objects first (blobs, trees, the commit; each fsynced), then
`git update-ref <ref> <new> <old>`, git's own atomic compare-and-swap. A crash
at any point leaves the ref at a complete commit; `recover()` at start removes
the leftovers (temp objects, stale ref locks) and checks every branch head.
Commits to one repository are serialised by a thread lock plus an flock, so a
second process on the same root waits too.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import io
import json
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import git
import gitdb
from git.objects.fun import tree_entries_from_data
from gitdb.base import IStream
from gitdb.util import bin_to_hex, hex_to_bin

from pipeline.fsutil import atomic_write_text
from pipeline.hub import lfs as lfs_mod
from pipeline.hub.errors import (
    BadRequest,
    Conflict,
    EntryNotFound,
    LfsObjectMissing,
    RepoNotFound,
    RevisionNotFound,
    StaleParent,
)
from pipeline.hub.lfs import LfsStore
from pipeline.hub.paths import RepoId, is_commit_id

TREE_MODE = 0o40000
FILE_MODE = 0o100644
ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
DEFAULT_BRANCH = "main"


# -- values handed to the routes ----------------------------------------------
@dataclass(frozen=True)
class LfsInfo:
    oid: str
    size: int
    pointer_size: int


@dataclass(frozen=True)
class Entry:
    path: str
    type: str  # "file" | "directory"
    oid: str  # git blob or tree id
    size: int
    lfs: LfsInfo | None = None

    def to_json(self) -> dict:
        d: dict = {"type": self.type, "oid": self.oid, "size": self.size, "path": self.path}
        if self.lfs is not None:
            d["lfs"] = {"oid": self.lfs.oid, "size": self.lfs.size, "pointerSize": self.lfs.pointer_size}
        return d


@dataclass(frozen=True)
class CommitInfo:
    id: str
    title: str
    message: str
    author: str
    date: str  # ISO 8601, UTC
    parents: tuple[str, ...]
    tree: str


@dataclass(frozen=True)
class RepoMeta:
    private: bool
    created_at: str
    author: str


# Operations of one commit, in the order the client sent them.
@dataclass(frozen=True)
class AddBlob:
    path: str
    blob: str  # hex id of a blob already written with Repository.write_blob


@dataclass(frozen=True)
class AddLfs:
    path: str
    oid: str
    size: int | None  # None when copying an existing LFS file


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class DeleteFolder:
    path: str


Operation = AddBlob | AddLfs | DeleteFile | DeleteFolder


class _LRU:
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


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_FSYNC_ONE_BY_ONE = 16


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


class Storage:
    """Every repository under one root."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.repos_dir = self.root / "repos"
        self.staging = self.repos_dir / ".staging"
        self.repos_dir.mkdir(parents=True, exist_ok=True)
        self.staging.mkdir(exist_ok=True)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.trees = _LRU(4096)  # tree id -> parsed entries
        self.blobs = _LRU(65536)  # blob id -> (size, LfsInfo | None)

    def repo_dir(self, rid: RepoId) -> Path:
        return self.repos_dir / f"{rid.type}s" / rid.namespace / f"{rid.name}.git"

    def exists(self, rid: RepoId) -> bool:
        return (self.repo_dir(rid) / "hub.json").is_file()

    def open(self, rid: RepoId) -> Repository:
        if not self.exists(rid):
            raise RepoNotFound(f"Repository Not Found for {rid.type} {rid.id}")
        return Repository(self, rid)

    @contextlib.contextmanager
    def lock(self, rid: RepoId) -> Iterator[None]:
        key = str(rid)
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock, open(self.repo_dir(rid) / "hub.lock", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def namespaces(self) -> set[str]:
        found = set()
        for type_dir in self.repos_dir.glob("*s"):
            if type_dir.is_dir() and not type_dir.name.startswith("."):
                found.update(p.name for p in type_dir.iterdir() if p.is_dir())
        return found

    def repositories(self) -> list[Path]:
        return sorted(p for p in self.repos_dir.glob("*s/*/*.git") if (p / "hub.json").is_file())

    # -- create / delete -------------------------------------------------------
    def create(self, rid: RepoId, *, private: bool, author: str) -> Repository:
        final = self.repo_dir(rid)
        if self.exists(rid):
            raise Conflict(f"You already created this {rid.type} repo: {rid.id}")
        tmp = Path(tempfile.mkdtemp(prefix=f"{rid.name}.", dir=self.staging))
        try:
            repo = git.Repo.init(tmp, bare=True, initial_branch=DEFAULT_BRANCH)
            with repo.config_writer() as cfg:
                cfg.set_value("core", "logAllRefUpdates", "true")  # reflog: what recover() rolls back to
                cfg.set_value("core", "fsync", "reference")
                cfg.set_value("gc", "auto", "0")
            meta = {
                "type": rid.type,
                "id": rid.id,
                "private": bool(private),
                "created_at": _now_iso(),
                "author": author,
            }
            atomic_write_text(tmp / "hub.json", json.dumps(meta, indent=2))
            staged = Repository(self, rid, directory=tmp)
            # The Hub starts every repository with one commit on main.
            tree = staged._write_tree_from_flat({}, written=[])
            commit = staged._write_commit(tree, [], "initial commit", "", author, written=[])
            staged._update_ref(f"refs/heads/{DEFAULT_BRANCH}", commit, ZERO, "create repository")
            repo.close()
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)  # atomic; fails if a concurrent create won
            except OSError:
                raise Conflict(f"You already created this {rid.type} repo: {rid.id}") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return Repository(self, rid)

    def delete(self, rid: RepoId) -> None:
        directory = self.repo_dir(rid)
        if not self.exists(rid):
            raise RepoNotFound(f"Repository Not Found for {rid.type} {rid.id}")
        with self.lock(rid):
            trash = Path(tempfile.mkdtemp(prefix="deleted.", dir=self.staging))
            os.rename(directory, trash / "repo")
        shutil.rmtree(trash, ignore_errors=True)

    # -- start-up ----------------------------------------------------------------
    def recover(self) -> list[str]:
        """Bring the root back to a consistent state after a crash. Only call with
        no other server running on this root (the server holds an exclusive lock)."""
        notes: list[str] = []
        for leftover in self.staging.iterdir():
            shutil.rmtree(leftover, ignore_errors=True)
            notes.append(f"removed unfinished repository creation {leftover.name}")
        for directory in self.repositories():
            notes.extend(self._recover_repo(directory))
        return notes

    def _recover_repo(self, directory: Path) -> list[str]:
        notes: list[str] = []
        meta = json.loads((directory / "hub.json").read_text())
        type_, (ns, name) = meta["type"], meta["id"].split("/")
        rid = RepoId(type_, ns, name)
        for tmp in (directory / "objects").glob("obj*"):
            tmp.unlink(missing_ok=True)  # gitdb's temp files of an interrupted write
        for lock in list((directory / "refs").rglob("*.lock")) + list(directory.glob("packed-refs.lock")):
            lock.unlink(missing_ok=True)
            notes.append(f"{rid}: removed stale ref lock {lock.relative_to(directory)}")
        removed = LfsStore(directory).clean_tmp()
        if removed:
            notes.append(f"{rid}: removed {removed} unfinished LFS upload(s)")
        repo = Repository(self, rid, directory=directory)
        for name_, sha in repo.branches():
            if repo.is_complete(sha):
                continue
            good = next((c for c in repo.reflog(f"refs/heads/{name_}") if c != sha and repo.is_complete(c)), None)
            if good is None:
                notes.append(f"{rid}: branch {name_} points to incomplete commit {sha} and has no complete predecessor")
                continue
            repo._update_ref(f"refs/heads/{name_}", good, sha, "recover: roll back to a complete commit")
            notes.append(f"{rid}: branch {name_} rolled back from incomplete {sha} to {good}")
        return notes


class Repository:
    """One Hub repository. Cheap to create: open one per request."""

    def __init__(self, storage: Storage, rid: RepoId, *, directory: Path | None = None) -> None:
        self.storage = storage
        self.rid = rid
        self.dir = directory or storage.repo_dir(rid)
        # gitpython for the repository and its refs; objects through gitdb
        # directly: pure-Python reads of loose objects this server wrote itself,
        # instead of a `git cat-file` subprocess per request.
        self.git = git.Repo(self.dir)
        self.odb = gitdb.GitDB(str(self.dir / "objects"))
        self.lfs = LfsStore(self.dir)

    def close(self) -> None:
        self.git.close()

    @property
    def meta(self) -> RepoMeta:
        d = json.loads((self.dir / "hub.json").read_text())
        return RepoMeta(private=bool(d.get("private")), created_at=d.get("created_at", ""), author=d.get("author", ""))

    # -- refs --------------------------------------------------------------------
    def branches(self) -> list[tuple[str, str]]:
        return sorted(
            (h.name, git.SymbolicReference.dereference_recursive(self.git, h.path))
            for h in git.Head.list_items(self.git)
        )

    def tags(self) -> list[tuple[str, str]]:
        return sorted((t.name, t.commit.hexsha) for t in git.TagReference.list_items(self.git))

    def branch_head(self, branch: str) -> str | None:
        try:
            return git.SymbolicReference.dereference_recursive(self.git, f"refs/heads/{branch}")
        except (ValueError, OSError):
            return None

    def resolve(self, revision: str) -> str:
        """A branch, tag or full commit id -> commit id (RevisionNotFound otherwise)."""
        if is_commit_id(revision):
            if self._has(revision) and self.odb.info(hex_to_bin(revision)).type == b"commit":
                return revision
            raise RevisionNotFound(f"Invalid rev id: {revision}")
        for ref in (f"refs/heads/{revision}", f"refs/tags/{revision}"):
            try:
                sha = git.SymbolicReference.dereference_recursive(self.git, ref)
            except (ValueError, OSError):
                continue
            if ref.startswith("refs/tags/"):
                sha = git.TagReference(self.git, ref).commit.hexsha
            return sha
        raise RevisionNotFound(f"Invalid rev id: {revision}")

    def reflog(self, ref: str) -> list[str]:
        """Commit ids a ref pointed to, newest first."""
        path = self.dir / "logs" / ref
        if not path.is_file():
            return []
        shas = []
        for line in path.read_text(errors="replace").splitlines():
            parts = line.split(" ", 2)
            if len(parts) >= 2 and is_commit_id(parts[1]):
                shas.append(parts[1])
        return list(reversed(shas))

    def _update_ref(self, ref: str, new: str, old: str, message: str) -> None:
        # git's update-ref takes a lock file and checks `old` under it: the
        # compare-and-swap that makes a stale writer fail instead of overwrite.
        try:
            self.git.git.update_ref("-m", message, ref, new, old)
        except git.GitCommandError as exc:
            raise StaleParent(f"{ref} moved while committing; refresh and try again ({exc.stderr.strip()})") from None

    # -- objects -----------------------------------------------------------------
    def _has(self, hexsha: str) -> bool:
        return self.odb.has_object(hex_to_bin(hexsha))

    def _read(self, binsha: bytes) -> bytes:
        return self.odb.stream(binsha).read()

    def _store(self, kind: bytes, data: bytes, written: list[bytes]) -> bytes:
        istream = self.odb.store(IStream(kind, len(data), io.BytesIO(data)))
        written.append(istream.binsha)
        return istream.binsha

    def _fsync_objects(self, written: Sequence[bytes]) -> None:
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

    def write_blob(self, data: bytes) -> str:
        """Store a small file's bytes (before the commit that uses them; an
        object no ref reaches is harmless). Made durable by commit()."""
        if lfs_mod.parse_pointer(data) is not None:
            raise BadRequest("a regular file must not be a Git LFS pointer: upload the file itself as an LFS file")
        return bin_to_hex(self._store(b"blob", data, [])).decode()

    def tree_entries(self, binsha: bytes) -> list[tuple[bytes, int, str]]:
        cached = self.storage.trees.get(binsha)
        if cached is None:
            cached = tree_entries_from_data(self._read(binsha))
            self.storage.trees.put(binsha, cached)
        return cached

    def blob_info(self, binsha: bytes) -> tuple[int, LfsInfo | None]:
        cached = self.storage.blobs.get(binsha)
        if cached is None:
            size = self.odb.info(binsha).size
            lfs = None
            if size <= 200:
                data = self._read(binsha)
                parsed = lfs_mod.parse_pointer(data)
                if parsed is not None:
                    lfs = LfsInfo(oid=parsed[0], size=parsed[1], pointer_size=len(data))
            cached = (lfs.size if lfs else size, lfs)
            self.storage.blobs.put(binsha, cached)
        return cached

    def read_blob(self, oid: str) -> bytes:
        return self._read(hex_to_bin(oid))

    def commit_info(self, sha: str) -> CommitInfo:
        stream = self.odb.stream(hex_to_bin(sha))
        if stream.type != b"commit":
            raise RevisionNotFound(f"{sha} is not a commit")
        head, _, body = stream.read().decode("utf-8", "replace").partition("\n\n")
        tree, parents, author, stamp = "", [], "", 0
        for line in head.splitlines():
            key, _, value = line.partition(" ")
            if key == "tree":
                tree = value
            elif key == "parent":
                parents.append(value)
            elif key == "committer":
                name_email, _, when = value.rpartition("> ")
                stamp = int(when.split()[0]) if when else 0
            if key == "author":
                author = value.split(" <", 1)[0]
        date = datetime.fromtimestamp(stamp, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        return CommitInfo(
            id=sha,
            title=body.split("\n", 1)[0],
            message=body,
            author=author,
            date=date,
            parents=tuple(parents),
            tree=tree,
        )

    def log(self, sha: str, limit: int = 1000) -> list[CommitInfo]:
        out = []
        while sha and len(out) < limit:
            info = self.commit_info(sha)
            out.append(info)
            sha = info.parents[0] if info.parents else ""
        return out

    def last_commit(self, sha: str, path: str) -> CommitInfo:
        out = self.git.git.log("-1", "--format=%H", sha, "--", path)
        return self.commit_info(out.strip() or sha)

    def is_complete(self, sha: str) -> bool:
        """The commit and everything its tree reaches are in the object store."""
        try:
            if not self._has(sha):
                return False
            tree = self.commit_info(sha).tree
            stack = [hex_to_bin(tree)]
            while stack:
                binsha = stack.pop()
                if not self.odb.has_object(binsha):
                    return False
                for child, mode, _ in tree_entries_from_data(self._read(binsha)):
                    if mode == TREE_MODE:
                        stack.append(child)
                    elif not self.odb.has_object(child):
                        return False
            return True
        except Exception:
            return False

    # -- reading trees -------------------------------------------------------------
    def _tree_of(self, commit: str) -> bytes:
        return hex_to_bin(self.commit_info(commit).tree)

    def _walk_to(self, commit: str, path: str) -> tuple[bytes, int] | None:
        """(object id, mode) of `path` in the commit's tree; the root for ""."""
        binsha, mode = self._tree_of(commit), TREE_MODE
        if not path:
            return binsha, mode
        for segment in path.split("/"):
            if mode != TREE_MODE:
                return None
            for child, child_mode, name in self.tree_entries(binsha):
                if name == segment:
                    binsha, mode = child, child_mode
                    break
            else:
                return None
        return binsha, mode

    def _entry(self, path: str, binsha: bytes, mode: int) -> Entry:
        if mode == TREE_MODE:
            return Entry(path=path, type="directory", oid=bin_to_hex(binsha).decode(), size=0)
        size, lfs = self.blob_info(binsha)
        return Entry(path=path, type="file", oid=bin_to_hex(binsha).decode(), size=size, lfs=lfs)

    def entry(self, commit: str, path: str) -> Entry | None:
        found = self._walk_to(commit, path)
        return None if found is None else self._entry(path, *found)

    def list_tree(self, commit: str, path: str = "", *, recursive: bool = False) -> list[Entry]:
        found = self._walk_to(commit, path)
        if found is None or found[1] != TREE_MODE:
            raise EntryNotFound(f"Entry Not Found: no folder '{path}' at revision {commit}")
        out: list[Entry] = []

        def walk(binsha: bytes, prefix: str) -> None:
            for child, mode, name in self.tree_entries(binsha):
                child_path = f"{prefix}{name}"
                out.append(self._entry(child_path, child, mode))
                if recursive and mode == TREE_MODE:
                    walk(child, child_path + "/")

        walk(found[0], f"{path}/" if path else "")
        return out

    def _flatten(self, tree: bytes) -> dict[str, tuple[int, bytes]]:
        flat: dict[str, tuple[int, bytes]] = {}

        def walk(binsha: bytes, prefix: str) -> None:
            for child, mode, name in self.tree_entries(binsha):
                if mode == TREE_MODE:
                    walk(child, f"{prefix}{name}/")
                else:
                    flat[f"{prefix}{name}"] = (mode, child)

        walk(tree, "")
        return flat

    # -- writing -------------------------------------------------------------------
    def _write_tree_from_flat(self, flat: dict[str, tuple[int, bytes]], written: list[bytes]) -> str:
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
            return self._store(b"tree", data, written)

        return bin_to_hex(write(nested)).decode()

    def _write_commit(
        self, tree: str, parents: list[str], summary: str, description: str, author: str, written: list[bytes]
    ) -> str:
        ident = f"{author or 'anonymous'} <{author or 'anonymous'}@hub.local> {int(time.time())} +0000"
        message = summary.strip() or "commit"
        if description.strip():
            message += "\n\n" + description.strip()
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {ident}", f"committer {ident}"]
        data = ("\n".join(lines) + "\n\n" + message + "\n").encode("utf-8")
        return bin_to_hex(self._store(b"commit", data, written)).decode()

    def create_branch(self, branch: str, start: str | None) -> str:
        with self.storage.lock(self.rid):
            if self.branch_head(branch) is not None:
                raise Conflict(f"Reference already exists: refs/heads/{branch}")
            sha = self.resolve(start or DEFAULT_BRANCH)
            self._update_ref(f"refs/heads/{branch}", sha, ZERO, f"create branch {branch}")
            return sha

    def delete_branch(self, branch: str) -> None:
        if branch == DEFAULT_BRANCH:
            raise BadRequest(f"the default branch '{DEFAULT_BRANCH}' cannot be deleted")
        with self.storage.lock(self.rid):
            head = self.branch_head(branch)
            if head is None:
                raise RevisionNotFound(f"Invalid rev id: {branch}")
            self.git.git.update_ref("-d", f"refs/heads/{branch}", head)

    def commit(
        self,
        branch: str,
        operations: Sequence[Operation],
        *,
        summary: str,
        description: str = "",
        parent: str | None = None,
        author: str = "",
    ) -> str:
        """Apply `operations` on top of `branch` and move the branch, atomically.

        Refused with StaleParent when `parent` is given and is not the head."""
        with self.storage.lock(self.rid):
            head = self.branch_head(branch)
            if head is None:
                raise RevisionNotFound(f"Invalid rev id: {branch} (create the branch first)")
            if parent is not None and parent != head:
                raise StaleParent(
                    f"A commit has happened since {parent[:12]}: the head of '{branch}' is now {head[:12]}."
                    " Refresh and try again."
                )
            written: list[bytes] = [hex_to_bin(op.blob) for op in operations if isinstance(op, AddBlob)]
            flat = self._flatten(self._tree_of(head))
            dirs = {"/".join(p.split("/")[:i]) for p in flat for i in range(1, p.count("/") + 1)}
            for op in operations:
                if isinstance(op, (AddBlob, AddLfs)):
                    self._check_no_conflict(flat, dirs, op.path)
                    if isinstance(op, AddBlob):
                        flat[op.path] = (FILE_MODE, hex_to_bin(op.blob))
                    else:
                        size = self.lfs.size(op.oid)
                        if size is None or (op.size is not None and size != op.size):
                            raise LfsObjectMissing(
                                f"LFS object {op.oid} for '{op.path}' was never uploaded to this repository"
                                + ("" if size is None else f" with size {op.size}")
                            )
                        flat[op.path] = (FILE_MODE, self._store(b"blob", lfs_mod.pointer(op.oid, size), written))
                    dirs.update("/".join(op.path.split("/")[:i]) for i in range(1, op.path.count("/") + 1))
                elif isinstance(op, DeleteFile):
                    if op.path not in flat:
                        raise EntryNotFound(f"A file with this name doesn't exist: '{op.path}'")
                    del flat[op.path]
                elif isinstance(op, DeleteFolder):
                    prefix = op.path.rstrip("/") + "/"
                    for p in [p for p in flat if p.startswith(prefix)]:
                        del flat[p]
            tree = self._write_tree_from_flat(flat, written)
            commit = self._write_commit(tree, [head], summary, description, author, written)
            self._fsync_objects(written)
            self._update_ref(
                f"refs/heads/{branch}", commit, head, f"commit: {summary.splitlines()[0] if summary else ''}"
            )
            return commit

    @staticmethod
    def _check_no_conflict(flat: dict, dirs: set[str], path: str) -> None:
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in flat:
                raise BadRequest(f"cannot add '{path}': '{prefix}' is a file")
        if path in dirs and any(p.startswith(path + "/") for p in flat):
            raise BadRequest(f"cannot add '{path}': it is a folder")

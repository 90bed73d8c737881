"""The registry: which repositories exist under a hub's root, where each one
lives, creating and deleting them, and the lock that serialises writes to one.

Layout under the hub's root:

    repos/<type>s/<namespace>/<name>.git/   a bare git repository
        hub.json                            visibility, creation time
        hub.lock                            flock held while a ref moves
        lfs/objects/aa/bb/<sha256>          LFS objects (see lfs.py)
    repos/.staging/                         repositories being created or deleted

A repository appears whole (created in .staging/, renamed into place) and
disappears whole (renamed into .staging/, then removed). Writes to one
repository are serialised by a thread lock plus an flock, so a second process
on the same root waits too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import git

from pipeline.fsutil import atomic_write_text
from pipeline.hub.errors import Conflict, RepoNotFound
from pipeline.hub.objects import Caches
from pipeline.hub.paths import RepoId
from pipeline.hub.repository import DEFAULT_BRANCH, ZERO, Repository, read_meta


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


class Storage:
    """Every repository under one root."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.repos_dir = self.root / "repos"
        self.staging = self.repos_dir / ".staging"
        self.repos_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.repos_dir, 0o700)
        self.staging.mkdir(exist_ok=True, mode=0o700)
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self.caches = Caches()

    def repo_dir(self, rid: RepoId) -> Path:
        return self.repos_dir / f"{rid.type}s" / rid.namespace / f"{rid.name}.git"

    def exists(self, rid: RepoId) -> bool:
        return (self.repo_dir(rid) / "hub.json").is_file()

    def open(self, rid: RepoId) -> Repository:
        if not self.exists(rid):
            raise RepoNotFound(f"Repository Not Found for {rid.type} {rid.id}")
        return self._repository(rid, self.repo_dir(rid))

    def _repository(self, rid: RepoId, directory: Path) -> Repository:
        return Repository(directory, rid, self.caches, lambda: self.lock(rid, directory))

    @contextlib.contextmanager
    def lock(self, rid: RepoId, directory: Path | None = None) -> Iterator[None]:
        key = str(rid)
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock, open((directory or self.repo_dir(rid)) / "hub.lock", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def has_public(self, namespace: str) -> bool:
        for directory in self.repos_dir.glob(f"*s/{namespace}/*.git"):
            try:
                if not read_meta(directory).get("private"):
                    return True
            except (OSError, ValueError):
                continue
        return False

    def repositories(self) -> list[Path]:
        return sorted(p for p in self.repos_dir.glob("*s/*/*.git") if (p / "hub.json").is_file())

    def open_dir(self, directory: Path) -> Repository:
        """The repository in `directory` (one of `repositories()`), named by its hub.json."""
        meta = read_meta(directory)
        namespace, name = meta["id"].split("/")
        return self._repository(RepoId(meta["type"], namespace, name), directory)

    # -- create / delete -------------------------------------------------------
    def create(self, rid: RepoId, *, private: bool, author: str) -> Repository:
        final = self.repo_dir(rid)
        if self.exists(rid):
            raise Conflict(f"You already created this {rid.type} repo: {rid.id}")
        tmp = Path(tempfile.mkdtemp(prefix=f"{rid.name}.", dir=self.staging))
        try:
            self._initialise(tmp, rid, private=private, author=author)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)  # atomic; fails if a concurrent create won
            except OSError:
                raise Conflict(f"You already created this {rid.type} repo: {rid.id}") from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return self.open(rid)

    def _initialise(self, directory: Path, rid: RepoId, *, private: bool, author: str) -> None:
        repo = git.Repo.init(directory, bare=True, initial_branch=DEFAULT_BRANCH)
        with repo.config_writer() as cfg:
            cfg.set_value("core", "logAllRefUpdates", "true")  # reflog: what `hub fsck` proposes to go back to
            cfg.set_value("core", "fsync", "reference")
            cfg.set_value("gc", "auto", "0")
        repo.close()
        meta = {"type": rid.type, "id": rid.id, "private": bool(private), "created_at": _now_iso(), "author": author}
        atomic_write_text(directory / "hub.json", json.dumps(meta, indent=2))
        staged = self._repository(rid, directory)
        # The Hub starts every repository with one commit on main.
        written: list[bytes] = []
        tree = staged.objects.write_tree({}, written)
        commit = staged.objects.write_commit(tree, [], "initial commit", "", author, written)
        staged.objects.fsync(written)
        staged.update_ref(f"refs/heads/{DEFAULT_BRANCH}", commit, ZERO, "create repository")
        staged.close()

    def delete(self, rid: RepoId) -> None:
        directory = self.repo_dir(rid)
        if not self.exists(rid):
            raise RepoNotFound(f"Repository Not Found for {rid.type} {rid.id}")
        with self.lock(rid):
            trash = Path(tempfile.mkdtemp(prefix="deleted.", dir=self.staging))
            os.rename(directory, trash / "repo")
        shutil.rmtree(trash, ignore_errors=True)

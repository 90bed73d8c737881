"""One Hub repository: a bare git repository with its refs (branches, tags),
its trees as the API shows them, and its LFS store.

Refs move only through `git update-ref <ref> <new> <old>`, git's own atomic
compare-and-swap, under the repository lock (see registry.py). Commits are
built in commits.py.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git
from gitdb.util import bin_to_hex, hex_to_bin

from pipeline.hub.errors import BadRequest, Conflict, EntryNotFound, RevisionNotFound, StaleParent
from pipeline.hub.lfs import LfsStore, parse_pointer
from pipeline.hub.objects import TREE_MODE, Caches, CommitInfo, LfsInfo, ObjectStore
from pipeline.hub.paths import RepoId, is_commit_id

ZERO = "0" * 40
DEFAULT_BRANCH = "main"

Lock = Callable[[], contextlib.AbstractContextManager]


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
class RepoMeta:
    private: bool
    created_at: str
    author: str


def read_meta(directory: Path) -> dict:
    return json.loads((Path(directory) / "hub.json").read_text())


class Repository:
    """One Hub repository. Cheap to create: open one per request."""

    def __init__(self, directory: Path, rid: RepoId, caches: Caches, lock: Lock) -> None:
        self.rid = rid
        self.dir = Path(directory)
        self.lock = lock
        # gitpython for the repository and its refs; objects through gitdb.
        self.git = git.Repo(self.dir)
        self.objects = ObjectStore(self.dir, caches)
        self.lfs = LfsStore(self.dir)

    def close(self) -> None:
        self.git.close()

    @property
    def meta(self) -> RepoMeta:
        d = read_meta(self.dir)
        return RepoMeta(private=bool(d.get("private")), created_at=d.get("created_at", ""), author=d.get("author", ""))

    # -- refs --------------------------------------------------------------------
    def branches(self) -> list[tuple[str, str]]:
        return sorted(
            (h.name, git.SymbolicReference.dereference_recursive(self.git, h.path))
            for h in git.Head.list_items(self.git)
        )

    def _ref(self, ref: str) -> str | None:
        try:
            return git.SymbolicReference.dereference_recursive(self.git, ref)
        except (ValueError, OSError):
            return None

    def peel(self, sha: str) -> str:
        """A tag object -> the commit it names (a commit id stays as it is)."""
        for _ in range(8):  # a tag of a tag of ...: bounded
            if self.objects.kind(sha) != b"tag":
                return sha
            sha = self.objects.read(hex_to_bin(sha)).split(b"\n", 1)[0].split(b" ", 1)[1].decode()
        raise RevisionNotFound(f"tag chain too long at {sha}")

    def tags(self) -> list[tuple[str, str]]:
        out = []
        for t in git.TagReference.list_items(self.git):
            sha = self._ref(t.path)
            if sha is not None:
                out.append((t.name, self.peel(sha)))
        return sorted(out)

    def branch_head(self, branch: str) -> str | None:
        return self._ref(f"refs/heads/{branch}")

    def resolve(self, revision: str) -> str:
        """A branch, tag, full ref name or full commit id -> commit id (RevisionNotFound otherwise)."""
        if is_commit_id(revision):
            if self.objects.has(revision) and self.objects.kind(revision) == b"commit":
                return revision
            raise RevisionNotFound(f"Invalid rev id: {revision}")
        full = revision.startswith(("refs/heads/", "refs/tags/"))
        for ref in [revision] if full else [f"refs/heads/{revision}", f"refs/tags/{revision}"]:
            sha = self._ref(ref)
            if sha is not None:
                return self.peel(sha)
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

    def update_ref(self, ref: str, new: str, old: str, message: str) -> None:
        # git's update-ref takes a lock file and checks `old` under it: the
        # compare-and-swap that makes a stale writer fail instead of overwrite.
        try:
            self.git.git.update_ref("-m", message, ref, new, old)
        except git.GitCommandError as exc:
            raise StaleParent(f"{ref} moved while committing; refresh and try again ({exc.stderr.strip()})") from None

    def create_branch(self, branch: str, start: str | None) -> str:
        with self.lock():
            if self.branch_head(branch) is not None:
                raise Conflict(f"Reference already exists: refs/heads/{branch}")
            sha = self.resolve(start or DEFAULT_BRANCH)
            self.update_ref(f"refs/heads/{branch}", sha, ZERO, f"create branch {branch}")
            return sha

    def delete_branch(self, branch: str) -> None:
        if branch == DEFAULT_BRANCH:
            raise BadRequest(f"the default branch '{DEFAULT_BRANCH}' cannot be deleted")
        with self.lock():
            head = self.branch_head(branch)
            if head is None:
                raise RevisionNotFound(f"Invalid rev id: {branch}")
            self.git.git.update_ref("-d", f"refs/heads/{branch}", head)

    def create_tag(self, tag: str, revision: str, message: str, author: str) -> str:
        """A tag on `revision`: annotated when there is a message (as git tag -m)."""
        with self.lock():
            if self._ref(f"refs/tags/{tag}") is not None:
                raise Conflict(f"Reference already exists: refs/tags/{tag}")
            target = self.resolve(revision)
            sha = target
            if message.strip():
                written: list[bytes] = []
                sha = self.objects.write_tag(tag, target, message, author, written)
                self.objects.fsync(written)
            self.update_ref(f"refs/tags/{tag}", sha, ZERO, f"create tag {tag}")
            return target

    def delete_tag(self, tag: str) -> None:
        with self.lock():
            sha = self._ref(f"refs/tags/{tag}")
            if sha is None:
                raise RevisionNotFound(f"Invalid rev id: {tag} (no such tag)")
            self.git.git.update_ref("-d", f"refs/tags/{tag}", sha)

    # -- reading -------------------------------------------------------------------
    def write_blob(self, data: bytes, objects: ObjectStore | None = None) -> str:
        """Store a small file's bytes before the commit that uses them (in
        `objects`, the commit's quarantine; an object no ref reaches is harmless)."""
        if parse_pointer(data) is not None:
            raise BadRequest("a regular file must not be a Git LFS pointer: upload the file itself as an LFS file")
        return bin_to_hex((objects or self.objects).store(b"blob", data, [])).decode()

    def read_blob(self, oid: str) -> bytes:
        return self.objects.read(hex_to_bin(oid))

    def commit_info(self, sha: str) -> CommitInfo:
        return self.objects.commit_info(sha)

    def tree_of(self, commit: str) -> bytes:
        return hex_to_bin(self.commit_info(commit).tree)

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

    def _walk_to(self, commit: str, path: str) -> tuple[bytes, int] | None:
        """(object id, mode) of `path` in the commit's tree; the root for ""."""
        binsha, mode = self.tree_of(commit), TREE_MODE
        if not path:
            return binsha, mode
        for segment in path.split("/"):
            if mode != TREE_MODE:
                return None
            for child, child_mode, name in self.objects.tree_entries(binsha):
                if name == segment:
                    binsha, mode = child, child_mode
                    break
            else:
                return None
        return binsha, mode

    def _entry(self, path: str, binsha: bytes, mode: int) -> Entry:
        if mode == TREE_MODE:
            return Entry(path=path, type="directory", oid=bin_to_hex(binsha).decode(), size=0)
        size, lfs = self.objects.blob_info(binsha)
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
            for child, mode, name in self.objects.tree_entries(binsha):
                child_path = f"{prefix}{name}"
                out.append(self._entry(child_path, child, mode))
                if recursive and mode == TREE_MODE:
                    walk(child, child_path + "/")

        walk(found[0], f"{path}/" if path else "")
        return out

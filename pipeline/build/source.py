"""Which revision of the project a build comes from: the kernel id and provenance.

kernel-builder names a build `_<python_name>_<backend>_<7 hex>[_dirty]`
(ops_identifier.rs). Ours takes the 7 hex from the git *tree* of the project
directory at HEAD (so a commit elsewhere in the repository does not rename
this kernel's ops), and adds `_dirty` when a tracked file of the project
differs from HEAD or an untracked one would be built. Without git (no
repository, no gitpython, or a project not committed yet) the hash is the
git-style tree hash of the project's files as they are (`content_tree_hash`);
an uncommitted project in a repository is also marked dirty.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pipeline.fsutil import git_blob_sha1_bytes

# Never part of a project's sources: build output, VCS data, caches.
SKIP_DIRS = {".git", "build", "result", "__pycache__", ".pytest_cache", ".venv", "node_modules",
             ".mypy_cache", ".ruff_cache"}


def project_files(root: Path, *, exclude: Iterable[Path] = ()) -> list[str]:
    """Every file of the project, relative POSIX paths, sorted; no build output or caches."""
    root = Path(root)
    excluded = {Path(p).resolve() for p in exclude}
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIP_DIRS and not d.startswith("result-") and (here / d).resolve() not in excluded
        )
        for name in filenames:
            if name.endswith((".pyc", ".pyo")) or name == "result":
                continue
            path = here / name
            if path.is_symlink() and not path.exists():
                continue
            files.append(path.relative_to(root).as_posix())
    return sorted(files)


def _git_mode(path: Path) -> bytes:
    if path.is_symlink():
        return b"120000"
    return b"100755" if os.access(path, os.X_OK) else b"100644"


def _blob_sha(path: Path) -> bytes:
    data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
    return bytes.fromhex(git_blob_sha1_bytes(data))


def content_tree_hash(root: Path, files: Iterable[str]) -> str:
    """The hash git would give a tree holding exactly `files` (40 hex).

    Same object format as git (`tree <size>\\0` + `<mode> <name>\\0<sha>`
    entries in git's order), so a clean checkout whose tracked files are
    `files` hashes to its `git rev-parse HEAD:<dir>`.
    """
    tree: dict = {}
    for rel in files:
        node = tree
        parts = rel.split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = Path(root, rel)

    def write(node: dict) -> bytes:
        entries = []
        for name, value in node.items():
            if isinstance(value, dict):
                entries.append((name + "/", b"40000", name, write(value)))
            else:
                entries.append((name, _git_mode(value), name, _blob_sha(value)))
        entries.sort(key=lambda e: e[0].encode())
        body = b"".join(mode + b" " + name.encode() + b"\0" + sha for _, mode, name, sha in entries)
        return hashlib.sha1(b"tree %d\0" % len(body) + body).digest()

    return write(tree).hex()


@dataclass(frozen=True)
class SourceState:
    tree: str  # 40 hex: git tree of the project dir at HEAD, or content_tree_hash
    commit: str | None  # HEAD commit of the repository, when there is one
    dirty: bool
    method: str  # "git" | "content"

    @property
    def unique_id(self) -> str:
        return self.tree[:7] + ("_dirty" if self.dirty else "")


def source_state(root: Path, files: list[str] | None = None) -> SourceState:
    root = Path(root).resolve()
    files = project_files(root) if files is None else files
    state = _git_state(root, files)
    if state is not None:
        return state
    return SourceState(tree=content_tree_hash(root, files), commit=None, dirty=False, method="content")


def _git_state(root: Path, files: list[str]) -> SourceState | None:
    try:
        import git  # gitpython; absent on some machines (the GPU box): fall back
    except ImportError:
        return None
    try:
        repo = git.Repo(root, search_parent_directories=True)
        top = Path(repo.working_tree_dir).resolve()
        rel = root.relative_to(top).as_posix()
    except (git.exc.GitError, ValueError, TypeError, OSError):
        return None
    try:
        commit = repo.head.commit
    except (ValueError, git.exc.GitError):  # no commit yet
        return SourceState(tree=content_tree_hash(root, files), commit=None, dirty=True, method="content")
    try:
        tree = commit.tree if rel == "." else commit.tree / rel
        tree_sha = tree.hexsha
    except KeyError:  # the project is not committed
        return SourceState(tree=content_tree_hash(root, files), commit=commit.hexsha, dirty=True, method="content")
    try:
        status = repo.git.status("--porcelain=v1", "-z", "--untracked-files=all", "--", rel)
    except git.exc.GitError:
        return None
    wanted = set(files)
    dirty = False
    tokens = status.split("\0")
    i = 0
    while i < len(tokens):
        entry = tokens[i]
        i += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            i += 1  # the rename's source path follows
        if code == "??":
            inside = Path(top, path).resolve()
            try:
                if inside.relative_to(root).as_posix() in wanted:
                    dirty = True
            except ValueError:
                pass
        elif code != "!!":
            dirty = True
    return SourceState(tree=tree_sha, commit=commit.hexsha, dirty=dirty, method="git")


def kernel_id(python_name: str, backend: str, unique_id: str) -> str:
    return f"_{python_name}_{backend}_{unique_id}"

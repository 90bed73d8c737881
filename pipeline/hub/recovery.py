"""After a crash, and on demand: `recover()` at start removes what interrupted
writes left behind; `fsck()` (`hub fsck`) reports every repository in a bad
state with the problem and the fix.

Neither ever moves a ref. A commit's objects are durable before its ref moves
(commits.py), so a head that points to an incomplete commit means the disk
lost data or someone edited the repository: the commit may have been
acknowledged to a client, and rolling the branch back would silently undo it.
It is reported instead, with the command that would roll it back.

`recover()` only runs with no other server on the root (the server holds an
exclusive lock on it while it runs).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pipeline.hub.lfs import parse_pointer
from pipeline.hub.paths import forbidden_segment, has_control
from pipeline.hub.registry import Storage
from pipeline.hub.repository import Repository
from pipeline.hub.xet_hash import from_hex
from pipeline.hub.xet_store import RepoXet, XetStore


@dataclass(frozen=True)
class Problem:
    repo: str  # its directory
    problem: str
    fix: str


def recover(storage: Storage, xet: XetStore | None = None) -> list[str]:
    """Bring the root back to a consistent state after a crash; one note per repair."""
    notes: list[str] = []
    for leftover in storage.staging.iterdir():
        shutil.rmtree(leftover, ignore_errors=True)
        notes.append(f"removed unfinished repository creation {leftover.name}")
    if xet is not None and (n := xet.clean_tmp()):
        notes.append(f"removed {n} unfinished Xet upload(s)")
    for directory in storage.repositories():
        repo = storage.open_dir(directory)
        try:
            notes.extend(_remove_leftovers(repo))
            notes.extend(f"{repo.rid}: {p.problem} (run `hub fsck`)" for p in _head_problems(repo))
        finally:
            repo.close()
    return notes


def _remove_leftovers(repo: Repository) -> list[str]:
    notes: list[str] = []
    directory: Path = repo.dir
    for tmp in (directory / "objects").glob("obj*"):
        tmp.unlink(missing_ok=True)  # gitdb's temp files of an interrupted write
    for quarantine in (directory / "incoming").glob("*"):
        shutil.rmtree(quarantine, ignore_errors=True)  # objects of commits that never completed
        notes.append(f"{repo.rid}: removed the objects of an unfinished commit")
    for lock in list((directory / "refs").rglob("*.lock")) + list(directory.glob("packed-refs.lock")):
        lock.unlink(missing_ok=True)
        notes.append(f"{repo.rid}: removed stale ref lock {lock.relative_to(directory)}")
    removed = repo.lfs.clean_tmp()
    if removed:
        notes.append(f"{repo.rid}: removed {removed} unfinished LFS upload(s)")
    return notes


def _refs(repo: Repository) -> list[tuple[str, str]]:
    return [(f"refs/heads/{n}", s) for n, s in repo.branches()] + [(f"refs/tags/{n}", s) for n, s in repo.tags()]


def _head_problems(repo: Repository) -> list[Problem]:
    out = []
    for ref, sha in _refs(repo):
        missing = repo.objects.missing(sha)
        if missing is None:
            continue
        good = next((c for c in repo.reflog(ref) if c != sha and repo.objects.missing(c) is None), None)
        undo = (
            f"to drop it, `git -C {repo.dir} update-ref {ref} {good} {sha}` (the newest complete commit in its reflog)"
            if good
            else "no earlier complete commit is in its reflog"
        )
        out.append(
            Problem(
                str(repo.dir),
                f"{ref} points to commit {sha}, which is incomplete: {missing}",
                f"restore the repository from a backup; {undo}",
            )
        )
    return out


def _tree_problems(repo: Repository, xet: XetStore) -> list[Problem]:
    out, seen = [], set()
    registered = RepoXet(repo.dir)
    for ref, sha in _refs(repo):
        if repo.objects.missing(sha) is not None or sha in seen:
            continue
        seen.add(sha)
        for path, (_, blob) in repo.objects.flatten(repo.tree_of(sha)).items():
            if has_control(path) or any(forbidden_segment(s) for s in path.split("/")):
                out.append(Problem(str(repo.dir), f"{ref} holds the path {path!r}, which this hub refuses",
                                   f"delete it with a commit on {ref}"))  # fmt: skip
            size, _ = repo.objects.blob_info(blob)
            pointer = parse_pointer(repo.objects.read(blob)) if size <= 200 else None
            oid = pointer[0] if pointer else None
            if oid and repo.lfs.size(oid) is None and registered.file_by_sha256(oid) is None:
                out.append(Problem(str(repo.dir), f"{ref}: {path} names LFS object {oid}, which is not stored",
                                   "upload the file again (a new commit) or restore lfs/ from a backup"))  # fmt: skip
    return out


def _git_fsck(repo: Repository) -> list[Problem]:
    done = subprocess.run(
        ["git", "-C", str(repo.dir), "fsck", "--no-dangling", "--no-progress"], capture_output=True, text=True
    )
    if done.returncode == 0:
        return []
    detail = (done.stderr or done.stdout).strip().splitlines()
    return [Problem(str(repo.dir), f"git fsck: {'; '.join(detail[:5])}", "restore the repository from a backup")]


def _xet_problems(repo: Repository, xet: XetStore) -> list[Problem]:
    out = []
    files = RepoXet(repo.dir).dir / "files"
    for marker in sorted(files.iterdir()) if files.is_dir() else []:
        h = from_hex(marker.name)
        record = xet.file_record(h) if h else None
        if record is None or any(not xet.has_xorb(t.xorb) for t in record.terms):
            out.append(Problem(str(repo.dir), f"Xet file {marker.name} is registered but its data is not stored",
                               "upload the file again, or restore xet/ from a backup"))  # fmt: skip
    return out


def fsck(storage: Storage, xet: XetStore) -> list[Problem]:
    """Every problem of every repository under the root (reads only)."""
    problems: list[Problem] = []
    for directory in storage.repositories():
        try:
            repo = storage.open_dir(directory)
        except Exception as exc:  # unreadable hub.json or not a git repository at all
            problems.append(Problem(str(directory), f"cannot be opened: {exc}", "restore it from a backup"))
            continue
        try:
            problems += _head_problems(repo) + _tree_problems(repo, xet) + _xet_problems(repo, xet)
            problems += _git_fsck(repo)
        finally:
            repo.close()
    return problems


def fsck_root(root: Path) -> list[Problem]:
    return fsck(Storage(root), XetStore(root))

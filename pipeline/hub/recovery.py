"""Crash recovery at start: remove what an interrupted write left behind
(unfinished repository creations, gitdb temp objects, stale ref locks,
unfinished LFS uploads) and check every branch head.

Only run with no other server on the root (the server holds an exclusive lock
on it while it runs).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.hub.registry import Storage
from pipeline.hub.repository import Repository


def recover(storage: Storage) -> list[str]:
    """Bring the root back to a consistent state after a crash; one note per repair."""
    notes: list[str] = []
    for leftover in storage.staging.iterdir():
        shutil.rmtree(leftover, ignore_errors=True)
        notes.append(f"removed unfinished repository creation {leftover.name}")
    for directory in storage.repositories():
        repo = storage.open_dir(directory)
        try:
            notes.extend(_remove_leftovers(repo))
            notes.extend(_check_heads(repo))
        finally:
            repo.close()
    return notes


def _remove_leftovers(repo: Repository) -> list[str]:
    notes: list[str] = []
    directory: Path = repo.dir
    for tmp in (directory / "objects").glob("obj*"):
        tmp.unlink(missing_ok=True)  # gitdb's temp files of an interrupted write
    for lock in list((directory / "refs").rglob("*.lock")) + list(directory.glob("packed-refs.lock")):
        lock.unlink(missing_ok=True)
        notes.append(f"{repo.rid}: removed stale ref lock {lock.relative_to(directory)}")
    removed = repo.lfs.clean_tmp()
    if removed:
        notes.append(f"{repo.rid}: removed {removed} unfinished LFS upload(s)")
    return notes


def _check_heads(repo: Repository) -> list[str]:
    notes: list[str] = []
    for name, sha in repo.branches():
        if repo.objects.missing(sha) is None:
            continue
        ref = f"refs/heads/{name}"
        good = next((c for c in repo.reflog(ref) if c != sha and repo.objects.missing(c) is None), None)
        if good is None:
            notes.append(f"{repo.rid}: branch {name} points to incomplete commit {sha} and has no complete predecessor")
            continue
        repo.update_ref(ref, good, sha, "recover: roll back to a complete commit")
        notes.append(f"{repo.rid}: branch {name} rolled back from incomplete {sha} to {good}")
    return notes

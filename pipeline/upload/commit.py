"""Executing an upload plan: one commit per branch that has changes.

Each commit is made with `parent_commit` set to the head the plan was computed
against, so a concurrent publish makes ours fail instead of being silently
overwritten. The version branch is committed before the card on main, so the
card never announces files that are not there. A repository or branch created
here is removed again if the publish fails before anything was committed to
it, so a failed publish leaves the Hub as it was. The Hub has no commit that
spans two branches: stopped between the two commits (Ctrl-C included), the
version branch holds the files and main's card lags; the error says so, and a
rerun of the same publish makes only the missing commit.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

from pipeline.errors import PublishError
from pipeline.events import Event, Reporter, quiet
from pipeline.hubclient import MAIN, REPO_TYPE, guarded, heads, hf_bars_off, xet_available, xet_off
from pipeline.upload.plan import BranchPlan, UploadPlan, short_commit


@dataclass(frozen=True)
class CommitResult:
    branch: str
    commit: str | None
    operations: int


class ProgressReader(io.BufferedReader):
    """A file whose reads report bytes sent (huggingface_hub reads the file
    object we hand it, for LFS uploads and for inline content alike)."""

    def __init__(self, path: Path, on_read: Callable[[int], None]):
        super().__init__(io.FileIO(str(path), "rb"))
        self._on_read = on_read
        self._high = 0

    def _advance(self) -> None:
        pos = self.tell()
        if pos > self._high:  # a retry seeks back and re-reads: count bytes once
            self._on_read(pos - self._high)
            self._high = pos

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        self._advance()
        return data

    def read1(self, size: int = -1) -> bytes:
        data = super().read1(size)
        self._advance()
        return data

    def readinto(self, b) -> int:
        n = super().readinto(b)
        self._advance()
        return n


@dataclass
class _Transfer:
    """Bytes sent for one commit, reported as `transfer` events."""

    report: Reporter
    description: str
    total: int
    done: int = 0

    def advance(self, nbytes: int) -> None:
        self.done = min(self.total, self.done + nbytes)
        self.report(Event("transfer", self.description, self.done, self.total, stage="upload"))

    def finish(self) -> None:
        if self.done < self.total:
            self.done = self.total
            self.report(Event("transfer", self.description, self.done, self.total, stage="upload"))


def commit_operations(bplan: BranchPlan, transfer: _Transfer | None) -> list:
    operations: list = []
    for op in bplan.ops:
        if op.kind == "delete":
            operations.append(CommitOperationDelete(path_in_repo=op.path_in_repo))
        elif op.content is not None:
            operations.append(CommitOperationAdd(path_in_repo=op.path_in_repo, path_or_fileobj=op.content))
        else:
            operations.append(CommitOperationAdd(path_in_repo=op.path_in_repo, path_or_fileobj=str(op.local)))
    if transfer is None:
        return operations
    # upload_info (sha256, size) was computed from the path just now; every
    # read that follows is the upload itself. Files whose content appears
    # twice in one commit stay paths: huggingface_hub sends such content once
    # and fails on a second file object of it.
    counts: dict[str, int] = {}
    for add in operations:
        if isinstance(add, CommitOperationAdd) and isinstance(add.path_or_fileobj, str):
            counts[add.upload_info.sha256.hex()] = counts.get(add.upload_info.sha256.hex(), 0) + 1
    transfer.total = 0
    for add in operations:
        if isinstance(add, CommitOperationAdd) and isinstance(add.path_or_fileobj, str) \
                and counts[add.upload_info.sha256.hex()] == 1:
            transfer.total += add.upload_info.size
            add.path_or_fileobj = ProgressReader(Path(add.path_or_fileobj), transfer.advance)
    return operations


@dataclass
class _Created:
    """What this run created and may still roll back."""

    repo: bool = False
    branches: list[str] = field(default_factory=list)

    def committed(self) -> None:
        self.repo = False
        self.branches.clear()

    def rollback(self, api: HfApi, repo_id: str) -> bool:
        """Best effort: undo what this publish created before it failed. False when that failed."""
        try:
            if self.repo:
                api.delete_repo(repo_id, repo_type=REPO_TYPE)
                return True
            for branch in self.branches:
                api.delete_branch(repo_id, branch=branch, repo_type=REPO_TYPE)
        except Exception:
            return False
        return True


INTERRUPTED_EXIT = 130  # as a shell reports a process ended by Ctrl-C
RERUN = "run the same publish again: it uploads only what is missing and makes the remaining commits"


def hub_state_after(plan: UploadPlan, results: list[CommitResult], created: _Created, undone: bool) -> str:
    """What a publish that stopped part-way left on the Hub, in one sentence."""
    done = [r.branch for r in results]
    pending = [b.branch for b in plan.branches if b.ops and b.branch not in done]
    if done:
        left = f"{', '.join(done)} committed; not yet: {', '.join(pending) or 'nothing'}"
        if MAIN in pending:
            left += f" ({MAIN}'s card does not list the new files yet; they load with get_kernel already)"
        return left
    what = f"the repository {plan.repo_id}" if created.repo else \
        (f"branch {', '.join(created.branches)}" if created.branches else "")
    if not what:
        return "nothing was committed: the Hub is as it was"
    if undone:
        return f"nothing was committed, and {what}, created by this run, was deleted again: the Hub is as it was"
    return f"nothing was committed, and {what}, created by this run, could not be deleted again (it is empty)"


def _commit(api: HfApi, repo_id: str, bplan: BranchPlan, parent: str | None, *, lfs_only: bool,
            report: Reporter | None) -> CommitResult:
    # Only files go through the progress reader; generated content (the card)
    # is a few KiB sent inline with the commit.
    streamed = sum(op.size for op in bplan.ops if op.kind == "add" and op.content is None)
    transfer = _Transfer(report, f"{bplan.branch}: {len(bplan.ops)} operation(s)", streamed) \
        if report is not None and streamed else None
    operations = commit_operations(bplan, transfer)
    try:
        with (xet_off() if lfs_only else contextlib.nullcontext()), \
                (hf_bars_off() if lfs_only else contextlib.nullcontext()):
            info = guarded(f"commit to {bplan.branch} failed", repo_id,
                           lambda: api.create_commit(repo_id, operations, commit_message=bplan.message,
                                                     repo_type=REPO_TYPE, revision=bplan.branch,
                                                     parent_commit=parent))
    finally:
        for add in operations:
            if isinstance(getattr(add, "path_or_fileobj", None), ProgressReader):
                add.path_or_fileobj.close()
        if transfer is not None:
            transfer.finish()
    return CommitResult(bplan.branch, getattr(info, "oid", None), len(operations))


def _create_repo(api: HfApi, plan: UploadPlan, created: _Created) -> tuple[list[BranchPlan], dict[str, str]]:
    """Create the repository; the branch order and heads to commit against."""
    repo_id = plan.repo_id
    guarded(f"cannot create {repo_id}", repo_id, lambda: api.create_repo(repo_id, repo_type=REPO_TYPE, exist_ok=False))
    created.repo = True
    current = guarded(f"cannot read {repo_id}", repo_id, lambda: heads(api, repo_id))
    # A new repository may start with an initial commit on main (the Hugging
    # Face Hub's does) or with none; main goes first only when there is
    # nothing to create the version branch from.
    return sorted(plan.branches, key=lambda b: (b.branch == MAIN) == (MAIN in current)), current


def _branch_parent(api: HfApi, plan: UploadPlan, bplan: BranchPlan, current: dict[str, str],
                   created: _Created) -> str | None:
    """The commit to make `bplan`'s commit on, creating its branch when missing."""
    repo_id = plan.repo_id
    parent = bplan.parent_commit if plan.repo_exists else current.get(bplan.branch)
    if bplan.branch == MAIN or (bplan.exists and plan.repo_exists):
        return parent
    base = bplan.create_from if plan.repo_exists else current.get(MAIN)
    if base is None:
        base = guarded(f"cannot read {repo_id}", repo_id, lambda: heads(api, repo_id)).get(MAIN)
    guarded(f"cannot create branch {bplan.branch}", repo_id,
            lambda: api.create_branch(repo_id, branch=bplan.branch, revision=base, repo_type=REPO_TYPE))
    created.branches.append(bplan.branch)
    return base


def execute_plan(api: HfApi, plan: UploadPlan, *, report: Reporter = quiet,
                 lfs_only: bool = False) -> tuple[CommitResult, ...]:
    """Create what is missing and make one commit per branch that has changes."""
    # Both the Hugging Face Hub and the embedded Hub speak Xet: huggingface_hub
    # uses it whenever hf_xet is installed, and shows its own progress (it
    # refuses file objects). Through LFS our progress reader sees every byte.
    transfer_report = report if (lfs_only or not xet_available()) else None
    created = _Created()
    results: list[CommitResult] = []
    try:
        branches, current = (list(plan.branches), {}) if plan.repo_exists else _create_repo(api, plan, created)
        for bplan in branches:
            parent = _branch_parent(api, plan, bplan, current, created)
            if not bplan.ops:
                continue
            result = _commit(api, plan.repo_id, bplan, parent, lfs_only=lfs_only, report=transfer_report)
            results.append(result)
            if bplan.branch == MAIN:
                current[MAIN] = result.commit
            created.committed()  # committed: no longer ours to roll back
            report(Event("step", f"{result.branch}: commit {short_commit(result.commit)} "
                                 f"({result.operations} operation(s))", stage="upload"))
    except BaseException as exc:
        _stopped(api, plan, results, created, exc)
        raise
    return tuple(results)


def _stopped(api: HfApi, plan: UploadPlan, results: list[CommitResult], created: _Created,
             exc: BaseException) -> None:
    """Undo what can be undone, then say what the Hub holds and that a rerun finishes the job."""
    undone = created.rollback(api, plan.repo_id)
    state = hub_state_after(plan, results, created, undone)
    if isinstance(exc, KeyboardInterrupt):
        error = PublishError(f"interrupted: {state}", code="publish-interrupted", hint=RERUN)
        error.exit_code = INTERRUPTED_EXIT
        raise error from None
    if isinstance(exc, PublishError) and (results or not undone):
        exc.hint = f"{state}. {exc.hint or RERUN}"

"""The upload plan: the exact file operations that make the Hub hold a bundle.

`plan_upload` reads the remote trees and diffs them against the local bundle by
content (git blob sha1, or the LFS sha256): unchanged files are not sent,
stale files of a re-published variant are deleted, other variants are left
alone. A dry run prints this plan; the real run executes exactly it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal

from huggingface_hub import HfApi

from pipeline import __version__
from pipeline.bundle import Bundle
from pipeline.fsutil import git_blob_sha1, git_blob_sha1_bytes, sha256_bytes, sha256_file
from pipeline.hubclient import MAIN, REPO_TYPE, RemoteFile, RemoteState, read_remote, remote_metadata, remote_tree

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.card import CardPage

# The version whose builds main mirrors (upstream's convention for v1).
MIRRORED_VERSION = 1

# card_for(variant names the branch will hold, metadata of the kept remote ones) -> the card and
# the files it shows (pipeline.card.CardPage), or None to leave main's card alone.
CardMaker = Callable[[list[str], dict], "CardPage | None"]
# What main holds of the card's files, deleted there when a card no longer has them: the plots
# (`media/benchmark-<record>.png`) and the full tables. Other files under media/ are the owner's.
CARD_FILE_PREFIXES = ("media/benchmark-", "benchmarks.md")


@dataclass(frozen=True)
class FileOp:
    kind: Literal["add", "delete"]
    path_in_repo: str
    reason: Literal["new", "changed", "stale"]
    local: Path | None = None
    content: bytes | None = None  # generated files (the card)
    size: int = 0

    def describe(self) -> str:
        if self.kind == "delete":
            return f"delete {self.path_in_repo} ({self.reason})"
        return f"add    {self.path_in_repo} ({self.reason}, {human_size(self.size)})"

    def to_json(self) -> dict:
        return {"op": self.kind, "path": self.path_in_repo, "reason": self.reason, "size": self.size,
                "local": str(self.local) if self.local else None}


@dataclass(frozen=True)
class BranchPlan:
    branch: str
    exists: bool
    parent_commit: str | None  # the head this plan was computed against
    create_from: str | None = None  # commit a missing branch is created from
    ops: tuple[FileOp, ...] = ()
    unchanged: int = 0
    message: str = ""

    def to_json(self) -> dict:
        return {"branch": self.branch, "exists": self.exists, "parent_commit": self.parent_commit,
                "create_from": self.create_from, "unchanged_files": self.unchanged,
                "operations": [op.to_json() for op in self.ops]}


@dataclass(frozen=True)
class UploadPlan:
    repo_id: str
    repo_exists: bool
    branches: tuple[BranchPlan, ...]  # in commit order
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.repo_exists and all(b.exists and not b.ops for b in self.branches)

    @property
    def upload_bytes(self) -> int:
        return sum(op.size for b in self.branches for op in b.ops if op.kind == "add")

    def lines(self) -> list[str]:
        """The exact operations, as `--dry-run` prints them."""
        out = []
        if not self.repo_exists:
            out.append(f"create repository {self.repo_id} (type {REPO_TYPE})")
        for b in self.branches:
            if not b.exists and b.branch != MAIN:
                at = f" at {short_commit(b.create_from)}" if b.create_from else ""
                out.append(f"create branch {b.branch} from {MAIN}{at}")
            if b.ops:
                parent = f"parent {short_commit(b.parent_commit)}" if b.parent_commit else "first commit"
                out.append(f"commit to {b.branch} ({parent}): {b.message}")
                out.extend(f"  {op.describe()}" for op in b.ops)
            else:
                out.append(f"{b.branch}: no changes ({b.unchanged} file(s) already identical)")
        out.extend(self.notes)
        return out

    def to_json(self) -> dict:
        return {"repo_id": self.repo_id, "repo_exists": self.repo_exists, "empty": self.empty,
                "upload_bytes": self.upload_bytes, "branches": [b.to_json() for b in self.branches],
                "notes": list(self.notes)}


def short_commit(commit: str | None) -> str:
    return commit[:12] if commit else "(none)"


def human_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


def same_content(local: Path | None, content: bytes | None, remote: RemoteFile) -> bool:
    """Compare by content: the LFS sha256 when the remote file is in LFS, else the git blob id."""
    if content is not None:
        if remote.lfs_sha256:
            return sha256_bytes(content) == remote.lfs_sha256
        return git_blob_sha1_bytes(content) == remote.blob_id
    if local is None or local.stat().st_size != remote.size:
        return False
    if remote.lfs_sha256:
        return sha256_file(local) == remote.lfs_sha256
    return git_blob_sha1(local) == remote.blob_id


Wanted = dict[str, tuple["Path | None", "bytes | None"]]


def diff(wanted: Wanted, remote: dict[str, RemoteFile], delete_prefixes: tuple[str, ...]) -> tuple[list[FileOp], int]:
    """Operations that turn `remote` into `wanted` (deleting only under `delete_prefixes`), and the unchanged count."""
    ops: list[FileOp] = []
    unchanged = 0
    for path in sorted(wanted):
        local, content = wanted[path]
        size = len(content) if content is not None else local.stat().st_size
        if path in remote:
            if same_content(local, content, remote[path]):
                unchanged += 1
                continue
            ops.append(FileOp("add", path, "changed", local, content, size))
        else:
            ops.append(FileOp("add", path, "new", local, content, size))
    for path in sorted(remote):
        if path not in wanted and any(path.startswith(p) for p in delete_prefixes):
            ops.append(FileOp("delete", path, "stale"))
    return ops, unchanged


def bundle_files(bundle: Bundle) -> Wanted:
    """`build/<variant>/<file>` -> local path, for every variant of the bundle."""
    return {f"build/{v.name}/{rel}": (v.path / rel, None) for v in bundle.variants for rel in v.files}


def card_files(card: "CardPage") -> Wanted:
    """README.md and the files the card shows or links (plots by local path, benchmarks.md by content)."""
    wanted: Wanted = {"README.md": (None, card.readme.encode("utf-8"))}
    for path, source in card.files:
        wanted[path] = (source, None) if isinstance(source, Path) else (None, bytes(source))
    return wanted


def _version_branch(api: HfApi, repo_id: str, bundle: Bundle, version: int, remote: RemoteState):
    """The version branch's plan, the tree it was diffed against, and what it keeps."""
    branch = f"v{version}"
    main_head = remote.branches.get(MAIN)
    head = remote.branches.get(branch)
    # A new branch starts as a copy of main, so anything under build/ it
    # inherits is stale; an existing one keeps other variants.
    base = head or main_head
    tree = remote_tree(api, repo_id, base) if base else {}
    prefixes = ("build/",) if head is None else tuple(f"build/{v.name}/" for v in bundle.variants)
    ops, unchanged = diff(bundle_files(bundle), tree, prefixes)
    plan = BranchPlan(branch=branch, exists=head is not None, parent_commit=base,
                      create_from=None if head else main_head, ops=tuple(ops), unchanged=unchanged,
                      message=f"Publish {repo_id} v{version}: {', '.join(bundle.variant_names)} "
                              f"(kernel-pipeline {__version__})")
    kept = sorted({p.split("/")[1] for p in tree if p.startswith("build/") and p.count("/") >= 2
                   and not any(p.startswith(x) for x in prefixes)})
    kept_meta = {name: remote_metadata(api, repo_id, base, name) for name in kept}
    return plan, kept, kept_meta


def plan_upload(api: HfApi, repo_id: str, bundle: Bundle, version: int, card_for: CardMaker, *,
                remote: RemoteState | None = None) -> UploadPlan:
    """The exact operations that make the Hub hold this bundle as version `version`."""
    remote = remote or read_remote(api, repo_id)
    main_head = remote.branches.get(MAIN)
    version_plan, kept, kept_meta = _version_branch(api, repo_id, bundle, version, remote)
    card = card_for(sorted(set(bundle.variant_names) | set(kept)), kept_meta)
    notes: list[str] = []
    if card is None:
        notes.append(f"{MAIN}: README.md describes a newer version; left as it is")
        main_ops, main_unchanged = [], 0
    else:
        main_tree = remote_tree(api, repo_id, main_head) if main_head else {}
        wanted = card_files(card)
        prefixes: tuple[str, ...] = CARD_FILE_PREFIXES
        if version == MIRRORED_VERSION:
            # As kernels-community does: v1's builds on main too, for a plain get_kernel(repo).
            wanted.update(bundle_files(bundle))
            prefixes += tuple(f"build/{v.name}/" for v in bundle.variants)
        main_ops, main_unchanged = diff(wanted, main_tree, prefixes)
    what = "Kernel card and builds" if version == MIRRORED_VERSION and card is not None else "Kernel card"
    main_plan = BranchPlan(branch=MAIN, exists=main_head is not None, parent_commit=main_head,
                           ops=tuple(main_ops), unchanged=main_unchanged,
                           message=f"{what} for {repo_id} v{version} (kernel-pipeline {__version__})")
    if main_head is None and remote.repo_exists:
        # An empty repository: main gets its first commit before the version
        # branch can be created from it.
        return UploadPlan(repo_id, remote.repo_exists, (main_plan, version_plan), tuple(notes))
    return UploadPlan(repo_id, remote.repo_exists, (version_plan, main_plan), tuple(notes))

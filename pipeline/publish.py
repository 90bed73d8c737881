"""`publish ORG/NAME`: validate → build → check → smoke → upload → verify.

The upload follows the Hub's kernel conventions (DESIGN.md): repository type
`kernel`; the builds go to `build/<variant>/` on branch `v<version>` (created
from `main` when missing); the kernel card goes to `README.md` on `main`.

Uploading is two steps. `plan_upload` reads the remote trees and diffs them
against the local bundle by content (git blob sha1, or the LFS sha256), which
yields the exact list of additions and deletions per branch: unchanged files
are not sent, stale files of a re-published variant are deleted, other
variants are left alone. `execute_plan` then makes one commit per branch with
`parent_commit` set to the head the plan was computed against, so a concurrent
publish makes ours fail instead of being silently overwritten. An empty plan
makes no commit at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import socket
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Literal, Protocol

from pipeline import __version__
from pipeline.errors import PipelineError, Problem, PublishError

HF_HUB_ENDPOINT = "https://huggingface.co"
# The embedded Hub's default port and root (those of `hub serve`), so that the
# HF_ENDPOINT line printed after a publish to it still works once the same data
# is served again.
DEFAULT_HUB_PORT = 8000
MAIN = "main"
REPO_TYPE = "kernel"


# --- where to publish ---------------------------------------------------------

def default_hub_root() -> Path:
    """The embedded Hub's data under the user's data directory (HUB's default)."""
    from pipeline.hub import default_root

    return default_root()


@dataclass(frozen=True)
class Target:
    """Where a publish goes, and why (DESIGN.md's order of precedence)."""

    source: Literal["--endpoint", "HF_ENDPOINT", "token", "embedded"]
    endpoint: str | None  # None until the embedded Hub is started
    token: str | None
    hub_root: Path | None = None
    hub_port: int | None = None

    @property
    def embedded(self) -> bool:
        return self.source == "embedded"

    def describe(self) -> str:
        if self.source == "--endpoint":
            return f"{self.endpoint} (from --endpoint)"
        if self.source == "HF_ENDPOINT":
            return f"{self.endpoint} (from HF_ENDPOINT)"
        if self.source == "token":
            return f"{self.endpoint} (the Hugging Face Hub: a token is configured)"
        where = self.endpoint or f"http://127.0.0.1:{self.hub_port}"
        return f"{where} (the embedded Hub, started for this run; data in {self.hub_root})"

    def to_json(self) -> dict:
        return {"source": self.source, "endpoint": self.endpoint, "token": bool(self.token),
                "hub_root": str(self.hub_root) if self.hub_root else None, "hub_port": self.hub_port}


def configured_token(env: dict | None = None) -> str | None:
    """`HF_TOKEN`, or the token `huggingface-cli login` stored."""
    env = os.environ if env is None else env
    if env.get("HF_TOKEN"):
        return env["HF_TOKEN"]
    from huggingface_hub import get_token

    return get_token() or None


def resolve_target(endpoint: str | None = None, *, env: dict | None = None, token: str | None = None,
                   hub_root: Path | None = None, hub_port: int | None = None) -> Target:
    """`--endpoint` > `HF_ENDPOINT` > the Hugging Face Hub when a token is
    configured > the embedded Hub, started for the run."""
    env = os.environ if env is None else env
    token = token if token is not None else configured_token(env)
    if endpoint:
        return Target("--endpoint", endpoint.rstrip("/"), token)
    if env.get("HF_ENDPOINT"):
        return Target("HF_ENDPOINT", env["HF_ENDPOINT"].rstrip("/"), token)
    if token:
        return Target("token", HF_HUB_ENDPOINT, token)
    return Target("embedded", None, None, hub_root=Path(hub_root or default_hub_root()),
                  hub_port=DEFAULT_HUB_PORT if hub_port is None else hub_port)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def started_target(target: Target, *, trusted_namespaces: tuple[str, ...] = ()) -> Iterator[Target]:
    """The target with its endpoint and token; starts (and afterwards stops)
    the embedded Hub when that is the target."""
    if not target.embedded:
        yield target
        return
    from pipeline.hub import EmbeddedHub

    from pipeline.errors import HubError

    port = DEFAULT_HUB_PORT if target.hub_port is None else target.hub_port
    if port and not _port_free(port):
        port = 0  # something else listens there; any free port will do for this run
    hub = EmbeddedHub(target.hub_root, host="127.0.0.1", port=port, trusted_namespaces=trusted_namespaces)
    try:
        hub.start()
    except HubError as exc:
        if exc.code == "HUB_ROOT_BUSY":
            raise PublishError(
                f"the embedded Hub's data ({target.hub_root}) is being served by another process",
                code="P020", hint="publish through it: HF_ENDPOINT=<its url> HF_TOKEN=<its admin token> "
                                  "python -m pipeline publish ..., or stop it first") from None
        raise PublishError(f"cannot start the embedded Hub: {exc.message}", code="P020", hint=exc.hint) from None
    try:
        yield replace(target, endpoint=hub.endpoint, token=hub.admin_token, hub_port=hub.port)
    finally:
        hub.stop()


def is_hugging_face(endpoint: str) -> bool:
    return endpoint.rstrip("/") in (HF_HUB_ENDPOINT, "https://hf.co")


def _xet_available() -> bool:
    try:
        from huggingface_hub.utils._runtime import is_xet_available
    except ImportError:  # moved: then assume what huggingface_hub documents (used when installed)
        import importlib.util

        from huggingface_hub import constants

        return importlib.util.find_spec("hf_xet") is not None and not constants.HF_HUB_DISABLE_XET
    return is_xet_available()


@contextlib.contextmanager
def _xet_off() -> Iterator[None]:
    """Upload through Git LFS: only the Hugging Face Hub speaks Xet, and
    huggingface_hub would use it whenever hf_xet is installed."""
    from huggingface_hub import constants

    old = constants.HF_HUB_DISABLE_XET
    constants.HF_HUB_DISABLE_XET = True
    try:
        yield
    finally:
        constants.HF_HUB_DISABLE_XET = old


# --- the upload plan -----------------------------------------------------------

def git_blob_sha1(path: Path) -> str:
    """The git object id of a file's content (what the Hub reports as `oid`)."""
    h = hashlib.sha1()
    h.update(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None = None


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
        return f"add    {self.path_in_repo} ({self.reason}, {_human(self.size)})"

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
    branches: tuple[BranchPlan, ...]  # the version branch first, then main
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
                at = f" at {_short(b.create_from)}" if b.create_from else ""
                out.append(f"create branch {b.branch} from {MAIN}{at}")
            if b.ops:
                parent = f"parent {_short(b.parent_commit)}" if b.parent_commit else "first commit"
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


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "(none)"


def _human(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"


@dataclass(frozen=True)
class RemoteState:
    repo_exists: bool
    branches: dict  # name -> head commit
    trees: dict  # commit -> {path: RemoteFile}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """An exception and its causes (huggingface_hub wraps upload failures in
    RuntimeError("Error while uploading ...") from the HTTP error)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _is_hub_failure(exc: BaseException) -> bool:
    from huggingface_hub.errors import HfHubHTTPError

    for e in _chain(exc):
        if isinstance(e, (HfHubHTTPError, ConnectionError, TimeoutError)):
            return True
        # httpx or httpx2 (huggingface_hub 2 uses the latter), and their cores.
        if type(e).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2"):
            return True
    return False


def _hub_error(exc: Exception, what: str, repo_id: str, target_desc: str = "") -> PublishError:
    """One place that turns Hub/HTTP failures into a PublishError with a hint."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

    http = next((e for e in _chain(exc) if isinstance(e, HfHubHTTPError)), None)
    root = list(_chain(exc))[-1]
    status = getattr(getattr(http, "response", None), "status_code", None)
    if status in (401, 403):
        return PublishError(
            f"{what}: the Hub refused ({status}): no write access to the namespace {repo_id.split('/')[0]!r}",
            code="P401", hint="set HF_TOKEN to a token with write access to that namespace "
                              "(or log in with `hf auth login`); for the embedded Hub: "
                              "python -m pipeline hub token --help")
    if status in (409, 412):
        return PublishError(
            f"{what}: the branch moved while we uploaded (a concurrent publish?); nothing was overwritten",
            code="P412", hint="run publish again: it re-reads the branch and uploads only what differs")
    if isinstance(http, (RepositoryNotFoundError, RevisionNotFoundError)):
        return PublishError(f"{what}: {http}", code="P404")
    if http is not None:
        return PublishError(f"{what}: {http}", code="P500",
                            hint="the Hub returned an error; run publish again (it is idempotent)")
    return PublishError(
        f"{what}: cannot reach the Hub{(' at ' + target_desc) if target_desc else ''}: "
        f"{type(root).__name__}: {root}", code="P503",
        hint="check that the Hub is up, then run publish again: a commit is all-or-nothing, "
             "so the Hub is as it was and a retry uploads what is missing")


def read_remote(api, repo_id: str) -> RemoteState:
    """Repository, branch heads, and the file tree of every head we may diff against."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    except RepositoryNotFoundError:
        return RemoteState(False, {}, {})
    branches = {b.name: b.target_commit for b in refs.branches}
    return RemoteState(True, branches, {})


def remote_tree(api, repo_id: str, commit: str) -> dict[str, RemoteFile]:
    from huggingface_hub.hf_api import RepoFile

    files = {}
    for entry in api.list_repo_tree(repo_id, recursive=True, revision=commit, repo_type=REPO_TYPE):
        if isinstance(entry, RepoFile):
            lfs = entry.lfs
            files[entry.path] = RemoteFile(entry.path, entry.size, entry.blob_id,
                                           lfs.sha256 if lfs is not None else None)
    return files


def _same_content(local: Path | None, content: bytes | None, remote: RemoteFile) -> bool:
    """Compare by content: the LFS sha256 when the remote file is in LFS,
    otherwise the git blob id."""
    if content is not None:
        if remote.lfs_sha256:
            return sha256_bytes(content) == remote.lfs_sha256
        return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest() == remote.blob_id
    assert local is not None
    if local.stat().st_size != remote.size:
        return False
    if remote.lfs_sha256:
        from pipeline.fsutil import sha256_file

        return sha256_file(local) == remote.lfs_sha256
    return git_blob_sha1(local) == remote.blob_id


def _diff(wanted: dict[str, tuple[Path | None, bytes | None]], remote: dict[str, RemoteFile],
          delete_prefixes: tuple[str, ...]) -> tuple[list[FileOp], int]:
    ops: list[FileOp] = []
    unchanged = 0
    for path in sorted(wanted):
        local, content = wanted[path]
        size = len(content) if content is not None else local.stat().st_size
        if path in remote:
            if _same_content(local, content, remote[path]):
                unchanged += 1
                continue
            ops.append(FileOp("add", path, "changed", local, content, size))
        else:
            ops.append(FileOp("add", path, "new", local, content, size))
    for path in sorted(remote):
        if path not in wanted and any(path.startswith(p) for p in delete_prefixes):
            ops.append(FileOp("delete", path, "stale"))
    return ops, unchanged


def bundle_files(bundle) -> dict[str, tuple[Path, None]]:
    """`build/<variant>/<file>` → local path, for every variant of the bundle."""
    out = {}
    for v in bundle.variants:
        for rel in v.files:
            out[f"build/{v.name}/{rel}"] = (v.path / rel, None)
    return out


def plan_upload(api, repo_id: str, bundle, version: int, card_for: Callable[[list[str], dict], str | None],
                *, remote: RemoteState | None = None) -> UploadPlan:
    """The exact operations that make the Hub hold this bundle as version `version`.

    `card_for(variant_names_on_branch, remote_metadata)` renders the card
    (or returns None to leave main's card alone)."""
    remote = remote or read_remote(api, repo_id)
    branch = f"v{version}"
    main_head = remote.branches.get(MAIN)
    head = remote.branches.get(branch)
    notes: list[str] = []

    # The version branch: a new one starts as a copy of main, so anything under
    # build/ it inherits is stale; an existing one keeps other variants.
    base = head or main_head
    tree = remote_tree(api, repo_id, base) if base else {}
    wanted = bundle_files(bundle)
    prefixes = ("build/",) if head is None else tuple(f"build/{v.name}/" for v in bundle.variants)
    ops, unchanged = _diff(wanted, tree, prefixes)
    names = ", ".join(bundle.variant_names)
    version_plan = BranchPlan(
        branch=branch, exists=head is not None, parent_commit=base, create_from=None if head else main_head,
        ops=tuple(ops), unchanged=unchanged,
        message=f"Publish {repo_id} v{version}: {names} (kernel-pipeline {__version__})",
    )

    # What the branch will hold afterwards: our variants plus the ones we keep.
    kept = sorted({p.split("/")[1] for p in tree if p.startswith("build/") and p.count("/") >= 2
                   and not any(p.startswith(x) for x in prefixes)})
    kept_meta = {}
    for name in kept:
        kept_meta[name] = _remote_metadata(api, repo_id, base, name)
    card = card_for(sorted(set(bundle.variant_names) | set(kept)), kept_meta)

    main_tree = remote_tree(api, repo_id, main_head) if main_head else {}
    if card is None:
        notes.append(f"{MAIN}: README.md describes a newer version; left as it is")
        main_ops, main_unchanged = [], 0
    else:
        main_ops, main_unchanged = _diff({"README.md": (None, card.encode("utf-8"))}, main_tree, ())
    main_plan = BranchPlan(branch=MAIN, exists=main_head is not None, parent_commit=main_head,
                           ops=tuple(main_ops), unchanged=main_unchanged,
                           message=f"Kernel card for {repo_id} v{version} (kernel-pipeline {__version__})")
    if main_head is None and remote.repo_exists:
        # An empty repository: main gets its first commit before the version
        # branch can be created from it.
        return UploadPlan(repo_id, remote.repo_exists, (main_plan, version_plan), tuple(notes))
    return UploadPlan(repo_id, remote.repo_exists, (version_plan, main_plan), tuple(notes))


def _remote_metadata(api, repo_id: str, commit: str, variant: str) -> dict:
    import json

    try:
        with tempfile.TemporaryDirectory(prefix="pipeline-meta-") as tmp:
            path = api.hf_hub_download(repo_id, f"build/{variant}/metadata.json", repo_type=REPO_TYPE,
                                       revision=commit, cache_dir=tmp)
            return json.loads(Path(path).read_text(encoding="utf-8"))
    except Exception:  # the card can describe a variant from its name alone
        return {}


def existing_versions(remote: RemoteState) -> list[int]:
    out = []
    for name in remote.branches:
        if name.startswith("v") and name[1:].isdigit():
            out.append(int(name[1:]))
    return sorted(out)


# --- executing a plan ------------------------------------------------------------

class _ProgressReader(io.BufferedReader):
    """A file whose reads advance a progress bar (huggingface_hub reads the
    file object we hand it, for LFS uploads and for inline content alike)."""

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


class UploadProgress(Protocol):
    def start(self, total_bytes: int, description: str) -> None: ...
    def advance(self, nbytes: int) -> None: ...
    def stop(self) -> None: ...


@dataclass(frozen=True)
class CommitResult:
    branch: str
    commit: str | None
    operations: int


@contextlib.contextmanager
def _hf_bars_off() -> Iterator[None]:
    """Our own progress replaces huggingface_hub's tqdm bars during a commit."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    was = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was:
            enable_progress_bars()


def _heads(api, repo_id: str) -> dict[str, str]:
    refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    return {b.name: b.target_commit for b in refs.branches}


def _guarded(what: str, repo_id: str, fn: Callable[[], object]) -> object:
    try:
        return fn()
    except Exception as exc:
        if _is_hub_failure(exc):
            raise _hub_error(exc, what, repo_id) from None
        raise


def _operations(bplan: BranchPlan, progress: UploadProgress | None) -> list:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    operations: list = []
    for op in bplan.ops:
        if op.kind == "delete":
            operations.append(CommitOperationDelete(path_in_repo=op.path_in_repo))
        elif op.content is not None:
            operations.append(CommitOperationAdd(path_in_repo=op.path_in_repo, path_or_fileobj=op.content))
        else:
            add = CommitOperationAdd(path_in_repo=op.path_in_repo, path_or_fileobj=str(op.local))
            if progress is not None:
                # upload_info (sha256, size) was computed from the path just now;
                # every read that follows is the upload itself.
                add.path_or_fileobj = _ProgressReader(op.local, progress.advance)
            operations.append(add)
    return operations


def execute_plan(api, plan: UploadPlan, *, progress: UploadProgress | None = None,
                 on_commit: Callable[[CommitResult], None] | None = None,
                 lfs_only: bool | None = None) -> tuple[CommitResult, ...]:
    """Create what is missing and make one commit per branch that has changes.

    The version branch is committed before the card on main, so the card never
    announces files that are not there. A repository or branch created here is
    removed again if the publish fails before anything was committed to it
    (when the Hub is still reachable), so a failed publish leaves the Hub as
    it was."""
    repo_id = plan.repo_id
    if lfs_only is None:
        lfs_only = not is_hugging_face(api.endpoint)
    # Through Xet, huggingface_hub shows its own progress (and refuses file
    # objects); through LFS our progress reader sees every byte sent, and
    # huggingface_hub's own bars are turned off.
    ours = progress is not None and (lfs_only or not _xet_available())
    if not ours:
        progress = None
    created_repo = False
    created_branches: list[str] = []
    results: list[CommitResult] = []
    try:
        branches = list(plan.branches)
        heads: dict[str, str] = {}
        if not plan.repo_exists:
            _guarded(f"cannot create {repo_id}", repo_id,
                     lambda: api.create_repo(repo_id, repo_type=REPO_TYPE, exist_ok=False))
            created_repo = True
            heads = _guarded(f"cannot read {repo_id}", repo_id, lambda: _heads(api, repo_id))
            # A new repository may start with an initial commit on main (the
            # Hugging Face Hub's does) or with none; main goes first only when
            # there is nothing to create the version branch from.
            branches.sort(key=lambda b: (b.branch == MAIN) == (MAIN in heads))
        for bplan in branches:
            if plan.repo_exists:
                parent = bplan.parent_commit
            else:
                parent = heads.get(bplan.branch)
            if bplan.branch != MAIN and (not bplan.exists or not plan.repo_exists):
                base = bplan.create_from if plan.repo_exists else heads.get(MAIN)
                if base is None:
                    base = _guarded(f"cannot read {repo_id}", repo_id, lambda: _heads(api, repo_id)).get(MAIN)
                _guarded(f"cannot create branch {bplan.branch}", repo_id,
                         lambda: api.create_branch(repo_id, branch=bplan.branch, revision=base, repo_type=REPO_TYPE))
                created_branches.append(bplan.branch)
                parent = base
            if not bplan.ops:
                continue
            # Only files are streamed through the progress reader; generated
            # content (the card) is a few KiB sent inline with the commit.
            streamed = sum(op.size for op in bplan.ops if op.kind == "add" and op.content is None)
            shown = progress if streamed else None
            operations = _operations(bplan, shown)
            if shown is not None:
                shown.start(streamed, f"{bplan.branch}: {len(bplan.ops)} operation(s)")
            try:
                with (_xet_off() if lfs_only else contextlib.nullcontext()), \
                        (_hf_bars_off() if lfs_only else contextlib.nullcontext()):
                    info = _guarded(
                        f"commit to {bplan.branch} failed", repo_id,
                        lambda: api.create_commit(repo_id, operations, commit_message=bplan.message,
                                                  repo_type=REPO_TYPE, revision=bplan.branch, parent_commit=parent))
            finally:
                for add in operations:
                    if isinstance(getattr(add, "path_or_fileobj", None), _ProgressReader):
                        add.path_or_fileobj.close()
                if shown is not None:
                    shown.stop()
            result = CommitResult(bplan.branch, getattr(info, "oid", None), len(operations))
            results.append(result)
            if bplan.branch == MAIN:
                heads[MAIN] = result.commit
            # Committed: no longer ours to roll back.
            created_repo = False
            created_branches.clear()
            if on_commit is not None:
                on_commit(result)
    except BaseException:
        _rollback(api, repo_id, created_repo, created_branches)
        raise
    return tuple(results)


def _rollback(api, repo_id: str, created_repo: bool, created_branches: list[str]) -> None:
    """Best effort: undo what this publish created before it failed."""
    with contextlib.suppress(Exception):
        if created_repo:
            api.delete_repo(repo_id, repo_type=REPO_TYPE)
            return
        for branch in created_branches:
            api.delete_branch(repo_id, branch=branch, repo_type=REPO_TYPE)


# --- the whole publish -----------------------------------------------------------

class Events(Protocol):
    """What publish reports while it runs (the CLI prints it on stderr)."""

    def step(self, name: str, text: str) -> None: ...
    def upload_progress(self) -> UploadProgress | None: ...


class _Quiet:
    def step(self, name: str, text: str) -> None:
        pass

    def upload_progress(self) -> UploadProgress | None:
        return None


@dataclass(frozen=True)
class PublishRequest:
    repo_id: str
    project: Path | None  # the kernel project (for validate/build/smoke/card); None with only a bundle
    build_dir: Path | None = None  # an existing build tree or Nix result (otherwise found or built)
    version: int | None = None
    dry_run: bool = False
    force: bool = False
    rebuild: bool = False
    verify: bool = True
    smoke: bool = True


@dataclass(frozen=True)
class Publication:
    endpoint: str
    target: Target
    repo_id: str
    branch: str
    version: int
    variants: tuple[str, ...]
    plan: UploadPlan
    commits: tuple[CommitResult, ...]
    dry_run: bool
    forced: tuple[str, ...]
    checks: tuple[str, ...]
    bundle_dir: Path
    bundle_source: str
    verify: object | None = None  # pipeline.verify.VerifyReport
    problems: tuple[Problem, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.commits)

    @property
    def commit(self) -> str | None:
        return next((c.commit for c in self.commits if c.branch == self.branch), None)

    def to_json(self) -> dict:
        return {
            "endpoint": self.endpoint, "target": self.target.to_json(), "repo_id": self.repo_id,
            "branch": self.branch, "version": self.version, "variants": list(self.variants),
            "bundle": {"path": str(self.bundle_dir), "source": self.bundle_source},
            "dry_run": self.dry_run, "changed": self.changed,
            "commits": [{"branch": c.branch, "commit": c.commit, "operations": c.operations} for c in self.commits],
            "plan": self.plan.to_json(), "forced": list(self.forced), "checks": list(self.checks),
            "verify": self.verify.to_json() if self.verify is not None else None,
            "problems": [p.to_json() for p in self.problems],
        }


def split_repo_id(spec: str, default_namespace: str | None) -> tuple[str, str]:
    """`ORG/NAME` or `NAME` (the workspace's namespace) → (repo_id, name)."""
    if spec.count("/") > 1 or spec.startswith("/") or spec.endswith("/"):
        raise PublishError(f"{spec!r} is not a repository id", code="P001", hint="write it as ORG/NAME")
    if "/" in spec:
        org, name = spec.split("/")
    else:
        if not default_namespace:
            raise PublishError(f"{spec!r} has no namespace", code="P001",
                               hint="write ORG/NAME, or set [workspace].namespace in build.toml")
        org, name = default_namespace, spec
    if not org or not name:
        raise PublishError(f"{spec!r} is not a repository id", code="P001", hint="write it as ORG/NAME")
    return f"{org}/{name}", name


def _variant_dirs(path: Path) -> bool:
    return path.is_dir() and any(p.is_dir() and not p.name.startswith(".") for p in path.iterdir())


def locate_bundle(project_root: Path | None, kernel_name: str, workspace_root: Path | None) -> tuple[Path, str] | None:
    """An existing build to publish: the project's build/, or a Nix result/."""
    candidates = []
    if project_root is not None:
        candidates.append((project_root / "build", "existing build/"))
        candidates.append((project_root / "result", "Nix result/"))
    if workspace_root is not None:
        candidates.append((workspace_root / "result" / kernel_name, "Nix result/ (workspace bundle)"))
    for path, how in candidates:
        if _variant_dirs(path):
            return path, how
    return None


def host_choice(build_dir: Path) -> str | None:
    """The variant `kernels` would load on this machine from this tree (its own
    resolution code), or None when the host can run none of them."""
    from kernels.variants import get_variants_local, resolve_variant

    try:
        chosen, _ = resolve_variant(get_variants_local(build_dir))
    except ValueError:
        return None
    return chosen.variant_str if chosen is not None else None


def _refresh_local(build_dir: Path) -> bool:
    """Whether to (re)run the local build before publishing an existing build/:
    when it has no variant for this host, or when the host's variant is a local
    build of this pipeline (its cache makes an up-to-date build a no-op, and a
    changed source is rebuilt rather than published stale). A variant built by
    Nix/kernel-builder is taken as it is."""
    from pipeline.bundle import read_metadata_json

    chosen = host_choice(build_dir)
    if chosen is None:
        return True
    provenance = read_metadata_json(build_dir / chosen).get("provenance") or {}
    builder = str((provenance.get("kernel-builder") or {}).get("version", ""))
    return builder.startswith("kernel-pipeline ")


def _build_host_variant(project, out: Path, events: Events) -> None:
    from pipeline.build import build_project

    events.step("build", f"local build of the host's variant into {out}")
    result = build_project(project, out, backend="local",
                           progress=lambda event: events.step("build", str(getattr(event, "message", event))))
    for built in result.variants:
        events.step("build", f"{built.variant.name}: {'up to date' if built.cached else 'built'} ({built.kernel_id})")


def _smoke(build_dir: Path, project_root: Path | None) -> tuple[bool, str, object]:
    from pipeline.smoke import run_smoke

    # Importing a variant in place writes __pycache__ into the build tree,
    # which check would then call stray: keep the tree as the build left it.
    old = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        report = run_smoke(build_dir, project_root)
    finally:
        sys.dont_write_bytecode = old
    return bool(report.passed), _smoke_summary(report), report


def _smoke_summary(report) -> str:
    data = report.to_json() if hasattr(report, "to_json") else {}
    counts = data.get("counts") or {}
    text = "passed" if report.passed else "FAILED"
    if data.get("variant"):
        text += f" on {data['variant']}"
    if counts:
        text += f" ({counts.get('total', 0)} check(s), {counts.get('failed', 0)} failed)"
    return text


def publish(request: PublishRequest, target: Target, *, events: Events | None = None,
            card_description: str | None = None) -> Publication:
    """Run the stages the bundle still needs, then upload and verify."""
    from huggingface_hub import HfApi

    from pipeline.bundle import check_bundle, expected_variants, find_build_dir
    from pipeline.card import Card, benchmark_table, render_card, variant_from_bundle, variant_from_name

    events = events or _Quiet()
    repo_id = request.repo_id
    project = None
    workspace_root = None
    if request.project is not None:
        from pipeline.project import load_project
        from pipeline.workspace import find_workspace

        events.step("validate", f"{request.project}")
        project = load_project(request.project)  # raises ValidationError with the problems
        workspace_root = find_workspace(request.project)

    # Build, or take what is there.
    if request.build_dir is not None:
        build_dir, source = find_build_dir(request.build_dir), "given"
    else:
        found = locate_bundle(project.root if project else None, repo_id.split("/")[1], workspace_root)
        if project is not None and (found is None or request.rebuild
                                    or (found[0] == project.root / "build" and _refresh_local(found[0]))):
            out = project.root / "build"
            _build_host_variant(project, out, events)
            build_dir, source = out, "local build of the host's variant"
        elif found is None:
            raise PublishError("nothing to publish: no build tree and no kernel project", code="P002",
                               hint="pass --kernel PATH or --build-dir PATH")
        else:
            build_dir, source = found
    events.step("build", f"using {build_dir} ({source})")

    # Check.
    expected = None
    if project is not None:
        with contextlib.suppress(ImportError):
            expected = expected_variants(project)
    report = check_bundle(build_dir, expected=expected)
    bundle = report.bundle
    forced: list[str] = []
    checks: list[str] = []
    if report.errors:
        reasons = [p.format().splitlines()[0] for p in report.errors]
        if not request.force:
            raise PublishError(
                f"check found {len(report.errors)} problem(s) in {build_dir}; nothing was uploaded",
                code="P010", path=str(build_dir), problems=report.problems,
                hint="fix them and rebuild (or publish anyway with --force, which the kernel card records)")
        forced.extend(f"check: {r}" for r in reasons)
    else:
        checks.append(f"check passed for {len(bundle.variants)} variant(s)")
    if report.expected is not None:
        missing = list(report.missing)
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        events.step("check", f"{len(report.covered)}/{len(report.expected)} matrix cells in the bundle"
                    + (f"; missing: {shown}" if missing else ""))
    events.step("check", f"{len(bundle.variants)} variant(s), {len(report.errors)} error(s)"
                + (" (--force)" if report.errors else ""))

    version = request.version if request.version is not None else bundle.version
    if version is None:
        version = project.version if project is not None else None
    if version is None:
        raise PublishError("the bundle does not say which version it is", code="P003",
                           hint="set general.version in the kernel's build.toml and rebuild, or pass --version N")
    if bundle.version is not None and version != bundle.version:
        raise PublishError(
            f"--version {version} but the bundle was built as version {bundle.version}", code="P003",
            hint="kernels reads the version from metadata.json: change general.version in build.toml and rebuild")
    if bundle.name is not None and bundle.name != repo_id.split("/")[1]:
        # Allowed (the repo name is the user's choice), but worth saying.
        events.step("check", f"note: the kernel is named {bundle.name!r}, the repository {repo_id!r}")

    # Smoke, where this host can run one of the variants.
    host = host_choice(build_dir)
    if request.smoke and host is not None and not request.dry_run:
        events.step("smoke", f"running the correctness cases on {host}")
        try:
            passed, summary, _ = _smoke(build_dir, project.root if project else None)
        except ImportError:
            passed, summary = True, "skipped (pipeline.smoke is not available)"
        except PipelineError as exc:
            passed, summary = False, f"FAILED: {exc.message}"
        events.step("smoke", summary)
        if passed:
            checks.append(f"smoke {summary}")
        elif not request.force:
            raise PublishError(f"smoke test failed on {host}; nothing was uploaded", code="P011",
                               hint="run `python -m pipeline smoke` for details, fix the kernel, rebuild "
                                    "(or publish anyway with --force, which the card records)")
        else:
            forced.append(f"smoke {summary}")
    elif host is None:
        events.step("smoke", "skipped: this host can run none of the bundle's variants")
    elif request.dry_run:
        events.step("smoke", "skipped (--dry-run)")

    from pipeline.bundle import exported_functions, exported_layers
    from pipeline.card import project_template

    functions: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    for v in bundle.variants:
        functions, layers = exported_functions(v), exported_layers(v)
        if functions:
            break
    provenance = next((v.provenance for v in bundle.variants if v.provenance), {})
    builders = tuple(sorted({v.provenance.get("kernel_builder") for v in bundle.variants
                             if v.provenance.get("kernel_builder")}))
    bench = benchmark_table(project.root) if project else None
    local = {v.name: variant_from_bundle(v) for v in bundle.variants}
    card_template = project_template(project.root) if project else None

    # A dry run against an embedded Hub that has never held data plans against
    # an empty Hub instead of creating one.
    nothing_yet = request.dry_run and target.embedded and not Path(target.hub_root).exists()
    ctx = (contextlib.nullcontext(replace(target, endpoint=f"http://127.0.0.1:{target.hub_port}"))
           if nothing_yet else started_target(target, trusted_namespaces=(repo_id.split("/")[0],)))
    with ctx as live:
        if live.embedded and not nothing_yet:
            events.step("hub", f"embedded Hub started at {live.endpoint} (data in {live.hub_root})")
        api = HfApi(endpoint=live.endpoint, token=live.token or False)
        try:
            remote = RemoteState(False, {}, {}) if nothing_yet else read_remote(api, repo_id)
        except Exception as exc:
            if _is_hub_failure(exc):
                raise _hub_error(exc, f"cannot read {repo_id}", repo_id, live.endpoint) from None
            raise
        newer = [n for n in existing_versions(remote) if n > version]

        def card_for(names: list[str], kept_meta: dict) -> str | None:
            if newer:
                return None
            variants = tuple(local.get(n) or variant_from_name(n, kept_meta.get(n)) for n in names)
            return render_card(Card(
                repo_id=repo_id, name=bundle.name or repo_id.split("/")[1], version=version,
                license=next((v.license for v in bundle.variants if v.license), None),
                functions=functions, variants=variants, description=card_description,
                benchmark_table=bench, kernel_commit=provenance.get("kernel_commit"),
                dirty=bool(provenance.get("dirty")), builders=builders, checks=tuple(checks),
                forced=tuple(forced), layers=layers, template=card_template,
                has_benchmark=bool(project and (project.root / "benchmarks").is_dir()),
            ))

        try:
            plan = plan_upload(api, repo_id, bundle, version, card_for, remote=remote)
        except PipelineError:
            raise
        except Exception as exc:
            if _is_hub_failure(exc):
                raise _hub_error(exc, f"cannot read {repo_id}", repo_id, live.endpoint) from None
            raise
        if not request.dry_run:  # a dry run returns the plan; the command prints it once
            for line in plan.lines():
                events.step("plan", line)
        commits: tuple[CommitResult, ...] = ()
        verify_report = None
        if not request.dry_run:
            if plan.empty:
                events.step("upload", f"nothing changed: {repo_id} v{version} already holds this bundle "
                                      "and its card; no commit made, nothing uploaded")
            else:
                commits = execute_plan(
                    api, plan, progress=events.upload_progress(),
                    on_commit=lambda c: events.step("upload", f"{c.branch}: commit {_short(c.commit)} "
                                                              f"({c.operations} operation(s))"))
            if request.verify:
                from pipeline.verify import verify_publication

                events.step("verify", f"get_kernel({repo_id!r}, version={version}) in a fresh process")
                verify_report = verify_publication(live.endpoint, repo_id, version,
                                                   project_root=project.root if project else None,
                                                   token=live.token, events=events,
                                                   cells=[v.name for v in expected] if expected is not None else None)
        publication = Publication(
            endpoint=live.endpoint, target=live, repo_id=repo_id, branch=f"v{version}", version=version,
            variants=bundle.variant_names, plan=plan, commits=commits, dry_run=request.dry_run,
            forced=tuple(forced), checks=tuple(checks), bundle_dir=build_dir, bundle_source=source,
            verify=verify_report, problems=report.problems,
        )
    return publication

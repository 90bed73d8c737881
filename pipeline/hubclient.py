"""The Hub client: `HfApi` set up for a target, what we read from the Hub, and
one table from Hub failures to our errors (huggingface_hub's own
`cli/_errors.py` keeps one such table too)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from huggingface_hub import HfApi, constants
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError
from huggingface_hub.hf_api import RepoFile
from huggingface_hub.utils import (
    are_progress_bars_disabled,
    disable_progress_bars,
    enable_progress_bars,
    get_session,
    hf_raise_for_status,
)

from pipeline.errors import PublishError
from pipeline.target import Target

REPO_TYPE = "kernel"
MAIN = "main"
T = TypeVar("T")


def make_api(target: Target) -> HfApi:
    return HfApi(endpoint=target.endpoint, token=target.token or False)


# --- what we read ----------------------------------------------------------------

@dataclass(frozen=True)
class RemoteFile:
    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None = None


@dataclass(frozen=True)
class RemoteState:
    repo_exists: bool
    branches: dict  # name -> head commit
    trusted: bool | None = None  # the namespace is a trusted kernel publisher (None: not known)

    def versions(self) -> list[int]:
        """The published versions (branches v<N>)."""
        return sorted(int(n[1:]) for n in self.branches if n.startswith("v") and n[1:].isdigit())


def read_remote(api: HfApi, repo_id: str) -> RemoteState:
    trusted = publisher_trusted(api, repo_id.split("/")[0])
    try:
        refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    except RepositoryNotFoundError:
        return RemoteState(False, {}, trusted)
    return RemoteState(True, {b.name: b.target_commit for b in refs.branches}, trusted)


def publisher_trusted(api: HfApi, namespace: str) -> bool | None:
    """What kernels' get_kernel asks the Hub before it loads without
    trust_remote_code: the organization's `trustedKernelPublisher`. A
    namespace that is no organization (a user) is not trusted; None when the
    Hub cannot be asked."""
    # Asked at api.endpoint: HfApi.get_organization_overview goes to huggingface.co
    # whatever the endpoint in huggingface_hub 1.x (kernels sets HF_ENDPOINT instead).
    try:
        response = get_session().get(f"{api.endpoint}/api/organizations/{namespace}/overview",
                                     headers=api._build_hf_headers(), timeout=30)
        if response.status_code == 404:
            return False
        hf_raise_for_status(response)
        return bool(response.json().get("trustedKernelPublisher", False))
    except Exception:  # noqa: BLE001 - the card then says nothing about trust
        return None


def remote_tree(api: HfApi, repo_id: str, commit: str) -> dict[str, RemoteFile]:
    files = {}
    for entry in api.list_repo_tree(repo_id, recursive=True, revision=commit, repo_type=REPO_TYPE):
        if isinstance(entry, RepoFile):
            lfs = entry.lfs
            files[entry.path] = RemoteFile(entry.path, entry.size, entry.blob_id,
                                           lfs.sha256 if lfs is not None else None)
    return files


def remote_metadata(api: HfApi, repo_id: str, commit: str, variant: str) -> dict:
    """A published variant's metadata.json, or {} (the card can describe a variant from its name alone)."""
    try:
        with tempfile.TemporaryDirectory(prefix="pipeline-meta-") as tmp:
            path = api.hf_hub_download(repo_id, f"build/{variant}/metadata.json", repo_type=REPO_TYPE,
                                       revision=commit, cache_dir=tmp)
            return json.loads(Path(path).read_text(encoding="utf-8"))
    except Exception:  # noqa: BLE001 - any failure means "describe it from its name"
        return {}


def heads(api: HfApi, repo_id: str) -> dict[str, str]:
    return read_remote(api, repo_id).branches


# --- transfer settings -----------------------------------------------------------

def xet_available() -> bool:
    """Whether huggingface_hub would upload through Xet (hf_xet installed and not disabled)."""
    return importlib.util.find_spec("hf_xet") is not None and not constants.HF_HUB_DISABLE_XET


@contextlib.contextmanager
def xet_off() -> Iterator[None]:
    """Upload through Git LFS (for a Hub that does not speak Xet)."""
    old = constants.HF_HUB_DISABLE_XET
    constants.HF_HUB_DISABLE_XET = True
    try:
        yield
    finally:
        constants.HF_HUB_DISABLE_XET = old


@contextlib.contextmanager
def hf_bars_off() -> Iterator[None]:
    """Our own progress replaces huggingface_hub's tqdm bars during a commit."""
    was = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was:
            enable_progress_bars()


# --- failures -> our errors --------------------------------------------------------

def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """An exception and its causes (huggingface_hub wraps upload failures in
    RuntimeError("Error while uploading ...") from the HTTP error)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def is_hub_failure(exc: BaseException) -> bool:
    for e in _chain(exc):
        if isinstance(e, (HfHubHTTPError, ConnectionError, TimeoutError)):
            return True
        # httpx or httpx2 (huggingface_hub 2 uses the latter), and their cores.
        if type(e).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2"):
            return True
    return False


# status -> (code, message template, hint). One table: every Hub refusal we explain.
HUB_FAILURES: dict[int, tuple[str, str, str]] = {
    401: ("hub-write-denied", "{what}: the Hub refused ({status}): no write access to the namespace {namespace!r}",
          "set HF_TOKEN to a token with write access to that namespace (or log in with `hf auth login`); "
          "for the embedded Hub: python -m pipeline hub token --help"),
    403: ("hub-write-denied", "{what}: the Hub refused ({status}): no write access to the namespace {namespace!r}",
          "set HF_TOKEN to a token with write access to that namespace (or log in with `hf auth login`); "
          "for the embedded Hub: python -m pipeline hub token --help"),
    409: ("hub-branch-moved", "{what}: the branch moved while we uploaded (a concurrent publish?); nothing was overwritten",
          "run publish again: it re-reads the branch and uploads only what differs"),
    412: ("hub-branch-moved", "{what}: the branch moved while we uploaded (a concurrent publish?); nothing was overwritten",
          "run publish again: it re-reads the branch and uploads only what differs"),
}


def hub_error(exc: BaseException, what: str, repo_id: str, where: str = "") -> PublishError:
    """The one place that turns a Hub/HTTP failure into a PublishError with a hint."""
    http = next((e for e in _chain(exc) if isinstance(e, HfHubHTTPError)), None)
    root = list(_chain(exc))[-1]
    status = getattr(getattr(http, "response", None), "status_code", None)
    if status in HUB_FAILURES:
        code, message, hint = HUB_FAILURES[status]
        return PublishError(message.format(what=what, status=status, namespace=repo_id.split("/")[0]),
                            code=code, hint=hint)
    if isinstance(http, (RepositoryNotFoundError, RevisionNotFoundError)):
        return PublishError(f"{what}: {http}", code="hub-not-found")
    if http is not None:
        return PublishError(f"{what}: {http}", code="hub-error",
                            hint="the Hub returned an error; run publish again (it is idempotent)")
    return PublishError(
        f"{what}: cannot reach the Hub{(' at ' + where) if where else ''}: {type(root).__name__}: {root}",
        code="hub-unreachable", hint="check that the Hub is up, then run publish again: a commit is all-or-nothing, "
                          "so the Hub is as it was and a retry uploads what is missing")


def guarded(what: str, repo_id: str, fn: Callable[[], T], where: str = "") -> T:
    """`fn()`, with a Hub failure turned into our error (anything else propagates).
    A call that this huggingface_hub refuses for repository type `kernel` is
    made again with the type allowed (see `kernel_type_allowed`)."""
    try:
        try:
            return fn()
        except ValueError as exc:
            if not refuses_kernel_type(exc):
                raise
        with kernel_type_allowed():
            return fn()
    except Exception as exc:
        if is_hub_failure(exc):
            raise hub_error(exc, what, repo_id, where) from None
        raise


# --- huggingface_hub 1.x and repository type `kernel` -------------------------------

HF_HUB_FLOOR = "1.10"  # the oldest huggingface_hub that addresses kernel repositories (kernels' own floor)


def refuses_kernel_type(exc: BaseException) -> bool:
    """huggingface_hub 1.x knows kernel repositories (their URLs, downloads,
    create_repo) but its commit methods check `constants.REPO_TYPES`, which
    lacks `kernel`: they raise this ValueError before any request is sent."""
    return isinstance(exc, ValueError) and str(exc).startswith("Invalid repo type") and \
        REPO_TYPE not in (constants.REPO_TYPES or ())


@contextlib.contextmanager
def kernel_type_allowed() -> Iterator[None]:
    """Let the commit methods accept repository type `kernel` for one call.

    Feature-detected, not version-sniffed: this works where huggingface_hub
    builds kernel URLs (`REPO_TYPES_URL_PREFIXES["kernel"]`, the /api/kernels/
    and /kernels/ routes) and only its list of accepted types is short; a
    huggingface_hub that cannot address kernel repositories at all gets an
    error that names the version it needs."""
    if constants.REPO_TYPES_URL_PREFIXES.get(REPO_TYPE) != "kernels/":
        raise PublishError(
            f"huggingface_hub {hf_version()} cannot address kernel repositories",
            code="hub-client-too-old",
            hint=f"pip install 'huggingface_hub>={HF_HUB_FLOOR}' (kernels itself needs it)")
    old = constants.REPO_TYPES
    constants.REPO_TYPES = [*old, REPO_TYPE]
    try:
        yield
    finally:
        constants.REPO_TYPES = old


def hf_version() -> str:
    try:
        return importlib.metadata.version("huggingface_hub")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - we import it above
        return "?"


# --- cheap checks before slow work --------------------------------------------------

WRITE_ROLES = ("write", "admin", "contributor")


def write_access_problem(whoami: dict, namespace: str) -> str | None:
    """Why this token cannot write to `namespace`, read from `whoami` (None: it can, or we cannot tell).

    Both the Hugging Face Hub's and the embedded Hub's `whoami-v2` answer in
    this shape: `auth.accessToken.role` ("read", "write", "fineGrained"), the
    user's `name`, `orgs[].name/roleInOrg`; the embedded Hub adds `scopes`."""
    token = (whoami.get("auth") or {}).get("accessToken") or {}
    role = token.get("role")
    scopes = token.get("scopes")
    if isinstance(scopes, list):  # the embedded Hub: exact per-namespace scopes
        if any(s.get("namespace") in ("*", namespace) and s.get("scope") == "write" for s in scopes
               if isinstance(s, dict)):
            return None
        return f"the token has no write scope on {namespace!r}"
    if role == "read":
        return "the token is read-only"
    if role == "fineGrained":
        return None  # its per-repository permissions are checked by the Hub at commit time
    if whoami.get("name") == namespace:
        return None
    for org in whoami.get("orgs") or ():
        if isinstance(org, dict) and org.get("name") == namespace:
            if str(org.get("roleInOrg", "")).lower() in WRITE_ROLES:
                return None
            return f"the token's user is only {org.get('roleInOrg')!r} in {namespace!r}"
    return f"the token's user {whoami.get('name')!r} is not a member of {namespace!r}"


def check_write_access(api: HfApi, repo_id: str, where: str) -> None:
    """Fail now (before any build or smoke run) when the token cannot write to the namespace."""
    namespace = repo_id.split("/")[0]
    if not api.token:
        raise PublishError(f"no token for {where}: publishing to {namespace!r} needs one", code="hub-write-denied",
                           hint="set HF_TOKEN to a token with write access to that namespace (or `hf auth login`)")
    try:
        who = api.whoami()
    except Exception as exc:
        if is_hub_failure(exc):
            raise hub_error(exc, "cannot check the token", repo_id, where) from None
        raise
    problem = write_access_problem(who if isinstance(who, dict) else {}, namespace)
    if problem:
        raise PublishError(f"{problem}: it cannot publish {repo_id} to {where}", code="hub-write-denied",
                           hint="set HF_TOKEN to a token with write access to that namespace; for the embedded "
                                "Hub: python -m pipeline hub token --root DIR --namespace NS --scope write")

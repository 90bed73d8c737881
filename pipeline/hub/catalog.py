"""What the pages show about repositories, read from the repositories
themselves: versions (the `v<N>` branches), the variants under `build/` of one
version with their signature status, the card, and one summary per kernel for
the listing. Plain values, no HTML: pages.py renders them.

Variant names are parsed by `kernels` (its parser, not a copy of its rules).
A signature is reported as present or absent, with its Rekor log index when the
bundle says it; it is not verified here (that needs Sigstore's trust root, i.e.
the network): `kernels` and `python -m pipeline check` verify it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from pipeline.bundle_signatures import SIGNATURE_FILE
from pipeline.hub.auth import Principal
from pipeline.hub.errors import HubApiError
from pipeline.hub.registry import Storage
from pipeline.hub.repository import DEFAULT_BRANCH, Repository, read_meta

T = TypeVar("T")
CARD = "README.md"
BUILD = "build"
MAX_CARD_BYTES = 1024 * 1024  # a bigger card is shown as a link, not rendered
_FRAMEWORKS = {"Torch": "torch", "TorchStableAbi": "torch stable ABI", "TvmFfi": "tvm-ffi"}
_VERSION_BRANCH = re.compile(r"v([1-9][0-9]{0,8})")


@dataclass(frozen=True)
class Version:
    number: int
    branch: str
    commit: str


@dataclass(frozen=True)
class Signature:
    status: str  # "signed" | "unsigned" | "unreadable"
    log_index: int | None = None

    @property
    def text(self) -> str:
        if self.status == "signed":
            where = f", Rekor log index {self.log_index}" if self.log_index is not None else ""
            return f"Sigstore bundle present{where} (not verified by this page)"
        if self.status == "unreadable":
            return f"{SIGNATURE_FILE} present but not a readable Sigstore bundle"
        return "no signature"


@dataclass(frozen=True)
class VariantRow:
    name: str
    backend: str  # cuda, rocm, cpu, metal, xpu, ... ("?" when kernels cannot parse the name)
    framework: str  # "torch 2.13", "tvm-ffi 0.1", "torch (noarch: any version)"
    compute: str  # the CUDA / ROCm / XPU version, "" when the backend has none
    arch: str  # "x86_64-linux", "any"
    signature: Signature


@dataclass(frozen=True)
class KernelSummary:
    namespace: str
    name: str
    private: bool
    trusted: bool
    latest: int | None  # the highest version, None without v<N> branches
    variants: int  # under build/ of the latest version (of main without one)
    updated: str  # ISO date of the newest branch head

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"


def derived(repo: Repository, what: str, commit: str, compute: Callable[[], T]) -> T:
    """`compute()`, once per (what, repository, commit): a commit never changes, so neither does
    anything read from it (kept in the storage's bounded page cache)."""
    key = (what, str(repo.rid), commit)
    cache = repo.objects.caches.pages
    found = cache.get(key)
    if found is None:
        found = (compute(),)  # a 1-tuple, so that a computed None is cached too
        cache.put(key, found)
    return found[0]


def versions(repo: Repository) -> list[Version]:
    """The kernel's versions, newest first (branches `v1`, `v2`, ...)."""
    found = []
    for branch, commit in repo.branches():
        m = _VERSION_BRANCH.fullmatch(branch)
        if m:
            found.append(Version(int(m.group(1)), branch, commit))
    return sorted(found, key=lambda v: v.number, reverse=True)


@lru_cache(maxsize=4096)
def describe(name: str) -> tuple[str, str, str, str]:
    """(backend, framework, compute, arch) of a variant name, as kernels parses it."""
    from kernels.variants import ArchVariant, parse_variant  # kernels loads on the first kernel page only

    try:
        parsed = parse_variant(name)
    except Exception:  # kernels raises ValueError and friends; an unknown name is shown, not fatal
        return "?", "?", "", "?"
    if isinstance(parsed, ArchVariant):
        framework, backend = parsed.framework, parsed.arch.backend
        kind = _FRAMEWORKS.get(type(framework).__name__, type(framework).__name__)
        version, compute = getattr(framework, "version", None), getattr(backend, "version", None)
        text = f"{kind} {version}" if version is not None else kind
        return backend.name, text, "" if compute is None else str(compute), f"{parsed.arch.platform}-{parsed.arch.os}"
    return parsed.arch.backend_name, "torch (noarch: any version)", "", "any"


def signature(repo: Repository, commit: str, variant_dir: str, names: set[str]) -> Signature:
    if SIGNATURE_FILE not in names:
        return Signature("unsigned")
    entry = repo.entry(commit, f"{variant_dir}/{SIGNATURE_FILE}")
    if entry is None or entry.lfs is not None or entry.size > 1024 * 1024:
        return Signature("unreadable")
    try:
        bundle = json.loads(repo.read_blob(entry.oid))
        entries = bundle["verificationMaterial"]["tlogEntries"]
        index = entries[0].get("logIndex") if entries else None
        return Signature("signed", int(index) if index is not None else None)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        return Signature("unreadable")


def variants(repo: Repository, commit: str) -> tuple[VariantRow, ...]:
    """The variants under build/ at `commit` (none when there is no build/)."""
    build = repo.entry(commit, BUILD)
    if build is None or build.type != "directory":
        return ()
    rows = []
    for entry in repo.list_tree(commit, BUILD):
        if entry.type != "directory":
            continue
        name = entry.path.rsplit("/", 1)[-1]
        names = {e.path.rsplit("/", 1)[-1] for e in repo.list_tree(commit, entry.path)}
        rows.append(VariantRow(name, *describe(name), signature=signature(repo, commit, entry.path, names)))
    return tuple(sorted(rows, key=lambda r: (r.backend, r.compute, r.framework, r.arch, r.name)))


def card_text(repo: Repository, commit: str) -> str | None:
    """README.md at `commit` as text (None when there is none, or it is stored as a large file)."""
    entry = repo.entry(commit, CARD)
    if entry is None or entry.type != "file" or entry.lfs is not None or entry.size > MAX_CARD_BYTES:
        return None
    return repo.read_blob(entry.oid).decode("utf-8", "replace")


def summary(repo: Repository, trusted: frozenset[str]) -> KernelSummary:
    found = versions(repo)
    heads = repo.branches()
    shown = found[0].commit if found else repo.branch_head(DEFAULT_BRANCH)
    updated = max((repo.commit_info(sha).date for _, sha in heads), default="")
    rid = repo.rid
    return KernelSummary(
        namespace=rid.namespace,
        name=rid.name,
        private=repo.meta.private,
        trusted=rid.namespace in trusted,
        latest=found[0].number if found else None,
        variants=len(derived(repo, "variants", shown, lambda: variants(repo, shown))) if shown else 0,
        updated=updated,
    )


def visible_kernels(storage: Storage, viewer: Principal, trusted: frozenset[str]) -> list[KernelSummary]:
    """Every kernel repository `viewer` may read: public ones, and private ones
    of namespaces its token reads. A repository that cannot be read (being
    created, damaged) is left out rather than failing the listing."""
    out = []
    for directory in storage.repositories():
        if directory.parent.parent.name != "kernels":
            continue
        try:
            meta = read_meta(directory)
            if meta.get("type") != "kernel":
                continue
            if meta.get("private") and not viewer.can_read(str(meta["id"]).split("/")[0]):
                continue
            repo = storage.open_dir(directory)
        except (OSError, ValueError, KeyError):
            continue
        try:
            out.append(summary(repo, trusted))
        except (HubApiError, OSError, ValueError):
            continue
        finally:
            repo.close()
    return sorted(out, key=lambda s: s.id.lower())

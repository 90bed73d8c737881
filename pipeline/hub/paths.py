"""Validation of everything a client names: repository types and ids, branch
names, revisions and file paths inside a repository.

Every name that reaches the storage layer has passed through one of these
functions, so the storage never sees `..`, an absolute path, a control
character or an unbounded string. They raise `BadRequest` (HTTP 400) with a
message meant for the client; nothing here touches the disk.

`.git` and `.cache` are refused as path segments in every spelling a
filesystem might treat as the same name: any case (`.GIT`, macOS and Windows
fold case), with trailing dots or spaces (`.git.`, `.git ` : Windows strips
them), as an NTFS stream (`.git::$INDEX_ALLOCATION`), as an 8.3 short name
(`GIT~1`), or with characters HFS+ ignores (zero-width joiners) inside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.hub.errors import BadRequest

# The Hub's own limits (huggingface_hub validates the same shapes client-side).
MAX_NAME = 96
MAX_PATH = 4096
MAX_SEGMENT = 255
MAX_BRANCH = 200

# Repository types this hub stores, with the plural used in /api/{type}s/ and
# the prefix used in /resolve and git-LFS URLs ("" for models).
REPO_TYPES: dict[str, str] = {"model": "", "kernel": "kernels/"}
PLURALS: dict[str, str] = {"models": "model", "kernels": "kernel"}

# Namespaces that would make URLs ambiguous (/api/..., /kernels/... are routes).
RESERVED_NAMESPACES = frozenset({"api", "kernels", "models", "datasets", "spaces", "buckets", "settings"})

# Patterns are used with fullmatch: `$` would also match before a trailing "\n".
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_REF_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Folders the Hub refuses to hold (same list as huggingface_hub's FORBIDDEN_FOLDERS).
_FORBIDDEN_SEGMENTS = frozenset({".git", ".cache"})
_SHORT_NAMES = re.compile(r"(git|cache)~[0-9]+")  # what Windows calls .git and .cache in 8.3 form
# Code points HFS+ ignores when comparing names (git's is_hfs_dotgit list).
_IGNORABLE = dict.fromkeys([*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])


@dataclass(frozen=True)
class RepoId:
    type: str  # "model" | "kernel"
    namespace: str
    name: str

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def url_prefix(self) -> str:
        return REPO_TYPES[self.type]

    def __str__(self) -> str:
        return f"{self.type}:{self.id}"


def repo_type(value: object) -> str:
    """A singular repo type ("model" when absent, as the Hub defaults)."""
    value = "model" if value is None or value == "" else value
    if not isinstance(value, str) or value not in REPO_TYPES:
        raise BadRequest(f"Invalid repo type {value!r}: this hub stores {', '.join(sorted(REPO_TYPES))} repositories")
    return value


def repo_type_from_plural(value: str) -> str:
    if not isinstance(value, str) or value not in PLURALS:
        raise BadRequest(f"Invalid repo type {value!r}: this hub serves /api/{{{','.join(sorted(PLURALS))}}}/...")
    return PLURALS[value]


def has_control(value: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value)


def _no_control(value: str, what: str) -> None:
    if has_control(value):
        raise BadRequest(f"Invalid {what} {value!r}: control characters (NUL and newlines included) are not allowed")


def name_part(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{what} is required")
    _no_control(value, what)
    if len(value) > MAX_NAME:
        raise BadRequest(f"{what} is longer than {MAX_NAME} characters")
    if not _NAME.fullmatch(value) or "--" in value or ".." in value or value.endswith(".git"):
        raise BadRequest(
            f"Invalid {what} {value!r}: use letters, digits, '-', '_' and '.', starting and ending with a"
            " letter or digit, without '--' or '..'"
        )
    return value


def repo_id(type_: str, namespace: str, name: str) -> RepoId:
    namespace = name_part(namespace, "namespace")
    if namespace.lower() in RESERVED_NAMESPACES:
        raise BadRequest(f"Namespace {namespace!r} is reserved")
    return RepoId(repo_type(type_), namespace, name_part(name, "repository name"))


def parse_repo_id(type_: str, value: str) -> RepoId:
    """'namespace/name' as huggingface_hub writes it."""
    if not isinstance(value, str) or value.count("/") != 1:
        raise BadRequest(f"Invalid repo id {value!r}: expected 'namespace/name'")
    namespace, name = value.split("/")
    return repo_id(type_, namespace, name)


def ref_name(value: object, what: str = "branch name") -> str:
    """A branch or tag name git and the Hub both accept (a subset of git check-ref-format)."""
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{what} is required")
    _no_control(value, what)
    if len(value) > MAX_BRANCH:
        raise BadRequest(f"{what} is longer than {MAX_BRANCH} characters")
    if value.startswith("refs/") or _COMMIT.fullmatch(value):
        raise BadRequest(f"Invalid {what} {value!r}: it must not look like a ref or a commit id")
    for segment in value.split("/"):
        if not _REF_SEGMENT.fullmatch(segment) or segment.endswith(".lock") or ".." in segment:
            raise BadRequest(f"Invalid {what} {value!r}")
    return value


def branch_name(value: object) -> str:
    return ref_name(value, "branch name")


def tag_name(value: object) -> str:
    return ref_name(value, "tag name")


def branch_ref(value: object) -> str:
    """A branch given as `name` or as its full ref `refs/heads/name` -> name."""
    if isinstance(value, str) and value.startswith("refs/heads/"):
        value = value[len("refs/heads/") :]
    return branch_name(value)


def revision(value: object) -> str:
    """A revision as a client sends it: a branch, a tag, a full commit id, or a
    full ref name (`refs/heads/...`, `refs/tags/...`). Returned as given."""
    if not isinstance(value, str) or not value:
        raise BadRequest("revision is required")
    _no_control(value, "revision")
    if _COMMIT.fullmatch(value):
        return value
    for prefix, what in (("refs/heads/", "branch name"), ("refs/tags/", "tag name")):
        if value.startswith(prefix):
            ref_name(value[len(prefix) :], what)
            return value
    return ref_name(value, "revision")


def is_commit_id(value: str) -> bool:
    return isinstance(value, str) and bool(_COMMIT.fullmatch(value))


def sha256_hex(value: object) -> str:
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise BadRequest(f"Invalid sha256 oid {value!r}: expected 64 lowercase hex digits")
    return value


def forbidden_segment(segment: str) -> bool:
    """True when a filesystem could take `segment` for `.git` or `.cache`."""
    name = segment.translate(_IGNORABLE).split(":", 1)[0].rstrip(". ").casefold()
    return name in _FORBIDDEN_SEGMENTS or bool(_SHORT_NAMES.fullmatch(name))


def file_path(value: object, *, folder: bool = False) -> str:
    """A path inside a repository, normalised to 'a/b/c'.

    Refused: empty, absolute, '..' or '.' segments, empty segments, NUL or other
    control characters, backslashes, '.git'/'.cache' folders, over-long paths.
    A trailing '/' is accepted only for folders (deletedFolder)."""
    if not isinstance(value, str) or not value:
        raise BadRequest("path is required")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_PATH:
        raise BadRequest(f"path is longer than {MAX_PATH} bytes")
    if has_control(value):
        raise BadRequest(f"Invalid path {value!r}: control characters (NUL and newlines included) are not allowed")
    if "\\" in value:
        raise BadRequest(f"Invalid path {value!r}: backslashes are not allowed")
    if value.startswith("/"):
        raise BadRequest(f"Invalid path {value!r}: absolute paths are not allowed")
    if folder and value.endswith("/"):
        value = value[:-1]
    segments = value.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            raise BadRequest(f"Invalid path {value!r}: empty, '.' and '..' segments are not allowed")
        if forbidden_segment(segment):
            raise BadRequest(f"Invalid path {value!r}: '{segment}' names a .git or .cache folder, which is not allowed")
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_SEGMENT:
            raise BadRequest(f"Invalid path {value!r}: a segment is longer than {MAX_SEGMENT} bytes")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(f"Invalid path {value!r}: not valid UTF-8") from None
    return value

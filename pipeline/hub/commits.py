"""Hub commits: the NDJSON payload huggingface_hub sends to `/commit/{rev}`,
parsed into operations, and those operations applied as one git commit.

Payload lines (huggingface_hub `_commit_api._prepare_commit_payload`):

    {"key": "header", "value": {"summary", "description", "parentCommit"}}
    {"key": "file", "value": {"path", "content", "encoding": "base64"}}
    {"key": "lfsFile", "value": {"path", "algo": "sha256", "oid", "size"}}
    {"key": "deletedFile" | "deletedFolder", "value": {"path"}}

Writing a commit: objects first (blobs, trees, the commit; each fsynced), then
`git update-ref <ref> <new> <old>`. A crash at any point leaves the ref at a
complete commit.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gitdb.util import hex_to_bin

import pipeline.hub.jsonlimit as jsonlimit
import pipeline.hub.paths as paths
from pipeline.hub.errors import (
    BadRequest,
    EntryNotFound,
    LfsObjectMissing,
    PayloadTooLarge,
    RevisionNotFound,
    StaleParent,
)
from pipeline.hub.lfs import pointer
from pipeline.hub.objects import FILE_MODE, Flat, ObjectStore
from pipeline.hub.repository import Repository

MAX_COMMIT_LINE = 24 * 1024 * 1024  # one base64 inline file (regular files are <= 10 MB)
MAX_INLINE_TOTAL = 1024 * 1024 * 1024


# -- operations, in the order the client sent them ------------------------------
@dataclass(frozen=True)
class AddBlob:
    path: str
    blob: str  # hex id of a blob already written with Repository.write_blob


@dataclass(frozen=True)
class AddLfs:
    path: str
    oid: str
    size: int | None  # None when copying an existing LFS file


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class DeleteFolder:
    path: str


Operation = AddBlob | AddLfs | DeleteFile | DeleteFolder


# -- the payload -----------------------------------------------------------------
@dataclass(frozen=True)
class Header:
    summary: str
    description: str
    parent: str | None


@dataclass(frozen=True)
class InlineFile:
    """A `file` line: its bytes still have to be written as a blob."""

    path: str
    data: bytes


Item = Header | InlineFile | AddLfs | DeleteFile | DeleteFolder


def parse_header(value: dict) -> Header:
    summary = value.get("summary") or ""
    if not isinstance(summary, str) or not summary.strip():
        raise BadRequest("commit summary is required")
    description = value.get("description")
    description = "" if description is None else description
    if not isinstance(description, str):
        raise BadRequest("commit description must be a string")
    parent = value.get("parentCommit")
    if parent is not None and not (isinstance(parent, str) and paths.is_commit_id(parent)):
        raise BadRequest(f"parentCommit {parent!r} is not a commit id")
    return Header(summary, description, parent)


def _inline_file(value: dict) -> InlineFile:
    path = paths.file_path(value.get("path"))
    content = value.get("content", "")
    encoding = value.get("encoding", "utf-8")
    try:
        data = base64.b64decode(content, validate=True) if encoding == "base64" else content.encode("utf-8")
    except (binascii.Error, ValueError, AttributeError, TypeError):
        raise BadRequest(f"content of '{path}' is not valid {encoding}") from None
    return InlineFile(path, data)


def _lfs_file(value: dict) -> AddLfs:
    path = paths.file_path(value.get("path"))
    if value.get("algo", "sha256") != "sha256":
        raise BadRequest(f"unsupported LFS hash algorithm {value.get('algo')!r}")
    size = value.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise BadRequest(f"size of '{path}' must be a non-negative integer")
    return AddLfs(path, paths.sha256_hex(value.get("oid")), size)


_PARSERS: dict[str, Callable[[dict], Item]] = {
    "header": parse_header,
    "file": _inline_file,
    "lfsFile": _lfs_file,
    "deletedFile": lambda v: DeleteFile(paths.file_path(v.get("path"))),
    "deletedFolder": lambda v: DeleteFolder(paths.file_path(v.get("path"), folder=True)),
}


def parse_line(line: bytes) -> Item | None:
    """One NDJSON line -> an item (None for a blank line)."""
    if not line.strip():
        return None
    item = jsonlimit.loads(line, "a commit line")
    if not isinstance(item, dict) or "key" not in item or "value" not in item:
        raise BadRequest('commit body must be NDJSON lines {"key": ..., "value": {...}}')
    key, value = item["key"], item["value"]
    if not isinstance(key, str) or key not in _PARSERS:
        raise BadRequest(f"unknown commit operation {key!r}")
    if not isinstance(value, dict):
        raise BadRequest(f"'{key}' value must be an object")
    return _PARSERS[key](value)


class PayloadParser:
    """Splits a streamed body into lines and parses each as it completes, so an
    inline file can be stored before the next one arrives."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._inline_total = 0

    def feed(self, chunk: bytes) -> list[Item]:
        self._buffer += chunk
        items = []
        while (i := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:i])
            del self._buffer[: i + 1]
            items.extend(self._parse(line))
        if len(self._buffer) > MAX_COMMIT_LINE:
            raise PayloadTooLarge(f"a commit line is longer than {MAX_COMMIT_LINE} bytes")
        return items

    def finish(self) -> list[Item]:
        line, self._buffer = bytes(self._buffer), bytearray()
        return self._parse(line)

    def _parse(self, line: bytes) -> list[Item]:
        item = parse_line(line)
        if item is None:
            return []
        if isinstance(item, InlineFile):
            self._inline_total += len(item.data)
            if self._inline_total > MAX_INLINE_TOTAL:
                raise PayloadTooLarge("inline files of one commit exceed 1 GiB: upload large files through LFS")
        return [item]


# -- applying ----------------------------------------------------------------------
def _parents_of(path: str) -> set[str]:
    return {"/".join(path.split("/")[:i]) for i in range(1, path.count("/") + 1)}


def _check_no_conflict(flat: Flat, dirs: set[str], path: str) -> None:
    for prefix in sorted(_parents_of(path)):
        if prefix in flat:
            raise BadRequest(f"cannot add '{path}': '{prefix}' is a file")
    if path in dirs and any(p.startswith(path + "/") for p in flat):
        raise BadRequest(f"cannot add '{path}': it is a folder")


SizeOf = Callable[[str], "int | None"]  # LFS oid -> size of the stored object, None if absent


def _lfs_blob(objects: ObjectStore, op: AddLfs, written: list[bytes], size_of: SizeOf) -> bytes:
    size = size_of(op.oid)
    if size is None or (op.size is not None and size != op.size):
        raise LfsObjectMissing(
            f"LFS object {op.oid} for '{op.path}' was never uploaded to this repository"
            + ("" if size is None else f" with size {op.size}")
        )
    return objects.store(b"blob", pointer(op.oid, size), written)


def apply_operations(
    objects: ObjectStore, flat: Flat, operations: Sequence[Operation], written: list[bytes], size_of: SizeOf
) -> None:
    """Change the flat file map `flat` in place, operation by operation."""
    dirs = set().union(*(_parents_of(p) for p in flat)) if flat else set()
    for op in operations:
        if isinstance(op, (AddBlob, AddLfs)):
            _check_no_conflict(flat, dirs, op.path)
            blob = hex_to_bin(op.blob) if isinstance(op, AddBlob) else _lfs_blob(objects, op, written, size_of)
            flat[op.path] = (FILE_MODE, blob)
            dirs.update(_parents_of(op.path))
        elif isinstance(op, DeleteFile):
            if op.path not in flat:
                raise EntryNotFound(f"A file with this name doesn't exist: '{op.path}'")
            del flat[op.path]
        elif isinstance(op, DeleteFolder):
            prefix = op.path.rstrip("/") + "/"
            for p in [p for p in flat if p.startswith(prefix)]:
                del flat[p]


def commit(
    repo: Repository,
    branch: str,
    operations: Sequence[Operation],
    *,
    summary: str,
    description: str = "",
    parent: str | None = None,
    author: str = "",
    size_of: SizeOf | None = None,
    objects: ObjectStore | None = None,
) -> str:
    """Apply `operations` on top of `branch` and move the branch, atomically.

    Refused with StaleParent when `parent` is given and is not the head.
    `size_of` finds LFS objects (default: the repository's LFS store); new
    objects go to `objects` (default: the repository's store; a Quarantine
    moves them there only when the commit is complete)."""
    objects = objects or repo.objects
    with repo.lock():
        head = repo.branch_head(branch)
        if head is None:
            raise RevisionNotFound(f"Invalid rev id: {branch} (create the branch first)")
        if parent is not None and parent != head:
            raise StaleParent(
                f"A commit has happened since {parent[:12]}: the head of '{branch}' is now {head[:12]}."
                " Refresh and try again."
            )
        written: list[bytes] = [hex_to_bin(op.blob) for op in operations if isinstance(op, AddBlob)]
        flat = repo.objects.flatten(repo.tree_of(head))
        apply_operations(objects, flat, operations, written, size_of or repo.lfs.size)
        tree = objects.write_tree(flat, written)
        sha = objects.write_commit(tree, [head], summary, description, author, written)
        objects.fsync(written)
        title = summary.splitlines()[0] if summary else ""
        repo.update_ref(f"refs/heads/{branch}", sha, head, f"commit: {title}")
        return sha

"""File-system helpers: output appears whole or not at all."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Literal

from pipeline.errors import PipelineError


@contextlib.contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield an empty temporary directory next to `final`; on success replace
    `final` with it in one rename, on any error remove it and leave `final` as it was."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if final.exists() or final.is_symlink():
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# --- output paths: a user's mistake is found before any work is done --------------

OutKind = Literal["directory", "file"]


def out_path_problem(path: Path, kind: OutKind, option: str = "the output") -> tuple[str, str] | None:
    """Why `path` cannot be written as a `kind` (a directory to create or
    replace, or a file), as (code, message); None when it can. Nothing is created."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        if kind == "directory" and not path.is_dir():
            return "out-path-not-directory", f"{option} needs a directory, and this is a file"
        if kind == "file" and path.is_dir():
            return "out-path-not-file", f"{option} needs a file, and this is a directory"
    blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        return "out-path-not-directory", f"{option}: {blocker} is a file, so nothing can be created inside it"
    parent = next((p for p in path.absolute().parents if p.exists()), None)
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        return "out-path-not-writable", f"{option}: {parent} is not writable"
    return None


def require_out_path(path: Path, kind: OutKind, error: type[PipelineError], option: str) -> None:
    """Raise the stage's `error` when `path` cannot be written as a `kind` (see `out_path_problem`)."""
    problem = out_path_problem(path, kind, option)
    if problem is None:
        return
    code, message = problem
    wanted = "a directory (new or existing)" if kind == "directory" else "a file path"
    raise error(message, path=str(path), code=code, hint=f"pass {option} {wanted} in a directory you can write to")


def atomic_write_bytes(path: Path, data: bytes, *, tmp_dir: Path | None = None) -> None:
    """Write `data` to a temporary file (in `tmp_dir`, default beside `path`), fsync, rename into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=tmp_dir or path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


# --- content hashes: the one place each is computed -------------------------------

def _hash_file(h, path: Path, chunk: int = 1 << 20):
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file (Git LFS object ids, metadata digests)."""
    return _hash_file(hashlib.sha256(), path).hexdigest()


def sha256_file_b64(path: Path) -> str:
    """Base64 sha256 of a file (kernels' metadata.json digest entries)."""
    return base64.b64encode(_hash_file(hashlib.sha256(), path).digest()).decode()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_sha1_bytes(data: bytes) -> str:
    """The git object id of a blob with this content (what the Hub reports as `oid`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_blob_sha1(path: Path) -> str:
    """`git_blob_sha1_bytes` of a file's content, read in blocks."""
    h = hashlib.sha1()
    h.update(b"blob %d\0" % Path(path).stat().st_size)
    return _hash_file(h, path).hexdigest()

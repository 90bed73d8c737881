"""Where local builds keep their objects, and the stamp that makes a no-op rebuild free.

Objects and the ninja state live outside the project and outside `build/`
(which must hold only variant directories): `$PIPELINE_CACHE_DIR`, else
`$XDG_CACHE_HOME/kernel-pipeline`, else `~/.cache/kernel-pipeline`, one
directory per (project, variant).

The stamp records two keys: the compile key (every compiled input's sha256,
the flags and capabilities asked for, torch's version and location, the
compilers' versions, the kernel id) and the package key (the Python files
and what metadata.json says), plus the sha256 of every output file. When both
keys and the output are unchanged nothing runs; when only the package key
moved, the cached library is reused and only the directory is rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.fsutil import atomic_write_text

STAMP = "stamp.json"


def cache_root() -> Path:
    if os.environ.get("PIPELINE_CACHE_DIR"):
        return Path(os.environ["PIPELINE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-pipeline"


def work_dir(project_root: Path, variant: str) -> Path:
    """One per (project, variant): building to another output directory reuses the objects."""
    ident = f"{Path(project_root).resolve()}\0{variant}"
    digest = hashlib.sha256(ident.encode()).hexdigest()[:20]
    return cache_root() / "local" / f"{Path(project_root).name}-{variant}-{digest}"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def hash_files(root: Path, rels: list[str]) -> dict[str, str]:
    """sha256 of each file; a missing file hashes to '' (so its appearance counts as a change)."""
    out: dict[str, str] = {}
    for rel in sorted(set(rels)):
        path = Path(root, rel)
        out[rel] = file_sha256(path) if path.is_file() else ""
    return out


def key_of(document: Any) -> str:
    return hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()


def tree_hashes(directory: Path) -> dict[str, str]:
    """sha256 of every file below `directory` (relative POSIX paths)."""
    out: dict[str, str] = {}
    if not directory.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".pyc"):
                continue
            path = Path(dirpath, name)
            out[path.relative_to(directory).as_posix()] = file_sha256(path)
    return out


@dataclass
class Stamp:
    compile_key: str = ""
    package_key: str = ""
    deps: list[str] = field(default_factory=list)  # project files the compiler read (ninja -t deps)
    output: dict[str, str] = field(default_factory=dict)  # sha256 of each file of the variant dir
    library: str = ""  # the linked library in the work dir
    out: str = ""  # the variant directory `output` describes

    @classmethod
    def read(cls, work: Path) -> "Stamp":
        try:
            data = json.loads((work / STAMP).read_text(encoding="utf-8"))
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        except (OSError, ValueError, TypeError):
            return cls()

    def write(self, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        atomic_write_text(work / STAMP, json.dumps(self.__dict__, indent=2, sort_keys=True))

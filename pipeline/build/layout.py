"""The variant directory `kernels` 0.17 loads, and its metadata.json.

What kernels 0.17.2 reads (load.py, resolver.py, importer.py, validate.py):

- `get_local_kernel(path)` looks for variant directories in `path` and then
  `path/build`, keeps the names `kernels.variants.parse_variant` accepts,
  picks one for the running torch/backend, reads `metadata.json` there
  (`kernels._rust.Metadata`, which requires name, id, version, license,
  python-depends, backend.type), then imports `<variant>/__init__.py` as a
  package named `metadata["id"]`.
- The package's `_ops.py` imports the extension `<id>.abi3.so` relatively
  (`from . import <id>`), so the library file must be named after the id and
  export `PyInit_<id>`, and its ops live in the torch namespace `<id>`.
- The digest covers every file of the variant except `metadata.json`,
  `metadata.json.sigstore`, `__pycache__/` and `*.pyc`: base64 sha256 per
  relative path (`kernels._rust.Digest.hash_variant`, used when installed).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from pipeline import __version__
from pipeline.fsutil import sha256_file_b64

METADATA = "metadata.json"
# Files a digest never covers (kernels-data digest.rs): the metadata itself and its signature.
UNHASHED_TOP = {"metadata.json", "metadata.json.sigstore"}

# The registration macros kernel projects include as "registration.h"
# (kernel-builder generates this header at build time; projects must not
# commit it). TORCH_LIBRARY_EXPAND lets TORCH_EXTENSION_NAME be a macro;
# REGISTER_EXTENSION gives the library a Python module init so that
# `from . import <id>` loads it (and with it the op registrations).
REGISTRATION_H = """\
// Written by kernel-pipeline's local build backend.
#pragma once

#include <Python.h>

#define KP_CONCAT_(A, B) A##B
#define KP_CONCAT(A, B) KP_CONCAT_(A, B)
#define KP_STRINGIFY_(A) #A
#define KP_STRINGIFY(A) KP_STRINGIFY_(A)

#define CONCAT(A, B) KP_CONCAT(A, B)
#define STRINGIFY(A) KP_STRINGIFY(A)

#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)
#define STABLE_TORCH_LIBRARY_EXPAND(NAME, MODULE) STABLE_TORCH_LIBRARY(NAME, MODULE)
#define STABLE_TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) STABLE_TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)

#define REGISTER_EXTENSION(NAME)                                                   \\
  PyMODINIT_FUNC KP_CONCAT(PyInit_, NAME)() {                                      \\
    static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT,                 \\
                                            KP_STRINGIFY(NAME), nullptr, 0, nullptr}; \\
    return PyModule_Create(&module_def);                                           \\
  }
"""


def _ops_module(kernel_id: str, imports_extension: bool) -> str:
    extension = f"from . import {kernel_id}\n" if imports_extension else "\n"
    return (
        "import torch\n"
        + extension
        + f"ops = torch.ops.{kernel_id}\n"
        "\n"
        "\n"
        "def add_op_namespace_prefix(op_name: str) -> str:\n"
        '    """The fully qualified name of `op_name` in this build\'s namespace."""\n'
        f'    return f"{kernel_id}::{{op_name}}"\n'
    )


def ops_py(kernel_id: str) -> str:
    """`_ops.py`: the op namespace of this build, as kernel-builder writes it."""
    return _ops_module(kernel_id, imports_extension=True)


def noarch_ops_py(kernel_id: str) -> str:
    """`_ops.py` of a noarch variant: the ops are registered from Python
    (`torch.library.custom_op(add_op_namespace_prefix(...))`), so there is no
    extension to import."""
    return _ops_module(kernel_id, imports_extension=False)


def package_files(package_dir: Path, extensions: tuple[str, ...]) -> list[str]:
    """Files of the Python package to ship (relative paths): `.py` plus the
    `[torch] pyext` extensions; never bytecode, never a committed `_ops.py`
    (the build writes its own)."""
    exts = {e.lstrip(".") for e in extensions} | {"py"}
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(package_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in filenames:
            if name.rsplit(".", 1)[-1] in exts and not name.endswith(".pyc"):
                rel = (Path(dirpath) / name).relative_to(package_dir).as_posix()
                if rel != "_ops.py":
                    found.append(rel)
    return sorted(found)


def copy_package(package_dir: Path, files: list[str], dest: Path) -> None:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package_dir / rel, target)




def hash_variant(variant_dir: Path) -> dict[str, Any]:
    """The `digest` object of metadata.json for `variant_dir`.

    `kernels._rust.Digest.hash_variant` when `kernels` is installed (the
    reference); otherwise the same rules here (tests prove they agree), so a
    machine without `kernels` still writes a correct digest.
    """
    try:
        from kernels._rust import Digest, DigestAlgorithm
    except ImportError:
        return {"algorithm": "sha256", "files": _hash_variant_here(variant_dir)}
    digest = Digest.hash_variant(DigestAlgorithm.SHA256, variant_dir)
    return {"algorithm": "sha256", "files": dict(sorted(digest.files.items()))}


def _hash_variant_here(variant_dir: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(variant_dir, followlinks=True):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        here = Path(dirpath)
        for name in filenames:
            path = here / name
            rel = path.relative_to(variant_dir).as_posix()
            if (here == variant_dir and name in UNHASHED_TOP) or name.endswith(".pyc") or not path.is_file():
                continue
            files[rel] = sha256_file_b64(path)
    return dict(sorted(files.items()))


def metadata_document(
    *,
    name: str,
    kernel_id: str,
    version: int,
    license: str,
    python_depends: tuple[str, ...],
    backend: str,
    archs: list[str] | None,
    digest: dict[str, Any],
    source_commit: str | None,
    source_dirty: bool,
    toolchain: dict[str, str],
) -> dict[str, Any]:
    """metadata.json in kernel-builder's shape (kernels-data metadata.rs).

    `provenance.kernel-builder` names this pipeline (no git status: the
    pipeline is not the kernel's source); `provenance.kernel` is the project's
    HEAD commit and dirty flag, left out when the revision is unknown, as
    kernel-builder does. `provenance.toolchain` (compilers, torch) is ours;
    kernels' parser ignores keys it does not know.
    """
    backend_info: dict[str, Any] = {"type": backend}
    if archs:
        backend_info["archs"] = sorted(set(archs))
    provenance: dict[str, Any] = {"kernel-builder": {"version": f"kernel-pipeline {__version__}"}}
    if source_commit:
        provenance["kernel"] = {"commit": source_commit, "dirty": bool(source_dirty)}
    provenance["toolchain"] = dict(toolchain)
    return {
        "name": name,
        "id": kernel_id,
        "version": version,
        "license": license,
        "python-depends": list(python_depends),
        "kernel-depends": [],
        "backend": backend_info,
        "digest": digest,
        "provenance": provenance,
    }


def write_metadata(variant_dir: Path, document: dict[str, Any]) -> None:
    (variant_dir / METADATA).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")


def read_metadata(variant_dir: Path) -> dict[str, Any]:
    return json.loads((variant_dir / METADATA).read_text(encoding="utf-8"))


def check_variant_dir(variant_dir: Path, *, compiled: bool = True) -> list[str]:
    """What is wrong with a built variant directory (empty: nothing).

    The checks the build owes its output: the files the loader needs (the
    `<id>.abi3.so` unless the variant is noarch, `compiled=False`), a
    metadata.json kernels can parse, and a digest that matches the files.
    """
    problems: list[str] = []
    meta_path = variant_dir / METADATA
    if not meta_path.is_file():
        return [f"{variant_dir.name}: no metadata.json"]
    try:
        meta = read_metadata(variant_dir)
    except (OSError, ValueError) as exc:
        return [f"{variant_dir.name}: metadata.json is not JSON ({exc})"]
    try:
        from kernels._rust import Metadata
    except ImportError:
        Metadata = None  # noqa: N806 - the class, when kernels is there
    if Metadata is not None:
        try:
            Metadata.from_bytes(meta_path.read_bytes())
        except ValueError as exc:
            problems.append(f"{variant_dir.name}: kernels cannot parse metadata.json ({exc})")
    kernel_id = meta.get("id", "")
    for needed in ("__init__.py", "_ops.py"):
        if not (variant_dir / needed).is_file():
            problems.append(f"{variant_dir.name}: {needed} is missing")
    if compiled and not (variant_dir / f"{kernel_id}.abi3.so").is_file():
        problems.append(f"{variant_dir.name}: {kernel_id}.abi3.so is missing")
    recorded = (meta.get("digest") or {}).get("files")
    if recorded is None:
        problems.append(f"{variant_dir.name}: metadata.json has no digest")
    else:
        actual = hash_variant(variant_dir)["files"]
        for rel in sorted(set(recorded) | set(actual)):
            if recorded.get(rel) != actual.get(rel):
                what = "missing" if rel not in actual else "not in the digest" if rel not in recorded else "changed"
                problems.append(f"{variant_dir.name}/{rel}: {what}")
    return problems

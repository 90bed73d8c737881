"""Build stage: a validated project -> `<out>/<variant>/` directories.

Two backends behind one function:

- `local` (`local.py`): compiles the host's variant with the running torch
  (`torch.utils.cpp_extension` include/library paths and compilers, a ninja
  file of our own so each kernel keeps its own flags), caches by a key over
  every input, writes the variant directory atomically.
- `nix` (`nix.py`): `nix build` of the project's flake (kernel-builder), then
  copies `result/<variant>/` into `<out>/` (store links dereferenced) and
  checks the copy.

Both write the layout `kernels` 0.17 loads (see `layout.py`):

    <out>/<variant>/__init__.py  (+ the package's other Python files)
    <out>/<variant>/_ops.py      (ops = torch.ops.<id>; add_op_namespace_prefix)
    <out>/<variant>/<id>.abi3.so
    <out>/<variant>/metadata.json

and `kernels.get_local_kernel(<out>.parent)` (or `<out>`) loads the host's
variant. `import kernels` stays lazy: the local path builds without it.

A `[torch-noarch]` project (pure Python: Triton, plain PyTorch) compiles
nothing: the local backend packages it as kernel-builder does, one
`torch-<backend>` directory per backend (`noarch.py`), on any machine. A
`[tvm-ffi]` project is built by kernel-builder only (`--backend nix`, or its
flake directly); the local backend says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from pipeline.build.backend import BACKENDS, BackendChoice, choose_backend
from pipeline.build.local import build_local
from pipeline.build.nix import build_nix
from pipeline.build.noarch import build_noarch
from pipeline.build.result import BuildResult, BuiltVariant
from pipeline.events import Reporter, quiet
from pipeline.errors import BuildError

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject


def build_project(
    project: "KernelProject",
    out: Path,
    *,
    backend: str = "local",
    variant: str | None = None,
    progress: Reporter | None = None,
    unique_id: str | None = None,
    nix_args: Sequence[str] = (),
) -> BuildResult:
    """Build `project` into `out` (`out/<variant>/`).

    `variant`: a variant name; local builds default to the host's variant
    (its CPU variant when the project has no backend for the host's torch),
    nix builds default to the flake's whole bundle. `unique_id` replaces the
    git-derived part of the kernel id (kernel-builder's `--unique-id`; the
    Nix builds pass the flake revision). `nix_args` go to `nix build` as is
    (e.g. `--override-input kernel-builder path:...`).
    """
    report: Reporter = progress or quiet
    out = Path(out)
    if backend == "local":
        if project.noarch:
            return build_noarch(project, out, variant=variant, progress=report, unique_id=unique_id)
        if project.framework == "tvm-ffi":
            raise _tvm_ffi_unsupported(project)
        return build_local(project, out, variant=variant, progress=report, unique_id=unique_id)
    if backend == "nix":
        return build_nix(project, out, variant=variant, progress=report, nix_args=tuple(nix_args))
    raise BuildError(f"unknown build backend {backend!r}", code="build-backend-unknown",
                     hint=f"choose one of: {', '.join(BACKENDS)}")


def _tvm_ffi_unsupported(project: "KernelProject") -> BuildError:
    # Building here would need tvm-ffi's headers and library per backend and
    # the tvm-ffi<XY>-<backend>-<system> naming kernel-builder applies; its
    # Nix builder has both, so we send the user there rather than guess.
    return BuildError(
        f"{project.name} is a tvm-ffi kernel: the local backend builds [torch] and [torch-noarch] projects only",
        code="tvm-ffi-needs-nix", path=str(project.root / "build.toml"),
        hint=f"build it with kernel-builder's Nix flake: `nix build {project.root}#bundle` (variants "
             "tvm-ffi<XY>-<backend>-<system> under result/; needs nix and the huggingface.cachix.org cache), "
             "then `python -m pipeline check result` and `python -m pipeline publish ORG/NAME --build-dir result`")


__all__ = ["BACKENDS", "BackendChoice", "BuildResult", "BuiltVariant", "build_project", "choose_backend"]

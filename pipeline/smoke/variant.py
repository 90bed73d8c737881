"""Importing the host's variant of a build tree, as users' code would (kernels.get_local_kernel).
This runs the variant's code: smoke and bench call it inside their worker process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.errors import SmokeError


@dataclass(frozen=True)
class LoadedVariant:
    module: Any
    kernel_name: str
    kernel_id: str
    variant: str
    backend: str
    path: Path


def load_variant(build_dir: Path) -> LoadedVariant:
    """The host's variant of `build_dir`, imported with kernels.get_local_kernel."""
    try:
        import kernels
        from kernels.resolver import resolve_local_kernel
    except ImportError as exc:  # pragma: no cover - kernels is a dependency
        raise SmokeError(f"the kernels package is needed to load a build: {exc}", code="kernels-missing",
                         hint="pip install kernels==0.17.2") from None
    build_dir = Path(build_dir)
    if not build_dir.is_dir():
        raise SmokeError("no such build directory", path=str(build_dir), code="build-dir-missing",
                         hint="run `python -m pipeline build PROJECT` first")
    try:
        local = resolve_local_kernel(build_dir, backend=None)
    except (FileNotFoundError, ValueError) as exc:
        raise SmokeError(f"no variant in this build tree can run here: {exc}", path=str(build_dir), code="no-host-variant",
                         hint="build the host's variant: `python -m pipeline build PROJECT`") from None
    try:
        module = kernels.get_local_kernel(build_dir)
    except Exception as exc:
        raise SmokeError(f"kernels.get_local_kernel could not import the variant: {type(exc).__name__}: {exc}",
                         path=str(local.variant_path), code="variant-import-failed") from None
    meta = local.metadata
    return LoadedVariant(module=module, kernel_name=str(meta.name), kernel_id=meta.id,
                         variant=local.variant_path.name, backend=str(meta.backend.backend_type),
                         path=Path(local.variant_path))

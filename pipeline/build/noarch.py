"""Noarch builds: a pure-Python kernel (Triton, plain PyTorch) packaged per backend.

A `[torch-noarch]` project compiles nothing. kernel-builder builds it
(nix-builder/lib/extension/torch/no-arch.nix: `kernel-builder create-pyproject`,
then `setup.py build_kernel --backend <b>`) into one directory per backend,
named `torch-<backend>` (nix-builder/lib/variants/torch.nix), and so does this:

    <out>/torch-<backend>/__init__.py  (+ the package's other files: the `pyext`
                                        extensions, "py" and "pyi" by default,
                                        as kernel-builder's source set keeps)
    <out>/torch-<backend>/_ops.py      (ops = torch.ops.<id>; add_op_namespace_prefix)
    <out>/torch-<backend>/metadata.json

The id is `_<python_name>_<backend>_<rev>` per backend, as kernel-builder's
`metadata-<backend>.json` has it; `backend.archs` is the project's
`[torch-noarch] cuda_capabilities` (cuda) or `rocm_archs` (rocm), the only
archs kernel-builder can know before a build (`precomputable_backend_archs`).
kernel-builder's `_ops.py` works the backend out when it is imported, because
one file serves every backend there; ours is written per variant with its id,
which is the same name on the backend `kernels` loads it for.

Every backend builds here, whatever the machine: nothing is compiled and no
torch is imported (a CPU-only machine builds `torch-cuda`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pipeline import toml
from pipeline.build import cache, layout, source
from pipeline.build.result import BuildResult, BuiltVariant
from pipeline.errors import BuildError, MatrixError, Problem
from pipeline.events import Event
from pipeline.fsutil import staged_dir
from pipeline.matrix import BACKEND_ORDER, Variant

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject

Report = Callable[[Event], None]
# Where [torch-noarch] keeps the archs metadata.json records per backend. The
# keys are snake_case: kernels-data's TorchNoarch has no kebab-case rename
# (its parser refuses `cuda-capabilities` there).
ARCH_KEYS = {"cuda": "cuda_capabilities", "rocm": "rocm_archs"}


class _Unchanged(Exception):
    """The staged variant is identical to the one in place."""


@dataclass(frozen=True)
class NoarchPlan:
    variants: tuple[Variant, ...]
    unique_id: str
    state: source.SourceState
    package_files: tuple[str, ...]
    archs: dict[str, tuple[str, ...]]  # backend -> backend.archs


def noarch_variants(project: "KernelProject", requested: str | None) -> tuple[Variant, ...]:
    """`torch-<backend>` for each backend of the project, or the one requested."""
    backends = sorted(project.backends, key=lambda b: BACKEND_ORDER.index(b) if b in BACKEND_ORDER else 99)
    if requested is None:
        return tuple(Variant.parse(f"torch-{b}") for b in backends if b in BACKEND_ORDER)
    try:
        target = Variant.parse(requested)
    except MatrixError as exc:
        raise BuildError(f"unknown variant name {requested!r}: {exc.message}", code="variant-unknown",
                         hint="`python -m pipeline matrix PATH` lists a project's variants") from None
    if not target.noarch:
        raise BuildError(f"{project.name} is a torch-noarch project: it builds torch-<backend> variants, "
                         f"not {requested}", code="variant-unbuildable",
                         hint=f"ask for one of: {', '.join(f'torch-{b}' for b in backends)}")
    if target.backend not in project.backends:
        raise BuildError(f"{project.name} has no {target.backend} backend (build.toml backends: "
                         f"{', '.join(project.backends)})", code="variant-unbuildable",
                         hint=f"add \"{target.backend}\" to [general] backends")
    return (target,)


def declared_archs(project: "KernelProject") -> dict[str, tuple[str, ...]]:
    """[torch-noarch] cuda_capabilities / rocm_archs by backend.

    Read here because the project model does not carry them yet; the table was
    validated by kernels' parser before this runs."""
    data = toml.loads(toml.read_text(project.root / "build.toml"))
    table = data.get("torch-noarch") or {}
    return {backend: tuple(str(a) for a in table[key]) for backend, key in ARCH_KEYS.items()
            if isinstance(table.get(key), list) and table[key]}


def make_noarch_plan(project: "KernelProject", out: Path, requested: str | None,
                     unique_id: str | None) -> NoarchPlan:
    package_dir = project.package_dir
    if not (package_dir / "__init__.py").is_file():
        raise BuildError(f"{package_dir.relative_to(project.root)}/__init__.py is missing", code="package-missing",
                         path=str(package_dir), hint="the Python package lives in torch-ext/<python_name>/")
    pyext = tuple(project.torch_ext.pyext) if project.torch_ext is not None else ("py", "pyi")
    state = source.source_state(project.root, source.project_files(project.root, exclude=[out]))
    return NoarchPlan(variants=noarch_variants(project, requested), unique_id=unique_id or state.unique_id,
                      state=state, package_files=tuple(layout.package_files(package_dir, pyext)),
                      archs=declared_archs(project))


def _write_variant(project: "KernelProject", plan: NoarchPlan, variant: Variant, kernel_id: str,
                   directory: Path) -> None:
    directory.chmod(0o755)  # mkdtemp makes it private; a build directory is for everyone to read
    layout.copy_package(project.package_dir, list(plan.package_files), directory)
    (directory / "_ops.py").write_text(layout.noarch_ops_py(kernel_id), encoding="utf-8")
    archs = plan.archs.get(variant.backend)
    document = layout.metadata_document(
        name=project.name, kernel_id=kernel_id, version=_required(project, "version"),
        license=_required(project, "license"), python_depends=project.python_depends_for(variant.backend),
        backend=variant.backend, archs=list(archs) if archs else None, digest=layout.hash_variant(directory),
        source_commit=plan.state.commit, source_dirty=plan.state.dirty, toolchain={"build-backend": "local"})
    layout.write_metadata(directory, document)
    problems = layout.check_variant_dir(directory, compiled=False)
    if problems:
        raise BuildError(f"the built {variant.name} is not loadable: {problems[0]}", code="layout-invalid",
                         problems=[Problem(path=str(directory), line=None, code="layout-invalid", message=p)
                                   for p in problems])


def build_noarch(project: "KernelProject", out: Path, *, variant: str | None, progress: Report,
                 unique_id: str | None = None) -> BuildResult:
    """Write `out/torch-<backend>/` for every backend (or the one asked for).

    A variant whose files would not change is left as it is (`cached`), so
    rebuilding an unchanged project touches nothing."""
    started = time.monotonic()
    plan = make_noarch_plan(project, out, variant, unique_id)
    progress(Event("step", f"{project.name}: packaging {', '.join(v.name for v in plan.variants)} "
                           "(torch-noarch: nothing to compile)"))
    built = []
    for target in plan.variants:
        kernel_id = source.kernel_id(project.python_name, target.backend, plan.unique_id)
        final = Path(out) / target.name
        unchanged = False
        try:
            with staged_dir(final) as tmp:
                _write_variant(project, plan, target, kernel_id, tmp)
                if cache.tree_hashes(tmp) == cache.tree_hashes(final):
                    raise _Unchanged  # staged_dir drops the copy and keeps `final`
        except _Unchanged:
            unchanged = True
        progress(Event("step", f"{target.name}: {'up to date' if unchanged else 'written'} ({kernel_id})"))
        built.append(BuiltVariant(target, final, kernel_id, unchanged, time.monotonic() - started))
    return BuildResult(variants=tuple(built), backend="local", out=Path(out))


def _required(project: "KernelProject", key: str):
    value = getattr(project, key)
    if value is None:
        raise BuildError(f"{project.name}'s build.toml has no [general] {key}, which metadata.json needs",
                         code="metadata-incomplete", path=str(project.root / "build.toml"),
                         hint=f"add {key} = ... to [general]")
    return value

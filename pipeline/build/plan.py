"""The local backend's plan: which variant, which sources with which flags,
and the kernel id, decided before anything is compiled."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline import toml
from pipeline.build import layout, source, toolchain
from pipeline.errors import BuildError, MatrixError
from pipeline.matrix import TorchInfo, Variant, cpu_variant_of, default_cuda_capabilities, host_variant, version_key

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject, KernelSpec

CXX_SOURCES = (".cpp", ".cc", ".cxx", ".c")
CUDA_SOURCES = (".cu",)
LOCAL_BACKENDS = ("cpu", "cuda")
# Dependencies the running torch (and CUDA toolkit) provide; the others
# (cutlass, sycl-tla, metal-cpp) come from Nix.
LOCAL_DEPENDS = {"torch"}


# ------------------------------------------------------------ the variant ----

def choose_variant(project: "KernelProject", info: TorchInfo, requested: str | None) -> Variant:
    """The variant to build: `requested`, or the host's (its CPU variant when
    the project has no backend for the host's torch). One sentence per refusal."""
    host = host_variant(info)
    buildable = [v for v in (host, cpu_variant_of(host)) if v.backend in LOCAL_BACKENDS]
    if requested is None:
        for candidate in buildable:
            if candidate.backend in project.backends:
                return candidate
        raise BuildError(
            f"{project.name} has no backend this machine can build: its backends are "
            f"{', '.join(project.backends)} and torch {info.version} can build "
            f"{' and '.join(v.backend for v in buildable) or 'none of them'} here",
            code="variant-unbuildable",
            hint="install a CUDA build of torch to build CUDA variants, or use --backend nix")
    target = _parse_requested(requested, buildable)
    if target.system != host.system:
        raise BuildError(f"{target.name} is for {target.system}; this machine is {host.system}",
                         code="variant-unbuildable", hint="build it on such a machine, or use --backend nix")
    if target.backend not in LOCAL_BACKENDS:
        raise BuildError(f"the local backend builds cpu and cuda variants only, not {target.name}",
                         code="variant-unbuildable", hint="use --backend nix")
    if target.torch != host.torch:
        raise BuildError(f"{target.name} needs torch {target.torch}; this interpreter has torch {info.version}",
                         code="variant-unbuildable", hint=f"run the build with an interpreter that has torch {target.torch}")
    if target.backend == "cuda" and not info.cuda:
        raise BuildError(f"torch {info.version} is not a CUDA build, so it cannot build {target.name}",
                         code="torch-not-cuda", hint="install a CUDA build of torch (e.g. pip install torch --index-url .../cu130)")
    if target.backend == "cuda" and target.backend_version != host.backend_version:
        raise BuildError(f"{target.name} needs CUDA {target.backend_version}; torch {info.version} "
                         f"was built with CUDA {info.cuda}", code="variant-unbuildable",
                         hint=f"use a torch built for CUDA {target.backend_version}")
    if target.backend not in project.backends:
        raise BuildError(f"{project.name} has no {target.backend} backend (build.toml backends: "
                         f"{', '.join(project.backends)})", code="variant-unbuildable",
                         hint=f"add \"{target.backend}\" to [general] backends, with a [kernel.*] for it")
    return target


def _parse_requested(name: str, buildable: list[Variant]) -> Variant:
    try:
        return Variant.parse(name)
    except MatrixError as exc:
        if exc.code == "kernels-missing":  # kernels is not installed here: accept only what we can name
            for candidate in buildable:
                if candidate.name == name:
                    return candidate
            raise BuildError(f"cannot build {name!r} here (this machine builds "
                             f"{', '.join(v.name for v in buildable)})", code="variant-unknown") from None
        raise BuildError(f"unknown variant name {name!r}: {exc.message}", code="variant-unknown",
                         hint="variant names look like torch213-cxx11-cu130-x86_64-linux; "
                              "`python -m pipeline matrix PATH` lists a project's") from None


# ---------------------------------------------------------------- the plan ----

@dataclass(frozen=True)
class Unit:
    """One compile: a source and what its kernels ask for it."""

    source: str  # relative to the project root
    language: str  # "cxx" | "cuda"
    kernels: tuple[str, ...]  # the lists naming it ("torch" for the binding), in build.toml order
    includes: tuple[str, ...]  # relative to the project root
    flags: tuple[str, ...]  # the kernels' cxx-flags or cuda-flags
    archs: tuple[str, ...]  # CUDA capabilities (cuda units)


def _union(*lists: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for items in lists for item in items))


def merge_units(units: list[Unit]) -> list[Unit]:
    """One unit per source file, as CMake compiles a source once per target
    however many kernels list it (kernel.cmake appends each kernel's
    COMPILE_OPTIONS to the file's: its -gencode flags and its flags, in the
    order the kernels come). CMake keeps one kernel's `include` for the file
    (set_source_files_properties overwrites, and kernel-builder's kernel
    order is a hash map's); here the file gets every listing kernel's
    include directories, in build.toml order, so no choice depends on that
    order. The first listing fixes the position in the link."""
    merged: dict[str, Unit] = {}
    for unit in units:
        seen = merged.get(unit.source)
        if seen is None:
            merged[unit.source] = unit
            continue
        merged[unit.source] = Unit(
            source=unit.source, language=seen.language, kernels=_union(seen.kernels, unit.kernels),
            includes=_union(seen.includes, unit.includes), flags=seen.flags + unit.flags,
            archs=_union(seen.archs, unit.archs))
    return list(merged.values())


@dataclass(frozen=True)
class Plan:
    variant: Variant
    kernel_id: str
    state: source.SourceState
    units: tuple[Unit, ...]  # one per source file (`merge_units`)
    archs: tuple[str, ...]  # every capability built (metadata backend.archs)
    compile_inputs: tuple[str, ...]
    package_files: tuple[str, ...]
    tools: dict[str, str]
    warnings: tuple[str, ...]
    stable_abi: str | None = None  # [torch.stable-abi] for the variant's backend ("2.10")


def _cuda_archs(spec: "KernelSpec", nvcc: str, cuda_version: str) -> tuple[tuple[str, ...], list[str]]:
    """The capabilities to build `spec` for, and warnings about dropped ones."""
    if spec.cuda_capabilities:
        wanted, origin = list(spec.cuda_capabilities), f"kernel {spec.name}'s cuda-capabilities"
    elif os.environ.get("TORCH_CUDA_ARCH_LIST"):
        wanted = [a for a in re.split(r"[;\s]+", os.environ["TORCH_CUDA_ARCH_LIST"]) if a]
        origin = "TORCH_CUDA_ARCH_LIST"
    elif toolchain.visible_gpu_capabilities():
        wanted, origin = list(toolchain.visible_gpu_capabilities()), "the visible GPU"
    else:
        wanted = list(default_cuda_capabilities(cuda_version))
        origin = f"the default list for CUDA {cuda_version} (variants.toml)"
    supported = toolchain.nvcc_archs(nvcc)
    kept, dropped = [], []
    for arch in wanted:
        base = arch.replace("+PTX", "").rstrip("af")
        try:
            major, minor = base.split(".")
            number = int(major) * 10 + int(minor)
        except ValueError:
            raise BuildError(f"kernel {spec.name}: {arch!r} is not a CUDA capability", code="cuda-capability",
                             hint='write capabilities as "9.0", "9.0a", "10.0f" or "12.0+PTX"') from None
        (kept if not supported or number in supported else dropped).append(arch)
    warnings = [f"kernel {spec.name}: nvcc {cuda_version} cannot build {', '.join(dropped)} (from {origin}); skipped"] \
        if dropped else []
    if not kept:
        raise BuildError(f"kernel {spec.name}: nvcc {cuda_version} can build none of {', '.join(wanted)} (from {origin})",
                         code="cuda-capability", hint="list capabilities this CUDA version supports (nvcc --list-gpu-arch)")
    return tuple(kept), warnings


def _files_under(root: Path, rel_dirs: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for rel in rel_dirs:
        base = root / rel
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    found.append(path.relative_to(root).as_posix())
    return found


def _tools(variant: Variant, info: TorchInfo) -> tuple[dict[str, str], str | None, str | None, list[str]]:
    """The compilers: (tools for provenance, nvcc, its CUDA version, warnings)."""
    tools = {"python": toolchain.python_version(), "torch": info.version}
    cxx = toolchain.find_cxx()
    tools["cxx"] = toolchain.compiler_version(cxx) or cxx
    tools["cxx-path"] = cxx
    nvcc = cuda_version = None
    warnings: list[str] = []
    if variant.backend == "cuda":
        nvcc = toolchain.find_nvcc()
        full = toolchain.nvcc_version(nvcc)
        cuda_version = ".".join(full.split(".")[:2])
        tools["nvcc"] = full
        tools["nvcc-path"] = nvcc
        if version_key(cuda_version)[:1] != version_key(info.cuda or "")[:1]:
            raise BuildError(f"nvcc {cuda_version} cannot build for torch {info.version} (CUDA {info.cuda}): "
                             "the CUDA major versions differ", code="nvcc-mismatch",
                             hint=f"point CUDA_HOME at a CUDA {info.cuda} toolkit")
        if cuda_version != variant.backend_version:
            warnings.append(f"nvcc is CUDA {cuda_version}, torch was built with CUDA {variant.backend_version}")
    return tools, nvcc, cuda_version, warnings


def torch_section(project: "KernelProject") -> dict:
    """build.toml's [torch] as written: its `cxx-flags` and `stable-abi`,
    which the project model does not carry (yet)."""
    try:
        data = toml.loads(toml.read_text(project.root / "build.toml"))
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError):
        return {}
    section = data.get("torch")
    return section if isinstance(section, dict) else {}


def _strings(value) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def stable_abi_for(section: dict, backend: str) -> str | None:
    """The stable-ABI torch version [torch.stable-abi] gives `backend` (kernel-builder's
    preamble defines TORCH_TARGET_VERSION from it), or None."""
    table = section.get("stable-abi")
    if isinstance(table, str):  # one version for every backend
        return table
    if isinstance(table, dict) and isinstance(table.get(backend), str):
        return table[backend]
    return None


def buildable_stable_abi(project: "KernelProject", section: dict, variant: Variant) -> str | None:
    """The stable-ABI target of this build; refused, as kernel-builder's
    preamble.cmake refuses it, when it is newer than the variant's torch."""
    stable_abi = stable_abi_for(section, variant.backend)
    if stable_abi and version_key(variant.torch) < version_key(stable_abi):
        raise BuildError(f"{project.name} targets the stable ABI of torch {stable_abi} for {variant.backend} "
                         f"([torch.stable-abi]); torch {variant.torch} is older", code="variant-unbuildable",
                         path=str(project.root / "build.toml"), hint=f"build with torch >= {stable_abi}")
    return stable_abi


def _binding_units(project: "KernelProject", variant: Variant, section: dict) -> list[Unit]:
    """The [torch] sources: its `include` and `cxx-flags` (C++ only, as
    torch-binding.cmake applies them)."""
    ext = project.torch_ext
    cxx_flags = _strings(section.get("cxx-flags"))
    units = []
    for src in ext.src:
        suffix = Path(src).suffix
        if suffix in CXX_SOURCES:
            units.append(Unit(src, "cxx", ("torch",), tuple(ext.include), cxx_flags, ()))
        elif suffix in CUDA_SOURCES and variant.backend == "cuda":
            units.append(Unit(src, "cuda", ("torch",), tuple(ext.include), (), ()))
    return units


_TEMPLATE_STUB = re.compile(r"-static-global-template-stub=(true|false)")


def kernel_cuda_flags(flags: tuple[str, ...], cuda_version: str | None) -> tuple[str, ...]:
    """A kernel's cuda-flags as kernel.cmake passes them: below CUDA 12.8 it
    drops -static-global-template-stub=..., which that nvcc does not know."""
    if cuda_version and version_key(cuda_version) < (12, 8):
        return tuple(f for f in flags if not _TEMPLATE_STUB.fullmatch(f))
    return tuple(flags)


def _kernel_units(spec: "KernelSpec", variant: Variant, nvcc: str | None, cuda_version: str | None,
                  warnings: list[str]) -> tuple[list[Unit], tuple[str, ...]]:
    """One kernel's compile units and the capabilities they build."""
    unknown = [d for d in spec.depends if d not in LOCAL_DEPENDS]
    if unknown:
        raise BuildError(f"kernel {spec.name} depends on {', '.join(unknown)}, which kernel-builder's Nix build "
                         "provides and the local backend cannot (it has torch and the CUDA toolkit only)",
                         code="depends-unsupported",
                         hint="build this variant with kernel-builder: --backend nix (or `nix build PATH#bundle`)")
    archs: tuple[str, ...] = ()
    if variant.backend == "cuda" and any(Path(s).suffix in CUDA_SOURCES for s in spec.src):
        archs, dropped = _cuda_archs(spec, nvcc, cuda_version)
        warnings.extend(dropped)
    units = []
    for src in spec.src:
        suffix = Path(src).suffix
        if suffix in CUDA_SOURCES and variant.backend == "cuda":
            units.append(Unit(src, "cuda", (spec.name,), tuple(spec.include),
                              kernel_cuda_flags(tuple(spec.cuda_flags), cuda_version), archs))
        elif suffix in CXX_SOURCES:
            units.append(Unit(src, "cxx", (spec.name,), tuple(spec.include), tuple(spec.cxx_flags), ()))
        elif suffix in (".mm", ".metal", ".hip", ".cl"):
            raise BuildError(f"kernel {spec.name}: the local backend cannot compile {src}",
                             code="framework-unsupported", hint="use --backend nix")
    return units, archs


def make_plan(project: "KernelProject", variant: Variant, out: Path, info: TorchInfo,
              unique_id: str | None) -> Plan:
    root = project.root
    if project.framework != "torch" or project.torch_ext is None:
        raise BuildError(f"{project.name} is a {project.framework} project; the local backend builds compiled "
                         "torch extensions only", code="framework-unsupported", hint="use --backend nix")
    tools, nvcc, cuda_version, warnings = _tools(variant, info)
    section = torch_section(project)
    units = _binding_units(project, variant, section)
    all_archs: list[str] = []
    kernels = [k for k in project.kernels if k.backend == variant.backend]
    for spec in kernels:
        if spec.cuda_minver and cuda_version and version_key(cuda_version) < version_key(spec.cuda_minver):
            warnings.append(f"kernel {spec.name} needs CUDA >= {spec.cuda_minver}; skipped")
            continue
        kernel_units, archs = _kernel_units(spec, variant, nvcc, cuda_version, warnings)
        units.extend(kernel_units)
        all_archs.extend(archs)
    if not kernels:
        warnings.append(f"{project.name} has no [kernel.*] for {variant.backend}: only the binding is compiled")
    ext = project.torch_ext
    declared = ["build.toml", *ext.src, *(s for k in kernels for s in k.src)]
    include_dirs = tuple(sorted({*ext.include, *(i for k in kernels for i in k.include)}))
    compile_inputs = sorted({*declared, *_files_under(root, include_dirs)})
    package_dir = project.package_dir
    if not (package_dir / "__init__.py").is_file():
        raise BuildError(f"{package_dir.relative_to(root)}/__init__.py is missing", code="package-missing",
                         path=str(package_dir), hint="the Python package lives in torch-ext/<python_name>/")
    package_files = layout.package_files(package_dir, tuple(ext.pyext))
    state = source.source_state(root, source.project_files(root, exclude=[out]))
    kid = source.kernel_id(project.python_name, variant.backend, unique_id or state.unique_id)
    stable_abi = buildable_stable_abi(project, section, variant)
    return Plan(variant=variant, kernel_id=kid, state=state, units=tuple(merge_units(units)),
                archs=tuple(dict.fromkeys(all_archs)), compile_inputs=tuple(compile_inputs),
                package_files=tuple(package_files), tools=tools, warnings=tuple(warnings),
                stable_abi=stable_abi)

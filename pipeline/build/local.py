"""The local backend: the host's variant, compiled with the running torch.

Every source gets the flags kernel-builder's CMake build gives it, listed
with their origin in pipeline/data/build_flags.toml (`flags.py`): the
extension target's definitions, Torch's CMake config (its CUDA flags such as
--expt-extended-lambda, its interface definitions), CMake's Release flags and
C++ standard, and the COMMON_NVCC_FLAGS of the running torch without the
no-half defines; not torch.utils.cpp_extension's own set. Then the source's
kernels' `include`, `cxx-flags` / `cuda-flags` and `cuda-capabilities`
(capabilities nvcc cannot build are dropped with a warning). A source listed
by several kernels is compiled once, with what each of them asks
(`plan.merge_units`). A CUDA kernel without `cuda-capabilities` builds for
TORCH_CUDA_ARCH_LIST when set, else the visible GPU (like kernel-builder's
local development build), else the list in variants.toml.

We write the ninja file ourselves (rather than through setuptools'
BuildExtension) because flags are per source, not per extension; include
paths, library paths and compilers come from `torch.utils.cpp_extension`.
A compile that fails names kernel-builder's flags in its hint: a project
kernel-builder builds and this backend cannot is this backend's bug.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from pipeline import __version__
from pipeline.build import cache, layout, toolchain
from pipeline.build import flags as kb_flags
from pipeline.build.diagnostics import STATUS, compiler_problems, tail_problems
from pipeline.build.plan import Plan, choose_variant, make_plan
from pipeline.build.result import BuildResult, BuiltVariant
from pipeline.events import Event
from pipeline.errors import BuildError, Problem
from pipeline.fsutil import atomic_write_text, require_out_path, staged_dir
from pipeline.matrix import torch_info

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject

Report = Callable[[Event], None]

# libstdc++ >= 11 reads glibc 2.32's `__libc_single_threaded` from inline code
# (shared_ptr and friends), which ties a library built on a newer distribution
# to glibc >= 2.32 and fails the manylinux_2_28 ABI check the Hub applies. A
# hidden definition inside the library satisfies those references; its value 0
# means "threads may exist", so libstdc++ always takes its atomic path.
MANYLINUX_COMPAT = """\
// Written by kernel-pipeline's local build backend (see pipeline/build/local.py).
extern "C" __attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
"""


# ---------------------------------------------------------------- the keys ----

def compile_key(project: "KernelProject", plan: Plan, deps: list[str]) -> str:
    torch_dir = _torch_dir()
    return cache.key_of({
        "pipeline": __version__,
        # The builder's own files (generated headers, compat shims, compile
        # rules) change what gets compiled without changing the version.
        "builder": _builder_fingerprint(),
        "flag_table": kb_flags.table_fingerprint(),  # kernel-builder's flags (pipeline/data/build_flags.toml)
        "variant": plan.variant.name,
        "kernel_id": plan.kernel_id,
        "tools": {k: v for k, v in plan.tools.items() if k != "python"},
        "python": sys.version_info[:2],
        "source_date_epoch": toolchain.source_date_epoch(),
        "torch_dir": str(torch_dir),
        "units": [u.__dict__ for u in plan.units],
        "inputs": cache.hash_files(project.root, [*plan.compile_inputs, *deps]),
    })


def package_key(project: "KernelProject", plan: Plan) -> str:
    return cache.key_of({
        "files": cache.hash_files(project.package_dir, list(plan.package_files)),
        "metadata": [project.name, project.version, project.license,
                     project.python_depends_for(plan.variant.backend), plan.archs,
                     plan.state.commit, plan.state.dirty, plan.tools],
    })


def _builder_fingerprint() -> str:
    here = Path(__file__).resolve().parent
    files = sorted(p for p in here.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    return cache.key_of(cache.hash_files(here, [str(p.relative_to(here)) for p in files]))


def _torch_dir() -> Path:
    from importlib.util import find_spec

    spec = find_spec("torch")
    assert spec is not None and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0])


# ---------------------------------------------------------------- compile ----

def _ninja_escape_path(path: str) -> str:
    return path.replace("$", "$$").replace(" ", "$ ").replace(":", "$:")


def _cmd(args: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in args).replace("$", "$$")


def _gencode(arch: str) -> list[str]:
    ptx = arch.endswith("+PTX")
    base = arch.replace("+PTX", "")
    suffix = base[-1] if base[-1] in "af" else ""
    major, minor = base.rstrip("af").split(".")
    number = f"{major}{minor}{suffix}"
    flags = [f"-gencode=arch=compute_{number},code=sm_{number}"]
    if ptx:
        flags.append(f"-gencode=arch=compute_{number},code=compute_{number}")
    return flags


# The rules of every build.ninja we write; the per-build values follow them.
NINJA_RULES = """\
rule cxx
  command = $cxx -MMD -MF $out.d $flags -c $in -o $out
  depfile = $out.d
  deps = gcc
  description = compile $desc

rule cuda
  command = $nvcc --generate-dependencies-with-compile --dependency-output $out.d $flags -c $in -o $out
  depfile = $out.d
  deps = gcc
  description = compile $desc

rule link
  command = $cxx $in $ldflags -o $out
  description = link $desc
"""


@dataclass(frozen=True)
class Flags:
    """What every compile and the link of one build share."""

    includes: tuple[str, ...]  # -I, after each source's own
    system_includes: tuple[str, ...]  # -isystem: Torch, Python, CUDA (CMake's imported targets)
    cxx: tuple[str, ...]
    nvcc: tuple[str, ...]
    link: tuple[str, ...]


def _torch_paths() -> tuple[list[str], list[str]]:
    import torch.utils.cpp_extension as cpp_ext

    try:
        return cpp_ext.include_paths("cpu"), cpp_ext.library_paths("cpu")
    except TypeError:  # torch < 2.6: include_paths(cuda: bool)
        return cpp_ext.include_paths(False), cpp_ext.library_paths(False)


def _torch_list(name: str) -> tuple[str, ...]:
    """A list the flag table reads from the running torch, by its dotted name."""
    import importlib

    module, _, attr = name.rpartition(".")
    return tuple(getattr(importlib.import_module(module), attr))


def build_context(plan: Plan) -> kb_flags.BuildContext:
    """What decides which of kernel-builder's flags this build gets."""
    import torch

    return kb_flags.BuildContext(
        backend=plan.variant.backend, torch=plan.variant.torch, kernel_id=plan.kernel_id,
        compiler="clang" if "clang" in plan.tools["cxx"].lower() else "gcc",
        cxx11_abi=bool(torch.compiled_with_cxx11_abi()), stable_abi=plan.stable_abi,
        torch_lists=tuple((name, _torch_list(name)) for name in kb_flags.torch_lists_needed()))


def _flags(project: "KernelProject", plan: Plan, work: Path, gen: Path) -> Flags:
    torch_includes, torch_libs = _torch_paths()
    ctx = build_context(plan)
    includes = [*(["csrc"] if (project.root / "csrc").is_dir() else []), str(gen)]
    system = [sysconfig.get_paths()["include"], *torch_includes]
    cuda_home = toolchain.find_cuda_home() if plan.variant.backend == "cuda" else None
    if cuda_home:
        system.append(str(cuda_home / "include"))
        # Headers a minimal toolkit lacks (cuSPARSE, cuBLAS, ... which torch's
        # CUDA headers include) come with torch's own nvidia-* wheels (Nix's
        # build has them from cudaPackages).
        system += [str(p) for p in sorted((_torch_dir().parent / "nvidia").glob("*/include")) if p.is_dir()]
    cxx = plan.tools["cxx-path"]
    # The project and the work directory (generated headers) by stable names: same bytes at any path.
    remap = toolchain.prefix_map_flags({project.root.resolve(): project.name, work: "kernel-pipeline-build"})
    cxx_common = [*kb_flags.compile_flags("cxx", ctx), *remap]
    nvcc_common = [*kb_flags.compile_flags("cuda", ctx), "-ccbin", cxx, *toolchain.host_compiler_flags(remap)] \
        if plan.variant.backend == "cuda" else []
    ldflags = ["-shared", *(f"-L{d}" for d in torch_libs), "-lc10", "-ltorch", "-ltorch_cpu"]
    if cuda_home:
        ldflags += ["-lc10_cuda", "-ltorch_cuda", f"-L{cuda_home / 'lib64'}", "-lcudart"]
    ldflags += toolchain.shared_libstdcxx_args(cxx)
    return Flags(tuple(includes), tuple(system), tuple(cxx_common), tuple(nvcc_common), tuple(ldflags))


def _compile_lines(plan: Plan, flags: Flags, work: Path) -> tuple[list[str], list[str]]:
    """(build lines, object paths) for every compile unit of the plan."""
    lines, objects = [], []
    jobs = _jobs()
    for index, unit in enumerate(plan.units):
        obj = str(work / "obj" / f"{index}_{re.sub(r'[^A-Za-z0-9_.-]', '_', unit.source)}.o")
        objects.append(obj)
        unit_includes = [*(f"-I{i}" for i in (*unit.includes, *flags.includes)),
                         *(f for i in flags.system_includes for f in ("-isystem", i))]
        # GCC's per-file "random" names (e.g. of static initialisers) from the path, not from chance.
        seed = [f"-frandom-seed={unit.source}"]
        if unit.language == "cuda":
            gencode = list(dict.fromkeys(g for a in unit.archs for g in _gencode(a)))
            threads = ["--threads", str(max(1, min(jobs, len(unit.archs))))] if len(unit.archs) > 1 else []
            unit_flags = [*flags.nvcc, *toolchain.host_compiler_flags(seed), *threads, *gencode, *unit_includes,
                          *unit.flags]
        else:
            unit_flags = [*flags.cxx, *seed, *unit_includes, *unit.flags]
        lines += [f"build {_ninja_escape_path(obj)}: {unit.language} {_ninja_escape_path(unit.source)}",
                  f"  flags = {_cmd(unit_flags)}", f"  desc = {unit.source}", ""]
    return lines, objects


def write_ninja(project: "KernelProject", plan: Plan, work: Path) -> Path:
    """build.ninja in `work`; returns the library it links. Ninja runs in the
    project root (`run_ninja`), so sources and the project's include directories
    reach the compilers as relative paths, as they would in any checkout; nvcc
    in particular writes its input's path into the fatbinary and the line table."""
    work = work.resolve()
    gen = work / "include"
    gen.mkdir(parents=True, exist_ok=True)
    atomic_write_text(gen / "registration.h", layout.REGISTRATION_H)
    flags = _flags(project, plan, work, gen)
    lines = [
        "ninja_required_version = 1.3",
        f"builddir = {_ninja_escape_path(str(work))}",  # ninja's logs stay out of the project
        f"cxx = {_cmd([plan.tools['cxx-path']])}",
        f"nvcc = {_cmd([plan.tools.get('nvcc-path', 'nvcc')])}",
        "",
        *NINJA_RULES.splitlines(),
        "",
    ]
    compiles, objects = _compile_lines(plan, flags, work)
    lines += compiles
    if sys.platform.startswith("linux"):
        compat = gen / "manylinux_compat.cpp"
        atomic_write_text(compat, MANYLINUX_COMPAT)
        objects.append(str(work / "obj" / "manylinux_compat.o"))
        lines += [f"build {_ninja_escape_path(objects[-1])}: cxx {_ninja_escape_path(str(compat))}",
                  f"  flags = {_cmd(list(flags.cxx))}", "  desc = manylinux_compat.cpp", ""]
    library = work / f"{plan.kernel_id}.abi3.so"
    lines += [f"build {_ninja_escape_path(str(library))}: link {' '.join(_ninja_escape_path(o) for o in objects)}",
              f"  ldflags = {_cmd(list(flags.link))}", f"  desc = {library.name}", "",
              f"default {_ninja_escape_path(str(library))}", ""]
    atomic_write_text(work / "build.ninja", "\n".join(lines))
    return library


def _jobs() -> int:
    try:
        return max(1, int(os.environ.get("MAX_JOBS", "")))
    except ValueError:
        return max(1, os.cpu_count() or 1)




def _ninja_args(work: Path, root: Path) -> list[str]:
    """ninja, run in the project root on the build file in `work` (see `write_ninja`)."""
    work = Path(work).resolve()
    return [toolchain.find_ninja(), "-C", str(Path(root).resolve()), "-f", str(work / "build.ninja")]


def _compile_failed_hint(plan: Plan, log_path: Path) -> str:
    languages = tuple(lang for lang in ("cxx", "cuda") if any(u.language == lang for u in plan.units))
    return (f"full compiler output: {log_path}. {kb_flags.described(build_context(plan), languages)}, then each "
            "kernel's include, cxx-flags/cuda-flags and capabilities. If kernel-builder (`--backend nix`) builds "
            "this project, the local backend's difference is a bug: report it with this message")


def run_ninja(project: "KernelProject", plan: Plan, work: Path, report: Report) -> None:
    log_path = work / "build.log"
    env = dict(os.environ, NINJA_STATUS="[%f/%t] ", SOURCE_DATE_EPOCH=toolchain.source_date_epoch())
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen([*_ninja_args(work, project.root), "-j", str(_jobs())], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace", env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            match = STATUS.match(line.rstrip("\n"))
            if match:
                report(Event("compile", match.group(3), int(match.group(1)) - 1, int(match.group(2))))
        code = proc.wait()
    if code != 0:
        text = log_path.read_text(encoding="utf-8", errors="replace")
        problems = compiler_problems(text, project.root)
        raise BuildError(
            f"compiling {project.name} failed: {len(problems)} compiler error(s)" if problems else
            f"compiling {project.name} failed (ninja exit {code})",
            code="compile-failed", path=str(project.root),
            hint=_compile_failed_hint(plan, log_path), problems=problems or tail_problems(text, project.root))


def recorded_deps(work: Path, root: Path) -> list[str]:
    """Project files the compiler read, from ninja's deps log (headers included)."""
    try:
        text = subprocess.run([*_ninja_args(work, root), "-t", "deps"], capture_output=True,
                              text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired, BuildError):
        return []
    root = Path(root).resolve()
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith((" ", "\t")):
            path = Path(line.strip())
            if not path.is_absolute():  # relative to where ninja ran: the project root
                path = root / path
            try:
                found.add(path.resolve().relative_to(root).as_posix())
            except (ValueError, OSError):
                continue
    return sorted(found)


# ---------------------------------------------------------------- the build ----

def build_local(project: "KernelProject", out: Path, *, variant: str | None, progress: Report,
                unique_id: str | None = None) -> BuildResult:
    started = time.monotonic()
    require_out_path(out, "directory", BuildError, "--out")
    info = torch_info()
    target = choose_variant(project, info, variant)
    progress(Event("step", f"{project.name}: {target.name}"))
    plan = make_plan(project, target, out, info, unique_id)
    for warning in plan.warnings:
        progress(Event("warning", warning))
    work = cache.work_dir(project.root, target.name)
    stamp = cache.Stamp.read(work)
    final = out / target.name
    ckey = compile_key(project, plan, stamp.deps)
    pkey = package_key(project, plan)
    library = work / f"{plan.kernel_id}.abi3.so"
    if (stamp.compile_key == ckey and stamp.package_key == pkey and stamp.output
            and stamp.out == str(final.resolve()) and cache.tree_hashes(final) == stamp.output):
        progress(Event("step", f"{target.name} is up to date ({plan.kernel_id})"))
        return BuildResult(variants=(BuiltVariant(target, final, plan.kernel_id, True,
                                                  time.monotonic() - started),), backend="local", out=out)
    if stamp.compile_key != ckey or not library.is_file():
        progress(Event("step", f"compiling {len(plan.units)} source(s) for {target.name}"))
        library = write_ninja(project, plan, work)
        run_ninja(project, plan, work, progress)
        if toolchain.private_libstdcxx(library):
            library.unlink()
            raise BuildError(f"{library.name} holds its own copy of libstdc++ (linked statically); it would "
                             "crash the first time it formats a message", code="libstdcxx-static",
                             path=str(project.root), hint=toolchain.LIBSTDCXX_HINT)
        stamp.deps = recorded_deps(work, project.root)
        ckey = compile_key(project, plan, stamp.deps)
    else:
        progress(Event("step", f"reusing the compiled {library.name}"))
    progress(Event("step", f"writing {final}"))
    with staged_dir(final) as tmp:
        tmp.chmod(0o755)  # mkdtemp makes it private; a build directory is for everyone to read
        layout.copy_package(project.package_dir, list(plan.package_files), tmp)
        (tmp / "_ops.py").write_text(layout.ops_py(plan.kernel_id), encoding="utf-8")
        shutil.copyfile(library, tmp / library.name)
        document = layout.metadata_document(
            name=project.name, kernel_id=plan.kernel_id, version=_required(project.version, "version", project),
            license=_required(project.license, "license", project),
            python_depends=project.python_depends_for(target.backend), backend=target.backend,
            archs=list(plan.archs) if target.backend == "cuda" else None, digest=layout.hash_variant(tmp),
            source_commit=plan.state.commit, source_dirty=plan.state.dirty,
            toolchain=_public_tools(plan.tools))
        layout.write_metadata(tmp, document)
        problems = layout.check_variant_dir(tmp)
        if problems:
            raise BuildError(f"the built {target.name} is not loadable: {problems[0]}", code="layout-invalid",
                             problems=[Problem(path=str(final), line=None, code="layout-invalid", message=p)
                                       for p in problems])
    stamp.compile_key, stamp.package_key = ckey, pkey
    stamp.library = library.name
    stamp.output = cache.tree_hashes(final)
    stamp.out = str(final.resolve())
    stamp.write(work)
    return BuildResult(variants=(BuiltVariant(target, final, plan.kernel_id, False, time.monotonic() - started),),
                       backend="local", out=out)


def _public_tools(tools: dict[str, str]) -> dict[str, str]:
    shown = {k: v for k, v in tools.items() if not k.endswith("-path")}
    shown["build-backend"] = "local"
    return shown


def _required(value, key: str, project: "KernelProject"):
    if value is None:
        raise BuildError(f"{project.name}'s build.toml has no [general] {key}, which metadata.json needs",
                         code="metadata-incomplete", path=str(project.root / "build.toml"),
                         hint=f"add {key} = ... to [general]")
    return value

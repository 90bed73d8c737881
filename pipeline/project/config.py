"""Checks on the parsed build.toml that kernels' parser leaves alone."""

from __future__ import annotations

import functools
import json
import re

from pipeline import toml
from pipeline.project.model import BUILD_TOML, KernelProject
from pipeline.project.rules import RULES_FILE, rule_data, kernels_dir, kernels_rust, Sink
from pipeline.project.lines import did_you_mean, kernel_key_line, line_of, table_line


def check_backends(sink: Sink, p: KernelProject, text: str) -> None:
    declared = set(p.backends)
    used = set()
    for k in p.kernels:
        used.add(k.backend)
        if k.backend not in declared:
            sink.add("backend-not-declared",
                     f"[kernel.{k.name}] has backend {k.backend!r}, which [general].backends does not list "
                     f"({', '.join(p.backends) or 'empty'})", BUILD_TOML, kernel_key_line(text, k.name, "backend"))
    if p.framework == "torch" and p.kernels:
        for b in p.backends:
            if b not in used:
                sink.add("backend-no-kernel", f"backend {b!r} has no [kernel.*] with backend = {b!r}", BUILD_TOML,
                         toml.key_line(text, "backends", "general"))


def check_versions(sink: Sink, p: KernelProject, text: str) -> None:
    Version = kernels_rust().Version

    for lo, hi, table in ((p.torch_minver, p.torch_maxver, p.framework), (p.cuda_minver, p.cuda_maxver, "general.cuda")):
        if lo and hi:
            try:
                bad = Version.from_str(lo) > Version.from_str(hi)
            except ValueError:
                continue
            if bad:
                sink.add("version-range-empty", f"[{table}] minver {lo} is greater than maxver {hi}", BUILD_TOML,
                         toml.key_line(text, "minver", table))


def check_hub(sink: Sink, p: KernelProject, text: str) -> None:
    if p.hub_repo_id is None:
        return
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    ok = p.hub_repo_id.count("/") == 1
    try:
        validate_repo_id(p.hub_repo_id)
    except HFValidationError:
        ok = False
    if not ok:
        sink.add("hub-repo-id-invalid", f"repo-id {p.hub_repo_id!r} is not of the form namespace/name", BUILD_TOML,
                 toml.key_line(text, "repo-id", "general.hub"))


def python_dep_table() -> dict:
    path = kernels_dir() / "python_depends.json"
    return json.loads(path.read_text(encoding="utf-8"))


def check_python_depends(sink: Sink, p: KernelProject, text: str, table: dict) -> set[str]:
    """Unknown python-depends are errors; returns the import names the known ones allow."""
    allowed: set[str] = set()
    provides = rule_data().provides
    general = table.get("general", {})

    def allow(dep: str, info: dict) -> None:
        for py in info.get("python", []):
            allowed.add(py.get("import") or py["pkg"].replace("-", "_"))
        allowed.update(provides.get(dep, ()))

    for dep in p.python_depends:
        if dep in general:
            allow(dep, general[dep])
        else:
            sink.add("python-depends-unknown", f"python-depends entry {dep!r} is not a dependency kernels knows "
                     f"(general: {', '.join(sorted(general))})", BUILD_TOML,
                     line_of(text, rf'"{re.escape(dep)}"'), hint=did_you_mean(dep, general))
    for backend, deps in p.backend_python_depends:
        known = table.get("backends", {}).get(backend, {})
        for dep in deps:
            if dep in known:
                allow(dep, known[dep])
            elif dep in general:
                allow(dep, general[dep])
            else:
                sink.add("python-depends-unknown", f"[general.{backend}].python-depends entry {dep!r} is not a "
                         f"{backend} dependency kernels knows ({', '.join(sorted(known)) or 'none'})", BUILD_TOML,
                         line_of(text, rf'"{re.escape(dep)}"'), hint=did_you_mean(dep, known))
    return allowed


_CAPABILITY = re.compile(r"^(\d+)\.(\d+)([af])?(\+PTX)?$")


def _capability_kept(cap: re.Match, known: tuple[str, ...]) -> bool:
    """Whether kernel-builder's cuda_archs_loose_intersection (utils.cmake) keeps
    this capability for some builder capability: a/f suffixes need their exact
    base, others a builder capability of the same major version that is >= it
    (+PTX: any that is >= it)."""
    major, minor, suffix, ptx = int(cap.group(1)), int(cap.group(2)), cap.group(3), cap.group(4)
    targets = [tuple(int(x) for x in t.split(".")) for t in known]
    if suffix:
        return (major, minor) in targets
    return any((t[0] == major or ptx) and t >= (major, minor) for t in targets)


def check_cuda_flags(sink: Sink, p: KernelProject, text: str) -> None:
    """nvcc splits option values at commas, so a -D whose definition holds one
    reaches the compiler as several broken macros (seen: rmsnorm's
    -DRMSNORM_ASYNC_AUTO(r,n,f)=true broke cuda_bf16.h with 9 errors)."""
    for k in p.kernels:
        flags = list(k.cuda_flags)
        for i, flag in enumerate(flags):
            value = flag[2:] if flag.startswith("-D") else (flags[i + 1] if flag == "-D" and i + 1 < len(flags) else None)
            if value and "," in value:
                sink.add("cuda-flags-macro-comma", f"[kernel.{k.name}] cuda-flags has {flag if flag != '-D' else value!r}: "
                         f"nvcc splits it at the comma", BUILD_TOML, line_of(text, re.escape(value.split(",")[0])))


def check_capabilities(sink: Sink, p: KernelProject, text: str) -> None:
    known = rule_data().cuda_capabilities
    for k in p.kernels:
        if not k.cuda_capabilities:
            continue
        kept, dropped, malformed = [], [], []
        for cap in k.cuda_capabilities:
            m = _CAPABILITY.match(cap)
            (malformed if m is None else kept if _capability_kept(m, known) else dropped).append(cap)
        for cap in malformed:
            sink.add("cuda-capability-unknown", f"[kernel.{k.name}] cuda-capabilities has {cap!r}, which is not "
                     f"a capability (major.minor[a|f][+PTX])", BUILD_TOML, line_of(text, rf'"{re.escape(cap)}"'))
        if dropped and not kept and not malformed:
            sink.add("cuda-capability-unknown", f"[kernel.{k.name}] cuda-capabilities {', '.join(dropped)} keep no "
                     f"capability: the build stops with 'empty set of capabilities after intersection'", BUILD_TOML,
                     kernel_key_line(text, k.name, "cuda-capabilities"))
            continue
        for cap in dropped:
            sink.add("cuda-capability-dropped", f"[kernel.{k.name}] cuda-capabilities has {cap!r}, which no "
                     f"builder capability keeps", BUILD_TOML, line_of(text, rf'"{re.escape(cap)}"'))


def check_rocm_archs(sink: Sink, p: KernelProject, text: str) -> None:
    """kernel.cmake intersects rocm-archs with the builder's archs by exact name;
    nothing left stops the build ("empty set of architectures")."""
    known = rule_data().rocm_archs
    for k in p.kernels:
        if k.backend != "rocm" or not k.rocm_archs:
            continue
        dropped = [a for a in k.rocm_archs if a not in known]
        if len(dropped) == len(k.rocm_archs):
            sink.add("rocm-arch-unknown", f"[kernel.{k.name}] rocm-archs {', '.join(dropped)} keep no architecture: "
                     "the build stops with 'empty set of architectures after intersection'", BUILD_TOML,
                     line_of(text, rf'"{re.escape(dropped[0])}"') or kernel_key_line(text, k.name, "rocm-archs"))
            continue
        for arch in dropped:
            sink.add("rocm-arch-dropped", f"[kernel.{k.name}] rocm-archs has {arch!r}, which the builder does not "
                     "compile for", BUILD_TOML, line_of(text, rf'"{re.escape(arch)}"'))


VARIANTS_FILE = RULES_FILE.with_name("variants.toml")
# torch213-cxx11-cu130-x86_64-linux: torch 2.13, CUDA 13.0 (the last digit is the minor).
_VARIANT = re.compile(r"^torch(\d)(\d+)-(?:cxx11-)?(?:cu(\d+)(\d)|[a-z]+\d*)-")


@functools.lru_cache(maxsize=1)
def table_builds() -> tuple[tuple[str, str, str | None], ...]:
    """(backend, torch, CUDA version or None) of every build in pipeline/data/variants.toml.
    Read from the names without `kernels` (whose import alone costs ~0.2 s)."""
    doc = toml.loads(VARIANTS_FILE.read_text(encoding="utf-8"))
    builds = []
    for backends in doc["systems"].values():
        for backend, names in backends.items():
            for name in names:
                m = _VARIANT.match(name)
                if m:
                    cuda = f"{m.group(3)}.{m.group(4)}" if m.group(3) else None
                    builds.append((backend, f"{m.group(1)}.{m.group(2)}", cuda))
    return tuple(builds)


def _within(version: str, lo: str | None, hi: str | None) -> bool:
    Version = kernels_rust().Version
    v = Version.from_str(version)
    return (lo is None or v >= Version.from_str(lo)) and (hi is None or v <= Version.from_str(hi))


def _shown_versions(versions) -> str:
    Version = kernels_rust().Version
    return ", ".join(sorted(set(versions), key=Version.from_str))


def check_buildable(sink: Sink, p: KernelProject, text: str) -> None:
    """nix-builder/lib/build.nix filterApplicableBuildSets: a build set is kept when its torch is
    within [torch] minver/maxver and, for CUDA, its CUDA within [general.cuda] minver/maxver."""
    if p.framework != "torch" or not (p.torch_minver or p.torch_maxver or p.cuda_minver or p.cuda_maxver):
        return
    empty = lambda lo, hi: bool(lo and hi) and not _within(lo, None, hi)  # noqa: E731 - version-range-empty's case
    if empty(p.torch_minver, p.torch_maxver) or empty(p.cuda_minver, p.cuda_maxver):
        return
    builds = [b for b in table_builds() if b[0] in p.backends]
    torch_ok = [b for b in builds if _within(b[1], p.torch_minver, p.torch_maxver)]
    if builds and not torch_ok:
        sink.add("version-range-no-variant", f"[torch] minver/maxver ({p.torch_minver or '-'} .. {p.torch_maxver or '-'}) "
                 f"excludes every Torch version kernel-builder builds ({_shown_versions(b[1] for b in builds)}): "
                 "nothing can be built", BUILD_TOML,
                 toml.key_line(text, "minver" if p.torch_minver else "maxver", "torch"))
        return
    cuda = [b for b in torch_ok if b[0] == "cuda" and b[2]]
    if cuda and not any(_within(b[2], p.cuda_minver, p.cuda_maxver) for b in cuda):
        sink.add("version-range-no-variant", f"[general.cuda] minver/maxver ({p.cuda_minver or '-'} .. "
                 f"{p.cuda_maxver or '-'}) excludes every CUDA version kernel-builder builds "
                 f"({_shown_versions(b[2] for b in cuda)}): no CUDA variant can be built", BUILD_TOML,
                 toml.key_line(text, "minver" if p.cuda_minver else "maxver", "general.cuda"))


def check_local_build(sink: Sink, p: KernelProject, text: str) -> None:
    """kernel-builder builds noarch and tvm-ffi projects; this pipeline's local backend does not (yet)."""
    if p.framework == "torch":
        return
    what = "a noarch (Triton or pure-Python)" if p.framework == "torch-noarch" else "a tvm-ffi"
    sink.add("local-build-unsupported", f"[{p.framework}]: {what} project, which kernel-builder builds but "
             "`python -m pipeline build --backend local` cannot", BUILD_TOML, table_line(text, p.framework))

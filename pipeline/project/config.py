"""Checks on the parsed build.toml that kernels' parser leaves alone."""

from __future__ import annotations

import json
import re

from pipeline import toml
from pipeline.project.model import BUILD_TOML, KernelProject
from pipeline.project.rules import rule_data, kernels_dir, kernels_rust, Sink
from pipeline.project.schema import did_you_mean, kernel_key_line, line_of


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

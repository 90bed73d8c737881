"""Build variants: what a kernel project must be built for.

The builder's variant table (`pipeline/data/variants.toml`, copied from
kernel-builder) is the universe; the workspace policy and the project's own
build.toml narrow it the way kernel-builder does (nix-builder/lib/build.nix,
`filterApplicableBuildSets`): the project's backends, `[torch] minver/maxver`,
`[general.cuda] minver/maxver` (inclusive bounds), then the policy's torch
versions, CUDA versions, archs and backends.

CUDA versions in a policy are either exact (`"13.0"`) or a bare major
(`"13"`). `kernels.get_kernel` accepts a build whose CUDA major equals the
system's and whose minor is <= the system's, so one build per major, at the
lowest minor the project allows, serves every system of that major; a bare
major asks for exactly that (and follows the project's `minver`: with
`minver = "13.1"`, `"13"` becomes 13.2). Exact versions are built as listed
(a newer minor lets newer systems use newer toolkit features). A CUDA variant
is also dropped when every CUDA kernel of the project is skipped by its own
`cuda-minver` (nothing would be compiled).

A torch-noarch project (pure Python, e.g. Triton) is built once per backend,
as kernel-builder does (nix-builder/lib/variants/torch.nix, `kernelVariant`:
a backend without compiled kernels gets `torch-<backend>`): every selected
build of a backend collapses into one `torch-<backend>` variant. That variant
keeps the fields of one build it stands for (the newest torch; for CUDA the
lowest minor of the newest major; x86_64-linux first), which say where it is
built and tested, and `serves` lists every build it replaces: the systems
`verify` resolves it for.

`Variant.name` is the directory name `kernels` resolves; `Variant.parse`
goes through `kernels`' own parser, so this module keeps no second copy of
its naming rules beyond formatting.
"""

from __future__ import annotations

import functools
import platform
import re
from dataclasses import dataclass, replace
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from pipeline import toml
from pipeline.errors import MatrixError
from pipeline.policy import KNOWN_BACKENDS, MatrixPolicy

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject

BACKEND_ORDER = ("cuda", "cpu", "rocm", "xpu", "metal")
SYSTEM_ORDER = ("x86_64-linux", "aarch64-linux", "aarch64-darwin")
# Prefix of the backend token in a variant name; versioned backends carry the
# flattened version after it (cu130, rocm71, xpu20253).
_BACKEND_TOKEN = {"cuda": "cu", "rocm": "rocm", "xpu": "xpu"}


def _flatten(version: str) -> str:
    return version.replace(".", "")


def version_key(version: str) -> tuple[int, ...]:
    """'13.0' -> (13, 0); trailing zeros do not matter ('2.13' == '2.13.0')."""
    parts = [int(p) for p in re.findall(r"\d+", version.split("+")[0])]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


@dataclass(frozen=True, order=True)
class Variant:
    torch: str  # "2.13"
    backend: str  # cuda | cpu | rocm | xpu | metal
    backend_version: str | None  # "13.0", "7.1", "2025.3"; None for cpu/metal
    arch: str  # x86_64 | aarch64
    os: str  # linux | darwin
    cxx11: bool
    # torch-<backend>: the fields above are those of the build it is made and
    # tested with ("" when parsed from a bare name); `serves` names every build
    # of the matrix it stands for.
    noarch: bool = False
    serves: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        if self.noarch:
            return f"torch-{self.backend}"
        torch = f"torch{_flatten(self.torch)}"
        if self.backend in _BACKEND_TOKEN:
            compute = f"{_BACKEND_TOKEN[self.backend]}{_flatten(self.backend_version or '')}"
        else:
            compute = self.backend
        abi = "-cxx11" if self.cxx11 else ""
        return f"{torch}{abi}-{compute}-{self.arch}-{self.os}"

    @property
    def system(self) -> str:
        """The Nix system, e.g. x86_64-linux ("" for a noarch variant parsed from its name)."""
        return f"{self.arch}-{self.os}" if self.arch else ""

    @property
    def cells(self) -> tuple[str, ...]:
        """The builds (arch variant names) whose systems this variant must serve."""
        return self.serves if self.noarch else (self.name,)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: str) -> "Variant":
        """Parse a variant directory name with `kernels`' own parser."""
        try:
            from kernels.backends import CPU, CUDA, XPU, Metal, ROCm
            from kernels.variants import ArchVariant, NoarchVariant, Torch, parse_variant
        except ImportError as exc:  # pragma: no cover - kernels is a dependency
            raise MatrixError(f"cannot parse variant {name!r}: the kernels package is not installed ({exc})",
                              code="kernels-missing", hint="pip install kernels") from None
        try:
            parsed = parse_variant(name)
        except (ValueError, TypeError) as exc:
            raise MatrixError(f"{name!r} is not a variant name ({exc})", code="variant-name-invalid",
                              hint="variant names look like torch213-cxx11-cu130-x86_64-linux") from None
        if isinstance(parsed, NoarchVariant):
            return cls._parse_noarch(name, parsed.arch.backend_name)
        if not isinstance(parsed, ArchVariant) or not isinstance(parsed.framework, Torch):
            raise MatrixError(f"{name!r} is a stable-ABI or tvm-ffi variant; this pipeline builds "
                              "torch arch and noarch variants only", code="variant-kind-unsupported",
                              hint="variant names look like torch213-cxx11-cu130-x86_64-linux or torch-cuda")
        backend = parsed.arch.backend
        kinds = {CUDA: "cuda", ROCm: "rocm", XPU: "xpu", CPU: "cpu", Metal: "metal"}
        kind = next((k for t, k in kinds.items() if isinstance(backend, t)), None)
        if kind is None:
            raise MatrixError(f"{name!r} uses backend {backend.name!r}, which this pipeline does not build",
                              code="backend-unsupported", hint=f"known backends: {', '.join(KNOWN_BACKENDS)}")
        version = getattr(backend, "version", None)
        tv = parsed.framework.version
        variant = cls(
            torch=f"{tv.major}.{tv.minor}",
            backend=kind,
            backend_version=f"{version.major}.{version.minor}" if version is not None else None,
            arch=parsed.arch.platform,
            os=parsed.arch.os,
            cxx11=bool(parsed.framework.cxx11_abi),
        )
        if variant.name != name:
            raise MatrixError(f"{name!r} does not round-trip (formats back as {variant.name!r})", code="variant-name-not-canonical")
        return variant

    @classmethod
    def _parse_noarch(cls, name: str, backend: str) -> "Variant":
        if backend not in KNOWN_BACKENDS:
            raise MatrixError(f"{name!r} is a noarch variant for {backend!r}, which this pipeline does not build",
                              code="backend-unsupported", hint=f"known backends: {', '.join(KNOWN_BACKENDS)}")
        return cls(torch="", backend=backend, backend_version=None, arch="", os="", cxx11=False, noarch=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.name,
            "torch": self.torch,
            "backend": self.backend,
            "backend_version": self.backend_version,
            "arch": self.arch,
            "os": self.os,
            "system": self.system,
            "cxx11": self.cxx11,
            "noarch": self.noarch,
        }


# ---------------------------------------------------------------- the table


@dataclass(frozen=True)
class VariantTable:
    variants: tuple[Variant, ...]
    runners: dict[str, str]
    source: dict[str, str]
    cuda_default_capabilities: dict[str, tuple[str, ...]]

    def runner(self, system: str) -> str:
        return self.runners.get(system, "ubuntu-latest")

    def default_cuda_capabilities(self, cuda_version: str) -> tuple[str, ...]:
        """The list for the greatest key <= cuda_version (empty when none applies)."""
        best: tuple[str, ...] = ()
        best_key: tuple[int, ...] = ()
        for key, archs in self.cuda_default_capabilities.items():
            k = version_key(key)
            if k <= version_key(cuda_version) and k >= best_key:
                best, best_key = archs, k
        return best


def _table_text() -> str:
    return resources.files("pipeline").joinpath("data/variants.toml").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def load_table() -> VariantTable:
    """The variant table; every name in it goes through `Variant.parse`."""
    data = toml.loads(_table_text())
    variants: list[Variant] = []
    for system, backends in data["systems"].items():
        for backend, names in backends.items():
            for name in names:
                variant = Variant.parse(name)
                if variant.system != system or variant.backend != backend:
                    raise MatrixError(f"variants.toml lists {name} under {system}.{backend}", code="variant-table-invalid")
                variants.append(variant)
    return VariantTable(
        variants=tuple(variants),
        runners=dict(data.get("runners", {})),
        source=dict(data.get("source", {})),
        cuda_default_capabilities={k: tuple(v) for k, v in data.get("cuda-default-capabilities", {}).items()},
    )


def table_variant_names() -> list[str]:
    """Variant names straight from the data file, without parsing (no `kernels` needed)."""
    data = toml.loads(_table_text())
    return [n for backends in data["systems"].values() for names in backends.values() for n in names]


def default_cuda_capabilities(cuda_version: str) -> tuple[str, ...]:
    """For the local build path: reads the data file without `kernels`."""
    data = toml.loads(_table_text())
    table = VariantTable((), {}, {}, {k: tuple(v) for k, v in data.get("cuda-default-capabilities", {}).items()})
    return table.default_cuda_capabilities(cuda_version)


# ---------------------------------------------------------------- policies


def full_table_policy() -> MatrixPolicy:
    """Everything in the table: the policy of a project outside any workspace."""
    table = load_table()
    return MatrixPolicy(
        torch=tuple(sorted({v.torch for v in table.variants}, key=version_key)),
        cuda=tuple(sorted({v.backend_version for v in table.variants if v.backend == "cuda"}, key=version_key)),
        archs=tuple(sorted({v.arch for v in table.variants})),
        backends=KNOWN_BACKENDS,
    )


def _in_bounds(version: str, minver: str | None, maxver: str | None) -> bool:
    key = version_key(version)
    if minver and key < version_key(minver):
        return False
    if maxver and key > version_key(maxver):
        return False
    return True


def _cuda_kernels_left(project: "KernelProject", cuda_version: str) -> bool:
    """False when the project has CUDA kernels and every one is skipped by its cuda-minver."""
    cuda_kernels = [k for k in project.kernels if k.backend == "cuda"]
    if not cuda_kernels:
        return True
    return any(not k.cuda_minver or version_key(cuda_version) >= version_key(k.cuda_minver) for k in cuda_kernels)


def compute_matrix(project: "KernelProject", policy: MatrixPolicy) -> list[Variant]:
    """The variants `project` must be built for under `policy`, in a stable order."""
    table = load_table()
    exact_cuda = {version_key(c) for c in policy.cuda if "." in c}
    major_cuda = {int(c) for c in policy.cuda if c.isdigit()}
    policy_torch = {version_key(t) for t in policy.torch}

    candidates: list[Variant] = []
    for v in table.variants:
        if v.backend not in project.backends or v.backend not in policy.backends:
            continue
        if v.arch not in policy.archs or version_key(v.torch) not in policy_torch:
            continue
        if not _in_bounds(v.torch, project.torch_minver, project.torch_maxver):
            continue
        if v.backend == "cuda":
            assert v.backend_version is not None
            if not _in_bounds(v.backend_version, project.cuda_minver, project.cuda_maxver):
                continue
            if not _cuda_kernels_left(project, v.backend_version):
                continue
        candidates.append(v)

    selected: list[Variant] = []
    lowest: dict[tuple, Variant] = {}
    for v in candidates:
        if v.backend != "cuda":
            selected.append(v)
            continue
        key = version_key(v.backend_version or "")
        if key in exact_cuda:
            selected.append(v)
        if key[0] in major_cuda:
            group = (v.torch, v.arch, v.os, key[0])
            if group not in lowest or key < version_key(lowest[group].backend_version or ""):
                lowest[group] = v
    selected.extend(v for v in lowest.values() if v not in selected)
    if project.noarch:
        return noarch_variants(selected)
    return sort_variants(selected)


def _representative_key(v: Variant) -> tuple:
    """Newest torch; for CUDA the newest major at its lowest minor; x86_64-linux first."""
    major, minor = ([int(n) for n in re.findall(r"\d+", v.backend_version or "")] + [0, 0])[:2]
    system = SYSTEM_ORDER.index(v.system) if v.system in SYSTEM_ORDER else len(SYSTEM_ORDER)
    return (version_key(v.torch), major, -minor, -system)


def noarch_variants(builds: Iterable[Variant]) -> list[Variant]:
    """One `torch-<backend>` per backend of `builds`, standing for all of them."""
    by_backend: dict[str, list[Variant]] = {}
    for v in sort_variants(builds):
        by_backend.setdefault(v.backend, []).append(v)
    out = []
    for backend, group in by_backend.items():
        chosen = max(group, key=_representative_key)
        out.append(replace(chosen, noarch=True, serves=tuple(v.name for v in group)))
    return out


def sort_variants(variants: Iterable[Variant]) -> list[Variant]:
    def key(v: Variant):
        order = BACKEND_ORDER.index(v.backend) if v.backend in BACKEND_ORDER else len(BACKEND_ORDER)
        system = SYSTEM_ORDER.index(v.system) if v.system in SYSTEM_ORDER else len(SYSTEM_ORDER)
        return (order, version_key(v.torch), version_key(v.backend_version or "0"), system)

    return sorted(set(variants), key=key)


def reduced_policy(full: MatrixPolicy) -> MatrixPolicy:
    """The pull-request set for a project outside any workspace: the newest
    torch, the lowest CUDA major the policy names, x86_64, cuda and cpu
    (what kernel-builder's `ci` output builds: one variant per framework)."""
    majors = sorted({version_key(c)[0] for c in full.cuda})
    return MatrixPolicy(
        torch=(max(full.torch, key=version_key),) if full.torch else (),
        cuda=(str(majors[-1]),) if majors else (),
        archs=("x86_64",) if "x86_64" in full.archs else full.archs[:1],
        backends=tuple(b for b in full.backends if b in ("cuda", "cpu")),
    )


# ---------------------------------------------------------------- the host


@dataclass(frozen=True)
class TorchInfo:
    version: str  # "2.13.0+cpu"
    cuda: str | None
    hip: str | None
    xpu: str | None

    @property
    def major_minor(self) -> str:
        parts = version_key(self.version) + (0, 0)
        return f"{parts[0]}.{parts[1]}"


def torch_info(python_path: Iterable[str] | None = None) -> TorchInfo:
    """The installed torch's version.py, read without importing torch (2+ s).

    Keeps a no-op rebuild fast; the values are the ones `torch.version` exposes.
    """
    spec = find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise MatrixError("torch is not installed in this interpreter", code="torch-missing",
                          hint="pip install torch (the version you want to build for)")
    version_file = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    namespace: dict[str, Any] = {}
    try:
        exec(compile(version_file.read_text(encoding="utf-8"), str(version_file), "exec"), namespace)
    except (OSError, SyntaxError) as exc:
        raise MatrixError(f"cannot read torch's version file {version_file}: {exc}", code="torch-version-unreadable") from None
    return TorchInfo(
        version=str(namespace.get("__version__", "")),
        cuda=namespace.get("cuda"),
        hip=namespace.get("hip"),
        xpu=namespace.get("xpu"),
    )


def _host_arch() -> str:
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}.get(machine, machine)


def host_variant(info: TorchInfo | None = None) -> Variant:
    """The variant the running torch can build and load here.

    The backend follows torch's build (CUDA, ROCm, XPU; Metal on macOS;
    otherwise CPU), with the same version reading `kernels` uses.
    """
    info = info or torch_info()
    os_name = platform.system().lower()
    if info.cuda:
        backend, version = "cuda", ".".join(info.cuda.split(".")[:2])
    elif info.hip:
        backend, version = "rocm", ".".join(info.hip.split("-")[0].split(".")[:2])
    elif info.xpu:
        backend, version = "xpu", f"{info.xpu[0:4]}.{info.xpu[5:6]}"
    elif os_name == "darwin":
        backend, version = "metal", None
    else:
        backend, version = "cpu", None
    return Variant(torch=info.major_minor, backend=backend, backend_version=version,
                   arch=_host_arch(), os=os_name, cxx11=os_name == "linux")


def cpu_variant_of(variant: Variant) -> Variant:
    return Variant(torch=variant.torch, backend="cpu", backend_version=None, arch=variant.arch,
                   os=variant.os, cxx11=variant.cxx11)


# ---------------------------------------------------------------- rows


@dataclass(frozen=True)
class MatrixEntry:
    kernel: str
    path: str  # the project directory, relative to the workspace root when there is one
    variant: Variant


def matrix_rows(entries: Iterable[MatrixEntry], *, group: str | None = None) -> dict[str, list[dict]]:
    """A GitHub Actions `strategy.matrix` document: {"include": [...]}.

    `group="job"`: one row per kernel x backend x system (arch and OS: the
    CPU variants of aarch64 Linux and macOS need different runners), with the
    space-separated `variants` instead of `variant`.
    """
    table = load_table()
    rows: list[dict] = []
    if group is None:
        for e in entries:
            v = e.variant
            rows.append({"kernel": e.kernel, "path": e.path, **v.to_json(), "runner": table.runner(v.system)})
        return {"include": rows}
    if group != "job":
        raise MatrixError(f"unknown grouping {group!r}", code="usage", hint="the only grouping is 'job'")
    groups: dict[tuple, list[MatrixEntry]] = {}
    for e in entries:
        groups.setdefault((e.kernel, e.path, e.variant.backend, e.variant.arch, e.variant.os), []).append(e)
    for (kernel, path, backend, arch, os_name), members in groups.items():
        v0 = members[0].variant
        rows.append({
            "kernel": kernel, "path": path, "backend": backend,
            "variants": " ".join(m.variant.name for m in members),
            "torch": " ".join(sorted({m.variant.torch for m in members}, key=version_key)),
            "arch": arch, "os": os_name, "system": v0.system, "runner": table.runner(v0.system),
            "count": len(members),
        })
    return {"include": rows}

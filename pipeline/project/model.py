"""The values `validate` returns: the parsed project and the report."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import Problem

BUILD_TOML = "build.toml"
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")
# Where each framework keeps its Python package (kernel-layout-check-hook.sh).
EXT_DIRS = {"torch": "torch-ext", "torch-noarch": "torch-ext", "tvm-ffi": "tvm-ffi-ext"}


@dataclass(frozen=True)
class KernelSpec:
    name: str
    backend: str
    src: tuple[str, ...]
    depends: tuple[str, ...]
    include: tuple[str, ...]
    cuda_capabilities: tuple[str, ...] | None
    cuda_flags: tuple[str, ...]
    cxx_flags: tuple[str, ...]
    cuda_minver: str | None
    rocm_archs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TorchExt:
    src: tuple[str, ...]
    pyext: tuple[str, ...]
    include: tuple[str, ...]


@dataclass(frozen=True)
class KernelProject:
    root: Path
    name: str
    python_name: str
    version: int | None
    license: str | None
    edition: int
    backends: tuple[str, ...]
    kernels: tuple[KernelSpec, ...]
    torch_ext: TorchExt | None
    torch_minver: str | None
    torch_maxver: str | None
    cuda_minver: str | None
    cuda_maxver: str | None
    hub_repo_id: str | None
    python_depends: tuple[str, ...]
    # "torch" (compiled), "torch-noarch" (pure Python) or "tvm-ffi".
    framework: str = "torch"
    # Backend-specific python-depends ([general.cuda].python-depends, ...).
    backend_python_depends: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # File extensions the build ships from the Python package ([torch].pyext, ...).
    pyext: tuple[str, ...] = ("py", "pyi")

    @property
    def noarch(self) -> bool:
        return self.framework == "torch-noarch"

    @property
    def package_dir(self) -> Path:
        return self.root / EXT_DIRS[self.framework] / self.python_name

    def python_depends_for(self, backend: str) -> tuple[str, ...]:
        extra = dict(self.backend_python_depends).get(backend, ())
        return self.python_depends + tuple(d for d in extra if d not in self.python_depends)


@dataclass(frozen=True)
class ValidationReport:
    project: KernelProject | None
    problems: tuple[Problem, ...]
    path: str = ""

    @property
    def errors(self) -> int:
        return sum(p.is_error for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(not p.is_error for p in self.problems)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def to_json(self) -> dict:
        return {"path": self.path, "ok": self.ok, "errors": self.errors, "warnings": self.warnings,
                "problems": [p.to_json() for p in self.problems]}

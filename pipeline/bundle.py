"""`check BUILD_DIR`: is this build tree fit to publish?

A bundle is a directory of variant directories (`build/<variant>/`, or one
kernel's directory of a Nix `result/`): arch variants (`torch213-cxx11-cu130-
x86_64-linux`, with their `<id>.abi3.so`) or noarch ones (`torch-cuda`: Python
only; a compiled library there is an error, as it would load on any platform). Every rule that `kernels` itself
enforces is checked with `kernels`' own code: `Metadata` parses metadata.json,
`Digest` hashes and validates the files, `kernels.variants.parse_variant`
parses the directory names. The ABI of every shared object is checked with
the `kernel-abi-check` package, with the same targets kernel-builder uses.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol, Sequence

from pipeline.bundle_signatures import check_signatures
from pipeline.errors import CheckError, Problem

# The ABI targets of the Kernel Hub (kernel-builder's `check-abi` defaults).
MANYLINUX = "manylinux_2_28"
PYTHON_ABI = "3.9"
MACOS = "15.0"

# Never part of a build: compiler and build-system leftovers, logs, bytecode.
# Bytecode is written by Python whenever a variant is imported; it is never
# uploaded (kernels ignores it too) but its presence means the tree was used.
STRAY_DIRS = ("__pycache__", "CMakeFiles", ".ninja_deps", ".git", ".cache")
STRAY_FILES = (
    "*.pyc", "*.pyo", "*.o", "*.obj", "*.d", "*.log", "build.ninja", ".ninja_log", ".ninja_deps",
    "CMakeCache.txt", "cmake_install.cmake", "compile_commands.json", "*.tmp", "*~", ".DS_Store",
)
# Files kernels never downloads; the planner skips them as well.
NEVER_UPLOADED = ("*.pyc", "*/__pycache__/*", "__pycache__/*")


class _ExpectedVariant(Protocol):
    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class VariantBundle:
    """One variant directory, as `kernels` reads it."""

    name: str
    path: Path
    kernel_name: str | None
    kernel_id: str | None
    version: int | None
    license: str | None
    backend: str | None  # metadata backend type, lower case ("cuda", "cpu", ...)
    archs: tuple[str, ...]
    framework: str | None  # "torch 2.13", "torch (noarch)", ...
    target: str | None  # "CUDA 13.0", "CPU", ...
    platform: str | None  # "x86_64-linux", or None for noarch
    python_depends: tuple[str, ...]
    provenance: dict
    files: tuple[str, ...]  # relative paths, POSIX, the files that would be uploaded

    def to_json(self) -> dict:
        return {
            "name": self.name, "path": str(self.path), "kernel": self.kernel_name, "id": self.kernel_id,
            "version": self.version, "license": self.license, "backend": self.backend, "archs": list(self.archs),
            "framework": self.framework, "target": self.target, "platform": self.platform,
            "python_depends": list(self.python_depends), "provenance": self.provenance, "files": list(self.files),
        }


@dataclass(frozen=True)
class Bundle:
    root: Path
    variants: tuple[VariantBundle, ...]

    @property
    def name(self) -> str | None:
        names = {v.kernel_name for v in self.variants if v.kernel_name}
        return names.pop() if len(names) == 1 else None

    @property
    def version(self) -> int | None:
        versions = {v.version for v in self.variants if v.version is not None}
        return versions.pop() if len(versions) == 1 else None

    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)

    def variant(self, name: str) -> VariantBundle | None:
        return next((v for v in self.variants if v.name == name), None)


@dataclass(frozen=True)
class CheckReport:
    bundle: Bundle
    problems: tuple[Problem, ...]
    covered: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    expected: tuple[str, ...] | None = None
    signatures: tuple = ()  # pipeline.signing.SignatureReport per signed variant

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.is_error)

    @property
    def ok(self) -> bool:
        return not self.errors

    def raise_for_errors(self) -> None:
        if self.errors:
            raise CheckError(
                f"{len(self.errors)} problem(s) in {self.bundle.root}", code="check-failed", path=str(self.bundle.root),
                problems=self.problems, hint="fix them and rebuild; see the list above",
            )

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "root": str(self.bundle.root),
            "name": self.bundle.name,
            "version": self.bundle.version,
            "variants": [v.to_json() for v in self.bundle.variants],
            "signatures": [r.to_json() for r in self.signatures],
            "coverage": {
                "expected": list(self.expected) if self.expected is not None else None,
                "covered": list(self.covered), "missing": list(self.missing), "extra": list(self.extra),
            },
            "problems": [p.to_json() for p in self.problems],
        }


@dataclass
class _Collector:
    problems: list[Problem] = field(default_factory=list)

    def error(self, path: Path | str, code: str, message: str, hint: str = "") -> None:
        self.problems.append(Problem(str(path), None, code, message, hint))

    def warning(self, path: Path | str, code: str, message: str, hint: str = "") -> None:
        self.problems.append(Problem(str(path), None, code, message, hint, severity="warning"))


# --- locating the variants ---------------------------------------------------

def find_build_dir(path: Path) -> Path:
    """The directory that holds the variant directories.

    Accepts the build tree itself, a kernel project (its `build/`), or a Nix
    `result/` of one kernel. A directory holding a metadata.json is one variant,
    not a tree; we refuse it because the variant's name is its directory name.
    """
    path = Path(path)
    if not path.is_dir():
        raise CheckError(f"{path} is not a directory", code="build-tree-invalid", path=str(path),
                         hint="pass the build tree, e.g. kernels-src/rmsnorm/build")
    if (path / "metadata.json").is_file():
        raise CheckError("this is one variant directory, not a build tree", code="build-tree-invalid", path=str(path),
                         hint=f"pass its parent: {path.parent}")
    if (path / "build").is_dir() and ((path / "build.toml").is_file() or not any(
            _parses(p.name) for p in _variant_dirs(path))):
        return path / "build"
    return path


def _parses(name: str) -> bool:
    from kernels.variants import parse_variant

    try:
        parse_variant(name)
    except ValueError:
        return False
    return True


def _variant_dirs(build_dir: Path) -> list[Path]:
    return sorted(p for p in build_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


def _is_stray(rel_parts: Sequence[str]) -> bool:
    if any(part in STRAY_DIRS for part in rel_parts[:-1]):
        return True
    return any(fnmatch.fnmatch(rel_parts[-1], pattern) for pattern in STRAY_FILES)


def never_uploaded(rel: str) -> bool:
    """Bytecode: generated by importing the variant, never downloaded by kernels."""
    return any(fnmatch.fnmatch(rel, p) for p in NEVER_UPLOADED)


def variant_files(variant_dir: Path) -> tuple[str, ...]:
    """Files of one variant that are uploaded, relative and sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(variant_dir, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in filenames:
            rel = (Path(dirpath) / name).relative_to(variant_dir).as_posix()
            if not never_uploaded(rel):
                out.append(rel)
    return tuple(sorted(out))


# --- the checks ----------------------------------------------------------------

def describe_variant(parsed) -> tuple[str | None, str | None, str | None]:
    """(framework, target, platform) in words, read from kernels' parsed variant."""
    from kernels.variants import ArchVariant

    framework = parsed.framework
    if isinstance(parsed, ArchVariant):
        version = getattr(framework, "version", None)
        kind = type(framework).__name__
        fw = {"Torch": "torch", "TorchStableAbi": "torch stable ABI", "TvmFfi": "tvm-ffi"}.get(kind, kind)
        fw_text = f"{fw} {version}" if version is not None else fw
        backend = parsed.arch.backend
        version = getattr(backend, "version", None)
        target = backend.name.upper() if backend.name != "metal" else "Metal"
        if backend.name == "cpu":
            target = "CPU"
        if version is not None:
            target += f" {version}"
        return fw_text, target, f"{parsed.arch.platform}-{parsed.arch.os}"
    name = parsed.arch.backend_name
    return "torch (noarch)", {"cpu": "CPU", "metal": "Metal"}.get(name, name.upper()), None


def _check_abi(so: Path, rel: str, os_name: str | None, col: _Collector) -> None:
    try:
        import kernel_abi_check as kac
    except ImportError:
        col.error(rel, "abi-violation", "kernel-abi-check is not installed, so this library's symbols were not checked",
                  hint="pip install kernel-abi-check (a dependency of kernel-pipeline)")
        return

    try:
        obj = kac.ObjectFile(so)
        fmt = obj.format()
    except (OSError, ValueError) as exc:
        col.error(rel, "abi-violation", f"cannot read shared object: {exc}")
        return
    if fmt == kac.BinaryFormat.ELF:
        for v in obj.check_manylinux(MANYLINUX):
            col.error(rel, "abi-violation", f"symbol {v.name} needs {v.dep} {v.version}, newer than {MANYLINUX} allows",
                      hint="build in the manylinux_2_28 toolchain (nix), or avoid the symbol "
                           "(e.g. libstdc++ >= 11 uses glibc 2.32's __libc_single_threaded)")
    elif fmt == kac.BinaryFormat.MACH_O:
        for v in obj.check_macos(MACOS):
            col.error(rel, "abi-violation", f"macOS compatibility: {v!r} (target macOS {MACOS})")
    else:
        col.error(rel, "abi-violation", f"unsupported binary format {fmt} for {os_name or 'this variant'}")
        return
    for v in obj.check_python_abi(PYTHON_ABI):
        added = getattr(v, "version_added", None)
        why = f"added to the stable ABI in Python {added}" if added else "not part of the stable ABI (abi3)"
        col.error(rel, "python-abi-violation", f"Python symbol {v.name} is {why}; variants must load on Python {PYTHON_ABI}+",
                  hint="define Py_LIMITED_API=0x03090000 and do not use pybind11 in the extension")


def _all_names(init_py: Path) -> tuple[str, ...]:
    """`__all__` of a variant's __init__.py, read without importing it."""
    try:
        tree = ast.parse(init_py.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return ()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            if isinstance(node.value, (ast.List, ast.Tuple)):
                return tuple(e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return ()


def exported_functions(variant: VariantBundle) -> tuple[str, ...]:
    """What the variant's `__all__` exports, minus the `layers` submodule."""
    return tuple(n for n in _all_names(variant.path / "__init__.py") if n != "layers")


def exported_layers(variant: VariantBundle) -> tuple[str, ...]:
    """Classes of the `layers` module, when `__all__` exports it (as kernel-builder's card does)."""
    if "layers" not in _all_names(variant.path / "__init__.py"):
        return ()
    for path in (variant.path / "layers" / "__init__.py", variant.path / "layers.py"):
        if path.is_file():
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError):
                return ()
            return tuple(n.name for n in tree.body if isinstance(n, ast.ClassDef))
    return ()


def _parse_name(name: str, rel_dir: Path, col: _Collector):
    """kernels' parsed variant (None when it does not parse) and its description in words."""
    from kernels.variants import parse_variant

    try:
        parsed = parse_variant(name)
        if parsed.variant_str != name:
            raise ValueError(f"it reads back as {parsed.variant_str!r}")
        return parsed, describe_variant(parsed)
    except ValueError as exc:
        col.error(rel_dir, "variant-name-invalid", f"kernels cannot parse the variant name {name!r}: {exc}",
                  hint="variant directories are named like torch213-cxx11-cu130-x86_64-linux or torch-cpu; "
                       "`python -m pipeline matrix` lists the valid names")
        return None, (None, None, None)


def _check_strays(vdir: Path, rel_dir: Path, col: _Collector) -> None:
    """Anything a build leaves behind that is not part of the kernel."""
    strays = []
    for dirpath, dirnames, filenames in os.walk(vdir, followlinks=True):
        here = Path(dirpath)
        for d in list(dirnames):
            if d in STRAY_DIRS:
                strays.append((here / d).relative_to(vdir).as_posix() + "/")
                dirnames.remove(d)
        for f in filenames:
            rel_parts = (here / f).relative_to(vdir).parts
            if _is_stray(rel_parts):
                strays.append("/".join(rel_parts))
    for s in sorted(strays):
        if "__pycache__" in s or s.endswith((".pyc", ".pyo")):
            col.error(rel_dir / s, "stray-file", "stray bytecode: Python wrote it when the variant was imported in place",
                      hint=f"remove it (rm -r {vdir / s}); it is never uploaded, but a published tree must be "
                           "exactly what the build produced")
        else:
            col.error(rel_dir / s, "stray-file", "stray file: not part of a kernel build",
                      hint="remove it and rebuild into a clean directory")


def _read_metadata(vdir: Path, rel_dir: Path, col: _Collector):
    from kernels._rust import Metadata

    meta_path = vdir / "metadata.json"
    if not meta_path.is_file():
        col.error(rel_dir / "metadata.json", "metadata-missing", "metadata.json is missing",
                  hint="every variant needs the metadata.json that the build writes")
        return None
    try:
        return Metadata.read_from_file(meta_path)
    except ValueError as exc:
        col.error(rel_dir / "metadata.json", "metadata-invalid", f"kernels cannot parse metadata.json: {exc}",
                  hint="required keys: name, id, version, license, python-depends, backend.type")
        return None


def _check_digest(meta, vdir: Path, rel_dir: Path, col: _Collector) -> None:
    from kernels._rust import Digest, DigestValidationError

    digest = meta.digest
    if digest is None:
        col.error(rel_dir / "metadata.json", "digest-missing", "metadata.json has no digest",
                  hint="the build records a sha256 digest of every file; rebuild the variant")
        return
    try:
        digest.validate(Digest.hash_variant(digest.algorithm, vdir))
    except DigestValidationError as exc:
        for violation in exc.violations:
            col.error(rel_dir, "digest-mismatch", f"digest mismatch: {violation}",
                      hint="the files changed after the build recorded their digest; rebuild the variant")
    except (OSError, RuntimeError) as exc:
        col.error(rel_dir, "digest-mismatch", f"cannot hash the variant: {exc}")


def _named_backend(parsed) -> str | None:
    """The backend a variant's name gives (arch and noarch alike; `npu` is kernels' noarch name for cann)."""
    from kernels.variants import ArchVariant, NoarchVariant

    if isinstance(parsed, ArchVariant):
        return parsed.arch.backend.name
    if isinstance(parsed, NoarchVariant):
        return "cann" if parsed.arch.backend_name == "npu" else parsed.arch.backend_name
    return None


def _check_contents(meta, parsed, vdir: Path, rel_dir: Path, files: tuple[str, ...], col: _Collector) -> dict:
    """Backend, package, extension name and provenance; returns the provenance summary."""
    from kernels.variants import ArchVariant, NoarchVariant

    backend_type = str(meta.backend.backend_type).lower()
    named = _named_backend(parsed)
    if named is not None and named != "universal" and named != backend_type:
        col.error(rel_dir / "metadata.json", "backend-mismatch",
                  f"metadata backend is {backend_type!r} but the variant name says {named!r}")
    if not (vdir / "__init__.py").is_file() and not (vdir / meta.name.python_name / "__init__.py").is_file():
        col.error(rel_dir / "__init__.py", "variant-incomplete", "the variant has no __init__.py; kernels cannot import it")
    sos = [f for f in files if f.endswith(".so") or f.endswith(".pyd")]
    if isinstance(parsed, ArchVariant) and parsed.arch.backend.name not in ("metal",) and not sos:
        col.warning(rel_dir, "variant-incomplete", "arch variant without a compiled extension (.so)")
    if isinstance(parsed, NoarchVariant) and sos:
        # kernels loads a noarch variant on every OS, CPU and torch version of its backend.
        col.error(rel_dir / sos[0], "noarch-compiled", f"noarch variant {parsed.variant_str} holds compiled "
                  f"code ({', '.join(sos)}), which would be loaded on every platform",
                  hint="compiled kernels go in [kernel.*] with a [torch] binding (arch variants); a [torch-noarch] "
                       "package is Python only")
    if sos and not any(Path(s).name.startswith(meta.id) for s in sos):
        col.error(rel_dir, "extension-name-mismatch", f"no shared object named after the kernel id {meta.id!r} "
                  f"(found {', '.join(sos)})", hint="the extension module must be <id>.abi3.so")
    prov = meta.provenance
    if prov is None:
        return {}
    if prov.dirty:
        col.warning(rel_dir / "metadata.json", "built-dirty", "built from a git tree with uncommitted changes",
                    hint="commit the kernel sources and rebuild for a reproducible build")
    return {"kernel_builder": prov.kernel_builder.version,
            "kernel_commit": prov.kernel.commit if prov.kernel else None, "dirty": prov.dirty}


def _check_variant(vdir: Path, build_dir: Path, col: _Collector) -> VariantBundle:
    name = vdir.name
    rel_dir = vdir.relative_to(build_dir.parent) if build_dir.parent != build_dir else vdir
    parsed, (framework, target, platform) = _parse_name(name, rel_dir, col)
    _check_strays(vdir, rel_dir, col)
    meta = _read_metadata(vdir, rel_dir, col)
    files = variant_files(vdir)
    provenance: dict = {}
    if meta is not None:
        _check_digest(meta, vdir, rel_dir, col)
        provenance = _check_contents(meta, parsed, vdir, rel_dir, files, col)
    for rel in files:
        if rel.endswith(".so") or rel.endswith(".pyd"):
            _check_abi(vdir / rel, str(rel_dir / rel), getattr(getattr(parsed, "arch", None), "os", None), col)
    return VariantBundle(
        name=name, path=vdir,
        kernel_name=str(meta.name) if meta else None,
        kernel_id=meta.id if meta else None,
        version=meta.version if meta else None,
        license=meta.license if meta else None,
        backend=str(meta.backend.backend_type).lower() if meta else None,
        archs=tuple(meta.backend.archs or ()) if meta else (),
        framework=framework, target=target, platform=platform,
        python_depends=tuple(meta.python_depends) if meta else (),
        provenance=provenance, files=files,
    )


def check_bundle(build_dir: Path, *, expected: Iterable[_ExpectedVariant] | None = None) -> CheckReport:
    """Check every variant in `build_dir`. Returns the report; never raises for
    problems in the files (callers decide: `report.raise_for_errors()`)."""
    build_dir = find_build_dir(Path(build_dir))
    col = _Collector()
    variants: list[VariantBundle] = []
    for entry in sorted(build_dir.iterdir()):
        if entry.is_dir() and entry.name.startswith("."):
            col.warning(entry, "file-outside-variant", "hidden directory in the build tree (not uploaded)",
                        hint="a leftover of an interrupted build; remove it")
        elif not entry.is_dir():
            col.warning(entry, "file-outside-variant", "file outside any variant directory (not uploaded)")
    for vdir in _variant_dirs(build_dir):
        variants.append(_check_variant(vdir, build_dir, col))
    bundle = Bundle(root=build_dir, variants=tuple(variants))
    if not variants:
        col.error(build_dir, "build-tree-invalid", "no variant directories in the build tree",
                  hint="build first: python -m pipeline build <kernel project>")

    # All variants are one kernel at one version (one branch on the Hub).
    names = sorted({v.kernel_name for v in variants if v.kernel_name})
    if len(names) > 1:
        col.error(build_dir, "variants-disagree", f"variants disagree on the kernel name: {', '.join(names)}",
                  hint="a bundle holds one kernel; build each kernel into its own directory")
    versions = sorted({v.version for v in variants if v.version is not None})
    if len(versions) > 1:
        col.error(build_dir, "variants-disagree", f"variants disagree on the version: {', '.join(map(str, versions))}",
                  hint="each version is its own Hub branch (v<N>); rebuild every variant from one build.toml")

    covered: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    expected_names: tuple[str, ...] | None = None
    if expected is not None:
        expected_names = tuple(dict.fromkeys(v.name for v in expected))
        present = set(bundle.variant_names)
        covered = tuple(n for n in expected_names if n in present)
        missing = tuple(n for n in expected_names if n not in present)
        extra = tuple(n for n in bundle.variant_names if n not in set(expected_names))
        for n in extra:
            col.warning(build_dir / n, "variant-not-in-matrix", "variant is not in the build matrix")
    signatures, signature_problems = check_signatures(bundle)
    return CheckReport(bundle=bundle, problems=tuple(col.problems) + tuple(signature_problems), covered=covered,
                       missing=missing, extra=extra, expected=expected_names, signatures=signatures)


def read_metadata_json(variant_dir: Path) -> dict:
    """The raw metadata.json (for fields `Metadata` does not expose)."""
    try:
        return json.loads((variant_dir / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}

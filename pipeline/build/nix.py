"""The nix backend: `nix build` of the project's flake, copied out of the store and checked.

`.#bundle` (every variant kernel-builder builds for this system) or
`.#redistributable.<variant>` (one). Both results hold `<variant>/...`
directories (the bundle also CARD.md and benchmarks/, which are not
variants and are left out). The copy dereferences store links, is made
writable, and is checked (metadata parses, digest matches) before it
replaces `<out>/<variant>/`.

A flake inside a git repository sees only files git tracks: an untracked
new kernel is invisible to `nix build` until it is added.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from pipeline.build import layout
from pipeline.build.result import BuildResult, BuiltVariant
from pipeline.events import Event
from pipeline.errors import BuildError, MatrixError, Problem
from pipeline.fsutil import staged_dir
from pipeline.matrix import Variant

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject

# nix-command and flakes are still experimental features in most Nix releases.
NIX_FEATURES = ["--extra-experimental-features", "nix-command flakes"]


def flake_attribute(variant: str | None) -> str:
    return "bundle" if variant is None else f"redistributable.{variant}"


def nix_build_command(project_root: Path, variant: str | None, out_link: Path, extra: Sequence[str] = ()) -> list[str]:
    nix = shutil.which("nix")
    if nix is None:
        raise BuildError("nix is not installed (no `nix` on PATH)", code="nix-missing",
                         hint="install Nix (https://nixos.org/download) or use --backend local")
    return [nix, *NIX_FEATURES, "build", f"{project_root}#{flake_attribute(variant)}", "-L",
            "--out-link", str(out_link), *extra]


def run_nix(cmd: list[str], progress: Callable[[Event], None], cwd: Path) -> None:
    """Run nix build, streaming its log as events; the last lines go into the error."""
    tail: collections.deque[str] = collections.deque(maxlen=40)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                            cwd=cwd)
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        tail.append(line)
        progress(Event("log", line))
    code = proc.wait()
    if code != 0:
        errors = [ln for ln in tail if "error" in ln.lower()] or list(tail)[-15:]
        raise BuildError(f"nix build failed (exit {code})", code="nix-failed", hint="the lines above are nix's log",
                         problems=[Problem(path=" ".join(cmd[2:5]), line=None, code="nix-failed",
                                           message="\n".join(errors[-15:]))])


def _variants_in(result: Path) -> tuple[list[tuple[str, Variant]], list[str]]:
    found, skipped = [], []
    for entry in sorted(result.iterdir()):
        try:
            variant = Variant.parse(entry.name)
        except MatrixError:
            skipped.append(entry.name)
            continue
        if entry.is_dir():
            found.append((entry.name, variant))
        else:
            skipped.append(entry.name)
    return found, skipped


def copy_variant(source: Path, final: Path) -> None:
    """Copy one variant out of the store (links followed), writable, checked, atomically."""
    with staged_dir(final) as tmp:
        tmp.chmod(0o755)
        shutil.copytree(source, tmp, symlinks=False, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for dirpath, dirnames, filenames in os.walk(tmp):
            os.chmod(dirpath, 0o755)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o644)
        problems = layout.check_variant_dir(tmp)
        if problems:
            raise BuildError(f"the nix build of {final.name} does not check out: {problems[0]}",
                             code="layout-invalid",
                             problems=[Problem(path=str(source), line=None, code="layout-invalid", message=p)
                                       for p in problems])


def build_nix(project: "KernelProject", out: Path, *, variant: str | None,
              progress: Callable[[Event], None], nix_args: Sequence[str] = ()) -> BuildResult:

    started = time.monotonic()
    if variant is not None:
        try:
            Variant.parse(variant)
        except MatrixError as exc:
            raise BuildError(f"unknown variant name {variant!r}: {exc.message}", code="variant-unknown",
                             hint="`python -m pipeline matrix PATH` lists a project's variants") from None
    if not (project.root / "flake.nix").is_file():
        raise BuildError(f"{project.name} has no flake.nix", code="flake-missing", path=str(project.root),
                         hint="add the kernel-builder flake.nix (kernel-builder.lib.genKernelFlakeOutputs)")
    with tempfile.TemporaryDirectory(prefix="pipeline-nix-") as tmp:
        link = Path(tmp) / "result"
        cmd = nix_build_command(project.root.resolve(), variant, link, nix_args)
        progress(Event("step", f"{project.name}: nix build .#{flake_attribute(variant)}"))
        run_nix(cmd, progress, cwd=project.root)
        result = link.resolve()
        found, skipped = _variants_in(result)
        if variant is not None:
            found = [(n, v) for n, v in found if n == variant]
        if not found:
            raise BuildError(f"nix built {result} but it holds no variant directory"
                             + (f" named {variant}" if variant else ""), code="nix-empty",
                             hint="does this system have a build variant for the project's backends?")
        built = []
        for name, parsed in found:
            final = Path(out) / name
            progress(Event("step", f"copying {name} to {final}"))
            copy_variant(result / name, final)
            kernel_id = layout.read_metadata(final).get("id", "")
            built.append(BuiltVariant(parsed, final, kernel_id, False, time.monotonic() - started))
    return BuildResult(variants=tuple(built), backend="nix", out=Path(out), skipped=tuple(skipped))

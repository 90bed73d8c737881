"""The nix backend: `nix build` of the project's flake, copied out of the store and checked.

`.#bundle` (every variant kernel-builder builds for this system) or
`.#redistributable.<variant>` (one). Both results hold `<variant>/...`
directories (the bundle also CARD.md and benchmarks/, which are not
variants and are left out). The copy dereferences store links, is made
writable, and is checked (metadata parses, digest matches) before it
replaces `<out>/<variant>/`.

A flake inside a git repository sees only files git tracks: an untracked
new kernel is invisible to `nix build` until it is added.

Never dirty, never re-locked: a build is refused (before nix runs) when the
git tree has uncommitted changes to tracked files, since kernel-builder would
then name the ops `..._dirty` and record a dirty provenance; and when the
kernel's flake.lock is missing, untracked, or not the workspace's one pin
(`pipeline lock`). nix runs with `--no-update-lock-file`, so a lock that
would still need changes fails with nix's own message instead of being
written (and `git add -N`'d) into the tree. The tree is checked again after
the build, and a variant whose id ends in `_dirty` is refused.
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
from pipeline.lock import check_kernel_lock
from pipeline.matrix import Variant

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.project import KernelProject

# nix-command and flakes are still experimental features in most Nix releases.
NIX_FEATURES = ["--extra-experimental-features", "nix-command flakes"]
# A build never writes a lock: what would need one fails with this line of nix's.
NO_LOCK_WRITES = ["--no-update-lock-file"]
_NIX_LOCK_REFUSAL = "requires lock file changes but they're not allowed due to '--no-update-lock-file'"
_DIRTY_HINT = ("commit (or stash) them and build again: a dirty tree gets op namespaces ending in _dirty and a "
               "dirty provenance, which check reports (C014) and a release must not carry")


def flake_attribute(variant: str | None) -> str:
    return "bundle" if variant is None else f"redistributable.{variant}"


def nix_build_command(project_root: Path, variant: str | None, out_link: Path, extra: Sequence[str] = ()) -> list[str]:
    nix = shutil.which("nix")
    if nix is None:
        raise BuildError("nix is not installed (no `nix` on PATH)", code="nix-missing",
                         hint="install Nix (https://nixos.org/download) or use --backend local")
    return [nix, *NIX_FEATURES, "build", f"{project_root}#{flake_attribute(variant)}", "-L",
            "--out-link", str(out_link), *NO_LOCK_WRITES, *extra]


def dirty_paths(project_root: Path) -> list[str] | None:
    """`git status` entries of tracked files with changes (intent-to-add included) in the
    repository holding `project_root`; None when it is not in a git work tree."""
    try:
        done = subprocess.run(["git", "status", "--porcelain=v1", "--untracked-files=no", "--ignore-submodules=none"],
                              cwd=project_root, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [line for line in done.stdout.splitlines() if line.strip()]


def refuse_dirty(project_root: Path, *, after_build: bool = False) -> None:
    """Raise unless the git tree holding `project_root` is clean (untracked files do not count:
    a flake cannot see them). `after_build`: the same check, worded for a tree nix changed."""
    entries = dirty_paths(project_root)
    if entries is None:
        raise BuildError(f"{project_root} is not in a git work tree", code="tree-not-git", path=str(project_root),
                         hint="kernel-builder takes the kernel id from the git revision: `git init`, add and "
                              "commit the project")
    if not entries:
        return
    problems = [Problem(path=entry[3:], line=None, code="tree-dirty", message=f"git status {entry[:2]!r}")
                for entry in entries]
    if after_build:
        raise BuildError(f"the git tree changed during the nix build ({len(entries)} path(s))",
                         code="tree-dirtied", problems=problems, hint="nix must not write into the tree: "
                         "commit the kernel's flake.lock (`python -m pipeline lock`)")
    raise BuildError(f"refusing to build from a dirty git tree: {len(entries)} tracked path(s) have uncommitted "
                     f"changes ({', '.join(p.path for p in problems[:3])}{', ...' if len(problems) > 3 else ''})",
                     code="tree-dirty", path=str(project_root), problems=problems, hint=_DIRTY_HINT)


def refuse_unlocked(project_root: Path) -> None:
    """Raise when the kernel's flake.lock would have to be created or changed by this build."""
    problems = [p for p in check_kernel_lock(project_root) if p.is_error]
    if problems:
        first = problems[0]
        raise BuildError(f"a nix build would create or change {first.path}: {first.message}", code=first.code,
                         path=first.path, line=first.line, problems=problems, hint=first.hint)


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
    refusal = next((ln for ln in tail if _NIX_LOCK_REFUSAL in ln), None)
    if code != 0 and refusal is not None:
        raise BuildError(f"the flake.lock is stale: {refusal.removeprefix('error: ')}", code="lock-stale",
                         hint="`python -m pipeline lock` (or `nix flake lock` for a project outside a "
                              "workspace), commit the lock, build again")
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
        # torch-<backend> (noarch) variants hold no compiled extension.
        problems = layout.check_variant_dir(tmp, compiled=not Variant.parse(final.name).noarch)
        if problems:
            raise BuildError(f"the nix build of {final.name} does not check out: {problems[0]}",
                             code="layout-invalid",
                             problems=[Problem(path=str(source), line=None, code="layout-invalid", message=p)
                                       for p in problems])


def build_nix(project: "KernelProject", out: Path, *, variant: str | None,
              progress: Callable[[Event], None], nix_args: Sequence[str] = (),
              allow_dirty: bool = False) -> BuildResult:

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
        if not allow_dirty:
            refuse_dirty(project.root)
        refuse_unlocked(project.root)
        progress(Event("step", f"{project.name}: nix build .#{flake_attribute(variant)}"))
        run_nix(cmd, progress, cwd=project.root)
        if not allow_dirty:
            refuse_dirty(project.root, after_build=True)
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
            if kernel_id.endswith("_dirty") and not allow_dirty:
                raise BuildError(f"{name} was built as dirty (id {kernel_id})", code="id-dirty", path=str(final),
                                 hint=_DIRTY_HINT)
            built.append(BuiltVariant(parsed, final, kernel_id, False, time.monotonic() - started))
    return BuildResult(variants=tuple(built), backend="nix", out=Path(out), skipped=tuple(skipped))

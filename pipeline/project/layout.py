"""What must not be in the source tree (build output, generated files) and flake.nix."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Iterator

from pipeline.project.rules import Sink
from pipeline.project.lines import line_of
from pipeline.project.sources import read_source


_ROOT_OUTPUT_DIRS = {"build", "result", ".eggs", "dist"}
_OUTPUT_SUFFIXES = {".so", ".o", ".obj", ".pyc", ".dylib", ".metallib"}
_GENERATED_ROOT = {"CMakeLists.txt", "setup.py", "pyproject.toml"}
# Markers the kernel-builder templates write into the files they generate.
_GENERATED_MARKERS = ("kernel-builder", "build2cmake", "cuda_kernel_component", "define_gpu_extension_target",
                      "get_gpu_lang", "add_kernels_install_target", "kernels_install")


def _walk(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".direnv", "node_modules")]
        yield Path(dirpath), dirnames, filenames


def _inside_git_work_tree(root: Path) -> bool:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == "true"


def _ignored_by_git(root: Path, candidates: list[str]) -> set[str]:
    """The candidates git ignores (so they would never be committed)."""
    if not candidates:
        return set()
    try:
        out = subprocess.run(["git", "-C", str(root), "check-ignore", "--stdin", "-z"], input="\0".join(candidates),
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return set()
    if out.returncode not in (0, 1):
        return set()
    return {c.rstrip("/") for c in out.stdout.split("\0") if c}


def _tracked_by_git(root: Path, candidates: list[str]) -> set[str] | None:
    """The candidates (files, or directories holding a file) that git tracks
    (`git ls-files`, paths relative to `root`); None when git cannot say."""
    if not candidates:
        return set()
    try:
        out = subprocess.run(["git", "--literal-pathspecs", "-C", str(root), "ls-files", "-z", "--", *candidates],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    tracked = [f for f in out.stdout.split("\0") if f]
    return {c for c in candidates if any(f == c or f.startswith(c + "/") for f in tracked)}


def _is_staging_leftover(name: str) -> bool:
    # fsutil.staged_dir's names while a variant directory is replaced.
    return name.startswith(".") and (".tmp-" in name or ".old-" in name)


def written_by_a_build(build_dir: Path, project_name: str | None) -> bool:
    """Whether `build_dir` holds only what `pipeline build` writes there:
    variant directories whose metadata.json names this project and records
    the tool that built it (`provenance.kernel-builder`: kernel-pipeline for
    the local backend, kernel-builder for the nix backend's copies).
    Anything else (objects, a loose .so, a CMake tree, a hand-made
    metadata.json) was not put there by a build."""
    try:
        entries = [e for e in build_dir.iterdir() if not _is_staging_leftover(e.name)]
    except OSError:
        return False
    if not entries:
        return True
    for entry in entries:
        meta = entry / "metadata.json"
        if entry.is_symlink() or not entry.is_dir() or not meta.is_file():
            return False
        try:
            document = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if not isinstance(document, dict):
            return False
        builder = (document.get("provenance") or {}).get("kernel-builder") if isinstance(
            document.get("provenance"), dict) else None
        if not isinstance(builder, dict) or not builder.get("version"):
            return False
        if project_name and document.get("name") != project_name:
            return False
    return True


def listed_sources(data: dict) -> set[str]:
    """Every path the src lists of build.toml name (normalised): what the nix source set copies."""
    lists = [(data.get(fw) or {}).get("src") for fw in ("torch", "torch-noarch", "tvm-ffi")
             if isinstance(data.get(fw), dict)]
    kernels = data.get("kernel") if isinstance(data.get("kernel"), dict) else {}
    lists += [k.get("src") for k in kernels.values() if isinstance(k, dict)]
    return {os.path.normpath(e).replace(os.sep, "/") for entries in lists if isinstance(entries, list)
            for e in entries if isinstance(e, str)}


def _generated_code(rel: str, listed: set[str]) -> str:
    """A generated file is harmful only when the build copies it: when a src list names it (or a file under it)."""
    copied = rel in listed or any(entry.startswith(rel + "/") for entry in listed)
    return "generated-file-committed" if copied else "generated-file-stale"


def check_committed(sink: Sink, root: Path, ext_dir: str, listed: set[str] = frozenset(),
                    project_name: str | None = None) -> None:
    """Committed build output (`_committed` says what committed means), and
    files kernel-builder generates (judged by whether a src list copies them)."""
    found: list[tuple[str, str, str]] = []  # (rel, code, message)
    for dirpath, dirnames, filenames in _walk(root):
        rel_dir = dirpath.relative_to(root)
        at_root = not rel_dir.parts
        for d in list(dirnames):
            rel = (rel_dir / d).as_posix()
            if (at_root and d in _ROOT_OUTPUT_DIRS) or d == "__pycache__" or d.endswith(".egg-info"):
                found.append((rel, "build-output-committed", f"{rel}/ is build output"))
                dirnames.remove(d)
            elif at_root and d == "cmake" and any((dirpath / d / f).exists() for f in ("utils.cmake", "kernel.cmake")):
                found.append((rel, _generated_code(rel, listed), f"{rel}/ holds kernel-builder's generated CMake files"))
                dirnames.remove(d)
        for f in filenames:
            path = dirpath / f
            rel = (rel_dir / f).as_posix()
            if (at_root and (f == "result" or f.startswith("result-")) and path.is_symlink()) \
                    or path.suffix in _OUTPUT_SUFFIXES:
                found.append((rel, "build-output-committed", f"{rel} is build output"))
            elif at_root and f in _GENERATED_ROOT:
                head = read_source(path)[:4000]
                if f == "CMakeLists.txt" or any(mark in head for mark in _GENERATED_MARKERS):
                    found.append((rel, _generated_code(rel, listed), f"{rel} is generated by kernel-builder"))
            elif rel == f"{ext_dir}/registration.h":
                code = _generated_code(rel, listed)
                found.append((rel, code, f"{rel} is generated by kernel-builder" + (
                    " and listed in a src list: `kernel-builder create-pyproject` stops with 'File(s) already exists'"
                    if code == "generated-file-committed" else ", and no src list names it, so the build never "
                    "copies it")))
    if not found:
        return
    for rel, code, message in _committed(root, found, project_name):
        sink.add(code, message, rel)


def _committed(root: Path, found: list[tuple[str, str, str]],
               project_name: str | None) -> list[tuple[str, str, str]]:
    """What of `found` counts as committed.

    In a git work tree, build output counts when git tracks it: a `build/`
    that `pipeline build` just wrote into a checkout without .gitignore is
    not committed. Generated files count unless git ignores them (their harm
    is being copied by a build, tracked or not). Without git, the tree is
    what ships (a tarball, a copy): output counts unless a build tool put it
    where it stands: a root `build/` holding only variant directories whose
    metadata.json names this project and the tool that built it
    (`written_by_a_build`), `result` symlinks, __pycache__. Such a build
    cannot be told from one a tarball shipped, and it is a build of this
    project that loads; a stray binary, an object file or a build/ of
    anything else is reported.
    """
    if _inside_git_work_tree(root):
        output = [rel for rel, code, _m in found if code == "build-output-committed"]
        tracked = _tracked_by_git(root, output)
        ignored = _ignored_by_git(root, [rel for rel, code, _m in found if code != "build-output-committed"])
        return [(rel, code, msg) for rel, code, msg in found
                if (rel not in ignored if code != "build-output-committed"
                    else tracked is None or rel in tracked)]
    kept = []
    for rel, code, msg in found:
        if code == "build-output-committed":
            if rel == "result" or rel.startswith("result-") or "__pycache__" in rel.split("/"):
                continue
            if rel in ("build",) and written_by_a_build(root / rel, project_name):
                continue
        kept.append((rel, code, msg))
    return kept


_FLAKE_URL = re.compile(r'kernel-builder(?:\.url)?\s*=\s*(?:\{[^}]*url\s*=\s*)?"([^"]+)"')


def check_flake(sink: Sink, root: Path) -> None:
    flake = root / "flake.nix"
    if not flake.is_file():
        sink.add("flake-missing", "flake.nix does not exist", "flake.nix")
        return
    text = read_source(flake)
    m = _FLAKE_URL.search(text)
    url = m.group(1) if m else ""
    builder_url = bool(re.search(r"huggingface/(kernels|kernel-builder)\b", url)) or url.startswith("path:")
    uses_lib = "genKernelFlakeOutputs" in text
    if not m or not builder_url:
        line = line_of(text, r"kernel-builder") if m else line_of(text, r"\binputs\b")
        sink.add("flake-no-builder", "flake.nix has no kernel-builder input pointing at github:huggingface/kernels"
                 + (f" (it points at {url!r})" if url else ""), "flake.nix", line)
    elif not uses_lib:
        old = line_of(text, r"\bgenFlakeOutputs\b")
        sink.add("flake-no-builder", "flake.nix calls genFlakeOutputs, which kernel-builder renamed to "
                 "genKernelFlakeOutputs (the old name now throws)" if old else
                 "flake.nix does not call kernel-builder.lib.genKernelFlakeOutputs", "flake.nix",
                 old or line_of(text, r"\boutputs\b"))

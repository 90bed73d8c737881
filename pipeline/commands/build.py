"""`pipeline build PATH [--backend local|nix] [--variant V] [--out DIR] [--json]`: parse and print only."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
from pathlib import Path
from typing import Iterator

from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pipeline.build import BACKENDS, BuildEvent, BuildResult, build_project
from pipeline.console import Output
from pipeline.errors import BuildError

HELP = "build variants (local: the host's; nix: the matrix)"
DESCRIPTION = """\
Build a kernel project (or every kernel of the workspace when PATH is the
workspace root) into <out>/<variant>/, the layout kernels.get_local_kernel
and the Hub use.

  local  compiles the host's variant with the running torch (the default
         when nix is not installed); unchanged inputs do not recompile
  nix    nix build of the project's flake (.#bundle, or
         .#redistributable.<variant>), copied out of the store and checked

  python -m pipeline build kernels-src/rmsnorm
  python -m pipeline build kernels-src/rmsnorm --backend nix --variant torch213-cxx11-cu130-x86_64-linux
  python -m pipeline build . --json

The default backend can be set with PIPELINE_BUILD_BACKEND=local|nix.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, nargs="?", default=Path("."),
                        help="a kernel project, or the workspace root for every kernel (default: .)")
    parser.add_argument("--backend", choices=[*BACKENDS, "auto"],
                        default=os.environ.get("PIPELINE_BUILD_BACKEND", "auto"),
                        help="local or nix (default: nix when nix is installed, else local)")
    parser.add_argument("--variant", default=None, help="one variant name (default: local: the host's; nix: all)")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: <project>/build)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("--override-input", nargs=2, action="append", default=[], metavar=("INPUT", "FLAKEREF"),
                        help="nix: replace a flake input (passed to nix build)")
    parser.add_argument("--nix-option", action="append", default=[], metavar="ARG",
                        help="nix: one more argument for nix build (repeatable), e.g. --nix-option=--impure")
    # kernel-builder's --unique-id: the Nix builds pass the flake revision.
    parser.add_argument("--unique-id", default=None, help=argparse.SUPPRESS)


def _backend(choice: str) -> str:
    if choice != "auto":
        return choice
    return "nix" if shutil.which("nix") else "local"


@contextlib.contextmanager
def _progress(output: Output) -> Iterator:
    """A callback for build events: a rich progress display on a terminal, plain lines otherwise."""
    if not output.interactive:
        def plain(event: BuildEvent) -> None:
            if event.kind == "compile" and event.total:
                output.info(f"[{(event.done or 0) + 1}/{event.total}] {event.message}")
            elif event.kind == "warning":
                output.info(f"warning: {event.message}")
            elif event.kind == "log":
                if not output.json_mode:
                    output.info(f"  {event.message}")
            else:
                output.info(event.message)

        yield plain
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TimeElapsedColumn())
    with Progress(*columns, console=output.err, transient=True) as bar:
        task = bar.add_task("build", total=None)

        def rich_event(event: BuildEvent) -> None:
            if event.kind == "compile":
                bar.update(task, description=event.message, completed=event.done or 0, total=event.total)
            elif event.kind == "log":
                bar.update(task, description=event.message[-100:])
            elif event.kind == "warning":
                bar.console.print(f"[yellow]warning:[/yellow] {event.message}", markup=True, highlight=False)
            else:
                bar.console.print(event.message, markup=False, highlight=False)
                bar.update(task, description=event.message)

        yield rich_event


def run(args: argparse.Namespace, output: Output) -> int:
    from pipeline.matrix import is_workspace_root
    from pipeline.project import load_project
    from pipeline.workspace import load_workspace

    backend = _backend(args.backend)
    nix_args = [*args.nix_option]
    for name, ref in args.override_input:
        nix_args += ["--override-input", name, ref]
    if nix_args and backend != "nix":
        raise BuildError("--override-input and --nix-option only apply to --backend nix", code="usage")
    if is_workspace_root(args.path):
        paths = list(load_workspace(args.path.resolve()).kernel_paths)
        if args.out is not None and len(paths) > 1:
            raise BuildError("--out names one directory, but the workspace has several kernels", code="usage",
                             hint="build one kernel with --out, or leave --out out (each kernel gets <project>/build)")
    else:
        paths = [args.path]
    try:
        projects = [load_project(p) for p in paths]  # a project that fails validation is not built
    except ModuleNotFoundError as exc:
        if exc.name != "kernels":
            raise
        raise BuildError("validating build.toml needs the kernels package, which is not installed here",
                         code="kernels-missing",
                         hint="pip install kernels (offline: carry its wheel, kernels-0.17.2-cp39-abi3-manylinux_*.whl; "
                              "`import kernels` needs only huggingface_hub, packaging and pyyaml)") from None
    results: list[tuple[str, BuildResult]] = []
    with _progress(output) as progress:
        for project in projects:
            out = args.out if args.out is not None else project.root / "build"
            results.append((project.name, build_project(project, out, backend=backend, variant=args.variant,
                                                        progress=progress, unique_id=args.unique_id,
                                                        nix_args=nix_args)))
    if output.json_mode:
        output.emit_json({"backend": backend, "kernels": [{"kernel": name, **result.to_json()}
                                                          for name, result in results]})
        return 0
    for name, result in results:
        for built in result.variants:
            state = "up to date" if built.cached else f"built in {built.seconds:.1f} s"
            output.result(f"{name}: {built.path} ({built.kernel_id}, {state})")
        for skipped in result.skipped:
            output.info(f"{name}: not copied from the nix result: {skipped}")
    return 0

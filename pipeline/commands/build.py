"""`pipeline build PATH [--backend local|nix] [--variant V] [--out DIR] [--json]`: parse and print only."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.build import BACKENDS, BuildResult, build_project, choose_backend
from pipeline.console import Output
from pipeline.errors import BuildError
from pipeline.events import staged
from pipeline.fsutil import require_out_path
from pipeline.workspace import resolve_all

HELP = "build variants (local: the host's; nix: the matrix)"
DESCRIPTION = """\
Build a kernel project (or every kernel of the workspace when PATH is the
workspace root) into <out>/<variant>/, the layout kernels.get_local_kernel
and the Hub use.

  local  compiles the host's variant with the running torch; unchanged
         inputs do not recompile. A [torch-noarch] (pure Python, e.g.
         Triton) project compiles nothing: every backend's torch-<backend>
         is written, on any machine
  nix    nix build of the project's flake (.#bundle, or
         .#redistributable.<variant>), copied out of the store and checked

  python -m pipeline build kernels-src/rmsnorm
  python -m pipeline build kernels-src/rmsnorm --backend nix --variant torch213-cxx11-cu130-x86_64-linux
  python -m pipeline build kernels-src/softmax-triton --variant torch-cuda
  python -m pipeline build . --json

The default backend can be set with PIPELINE_BUILD_BACKEND=local|nix; without
it, nix is chosen only when a binary cache answers (building kernel-builder's
toolchains from source takes hours), and the command says which and why.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, nargs="?", default=Path("."),
                        help="a kernel project, or the workspace root for every kernel (default: .)")
    parser.add_argument("--backend", choices=[*BACKENDS, "auto"], default="auto",
                        help="local or nix (default: $PIPELINE_BUILD_BACKEND, else nix when nix is installed "
                             "and a binary cache answers, else local)")
    parser.add_argument("--variant", default=None, help="one variant name (default: local: the host's, every torch-<backend> "
                             "for noarch; nix: all)")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: <project>/build)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    parser.add_argument("--override-input", nargs=2, action="append", default=[], metavar=("INPUT", "FLAKEREF"),
                        help="nix: replace a flake input (passed to nix build)")
    parser.add_argument("--nix-option", action="append", default=[], metavar="ARG",
                        help="nix: one more argument for nix build (repeatable), e.g. --nix-option=--impure")
    # kernel-builder's --unique-id: the Nix builds pass the flake revision.
    parser.add_argument("--unique-id", default=None, help=argparse.SUPPRESS)


def run(args: argparse.Namespace, output: Output) -> int:
    if args.out is not None:
        require_out_path(args.out, "directory", BuildError, "--out")  # before anything is probed or built
    choice = choose_backend(args.backend)
    nix_args = [*args.nix_option]
    for name, ref in args.override_input:
        nix_args += ["--override-input", name, ref]
    if nix_args and choice.name != "nix":
        raise BuildError("--override-input and --nix-option only apply to --backend nix", code="usage")
    kernels = resolve_all(args.path)  # a project that fails validation is not built
    if args.out is not None and len(kernels) > 1:
        raise BuildError("--out names one directory, but the workspace has several kernels", code="usage",
                         hint="build one kernel with --out, or leave --out out (each kernel gets <project>/build)")
    output.info(f"backend: {choice.name} ({choice.reason})")
    results: list[tuple[str, BuildResult]] = []
    with output.reporter() as report:
        for kernel in kernels:
            kernel.require_variants()
            out = args.out if args.out is not None else kernel.root / "build"
            results.append((kernel.name, build_project(kernel.project, out, backend=choice.name, variant=args.variant,
                                                       progress=staged(report, "build"), unique_id=args.unique_id,
                                                       nix_args=nix_args)))
    if output.json_mode:
        output.emit_json({"backend": choice.name, "backend_reason": choice.reason,
                          "kernels": [{"kernel": name, **result.to_json()} for name, result in results]})
        return 0
    for name, result in results:
        for built in result.variants:
            state = "up to date" if built.cached else f"built in {built.seconds:.1f} s"
            output.result(f"{name}: {built.path} ({built.kernel_id}, {state})")
        for skipped in result.skipped:
            output.info(f"{name}: not copied from the nix result: {skipped}")
    return 0

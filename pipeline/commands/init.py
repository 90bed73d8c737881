"""`init NAME --template T`: a new kernel project from a template."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from pipeline.console import Output
from pipeline.init import BACKENDS, DTYPES, TEMPLATES, render

HELP = "create a new kernel project from a template"
DESCRIPTION = """\
Render a new kernel-builder project (build.toml edition 5, flake.nix, CUDA and
CPU sources with 16-byte vectorised loads, torch-ext bindings with
TORCH_LIBRARY_EXPAND, a Python package with relative imports and a
register_fake through add_op_namespace_prefix, smoke and bench cases, a card).
It validates, builds and passes its own smoke cases as written; change the op
and its reference to make it yours.

Templates: elementwise (out = f(x), one pass) and rowwise (a reduction over
the last dim, then a pass that uses it). NAME must be a name kernels accepts:
lowercase letters, digits and dashes, starting with a letter.

examples:
  python -m pipeline init my-silu --template elementwise
  python -m pipeline init my-norm --template rowwise --out /tmp/my-norm --backends cpu --dtypes fp32
"""


def _list(value: str) -> list[str]:
    return [v for v in value.split(",") if v.strip()]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the kernel's name (e.g. my-kernel)")
    parser.add_argument("--template", required=True, choices=TEMPLATES, help="the project's shape")
    parser.add_argument("--out", type=Path, default=None,
                        help="directory to create (default: kernels-src/NAME inside a workspace, else ./NAME)")
    parser.add_argument("--backends", type=_list, default=list(BACKENDS),
                        help=f"comma-separated, from {','.join(BACKENDS)} (default: all)")
    parser.add_argument("--dtypes", type=_list, default=list(DTYPES),
                        help=f"comma-separated, from {','.join(DTYPES)} (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def run(args: argparse.Namespace, output: Output) -> int:
    result = render(args.name, args.template, args.out, backends=args.backends, dtypes=args.dtypes)
    if output.json_mode:
        output.emit_json(result.to_json())
        return 0
    output.result(f"created {result.root} ({result.template}; backends {', '.join(result.backends)}; "
                  f"dtypes {', '.join(result.dtypes)}; {len(result.files)} files)")
    for name in result.files:
        output.result(f"  {name}")
    # Quoted, so that the line works as printed when pasted into a shell.
    root, build = shlex.quote(str(result.root)), shlex.quote(str(result.root / "build"))
    output.result(f"next: python -m pipeline validate {root} && python -m pipeline build {root} && "
                  f"python -m pipeline smoke {build}")
    return 0

"""`pipeline matrix PATH [--json] [--ci] [--group job]`: parse and print only."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.table import Table

from pipeline.console import Output
from pipeline.matrix import load_table, matrix_rows
from pipeline.workspace import resolve_all

HELP = "list the variants a kernel project must be built for"
DESCRIPTION = """\
List the build variants of a kernel project (or of every kernel of the
workspace when PATH is the workspace root): the builder's variant table
(pipeline/data/variants.toml) narrowed by the workspace matrix policy and
each project's build.toml ([torch] minver/maxver, [general.cuda]
minver/maxver, cuda-minver, backends).

  python -m pipeline matrix kernels-src/rmsnorm
  python -m pipeline matrix . --json --ci          # GitHub Actions strategy.matrix
  python -m pipeline matrix . --json --group job   # one row per kernel x backend x system
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, nargs="?", default=Path("."),
                        help="a kernel project, or the workspace root for every kernel (default: .)")
    parser.add_argument("--json", action="store_true", help='print {"include": [...]} for strategy.matrix')
    parser.add_argument("--ci", action="store_true", help="the reduced pull-request set ([workspace.matrix.ci])")
    parser.add_argument("--group", choices=["job"], default=None,
                        help="job: one row per kernel x backend x system, with space-separated 'variants'")


def run(args: argparse.Namespace, output: Output) -> int:
    kernels = resolve_all(args.path)
    for kernel in kernels:
        kernel.require_variants(ci=args.ci)  # a project nothing can be built for is an error, not an empty table
    entries = [entry for kernel in kernels for entry in kernel.entries(ci=args.ci)]
    document = matrix_rows(entries, group=args.group)
    if output.json_mode:
        output.emit_json(document)
        return 0
    rows = document["include"]
    table = Table(title=f"{'pull-request' if args.ci else 'full'} matrix: {len(rows)} "
                        f"{'job' if args.group else 'variant'}{'s' if len(rows) != 1 else ''}")
    table.add_column("kernel")
    table.add_column("variants" if args.group else "variant")
    table.add_column("runner")
    for row in rows:
        table.add_row(row["kernel"], row["variants"] if args.group else row["variant"], row["runner"])
    output.rich(table)
    source = load_table().source
    output.info(f"variant table: {source.get('path')} @ {source.get('commit', '')[:12]} ({source.get('date')})")
    return 0

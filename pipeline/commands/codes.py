"""`python -m pipeline codes [CODE]`: what a code means, its exit code and its hint."""

from __future__ import annotations

import argparse

from pipeline.codes import load_codes, markdown
from pipeline.console import Output
from pipeline.errors import PipelineError

HELP = "explain an error code (or list every code)"
DESCRIPTION = """\
Every problem and error the pipeline reports carries a code. This prints the
table of codes (stage, exit code, meaning, hint), or one code's entry.

examples:
  python -m pipeline codes hub-write-denied
  python -m pipeline codes --markdown      # the README's table
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("code", nargs="?", default=None, help="one code (default: all)")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--json", action="store_true", help="print JSON on stdout")


def run(args: argparse.Namespace, output: Output) -> int:
    table = load_codes()
    if args.markdown:
        output.result(markdown().rstrip())
        return 0
    entries = list(table.values())
    if args.code is not None:
        if args.code not in table:
            raise PipelineError(f"no code named {args.code!r}", code="usage",
                                hint="`python -m pipeline codes` lists every code")
        entries = [table[args.code]]
    if output.json_mode:
        output.emit_json([{"code": e.code, "stages": list(e.stages), "exit_codes": list(e.exit_codes),
                           "title": e.title, "hint": e.hint, "severity": e.severity} for e in entries])
        return 0
    for e in entries:
        output.result(f"{e.code} ({', '.join(e.stages)}; exit {', '.join(map(str, e.exit_codes))}): {e.title}")
        if e.hint:
            output.result(f"    hint: {e.hint}")
    return 0

"""`pipeline lock [ROOT] [--check] [--json]`: parse and print only."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.console import Output
from pipeline.errors import EXIT_CODES
from pipeline.lock import check_locks, root_pin, write_locks

HELP = "pin every kernel flake to the root flake.lock's kernel-builder (--check: verify only)"
DESCRIPTION = """\
Write every kernel project's flake.lock from the workspace's flake.lock, so
that all of them pin the same kernel-builder revision (offline: the root lock
already names it). --check writes nothing and reports, as path:line: code:
message, every lock that disagrees, every lock git does not track, a kernel
flake.nix asking for another kernel-builder input, and a variant table
(pipeline/data/variants.toml) read at another revision. Exit 1 when any.

To move the pin: `nix flake lock --update-input kernel-builder` (needs GitHub),
refresh pipeline/data/variants.toml at the new revision, `python -m pipeline
lock`, commit.

  python -m pipeline lock
  python -m pipeline lock --check
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("root", type=Path, nargs="?", default=Path("."), help="the workspace root (default: .)")
    parser.add_argument("--check", action="store_true", help="verify only, write nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def run(args: argparse.Namespace, output: Output) -> int:
    root = args.root.resolve()
    writes = [] if args.check else write_locks(root)
    problems = check_locks(root)
    pin, _ = root_pin(root)
    if output.json_mode:
        output.emit_json({"ok": not problems, "kernel_builder": pin.locked,
                          "written": [{"path": str(w.path), "action": w.action} for w in writes],
                          "problems": [p.to_json() for p in problems]})
        return EXIT_CODES["lock"] if problems else 0
    for write in writes:
        output.result(f"{write.path.relative_to(root)}: {write.action}")
    for problem in problems:
        output.problem(problem.format())
    state = f"{len(problems)} problem(s)" if problems else "every kernel lock agrees"
    output.result(f"kernel-builder {pin.source} {pin.short}: {state}")
    return EXIT_CODES["lock"] if problems else 0

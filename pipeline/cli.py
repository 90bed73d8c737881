"""Command line: parses arguments, calls one stage, prints its value. No logic here.

Each verb lives in `pipeline/commands/<verb>.py` with three names:
`HELP` (one line), `add_arguments(parser)` and `run(args, output) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass

from pipeline import __version__
from pipeline.codes import default_hint
from pipeline.console import Output
from pipeline.errors import PipelineError


@dataclass(frozen=True)
class Verb:
    name: str
    module: str
    help: str


# The order is the pipeline's order (DESIGN.md).
VERBS: tuple[Verb, ...] = (
    Verb("validate", "pipeline.commands.validate", "check a kernel project's layout and build.toml"),
    Verb("migrate", "pipeline.commands.migrate", "rewrite a legacy or agent-written kernel project to edition 5"),
    Verb("matrix", "pipeline.commands.matrix", "list the variants a kernel project must be built for"),
    Verb("lock", "pipeline.commands.lock", "pin every kernel flake to the root flake.lock's kernel-builder"),
    Verb("build", "pipeline.commands.build", "build variants (local: the host's; nix: the matrix)"),
    Verb("check", "pipeline.commands.check", "check a build/ tree: metadata, digests, ABI, coverage"),
    Verb("smoke", "pipeline.commands.smoke", "correctness of the host's variant against a float64 reference"),
    Verb("bench", "pipeline.commands.bench", "benchmark the host's variant against PyTorch and copy bandwidth"),
    Verb("publish", "pipeline.commands.publish", "validate, build, check, smoke, upload to the Hub, verify"),
    Verb("verify", "pipeline.commands.verify", "load a published kernel with get_kernel and check it"),
    Verb("hub", "pipeline.commands.hub", "the embedded Kernel Hub (hub serve)"),
    Verb("init", "pipeline.commands.init", "create a new kernel project from a template"),
    Verb("skill", "pipeline.commands.skill", "write an agent skill that produces valid kernel projects"),
    Verb("codes", "pipeline.commands.codes", "explain an error code (or list every code)"),
)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, object]]:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline",
        description="Validate, build, test, benchmark and publish GPU kernel projects to the Kernel Hub.",
        epilog="Exit codes: 0 ok, 1 validation errors, 2 usage, 3+ one per stage (see README).",
    )
    parser.add_argument("--version", action="version", version=f"kernel-pipeline {__version__}")
    parser.add_argument("--traceback", action="store_true", help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    modules: dict[str, object] = {}
    for verb in VERBS:
        module = importlib.import_module(verb.module)
        p = sub.add_parser(verb.name, help=verb.help, description=getattr(module, "DESCRIPTION", verb.help),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        # Accepted after the verb too (`publish ... --traceback`); SUPPRESS keeps the top-level value.
        p.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        modules[verb.name] = module
    return parser, modules


def main(argv: list[str] | None = None) -> int:
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if not args.verb:
        parser.print_help()
        return 2
    module = modules[args.verb]
    output = Output(json_mode=bool(getattr(args, "json", False)))
    try:
        return int(module.run(args, output) or 0)
    except PipelineError as exc:
        if args.traceback or os.environ.get("PIPELINE_TRACEBACK"):
            raise
        exc.hint = exc.hint or default_hint(exc.code)
        if output.json_mode:
            output.emit_json(exc.to_json())
        for problem in exc.problems:
            output.problem(problem.format())
        output.problem(exc.format())
        return exc.exit_code
    except KeyboardInterrupt:
        output.problem("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())

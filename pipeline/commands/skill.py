"""`skill --dest DIR`: write the agent skill for writing kernels with this pipeline."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.console import Output
from pipeline.skill import AGENTS, write_skill

HELP = "write an agent skill that produces valid kernel projects"
DESCRIPTION = """\
Write DIR/kernel-pipeline/: a SKILL.md (the workflow and the hard rules) and
references/ (the kernel-builder layout and every rule `validate` enforces,
rendered from its rule table; H100/H200/A100/T4 figures; the bf16/fp16/fp32
vectorised-load code `init` writes; the smoke and bench case contracts).
Re-running replaces an earlier generated copy; anything else is left alone.

--for picks the front matter: claude (.claude/skills), codex (.codex/skills),
or generic (plain Markdown, e.g. for AGENTS.md).

examples:
  python -m pipeline skill --dest .claude/skills
  python -m pipeline skill --dest ~/.codex/skills --for codex
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dest", type=Path, required=True, help="directory to write kernel-pipeline/ into")
    parser.add_argument("--for", dest="agent", choices=AGENTS, default="claude", help="the agent (default: claude)")
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def run(args: argparse.Namespace, output: Output) -> int:
    result = write_skill(args.dest, args.agent)
    if output.json_mode:
        output.emit_json(result.to_json())
        return 0
    output.result(f"wrote {result.root} for {result.agent} ({result.rules} validate rules)")
    for name in result.files:
        output.result(f"  {name}")
    return 0

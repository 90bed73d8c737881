"""The command line: every verb of DESIGN.md is listed, errors never show tracebacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline import cli
from pipeline.errors import EXIT_CODES, PipelineError

DESIGN_VERBS = ["validate", "matrix", "build", "check", "smoke", "bench", "publish", "verify", "hub"]


def test_help_lists_every_design_verb():
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--help"], capture_output=True, text=True, check=True)
    for verb in DESIGN_VERBS:
        assert f"    {verb} " in proc.stdout, verb


def test_every_verb_is_built():
    _, modules = cli.build_parser()
    missing = [name for name, module in modules.items() if module is None]
    assert missing == [], f"verbs without a command module: {missing}"


def test_no_verb_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "validate" in capsys.readouterr().out


def test_exit_codes_are_distinct_per_stage():
    codes = [code for name, code in EXIT_CODES.items() if name not in ("ok",)]
    # validate shares 1 with nothing else; every other stage has its own code.
    assert len(codes) == len(set(codes))


def test_pipeline_error_is_printed_without_traceback(monkeypatch, capsys):
    class Boom:
        @staticmethod
        def run(args, output):
            raise PipelineError("it broke", hint="fix it", path="x/build.toml", line=3, code="E042")

    parser, modules = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: (parser, {**modules, "validate": Boom}))
    rc = cli.main(["validate", "."])
    err = capsys.readouterr().err
    assert rc == 1
    assert "x/build.toml:3: E042: it broke" in err
    assert "hint: fix it" in err
    assert "Traceback" not in err

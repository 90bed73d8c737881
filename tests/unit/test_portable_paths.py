"""Paths in what a project publishes: the detector the card tests use, and the rewriting of
the commands records keep (old records carry the paths of the machines that made them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.bench import recorded_command
from pipeline.bench_report import markdown_table
from pipeline.portable_paths import absolute_paths, portable_command, portable_text

REPO = Path(__file__).resolve().parents[2]


def _bench_record(path: Path) -> bool:
    data = json.loads(path.read_text(encoding="utf-8"))
    return (isinstance(data, dict) and isinstance(data.get("results"), list) and "method" in data
            and "copy_bandwidth_gbs" in data)


BENCH_RECORDS = [p for p in sorted(REPO.glob("kernels-src/*/benchmarks/results/*.json")) if _bench_record(p)]


@pytest.mark.parametrize("text,found", [
    ("built in /tmp/build-rmsnorm/torch213-cpu and", ["/tmp/build-rmsnorm/torch213-cpu"]),
    ("`--out /root/out/h200.json`.", ["/root/out/h200.json"]),
    (r"C:\Users\me\out.json or D:/results/x.png", [r"C:\Users\me\out.json", "D:/results/x.png"]),
    (r"the share \\server\share\h200.json", [r"\\server\share\h200.json"]),
    # Not paths: URLs, ratios, units, dtype pairs, relative paths, a formula's division.
    ("https://github.com/huggingface/kernels, 1/2, µs/call, float16/float32, media/benchmark-h200.png, "
     "exp(x) / sum(exp(x)), and/or", []),
])
def test_absolute_paths_are_found_and_nothing_else(text, found):
    assert absolute_paths(text) == found


def test_a_recorded_command_keeps_project_paths_and_drops_the_machines():
    old = ("python -m pipeline bench /tmp/build-rmsnorm --kernel kernels-src/rmsnorm --reps 100 --samples 3 "
           "--out /root/out/rmsnorm-h200.json --markdown=/root/out/rmsnorm-h200.md --plot '/tmp/my results/h200.png'")
    assert portable_command(old) == (
        "python -m pipeline bench BUILD_DIR --kernel kernels-src/rmsnorm --reps 100 --samples 3 "
        "--out rmsnorm-h200.json --markdown=rmsnorm-h200.md --plot h200.png")
    assert portable_command("python -m pipeline bench /work/x/kernels-src/geglu/build --out /work/x/h.json",
                            {Path("/work/x"): ""}) == "python -m pipeline bench kernels-src/geglu/build --out h.json"
    assert portable_text(r"written to C:\runs\h200.json.", {}) == "written to h200.json."


def test_new_records_keep_commands_relative_to_the_workspace():
    class Workspace:
        root = REPO

    class Kernel:
        root = REPO / "kernels-src" / "rmsnorm"
        workspace = Workspace()

    argv = ["bench", str(REPO / "kernels-src" / "rmsnorm" / "build"), "--kernel", str(REPO / "kernels-src" / "rmsnorm"),
            "--out", "/tmp/out/h200.json"]
    assert recorded_command(argv, Kernel()) == ("python -m pipeline bench kernels-src/rmsnorm/build "
                                                "--kernel kernels-src/rmsnorm --out h200.json")
    assert recorded_command(["smoke", "x"], Kernel()) == ""


@pytest.mark.parametrize("record", BENCH_RECORDS, ids=lambda p: f"{p.parents[2].name}/{p.name}")
def test_every_records_tables_render_without_absolute_paths(record):
    data = json.loads(record.read_text(encoding="utf-8"))
    assert absolute_paths(markdown_table(data)) == []

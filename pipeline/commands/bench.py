"""`pipeline bench BUILD_DIR`: time the host's variant against PyTorch baselines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pipeline.bench import CPU_LIMIT_S, DTYPES, WARMUP, markdown_table, plot, recorded_command
from pipeline.bench_run import CASE_TIMEOUT_S, run_bench
from pipeline.bundle import check_bundle, find_build_dir
from pipeline.errors import BenchError
from pipeline.fsutil import atomic_write_text, require_out_path
from pipeline.workspace import resolve, resolve_for_build

HELP = "benchmark the host's variant against PyTorch and copy bandwidth"
DESCRIPTION = """\
Time every case of the kernel project's benchmarks/bench_cases.py (contract in
pipeline/bench.py): CUDA events, warm-up, median of --reps repetitions with the
L2 flushed before each, next to the baselines the cases name and the device's
copy bandwidth measured in the same run. On a CPU (no CUDA device, or a CPU
variant) it first times one case to estimate the run: past 120 s it refuses
unless --allow-cpu, otherwise it warns that the figures only test the harness.

example:
  python -m pipeline bench kernels-src/rmsnorm/build --out h200.json --plot h200.png --markdown h200.md
  python -m pipeline bench kernels-src/rmsnorm/build --dtype float16 --out h200-float16.json
  python -m pipeline bench kernels-src/rmsnorm/build --only x4096 --samples 3   # with the spread
"""


def add_arguments(parser) -> None:
    parser.add_argument("build_dir", metavar="BUILD_DIR", type=Path, help="a build tree holding variant directories")
    parser.add_argument("--kernel", type=Path, default=None, metavar="PATH",
                        help="the kernel project whose cases to run (default: the workspace kernel named in the build)")
    parser.add_argument("--reps", type=int, default=100, help="timed repetitions per measurement (default 100)")
    parser.add_argument("--warmup", type=int, default=WARMUP, help=f"untimed calls first (default {WARMUP})")
    parser.add_argument("--samples", type=int, default=1, metavar="N",
                        help="time each case N times, each from a fresh setup (new tensors, a new torch.compile): "
                             "figures are the median, and the JSON and tables give the spread (default 1)")
    parser.add_argument("--only", default=None, metavar="TEXT", help="only cases whose name contains TEXT")
    parser.add_argument("--dtype", choices=DTYPES, default=None,
                        help="run the cases in this dtype (the case file's bench_cases(dtype=...)); "
                             "default: the file's own")
    parser.add_argument("--out", type=Path, default=None, metavar="JSON", help="write the results JSON here")
    parser.add_argument("--plot", type=Path, default=None, metavar="PNG", help="write the plot here")
    parser.add_argument("--markdown", type=Path, default=None, metavar="MD", help="write the Markdown table here")
    parser.add_argument("--allow-cpu", action="store_true",
                        help=f"time on a CPU-only host even when it would take over {CPU_LIMIT_S:.0f} s")
    parser.add_argument("--timeout", type=float, default=CASE_TIMEOUT_S, metavar="S",
                        help=f"seconds one case may take in the worker before it counts as hung (default {CASE_TIMEOUT_S:g})")
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")


def run(args, output) -> int:
    for option, path in (("--out", args.out), ("--plot", args.plot), ("--markdown", args.markdown)):
        if path is not None:  # before the run, not after it
            require_out_path(path, "file", BenchError, option)
    bundle = check_bundle(find_build_dir(args.build_dir)).bundle
    kernel = resolve(args.kernel) if args.kernel else resolve_for_build(bundle.root, bundle.name)
    command = recorded_command(sys.argv[1:], kernel)  # in the JSON: how the figures were made
    with output.reporter() as events:
        report = run_bench(bundle, kernel, reps=args.reps, warmup=args.warmup, only=args.only,
                           report=events, command=command, cpu_limit_s=None if args.allow_cpu else CPU_LIMIT_S,
                           dtype=args.dtype, samples=args.samples, timeout_s=args.timeout)
    data = report.to_json()
    if args.out:
        atomic_write_text(args.out, json.dumps(data, indent=2) + "\n")
    if args.plot:
        plot(data, args.plot)
    table = markdown_table(data)
    if args.markdown:
        atomic_write_text(args.markdown, table)
    if output.json_mode:
        output.emit_json(data)
    else:
        output.result(table)
        for name, why in report.failed:
            output.result(f"FAIL {name}: {why}")
    if report.failed:
        if not output.json_mode:
            output.result(f"{len(report.failed)} of {len(report.failed) + len(report.cases)} case(s) failed")
        return BenchError.exit_code
    return 0

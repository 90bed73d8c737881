"""Estimate what the workflow costs in runner time for the workspace's current matrix.

    python ci/estimate.py [--root .] [--cu-seconds 100] [--cpp-seconds 40] ...

The jobs and variants come from `python -m pipeline matrix` (as in the
workflow); the compile units from each kernel project's build.toml (through
pipeline.project). Every time constant is a flag, so measured figures replace
the assumed ones; the defaults are stated in the output. It prints a Markdown
table for the README: build jobs, variants, compiled files, runner minutes
(each job rounded up to a whole minute, as GitHub bills) and the wall-clock
critical path (the longest build job plus plan, gather and GPU jobs).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_CUDA_SUFFIXES = (".cu",)
_CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".mm")


@dataclass(frozen=True)
class Costs:
    cu: float  # seconds to compile one .cu file for one variant
    cpp: float  # seconds to compile one C++ file that includes torch headers
    fetch: float  # per variant: its torch/toolkit closure from the binary cache
    job: float  # per build job: VM start, checkout, Nix install, pip install, upload
    cores: int  # compile processes running side by side within a variant
    plan: float  # the plan job
    gather: float  # the gather job
    gpu_job: float  # per kernel on the GPU runner: install CUDA torch, smoke
    bench: float  # per kernel on the GPU runner, releases only
    publish: float  # per kernel: publish + verify jobs


def matrix(root: Path, *flags: str) -> list[dict]:
    cmd = [sys.executable, "-m", "pipeline", "matrix", ".", "--json", *flags]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"ci/estimate.py: `{' '.join(cmd[1:])}` failed")
    return json.loads(proc.stdout)["include"]


def compile_units(root: Path, kernel_path: str) -> dict[str, tuple[int, int]]:
    """Per backend: (.cu files, C++ files) compiled for one variant of it."""
    sys.path.insert(0, str(root))
    from pipeline.project import load_project

    project = load_project(root / kernel_path)
    binding = sum(1 for s in (project.torch_ext.src if project.torch_ext else ()) if s.endswith(_CXX_SUFFIXES))
    units: dict[str, tuple[int, int]] = {}
    for backend in project.backends:
        srcs = [s for k in project.kernels if k.backend == backend for s in k.src]
        units[backend] = (sum(s.endswith(_CUDA_SUFFIXES) for s in srcs),
                          binding + sum(s.endswith(_CXX_SUFFIXES) for s in srcs))
    return units


def variant_seconds(cu: int, cpp: int, costs: Costs) -> float:
    """Compiles run side by side (ninja, `cores = 0`): at least the longest file, at least the total over the cores."""
    times = [costs.cu] * cu + [costs.cpp] * cpp
    compile_time = max(max(times, default=0.0), sum(times) / max(costs.cores, 1))
    return costs.fetch + compile_time


def estimate(root: Path, mode: str, costs: Costs) -> dict:
    flags = ("--ci",) if mode == "pr" else ()
    jobs = matrix(root, *flags, "--group", "job")
    variants = matrix(root, *flags)
    units_cache: dict[str, dict[str, tuple[int, int]]] = {}
    job_seconds = []
    files = 0
    for row in jobs:
        units = units_cache.setdefault(row["path"], compile_units(root, row["path"]))
        cu, cpp = units.get(row["backend"], (0, 0))
        count = len(row["variants"].split())
        files += count * (cu + cpp)
        job_seconds.append((row, costs.job + count * variant_seconds(cu, cpp, costs)))
    kernels = {row["kernel"] for row in variants}
    cuda_kernels = {row["kernel"] for row in variants if row["backend"] == "cuda"}
    gpu = len(cuda_kernels) * (costs.gpu_job + (costs.bench if mode == "release" else 0.0))
    publish = len(kernels) * costs.publish if mode == "release" else 0.0
    hosted = [costs.plan, costs.gather, *(s for _, s in job_seconds)] + ([publish] if publish else [])
    minutes = sum(math.ceil(s / 60) for s in hosted)
    by_runner: dict[str, int] = {}
    for row, seconds in job_seconds:
        by_runner[row["runner"]] = by_runner.get(row["runner"], 0) + math.ceil(seconds / 60)
    longest = max((s for _, s in job_seconds), default=0.0)
    per_gpu_job = costs.gpu_job + (costs.bench if mode == "release" else 0.0)
    critical = costs.plan + longest + max(costs.gather, per_gpu_job if cuda_kernels else 0.0) + \
        (costs.publish if mode == "release" else 0.0)
    return {"mode": mode, "jobs": len(jobs), "variants": len(variants), "kernels": len(kernels), "files": files,
            "hosted_minutes": minutes, "by_runner": by_runner, "gpu_minutes": math.ceil(gpu / 60),
            "critical_minutes": math.ceil(critical / 60), "longest_job_minutes": math.ceil(longest / 60)}


def markdown(results: list[dict], costs: Costs) -> str:
    lines = ["| run | kernels | build jobs | variants | files compiled | hosted runner minutes | "
             "GPU runner minutes | wall clock (critical path) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        runners = ", ".join(f"{name} {m}" for name, m in sorted(r["by_runner"].items()))
        lines.append(f"| {'pull request' if r['mode'] == 'pr' else 'release'} | {r['kernels']} | {r['jobs']} | "
                     f"{r['variants']} | {r['files']} | {r['hosted_minutes']} ({runners}) | {r['gpu_minutes']} | "
                     f"~{r['critical_minutes']} min |")
    lines += ["", f"Assumed: {costs.cu:.0f} s per .cu file and {costs.cpp:.0f} s per C++ file with torch headers, "
              f"{costs.cores} compiles side by side, {costs.fetch:.0f} s per variant to fetch its toolchain from "
              f"the binary cache, {costs.job / 60:.0f} min per build job of set-up, "
              f"{costs.gpu_job / 60:.0f} min per kernel on the GPU runner (+{costs.bench / 60:.0f} min bench on "
              f"releases). A cold binary cache (first build of a new toolchain) adds hours; a warm one removes "
              f"most of the compile time of unchanged kernels."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path("."))
    parser.add_argument("--cu-seconds", type=float, default=100.0)
    parser.add_argument("--cpp-seconds", type=float, default=40.0)
    parser.add_argument("--fetch-seconds", type=float, default=60.0)
    parser.add_argument("--job-seconds", type=float, default=240.0)
    parser.add_argument("--cores", type=int, default=4, help="cores of a hosted Linux runner")
    parser.add_argument("--gpu-job-seconds", type=float, default=240.0)
    parser.add_argument("--bench-seconds", type=float, default=120.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    costs = Costs(cu=args.cu_seconds, cpp=args.cpp_seconds, fetch=args.fetch_seconds, job=args.job_seconds,
                  cores=args.cores, plan=120.0, gather=180.0, gpu_job=args.gpu_job_seconds,
                  bench=args.bench_seconds, publish=240.0)
    root = args.root.resolve()
    results = [estimate(root, mode, costs) for mode in ("pr", "release")]
    print(json.dumps(results, indent=2) if args.json else markdown(results, costs), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

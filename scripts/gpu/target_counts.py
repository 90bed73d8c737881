"""Issue 19's targets counted off recorded `pipeline bench` runs, and each miss with
the mark tests/integration/test_bench.py keeps beside it (KNOWN_MISSES, KNOWN_BEHIND):
"overlap" where the kernel's samples and the baseline's overlap, "apart" where they do not.

    python3 scripts/gpu/target_counts.py kernels-src/*/benchmarks/results/h200*.json

Counts per record: flushed (the kernel faster than every baseline with L2 flushed;
in float16/float32 "not behind": no baseline strictly faster), graph (at most
torch.compile's time under CUDA-graph replay), bandwidth (>= 0.90 of copy from 64 MiB,
bf16 only). Reads the record through pipeline.bench_report, the same rules the tests use
(both sides' fastest sample against a torch.compile the record compiled afresh per sample).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pipeline import bench_report  # noqa: E402


def counts(data: dict) -> dict[str, tuple[int, int]]:
    """Shapes meeting each target, out of those it applies to: the complement of
    bench_report.target_misses, so that the rules live in one place."""
    primary = all(r.get("dtype", bench_report.PRIMARY_DTYPE) == bench_report.PRIMARY_DTYPE for r in data["results"])
    missed: dict[str, set[str]] = {"flushed": set(), "graph": set(), "bandwidth": set()}
    for line in bench_report.target_misses(data):
        name = line.split(":")[0]
        kind = "graph" if name.endswith(" (graph replay)") else "bandwidth" if "of copy bandwidth" in line else "flushed"
        missed[kind].add(name.removesuffix(" (graph replay)"))
    rows = data["results"]
    graphed = [r["name"] for r in rows if {"kernel", "torch.compile"} <= set(r.get("graph_times_us", {}))]
    out = {"flushed": (len(rows) - len(missed["flushed"]), len(rows)),
           "graph": (len(graphed) - len(missed["graph"]), len(graphed))}
    if primary:
        big = [r["name"] for r in rows if r["bytes"] >= 64 << 20]
        out["bandwidth"] = (len(big) - len(missed["bandwidth"]), len(big))
    return out


def marked_misses(data: dict) -> list[str]:
    """Each miss as `name (kind): overlap|apart` (bandwidth misses carry no mark)."""
    lines = []
    for line in bench_report.target_misses(data):
        name = line.split(":")[0]
        if "of copy bandwidth" in line:
            lines.append(f"{name}: bandwidth")
        else:
            lines.append(f"{name}: {line.split(': ', 1)[1].split(' ')[0]} "
                         + ("overlap" if "the samples overlap" in line else "apart"))
    return lines


def main(paths: list[str]) -> int:
    for path in paths:
        data = json.loads(Path(path).read_text())
        if "results" not in data or "times_us" not in (data["results"] or [{}])[0]:
            continue  # h200-check.json, h200-smoke.json: not bench records
        c = counts(data)
        print(f"{path}: " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in c.items()))
        for line in marked_misses(data):
            print("   ", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

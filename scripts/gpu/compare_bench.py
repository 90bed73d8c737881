"""Kernel times of several `pipeline bench` records of one kernel, side by side
(flushed, and under graph replay where timed), with torch.compile's from the first,
then how far each later record's baselines moved against the first's.

    python3 scripts/gpu/compare_bench.py base=a.json v1=b.json ...

Why the drift lines: an A/B call benches its builds one after the other, and the
whole run can move (2026-12-06, an H100: every implementation 0.1-1 us faster
flushed in the second run, cases the change does not touch included). The
baselines run the same code in both records, so their ratio is the run's own
movement; a kernel gain smaller than it is not a gain.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pipeline.bench_report import COMPILED_BASELINE  # noqa: E402


def steady(name: str) -> bool:
    """A baseline whose code is the same in every record: not the kernel, and not torch.compile,
    whose autotuner picks a different kernel from one compile to the next."""
    return name not in ("kernel", COMPILED_BASELINE)


def baseline_drift(first: dict, later: dict, key: str = "times_us") -> dict[str, float]:
    """Median over the shared cases of later / first for each steady baseline both timed (`key`:
    "times_us" flushed, "graph_times_us" under graph replay); 1.0 is no movement."""
    ratios: dict[str, list[float]] = {}
    for case, r in later.items():
        f = first.get(case)
        if not f:
            continue
        for name, b in (r.get(key) or {}).items():
            a = (f.get(key) or {}).get(name)
            if steady(name) and a and b:
                ratios.setdefault(name, []).append(b / a)
    return {name: statistics.median(v) for name, v in ratios.items()}


def main(args: list[str]) -> int:
    if not args or any("=" not in a or not Path(a.split("=", 1)[1]).is_file() for a in args):
        print("usage: compare_bench.py LABEL=RECORD.json [LABEL=RECORD.json ...] (each record a file)", file=sys.stderr)
        return 2
    docs = [(a.split("=", 1)[0], json.loads(Path(a.split("=", 1)[1]).read_text())) for a in args]
    rows = {n: {r["name"]: r for r in d["results"]} for n, d in docs}
    names = [n for n, _ in docs]
    print(f"{'case':<34}" + "".join(f"{n:>9}" for n in names) + f"{'compile':>9} | graph: " + " ".join(names) + " compile")
    for case, r in rows[names[0]].items():
        # a record without the case (a run with --only) leaves its column blank, not shifted
        line = f"{case:<34}" + "".join(f"{rows[n][case]['times_us']['kernel']:9.2f}" if case in rows[n] else f"{'':9}"
                                       for n in names)
        line += f"{r['times_us'].get(COMPILED_BASELINE, float('nan')):9.2f}"
        if r.get("graph_times_us"):
            line += " | " + " ".join(f"{rows[n][case]['graph_times_us']['kernel']:.2f}" if case in rows[n] else "-"
                                     for n in names)
            line += f" {r['graph_times_us'].get(COMPILED_BASELINE, float('nan')):.2f}"
        print(line)
    for n in names[1:]:
        for key, label in (("times_us", "flushed"), ("graph_times_us", "graph")):
            drift = baseline_drift(rows[names[0]], rows[n], key)
            if drift:
                print(f"drift {n} against {names[0]}, {label}: " + ", ".join(
                    f"{b} x{v:.3f}" for b, v in drift.items()) + " (median ratio of the same baselines' times)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Kernel times of several `pipeline bench` records of one kernel, side by side
(flushed, and under graph replay where timed), with torch.compile's from the first.

    python3 scripts/gpu/compare_bench.py base=a.json v1=b.json ...
"""

from __future__ import annotations

import json
import sys


def main(args: list[str]) -> int:
    docs = [(a.split("=", 1)[0], json.load(open(a.split("=", 1)[1]))) for a in args]
    rows = {n: {r["name"]: r for r in d["results"]} for n, d in docs}
    names = [n for n, _ in docs]
    print(f"{'case':<34}" + "".join(f"{n:>9}" for n in names) + f"{'compile':>9} | graph: " + " ".join(names) + " compile")
    for case, r in rows[names[0]].items():
        # a record without the case (a run with --only) leaves its column blank, not shifted
        line = f"{case:<34}" + "".join(f"{rows[n][case]['times_us']['kernel']:9.2f}" if case in rows[n] else f"{'':9}"
                                       for n in names)
        line += f"{r['times_us'].get('torch.compile', float('nan')):9.2f}"
        if r.get("graph_times_us"):
            line += " | " + " ".join(f"{rows[n][case]['graph_times_us']['kernel']:.2f}" if case in rows[n] else "-"
                                     for n in names)
            line += f" {r['graph_times_us'].get('torch.compile', float('nan')):.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

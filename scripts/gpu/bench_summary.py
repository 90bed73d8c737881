"""One line per case of a `pipeline bench --out` record: the kernel's time and
fraction of copy bandwidth, each baseline's time, and the graph-replay times
where the case has them. For the device scripts' logs.

    python3 scripts/gpu/bench_summary.py RESULTS.json
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    try:
        doc = json.load(open(path))
    except Exception as exc:  # a bench that died leaves no record: say so, keep the script going
        print("  no bench report:", exc)
        return 0
    print(f"  copy {doc['copy_bandwidth_gbs']} GB/s")
    for r in doc["results"]:
        t, g = r["times_us"], r.get("graph_times_us", {})
        line = (f"  {r['name']:<34} {t['kernel']:7.2f} {r['copy_fraction']['kernel']:.3f} | "
                + " ".join(f"{b[:6]} {t[b]:.2f}" for b in r["baselines"]))
        if g:
            line += " || graph " + " ".join(f"{k[:6]} {v:.2f}" for k, v in g.items())
        spread = r.get("spread_us", {})
        if spread:  # `--samples N`: each figure's range over the samples
            line += " || range " + " ".join(f"{k[:6]} {lo:.2f}-{hi:.2f}" for k, (lo, hi) in spread.items())
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))

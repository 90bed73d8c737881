"""The key figures of an `ncu --csv --page details` report (scripts/gpu/ncu_h200.sh), one block per
profiled launch: what the NOTES' Nsight Compute tables are read from.

    python3 scripts/gpu/ncu_summary.py /tmp/results/ncu-fused.csv > archive/v9-ncu-fused-summary.txt
"""

from __future__ import annotations

import csv
import sys

WANT = ("Duration", "Elapsed Cycles", "Registers Per Thread", "Block Size", "Grid Size", "Executed Instructions",
        "Achieved Occupancy", "Theoretical Occupancy", "Memory Throughput", "DRAM Throughput", "L1/TEX Hit Rate",
        "L2 Hit Rate", "Waves Per SM", "Issue Slots Busy", "Dynamic Shared Memory Per Block", "SM Frequency")


def summary(path: str) -> list[str]:
    header = None
    launches: dict[tuple[str, str], dict[str, str]] = {}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if row and row[0] == "ID":
                header = row
                continue
            if header is None or len(row) < 15:  # ncu's own log lines before the table
                continue
            d = dict(zip(header, row))
            launches.setdefault((d["ID"], d["Kernel Name"][:60]), {})[d["Metric Name"]] = \
                f"{d['Metric Value']} {d['Metric Unit']}"
    lines = []
    for (launch, name), metrics in launches.items():
        lines.append(f"{launch} {name}")
        lines.append("    " + "; ".join(f"{w}={metrics[w]}" for w in WANT if w in metrics))
    return lines


if __name__ == "__main__":
    print("\n".join(summary(sys.argv[1])))

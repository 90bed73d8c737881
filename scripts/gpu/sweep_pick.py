"""The configuration of a sweep (scripts/gpu/sweep.py --json) fastest over every case it was
timed at: the geometric mean of its flushed time over the rule's, among the configurations
starting with PREFIX that ran (no error) at every case. Prints it, or nothing when none did.

    python3 scripts/gpu/sweep_pick.py sweep.json 9,
"""

from __future__ import annotations

import json
import math
import sys


def pick(rows: list[dict], prefix: str) -> tuple[str, float] | None:
    rule = {r["case"]: r["us"] for r in rows if r["config"] == "rule" and "us" in r}
    ratios: dict[str, list[float]] = {}
    errors: set[str] = set()
    for r in rows:
        if not r["config"].startswith(prefix) or r["case"] not in rule:
            continue
        if "us" not in r:
            errors.add(r["config"])
            continue
        ratios.setdefault(r["config"], []).append(r["us"] / rule[r["case"]])
    full = {c: v for c, v in ratios.items() if c not in errors and len(v) == len(rule)}
    if not full:
        return None
    means = {c: math.exp(sum(math.log(x) for x in v) / len(v)) for c, v in full.items()}
    best = min(means, key=means.get)
    return best, means[best]


def main(argv: list[str]) -> int:
    found = pick(json.load(open(argv[0])), argv[1])
    if found:
        print(found[0])
        print(f"{found[0]}: geometric mean {found[1]:.4f} of the rule's time", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

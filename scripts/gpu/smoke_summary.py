"""The verdict of a `pipeline smoke --json` report and its first failures, for the device
scripts' logs.

    python3 scripts/gpu/smoke_summary.py REPORT.json
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    try:
        doc = json.load(open(path))
    except Exception as exc:  # a smoke run that died leaves no report: say so, keep the script going
        print("  no smoke report:", exc)
        return 0
    print("  smoke:", "PASS" if doc.get("passed") else "FAIL", doc.get("counts"), doc.get("variant"))
    for r in [r for r in doc.get("results", []) if not r["passed"]][:12]:
        print("  FAIL", r["check"], r["name"], r["seed"], (r["message"] or "")[:200])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))

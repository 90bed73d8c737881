"""File the bench records a device call brought back into the kernels' results folders,
named by the card each record names: run_all_h200.sh writes `<kernel>-h200[-<dtype>].{json,md,png}`
on whichever card it ran (the device tool may lend an H100 for an H200), and a record filed
under the wrong card's name would be counted against the other card's known misses.

    python3 scripts/gpu/take_records.py /work/.device/N [--dry-run]

Each `<kernel>-h200*.json` whose kernel has a project under kernels-src/ goes to
kernels-src/<kernel>/benchmarks/results/<card>[-<dtype>].json, its .md and .png beside it;
each smoke report `<kernel>-smoke.json` (`pipeline smoke --json`) to `<card>-smoke.json`.
Each file is written beside its destination and moved into place (fsutil.atomic_write_bytes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pipeline.bench_report import card_of  # noqa: E402
from pipeline.fsutil import atomic_write_bytes  # noqa: E402

RECORD = re.compile(r"^(?P<kernel>[a-z0-9_]+)-h200(?P<tag>-(?:float16|float32|bfloat16))?\.json$")
SMOKE = re.compile(r"^(?P<kernel>[a-z0-9_]+)-smoke\.json$")


def _reports(results: Path, pattern: re.Pattern, key: str, kernels_root: Path):
    """(path, name match, document) of each file in `results` whose name `pattern` matches, whose
    kernel has a project under `kernels_root`, and whose JSON is that kernel's and holds `key`
    ("results": a bench record; "passed": a smoke report; check reports and the like hold neither)."""
    for path in sorted(results.glob("*.json")):
        m = pattern.match(path.name)
        if not m or not (kernels_root / m["kernel"]).is_dir():
            continue
        data = json.loads(path.read_text())
        if data.get("kernel") == m["kernel"] and key in data:
            yield path, m, data


def plan(results: Path, kernels_root: Path) -> list[tuple[Path, Path]]:
    """(source, destination) pairs for every record in `results` and the files beside it."""
    moves = []
    for path, m, data in _reports(results, RECORD, "results", kernels_root):
        stem = card_of(data["device"]) + (m["tag"] or "")
        dest = kernels_root / m["kernel"] / "benchmarks" / "results"
        moves += [(path.with_suffix(sfx), dest / f"{stem}{sfx}") for sfx in (".json", ".md", ".png")
                  if path.with_suffix(sfx).exists()]
    for path, m, data in _reports(results, SMOKE, "passed", kernels_root):
        moves.append((path, kernels_root / m["kernel"] / "benchmarks" / "results" / f"{card_of(data['device'])}-smoke.json"))
    return moves


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--kernels", type=Path, default=REPO / "kernels-src")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    try:
        moves = plan(args.results, args.kernels)
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"{args.results}: {exc}", file=sys.stderr)
        return 1
    for src, dest in moves:
        print(f"{src} -> {dest.relative_to(args.kernels.parent) if dest.is_relative_to(args.kernels.parent) else dest}")
        if not args.dry_run:
            atomic_write_bytes(dest, src.read_bytes())
    return 0 if moves else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""File the records a device call brought back into the kernels' results folders, named by the
card each record names (not by its file name: a record filed under the wrong card would be
counted against the other card's known misses).

    python3 scripts/gpu/take_records.py /work/.device/N/records [--dry-run]

run.py writes `<kernel>-<card>[-<dtype>].json` (a `pipeline bench` record, its .md and .png
beside it), `<kernel>-<card>-smoke.json` (`pipeline smoke --json`) and `<kernel>-<card>-model.json`
(`verify --model --json`); they go to kernels-src/<kernel>/benchmarks/results/ as
`<card>[-<dtype>].json`, `<card>-smoke.json` and `model-<card>.json`. Each file is written beside
its destination and moved into place (fsutil.atomic_write_bytes).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pipeline.bench_report import CARDS, card_of  # noqa: E402
from pipeline.fsutil import atomic_write_bytes  # noqa: E402

NAME = re.compile(r"^(?P<kernel>[a-z0-9_-]+?)-(?P<card>" + "|".join(CARDS.values())
                  + r")(?P<tag>-(?:float16|float32|bfloat16|smoke|model))?\.json$")


def _device(doc: dict, tag: str) -> str:
    """The device a record names: bench and smoke reports at the top, a model report per model."""
    if tag == "-model":
        return next((m.get("device_name") or m.get("device") or "" for m in doc.get("models") or []), "")
    return doc.get("device", "")


def plan(results: Path, kernels_root: Path) -> list[tuple[Path, Path]]:
    """(source, destination) pairs for every record in `results` and the files beside it."""
    moves = []
    for path in sorted(results.glob("*.json")):
        m = NAME.match(path.name)
        if not m or not (kernels_root / m["kernel"]).is_dir():
            continue
        doc = json.loads(path.read_text())
        tag = m["tag"] or ""
        if tag == "-model" and "models" not in doc:
            continue
        key = "passed" if tag == "-smoke" else "results"
        if tag != "-model" and (doc.get("kernel") != m["kernel"] or key not in doc):
            continue  # check reports and the like
        card = card_of(_device(doc, tag) or doc.get("run", {}).get("device", ""))
        dest = kernels_root / m["kernel"] / "benchmarks" / "results"
        if tag == "-model":
            moves.append((path, dest / f"model-{card}.json"))
        elif tag == "-smoke":
            moves.append((path, dest / f"{card}-smoke.json"))
        else:
            stem = card + ("" if tag in ("", "-bfloat16") else tag)
            moves += [(path.with_suffix(sfx), dest / f"{stem}{sfx}") for sfx in (".json", ".md", ".png")
                      if path.with_suffix(sfx).exists()]
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

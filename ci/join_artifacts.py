"""Join the build jobs' artefacts into one bundle: OUT/<kernel>/<variant>/.

    python ci/join_artifacts.py ARTIFACTS_DIR OUT_DIR --variants plan/variants.json

Each build job uploads one artefact whose root holds `job.json` (its matrix
row) and `<kernel>/<variant>/...`; `actions/download-artifact` puts each in
ARTIFACTS_DIR/<artefact name>/. Joining refuses two artefacts that carry the
same variant (a matrix that overlaps is a planning bug, and silently keeping
either copy would publish an untested one), and compares what arrived with
the per-variant matrix written by ci/plan.py: a variant missing or one nobody
planned fails the job. OUT_DIR is written only when everything is in order.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


class JoinError(Exception):
    pass


@dataclass(frozen=True)
class Piece:
    artifact: str
    kernel: str
    variant: str
    path: Path


def find_pieces(artifacts: Path) -> list[Piece]:
    pieces: list[Piece] = []
    for artifact in sorted(p for p in artifacts.iterdir() if p.is_dir()):
        if not (artifact / "job.json").is_file():
            raise JoinError(f"{artifact.name}: no job.json: not an artefact of the build job")
        row = json.loads((artifact / "job.json").read_text(encoding="utf-8"))
        kernel = row["kernel"]
        kernel_dir = artifact / kernel
        if not kernel_dir.is_dir():
            raise JoinError(f"{artifact.name}: no {kernel}/ directory")
        for variant_dir in sorted(p for p in kernel_dir.iterdir() if p.is_dir()):
            pieces.append(Piece(artifact.name, kernel, variant_dir.name, variant_dir))
    return pieces


def join(artifacts: Path, out: Path, expected: set[tuple[str, str]]) -> list[Piece]:
    pieces = find_pieces(artifacts)
    seen: dict[tuple[str, str], Piece] = {}
    problems: list[str] = []
    for piece in pieces:
        key = (piece.kernel, piece.variant)
        if key in seen:
            problems.append(f"{piece.kernel}/{piece.variant} is in both {seen[key].artifact} and {piece.artifact}")
        else:
            seen[key] = piece
    for kernel, variant in sorted(expected - seen.keys()):
        problems.append(f"{kernel}/{variant} was planned but no build job produced it")
    for kernel, variant in sorted(seen.keys() - expected):
        problems.append(f"{kernel}/{variant} was built ({seen[(kernel, variant)].artifact}) but is not in the matrix")
    if problems:
        raise JoinError("; ".join(problems))

    # Copy into a sibling temporary directory and rename, so a failure leaves no half bundle.
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for (kernel, variant), piece in sorted(seen.items()):
            shutil.copytree(piece.path, staging / kernel / variant, symlinks=False)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [seen[key] for key in sorted(seen)]


def summary_markdown(joined: list[Piece]) -> str:
    lines = ["### Joined bundle", "", f"{len(joined)} variant(s) from "
             f"{len({p.artifact for p in joined})} build job(s).", "",
             "| kernel | variant | from artefact |", "| --- | --- | --- |"]
    lines += [f"| {p.kernel} | `{p.variant}` | {p.artifact} |" for p in joined]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifacts", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--variants", type=Path, required=True, help="per-variant matrix from ci/plan.py")
    args = parser.parse_args(argv)
    rows = json.loads(args.variants.read_text(encoding="utf-8"))["include"]
    expected = {(row["kernel"], row["variant"]) for row in rows}
    try:
        joined = join(args.artifacts, args.out, expected)
    except JoinError as exc:
        print(f"::error title=join artefacts::{exc}")
        return 1
    text = summary_markdown(joined)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

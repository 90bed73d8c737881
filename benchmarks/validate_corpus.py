"""`validate` over every kernel project under local checkouts: one verdict per project.

    python benchmarks/validate_corpus.py PATH [PATH ...] [--json] [--codes]

PATH is a local checkout (kernels-community, kernel-builder's examples/kernels,
a folder of agent projects). Every directory below it holding a build.toml
that is not a workspace file is one project. Prints a table (project,
verdict, errors, warnings, error codes, warning codes) and the tally; with
--codes, how many projects each code appears in. No network: the socket
layer refuses connections for the whole run, so a check that tried to reach
the Hub would show up as a crash in the table instead of passing silently.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import socket
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline import toml  # noqa: E402
from pipeline.project import validate  # noqa: E402

_SKIP_DIRS = {".git", "build", "result", "node_modules", "__pycache__", ".direnv", "templates"}


def _no_network(*_args, **_kwargs):
    raise OSError("validate_corpus: network access is disabled for this run")


def find_projects(root: Path) -> list[Path]:
    """Directories under root with a project build.toml (workspace files and templates left out)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        if "build.toml" not in filenames:
            continue
        path = Path(dirpath)
        try:
            is_workspace = "workspace" in toml.loads(toml.read_text(path / "build.toml"))
        except (OSError, UnicodeDecodeError, toml.TOMLDecodeError):
            is_workspace = False
        if not is_workspace:
            found.append(path)
            dirnames[:] = []  # a project's own folders hold no further projects
    return found


def judge(path: Path) -> dict:
    start = time.perf_counter()
    try:
        report = validate(path)
    except Exception as exc:  # a crash is a finding of the corpus run, not a reason to stop it
        return {"verdict": "crash", "errors": [f"{type(exc).__name__}: {exc}"], "warnings": [], "ms": 0.0}
    return {
        "verdict": "accepted" if report.ok else "rejected",
        "errors": sorted({p.code for p in report.problems if p.is_error}),
        "warnings": sorted({p.code for p in report.problems if not p.is_error}),
        "ms": (time.perf_counter() - start) * 1000,
        "problems": [p.format().splitlines()[0] for p in report.problems if p.is_error],
    }


def _label(project: Path, roots: list[Path]) -> str:
    for root in roots:
        if project == root:
            return project.name
        if root in project.parents:
            return f"{root.name}/{project.relative_to(root).as_posix()}"
    return str(project)


def print_table(rows: list[tuple[str, dict]], show_codes: bool) -> None:
    width = max([len(name) for name, _ in rows] + [7])
    print(f"{'project':{width}s}  verdict   err  warn  error codes / warning codes")
    for name, row in rows:
        codes = ", ".join(row["errors"])
        warn = ", ".join(row["warnings"])
        tail = codes + (f" / {warn}" if warn else "") if codes or warn else "-"
        print(f"{name:{width}s}  {row['verdict']:8s}  {len(row['errors']):3d}  {len(row['warnings']):4d}  {tail}")
    verdicts = collections.Counter(row["verdict"] for _, row in rows)
    print(f"\n{len(rows)} project(s): {verdicts['accepted']} accepted, {verdicts['rejected']} rejected"
          + (f", {verdicts['crash']} crashed" if verdicts["crash"] else ""))
    if show_codes:
        counts = collections.Counter(code for _, row in rows for code in row["errors"] + row["warnings"])
        for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {n:3d}  {code}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", type=Path, help="local checkouts to search for projects")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    parser.add_argument("--codes", action="store_true", help="also count the projects each code appears in")
    args = parser.parse_args(argv)
    roots = [p.resolve() for p in args.paths]
    missing = [str(p) for p in roots if not p.is_dir()]
    if missing:
        print(f"not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    saved = socket.socket.connect, socket.create_connection
    socket.socket.connect = _no_network  # type: ignore[method-assign]
    socket.create_connection = _no_network  # type: ignore[assignment]
    try:
        rows = [(_label(p, roots), judge(p)) for root in roots for p in find_projects(root)]
    finally:
        socket.socket.connect, socket.create_connection = saved  # type: ignore[method-assign]
    if args.json:
        json.dump({name: row for name, row in rows}, sys.stdout, indent=1)
        print()
    else:
        print_table(rows, args.codes)
    return 0


if __name__ == "__main__":
    sys.exit(main())

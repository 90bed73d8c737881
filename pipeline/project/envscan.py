"""Refresh pipeline/data/load_environment.toml: the import names a package brings.

    python -m pipeline.project.envscan kernels torch

Prints, for each distribution named, the top-level import names of it and of
every distribution its requirements pull in (transitively, markers evaluated
for this interpreter, extras left out), as TOML lists to paste into the data
file with the versions and date noted. Nothing in `validate` imports this
module: the data file is the record, this is how it was made.
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import sys
from datetime import date

from packaging.requirements import Requirement


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(root: str) -> dict[str, metadata.Distribution]:
    """Installed distributions `root` requires, itself included, by normalised name."""
    found: dict[str, metadata.Distribution] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        if _key(name) in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        found[_key(name)] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def import_names(dist: metadata.Distribution) -> list[str]:
    """Top-level importable names: top_level.txt, else the first path parts of RECORD."""
    text = dist.read_text("top_level.txt")
    names = set(text.split()) if text else set()
    if not names:
        for file in dist.files or ():
            first = file.parts[0]
            if first.endswith((".dist-info", ".data")) or first == "..":
                continue
            names.add(first[:-3] if first.endswith(".py") else first if len(file.parts) > 1 else "")
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))


def main(argv: list[str]) -> int:
    for root in argv or ["kernels"]:
        dists = closure(root)
        if not dists:
            print(f"# {root} is not installed", file=sys.stderr)
            return 1
        names = sorted({n for d in dists.values() for n in import_names(d)})
        top = dists[_key(root)]
        print(f"# {root} {top.version}: {len(dists)} distributions, Python "
              f"{sys.version_info.major}.{sys.version_info.minor}, {date.today().isoformat()}")
        print(f"{_key(root)} = [")
        for i in range(0, len(names), 8):
            print("    " + ", ".join(f'"{n}"' for n in names[i:i + 8]) + ",")
        print("]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

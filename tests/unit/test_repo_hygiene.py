"""Guards on the repository's own hand-kept and generated documents.

A notes edit once replaced the empty string, which inserted a section between every character
of kernels-src/adaln/benchmarks/NOTES.md (274 lines became 233,277, 19 MB) and nothing failed.
These checks fail on that class of edit: a document that grew past any sane size, or a section
heading or a long prose line that appears many times over.
"""

from __future__ import annotations

import collections
import os
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]
# Outputs, caches and environments: not the repository's documents.
SKIP_DIRS = {".git", "node_modules", "__pycache__", "build", "result", ".venv", ".whl", ".device", ".cache",
             "hub-data", ".pytest_cache"}
# The largest Markdown file kept here is README.md at ~60 kB; a record's JSON at ~320 kB.
MAX_BYTES = {".md": 400_000, ".json": 2_000_000, ".py": 400_000, ".toml": 100_000, ".yml": 200_000}


def _documents() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]  # pruned, not walked and then dropped
        found += [Path(folder, name) for name in files if Path(name).suffix in MAX_BYTES]
    return sorted(found)


DOCUMENTS = _documents()


def test_the_walk_finds_the_documents_it_guards():
    names = {p.relative_to(REPO).as_posix() for p in DOCUMENTS}
    assert {"README.md", "kernels-src/rmsnorm/benchmarks/NOTES.md", "pyproject.toml"} <= names


def document_problems(path: Path, relative: str) -> list[str]:
    """What is wrong with one document, as `path: message` lines (empty when it is sound)."""
    problems = []
    size = path.stat().st_size
    if size > MAX_BYTES[path.suffix]:
        problems.append(f"{relative}: {size} bytes, over the {MAX_BYTES[path.suffix]} limit for {path.suffix} "
                        "files: look for a text edit that repeated a section")
    if path.suffix != ".md":
        return problems
    lines = path.read_text(encoding="utf-8").splitlines()
    headings = collections.Counter(line for line in lines if line.startswith("## "))
    repeated = {line: n for line, n in headings.items() if n > 1}
    if repeated:
        problems.append(f"{relative}: section headings repeated: {repeated}")
    # Tables repeat their separators and code blocks their commands legitimately; long prose does not.
    prose = collections.Counter(line for line in lines
                                if len(line.strip()) >= 60 and not line.lstrip().startswith(("|", "sed ", "python")))
    most = prose.most_common(1)
    if most and most[0][1] > 5:
        problems.append(f"{relative}: a line appears {most[0][1]} times: {most[0][0][:80]!r}")
    return problems


def test_every_document_is_sound():
    # One test over every document, so that a run lists every problem at once.
    problems = [p for path in DOCUMENTS for p in document_problems(path, path.relative_to(REPO).as_posix())]
    assert problems == []


def test_the_checks_catch_the_edit_that_once_bloated_a_notes_file(tmp_path):
    section = ("## Records re-taken\n\nThe records below were taken again after the project changed, "
               "in one device call.\n")
    notes = "# NOTES\n\n## Experiment\n\nPrediction and outcome.\n"
    bloated = tmp_path / "NOTES.md"
    bloated.write_text(notes.replace("", section), encoding="utf-8")
    found = document_problems(bloated, "NOTES.md")
    assert any("section headings repeated" in p for p in found)
    assert any("a line appears" in p for p in found)
    sound = tmp_path / "SOUND.md"
    sound.write_text(notes + section, encoding="utf-8")
    assert document_problems(sound, "SOUND.md") == []
    big = tmp_path / "big.json"
    big.write_text("[" + "0," * 1_000_001 + "0]", encoding="utf-8")
    assert any("over the 2000000 limit" in p for p in document_problems(big, "big.json"))

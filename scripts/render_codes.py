"""Rewrite the README's list of codes from the code table (tests/unit/test_codes.py checks it)."""

from pathlib import Path

import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.codes import markdown  # noqa: E402

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- codes:start -->\n", "<!-- codes:end -->"

text = README.read_text(encoding="utf-8")
head, rest = text.split(START, 1)
README.write_text(head + START + markdown() + END + rest.split(END, 1)[1], encoding="utf-8")

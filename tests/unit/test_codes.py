"""The code table: every code the package uses is in it, in one style, and the README's list is rendered from it."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline import toml
from pipeline.cli import main
from pipeline.codes import CODE_STYLE, load_codes, markdown

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pipeline"
# code="x" keyword arguments; Problem(path, line, "x", ...); collector.error/warning(path, "x", ...)
USES = (re.compile(r'\bcode="([^"]+)"'),
        re.compile(r'\bProblem\([^()]*?,\s*[^,()]*?,\s*"([a-z][a-z0-9-]*)"'),
        re.compile(r'\bcol\.(?:error|warning)\([^,]+,\s*"([a-z][a-z0-9-]*)"'),
        re.compile(r'^\s+\d{3}: \("([a-z][a-z0-9-]*)"', re.MULTILINE))  # hubclient.HUB_FAILURES


def used_codes() -> dict[str, str]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for pattern in USES:
            for m in pattern.finditer(text):
                found.setdefault(m.group(1), f"{path.relative_to(REPO)}:{text[:m.start()].count(chr(10)) + 1}")
    return found


def test_every_code_used_is_in_the_table():
    table = load_codes()
    missing = {code: where for code, where in used_codes().items() if code not in table}
    assert not missing, f"codes used but not in pipeline/data/errors.toml: {missing}"


def test_every_code_in_errors_toml_is_used():
    listed = set(toml.loads((PACKAGE / "data" / "errors.toml").read_text())["codes"])
    source = "\n".join(p.read_text(encoding="utf-8") for p in (*PACKAGE.rglob("*.py"), *(REPO / "ci").glob("*.py")))
    unused = {code for code in listed if f'"{code}"' not in source}
    assert not unused, "codes in errors.toml that nothing raises"


def test_one_style_and_a_hint_for_every_code():
    for code, entry in load_codes().items():
        assert CODE_STYLE.match(code), code
        assert entry.title and entry.hint, code
        assert entry.exit_codes, code


def test_readme_lists_the_table():
    text = (REPO / "README.md").read_text()
    start, end = text.index("<!-- codes:start -->\n"), text.index("<!-- codes:end -->")
    assert text[start + len("<!-- codes:start -->\n"):end] == markdown(), \
        "regenerate it: python -m pipeline codes --markdown"


def test_codes_verb_explains_one_code(capsys):
    assert main(["codes", "hub-write-denied"]) == 0
    out = capsys.readouterr().out
    assert "publish; exit 9" in out and "HF_TOKEN" in out
    assert main(["codes", "no-such-code"]) == 2

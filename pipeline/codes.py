"""The code table: every code a stage can report, with its stage, exit code and hint.

Two data files, one table: `data/errors.toml` (the codes stages raise or report)
and `data/rules.toml` (validate's rules). The README's list of codes is
rendered from here (`python -m pipeline codes --markdown`), never kept by hand,
and a test proves that every code the package uses is in the table.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from pipeline import toml
from pipeline.errors import EXIT_CODES

CODE_STYLE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
USAGE_EXIT = 2


@dataclass(frozen=True)
class Code:
    code: str
    stages: tuple[str, ...]
    title: str
    hint: str = ""
    severity: str = "error"  # validate's rules may be warnings

    @property
    def exit_codes(self) -> tuple[int, ...]:
        if self.code == "usage":
            return (USAGE_EXIT,)
        if self.severity == "warning":
            return (0,)
        return tuple(sorted({EXIT_CODES[s] for s in self.stages}))


def _read(name: str) -> dict:
    return toml.loads(resources.files("pipeline").joinpath(f"data/{name}").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def load_codes() -> dict[str, Code]:
    table: dict[str, Code] = {}
    for code, entry in _read("errors.toml").get("codes", {}).items():
        stages = entry.get("stages") or [entry["stage"]]
        table[code] = Code(code, tuple(stages), entry["title"], entry.get("hint", ""))
    for code, entry in _read("rules.toml").get("rules", {}).items():
        # A rule another stage applies too (init checks names with validate's
        # rule) is one code with both stages.
        other = table[code].stages if code in table else ()
        table[code] = Code(code, ("validate", *other), entry.get("title", ""), entry.get("hint", ""),
                           entry.get("severity", "error"))
    return table


def default_hint(code: str) -> str:
    entry = load_codes().get(code)
    return entry.hint if entry is not None else ""


def markdown() -> str:
    """The README's table of codes."""
    lines = ["| code | stage | exit | what it means |", "| --- | --- | ---: | --- |"]
    for entry in sorted(load_codes().values(), key=lambda c: (c.stages[0] != "validate", c.stages, c.code)):
        exits = ", ".join(str(e) for e in entry.exit_codes)
        title = entry.title + (" (warning)" if entry.severity == "warning" else "")
        lines.append(f"| `{entry.code}` | {', '.join(entry.stages)} | {exits} | {title} |")
    return "\n".join(lines) + "\n"

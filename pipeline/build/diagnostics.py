"""Compiler output -> located problems: the compiler's own error lines, not ninja's noise."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.errors import Problem

# ninja's "[3/7] description" status lines.
STATUS = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")

# gcc/clang: file:line:col: error: msg; nvcc front end: file(line): error: msg
_DIAG = re.compile(
    r"^(?P<file>[^\s:(][^:(]*?)(?::(?P<line>\d+)(?::\d+)?:|\((?P<line2>\d+)\):)\s*"
    r"(?P<sev>fatal error|catastrophic error|error)\s*:?\s*(?P<msg>.*)$")
_LINK = re.compile(r"(undefined reference to .*|.*\bld(?:\.\w+)?: .*|collect2: error: .*|nvcc fatal\s*:.*"
                   r"|.*: fatal error: .*)")


def compiler_problems(text: str, root: Path, limit: int = 12) -> list[Problem]:
    """The compiler's error lines (with the source line and caret that follow), not ninja's noise."""
    lines = text.splitlines()
    problems: list[Problem] = []
    seen: set[tuple] = set()
    root = Path(root).resolve()
    for i, line in enumerate(lines):
        m = _DIAG.match(line.strip())
        if m:
            path = m.group("file")
            try:
                shown = Path(path).resolve().relative_to(root).as_posix()
            except (ValueError, OSError):
                shown = path
            number = int(m.group("line") or m.group("line2") or 0) or None
            context = [ln for ln in lines[i + 1:i + 3] if re.match(r"^\s*(\d+\s*)?\|", ln)]
            message = m.group("msg").strip() + "".join("\n    " + c for c in context)
            key = (shown, number, m.group("msg"))
            if key not in seen:
                seen.add(key)
                problems.append(Problem(path=shown, line=number, code="compile-error", message=message))
        elif _LINK.fullmatch(line.strip()) and not line.startswith(("FAILED", "ninja")):
            key = ("link", line.strip())
            if key not in seen:
                seen.add(key)
                problems.append(Problem(path="(link)", line=None, code="compile-error", message=line.strip()))
        if len(problems) >= limit:
            break
    return problems


def tail_problems(text: str, root: Path) -> list[Problem]:
    tail = [ln for ln in text.splitlines() if ln.strip() and not STATUS.match(ln)][-12:]
    return [Problem(path=str(root), line=None, code="compile-error", message="\n".join(tail))] if tail else []

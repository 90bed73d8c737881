"""Terminal output: results on stdout, problems and progress on stderr.

Stages never print; they return values or raise. Commands use these helpers so
`--json` output stays machine-readable (stdout holds only the JSON document).
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from rich.console import Console


@dataclass
class Output:
    json_mode: bool = False
    quiet: bool = False
    out: Console = field(default_factory=lambda: Console(file=sys.stdout, highlight=False, soft_wrap=True))
    err: Console = field(default_factory=lambda: Console(file=sys.stderr, highlight=False, soft_wrap=True))

    def result(self, text: str) -> None:
        """A human-readable result line (suppressed in --json mode)."""
        if not self.json_mode:
            self.out.print(text, markup=False)

    def rich(self, renderable: Any) -> None:
        if not self.json_mode:
            self.out.print(renderable)

    def info(self, text: str) -> None:
        if not self.quiet:
            self.err.print(text, markup=False)

    def problem(self, text: str) -> None:
        self.err.print(text, markup=False)

    def emit_json(self, document: Any) -> None:
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")
        sys.stdout.flush()

    @property
    def interactive(self) -> bool:
        return (not self.json_mode) and self.err.is_terminal

    @contextlib.contextmanager
    def progress(self, label: str, *, echo: bool = False) -> Iterator[Callable[[str], None] | None]:
        """A callback for a stage's progress text: a live status line on a
        terminal, plain lines on stderr when `echo` (logs), else None."""
        if self.interactive:
            status = self.err.status(label)
            status.start()
            try:
                yield lambda text: status.update(f"{label} {text}")
            finally:
                status.stop()
        elif echo:
            yield lambda text: self.info(f"{label} {text}")
        else:
            yield None

"""Terminal output: results on stdout, problems and progress on stderr.

Stages never print; they return values or raise. Commands use these helpers so
`--json` output stays machine-readable (stdout holds only the JSON document).
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                           TransferSpeedColumn)

from pipeline.events import Event, Reporter


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
    def reporter(self, *, verbose: bool = False) -> Iterator[Reporter]:
        """A `Reporter` for a stage's events: a live rich display on a
        terminal, plain lines on stderr otherwise (subprocess logs only with
        `verbose`). Results stay on stdout, so `--json` output is unaffected."""
        if not self.interactive:
            yield lambda event: self._plain(event, verbose)
            return
        display = _RichDisplay(self.err)
        try:
            yield display
        finally:
            display.close()

    def _plain(self, event: Event, verbose: bool) -> None:
        label = f"{event.stage:>8}  " if event.stage else ""
        if event.kind in ("progress", "compile") and event.total:
            self.info(f"{label}[{(event.done or 0) + 1}/{event.total}] {event.message}")
        elif event.kind == "warning":
            self.info(f"{label}warning: {event.message}")
        elif event.kind == "log":
            if verbose and not self.json_mode:
                self.info(f"{label}  {event.message}")
        elif event.kind == "transfer":
            if event.total is not None and event.done == event.total:
                self.info(f"{label}{event.message}: {event.total} bytes sent")
        else:
            self.info(f"{label}{event.message}")


class _RichDisplay:
    """One live progress line for counted work and uploads; steps printed above it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                            TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                            console=console, transient=True)
        self.transfer: Progress | None = None
        self.task = None
        self.transfer_task = None
        self.bar.start()

    def __call__(self, event: Event) -> None:
        label = f"{event.stage:>8}  " if event.stage else ""
        if event.kind in ("progress", "compile"):
            if self.task is None:
                self.task = self.bar.add_task("", total=None)
            self.bar.update(self.task, description=f"{label}{event.message}", completed=event.done or 0,
                            total=event.total)
        elif event.kind == "log":
            if self.task is None:
                self.task = self.bar.add_task("", total=None)
            self.bar.update(self.task, description=f"{label}{event.message[-100:]}")
        elif event.kind == "transfer":
            self._transfer(event, label)
        elif event.kind == "warning":
            self.bar.console.print(f"{label}[yellow]warning:[/yellow] {event.message}", markup=True,
                                   highlight=False)
        else:
            self.bar.console.print(f"{label}{event.message}", markup=False, highlight=False)

    def _transfer(self, event: Event, label: str) -> None:
        if self.transfer is None:
            self.transfer = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                     TransferSpeedColumn(), console=self.console, transient=True)
            self.transfer.start()
            self.transfer_task = self.transfer.add_task(f"{label}{event.message}", total=max(event.total or 1, 1))
        self.transfer.update(self.transfer_task, completed=event.done or 0)
        if event.total is not None and event.done == event.total:
            self.transfer.stop()
            self.transfer = None

    def close(self) -> None:
        if self.transfer is not None:
            self.transfer.stop()
        self.bar.stop()

"""Progress events: the one way every stage reports what it is doing.

Stages never print. They call a `Reporter` with `Event` values; the CLI
(`pipeline/console.py`) decides how they look (a rich display on a terminal,
plain lines on stderr otherwise, nothing in `--json` mode unless asked).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

EventKind = Literal["step", "progress", "compile", "log", "warning", "transfer"]


@dataclass(frozen=True)
class Event:
    """One thing that happened.

    kind      step: a line worth showing; progress: `done` of `total` items
              (`message` names the current one); compile: the same, for
              compile steps; log: a line of a subprocess's output (shown on a
              terminal, kept out of plain output unless verbose); warning;
              transfer: `done` of `total` bytes of the upload `message`
              (the last event of a transfer has done == total).
    stage     the stage that emitted it ("build", "smoke", "upload", ...).
    """

    kind: EventKind
    message: str
    done: int | None = None
    total: int | None = None
    stage: str = ""


Reporter = Callable[[Event], None]


def quiet(event: Event) -> None:
    """The reporter of a caller that wants no progress."""


def staged(report: Reporter, stage: str) -> Reporter:
    """`report`, with `stage` set on every event that has none."""
    def forward(event: Event) -> None:
        report(event if event.stage else Event(event.kind, event.message, event.done, event.total, stage))

    return forward



"""Progress events the build emits; the CLI decides how they look."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

EventKind = Literal["step", "compile", "log", "warning"]


@dataclass(frozen=True)
class BuildEvent:
    kind: EventKind
    message: str
    done: int | None = None  # compile steps finished (kind == "compile")
    total: int | None = None


Progress = Callable[[BuildEvent], None]

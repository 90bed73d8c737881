"""Problems and errors shared by every stage.

A `Problem` is a user's mistake found in their files (printed as
`path:line: CODE: message` plus a hint). A `PipelineError` stops a stage; each
stage has its own subclass with its own exit code, so scripts can tell them apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning"]
USAGE_EXIT = 2


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    code: str
    message: str
    hint: str = ""
    severity: Severity = "error"

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    def format(self) -> str:
        text = f"{self.location()}: {self.code}: {self.message}"
        if self.severity == "warning":
            text = f"{self.location()}: {self.code} (warning): {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def to_json(self) -> dict:
        return asdict(self)


class PipelineError(Exception):
    """Root of every error a stage raises on purpose. Never shown as a traceback."""

    exit_code = 1
    stage = "pipeline"

    def __init__(
        self,
        message: str,
        *,
        hint: str = "",
        path: str | None = None,
        line: int | None = None,
        code: str = "",
        problems: tuple[Problem, ...] | list[Problem] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = path
        self.line = line
        self.code = code or f"{self.stage}-failed"
        self.problems = tuple(problems)
        if self.code == "usage":  # a command-line mistake exits as argparse's do, whatever the stage
            self.exit_code = USAGE_EXIT

    def format(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        text = f"{where}{self.code}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def to_json(self) -> dict:
        return {
            "error": self.message,
            "code": self.code,
            "stage": self.stage,
            "path": self.path,
            "line": self.line,
            "hint": self.hint,
            "exit_code": self.exit_code,
            "problems": [p.to_json() for p in self.problems],
        }


# Exit codes: 0 success, 1 validation found errors, 2 command-line usage
# (argparse), then one per stage so that a script can branch on the cause.
class ValidationError(PipelineError):
    exit_code = 1
    stage = "validate"


class WorkspaceError(PipelineError):
    exit_code = 3
    stage = "workspace"


class MatrixError(PipelineError):
    exit_code = 4
    stage = "matrix"


class BuildError(PipelineError):
    exit_code = 5
    stage = "build"


class CheckError(PipelineError):
    exit_code = 6
    stage = "check"


class SmokeError(PipelineError):
    exit_code = 7
    stage = "smoke"


class BenchError(PipelineError):
    exit_code = 8
    stage = "bench"


class PublishError(PipelineError):
    exit_code = 9
    stage = "publish"


class VerifyError(PipelineError):
    exit_code = 10
    stage = "verify"


class HubError(PipelineError):
    exit_code = 11
    stage = "hub"


class InitError(PipelineError):
    exit_code = 12
    stage = "init"


class SkillError(PipelineError):
    exit_code = 13
    stage = "skill"


EXIT_CODES: dict[str, int] = {
    "ok": 0,
    "usage": 2,
    "lock": 14,  # `lock --check` found problems
    **{cls.stage: cls.exit_code for cls in (
        ValidationError, WorkspaceError, MatrixError, BuildError, CheckError,
        SmokeError, BenchError, PublishError, VerifyError, HubError, InitError, SkillError,
    )},
}

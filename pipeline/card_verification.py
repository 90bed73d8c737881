"""The card's verification summary: what smoke verified before upload, read from the
SmokeReport (the publish gate's) and the project's recorded smoke runs on other devices
(`benchmarks/results/<card>-smoke.json`, `smoke --json`).

One function, `verification_summary`, makes the one value the card's template reads
(`pipeline/templates/card/verification.md.j2`): per op its contract or tier (ops not
available on the device, ops only the project's own tests check), the categories a
binding declines; per run its counts, the ops not available and, for a forced upload,
failures by category. A new fact is a field here and a line in that template. Seeds are counted, never listed: they change on
every run, and the card must not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import Problem
from pipeline.smoke.report import OpCoverage, ProjectTests, SmokeReport

SMOKE_RECORDS = "*-smoke.json"  # beside the bench records in benchmarks/results/
# Warnings the table already says (declined contract cases are its "declined" column).
SHOWN_IN_TABLE = ("contract-case-declined",)


@dataclass(frozen=True)
class OpRow:
    """One op's line in the card's verification table."""

    op: str
    contract: str | None  # the family, or None: no contract
    how: str  # how it was bound: "--contract", "workspace", "inferred"
    contract_cases: int
    project_cases: int
    dtypes: tuple[str, ...]
    shapes: int
    declined: int  # contract cases the op refused (passed, reported)
    declined_kinds: tuple[str, ...] = ()  # what those cases were ("transposed", "row-strided")
    tier: str = "contract"  # OpCoverage.tier: contract, project-cases, project-tests, untested, unavailable
    categories_declined: tuple[str, ...] = ()  # input categories the binding declines (not run)
    categories_limited: tuple[str, ...] = ()  # categories the bound form's limits leave without cases
    unchecked: tuple[str, ...] = ()  # outputs no check reads

    @property
    def declined_cell(self) -> str:
        cell = f"{self.declined} ({', '.join(self.declined_kinds)})" if self.declined_kinds else str(self.declined)
        if self.categories_declined:
            cell += f"; binding declines {', '.join(self.categories_declined)}"
        if self.categories_limited:
            cell += f"; no {', '.join(self.categories_limited)} cases (form's limits)"
        if self.unchecked:
            cell += f"; unchecked: {', '.join(self.unchecked)}"
        return cell


@dataclass(frozen=True)
class SmokeRun:
    """One smoke run, the publishing host's or one recorded on another device."""

    device: str
    variant: str
    checks: int
    failed: int
    declined: int
    seeds: int
    passed: bool
    device_type: str = ""  # what "not available on" names
    unavailable: tuple[str, ...] = ()  # ops the variant ships no kernel of for the device
    failures: tuple[tuple[str, str], ...] = ()  # (category, "2 crash, 1 wrong"), when published with --force

    @property
    def where(self) -> str:
        return self.device_type or self.device


@dataclass(frozen=True)
class VerificationSummary:
    host: SmokeRun | None = None  # the run before this upload (None: not smoke-tested here)
    ops: tuple[OpRow, ...] = ()
    untested: tuple[str, ...] = ()  # ops published with --allow-untested
    warnings: tuple[Problem, ...] = ()  # those the table does not already say
    project_tests: ProjectTests | None = None
    recorded: tuple[SmokeRun, ...] = ()  # the project's smoke records, other devices

    @property
    def empty(self) -> bool:
        return self.host is None and not self.recorded and not self.untested


def declined_kinds(case_names: tuple[str, ...]) -> tuple[str, ...]:
    """The input layouts among declined contract cases. A contract case is named
    `op:family/dtype/shape/layout[/param=value...]`; a name of another form adds nothing."""
    kinds = set()
    for name in case_names:
        parts = name.split(":", 1)[-1].split("/")
        if len(parts) >= 4 and "=" not in parts[3]:
            kinds.add(parts[3])
    return tuple(sorted(kinds))


def _op_row(c: OpCoverage) -> OpRow:
    return OpRow(op=c.op, contract=c.contract, how=c.how, contract_cases=c.contract_cases,
                 project_cases=c.project_cases, dtypes=tuple(c.dtypes), shapes=len(c.shapes),
                 declined=len(c.declined), declined_kinds=declined_kinds(tuple(c.declined)), tier=c.tier,
                 categories_declined=tuple(c.categories_declined), categories_limited=tuple(c.categories_limited),
                 unchecked=tuple(c.unchecked))


def _grouped(groups: dict) -> tuple[tuple[str, str], ...]:
    return tuple((category, ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())))
                 for category, kinds in sorted(groups.items()))


def _run(report: SmokeReport) -> SmokeRun:
    return SmokeRun(device=report.device, variant=report.variant, checks=len(report.results),
                    failed=len(report.failures), declined=sum(r.declined for r in report.results),
                    seeds=len(report.seeds), passed=report.passed, device_type=report.device_type,
                    unavailable=report.unavailable, failures=_grouped(report.failures_by_category()))


def verification_summary(smoke: SmokeReport | None, *, untested: tuple[str, ...] = (),
                         recorded: tuple[SmokeRun, ...] = ()) -> VerificationSummary:
    """What the card says about verification: the publish gate's smoke report (None when this
    host ran no variant), the ops published untested, the project's recorded runs."""
    if smoke is None:
        return VerificationSummary(untested=tuple(untested), recorded=tuple(recorded))
    return VerificationSummary(
        host=_run(smoke), ops=tuple(_op_row(c) for c in smoke.coverage), untested=tuple(untested),
        warnings=tuple(w for w in smoke.warnings if w.severity == "warning" and w.code not in SHOWN_IN_TABLE),
        project_tests=smoke.project_tests, recorded=tuple(recorded))


def recorded_runs(project_root: Path | None) -> tuple[SmokeRun, ...]:
    """The project's recorded smoke runs (`smoke --json` output kept in benchmarks/results/).
    A file that is not one is left out: a malformed record must not stop a publish."""
    results = Path(project_root) / "benchmarks" / "results" if project_root is not None else None
    runs = []
    for path in sorted(results.glob(SMOKE_RECORDS)) if results is not None and results.is_dir() else ():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            counts = doc["counts"]
            absent = doc.get("not_available") or {}
            runs.append(SmokeRun(device=str(doc["device"]), variant=str(doc["variant"]), checks=int(counts["total"]),
                                 failed=int(counts["failed"]), declined=int(counts.get("declined", 0)),
                                 seeds=len(doc.get("seeds") or ()), passed=bool(doc.get("passed")),
                                 device_type=str(absent.get("device") or ""),
                                 unavailable=tuple(str(o) for o in absent.get("ops") or ()),
                                 failures=_grouped(doc.get("failures_by_category") or {})))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return tuple(runs)

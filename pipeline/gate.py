"""The publish gate: a bundle is uploaded only when check and smoke pass
(or `--force` says otherwise, which the card records), and only when every op
was tested: by a contract, a project case, or (a weaker tier the card states)
only by the project's own tests, which `--require-contracts` refuses. An op the
variant ships no kernel of for this device is "not available" there, not
untested. `--allow-untested` publishes untested ops anyway, and the card marks them."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from pipeline.bundle import Bundle, CheckReport, check_bundle
from pipeline.bundle_source import BundleSource, host_choice
from pipeline.errors import PipelineError, PublishError
from pipeline.events import Event, Reporter, quiet, staged
from pipeline.smoke import DEFAULT_TRIALS, OpCoverage, SmokeReport, run_smoke, untested_hint
from pipeline.workspace import Kernel


@dataclass(frozen=True)
class GateResult:
    check: CheckReport
    smoke: SmokeReport | None
    checks: tuple[str, ...]  # what passed, as the card lists it
    forced: tuple[str, ...]  # what failed and was published anyway (--force)
    untested: tuple[str, ...] = ()  # ops nothing tested, published with --allow-untested

    @property
    def bundle(self) -> Bundle:
        return self.check.bundle

    @property
    def coverage(self) -> tuple[OpCoverage, ...]:
        return self.smoke.coverage if self.smoke is not None else ()

    @property
    def warnings(self) -> tuple:
        return self.smoke.warnings if self.smoke is not None else ()


def smoke_summary(report: SmokeReport) -> str:
    """One line for the card and the log; no seed (the card must not change between runs)."""
    failed = len(report.failures)
    contracts = sorted({c.contract for c in report.coverage if c.contract and c.contract_cases})
    status = "passed" if report.passed else ("untested" if report.untested and not failed else "FAILED")
    return (f"{status} on {report.variant} "
            f"({len(report.results)} check(s), {failed} failed"
            + (f"; contracts: {', '.join(contracts)}" if contracts else "; no contract") + ")")


def weakly_tested(report: SmokeReport) -> tuple[str, ...]:
    """Ops only the project's own tests call (no contract, no project case)."""
    return tuple(c.op for c in report.coverage if c.tier == "project-tests")


def untested_error(report: SmokeReport, kernel: Kernel | None, require_contracts: bool = False) -> PublishError:
    if require_contracts and weakly_tested(report):
        ops = weakly_tested(report)
        return PublishError(
            f"{len(ops)} op(s) of {report.kernel} are tested by the project's own tests only: {', '.join(ops)}; "
            "--require-contracts asks for a contract or a project case for every op; nothing was uploaded",
            code="publish-untested", path=kernel.shown if kernel is not None else None, hint=untested_hint(ops))
    ops = report.untested
    return PublishError(
        f"{len(ops)} op(s) of {report.kernel} are tested by nothing: {', '.join(ops)} (no contract matches them "
        "and no case in tests/smoke_cases.py calls them); nothing was uploaded",
        code="publish-untested", path=kernel.shown if kernel is not None else None, hint=untested_hint(ops))


def _check(source: BundleSource, kernel: Kernel | None, force: bool, report: Reporter) -> tuple[CheckReport, list, list]:
    result = check_bundle(source.path, expected=kernel.expected() if kernel is not None else None)
    checks, forced = [], []
    if result.errors:
        if not force:
            raise PublishError(
                f"check found {len(result.errors)} problem(s) in {source.path}; nothing was uploaded",
                code="publish-check-failed", path=str(source.path), problems=result.problems,
                hint="fix them and rebuild (or publish anyway with --force, which the kernel card records)")
        forced.extend(f"check: {p.format().splitlines()[0]}" for p in result.errors)
    else:
        checks.append(f"check passed for {len(result.bundle.variants)} variant(s)")
    if result.expected is not None:
        missing = list(result.missing)
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        report(Event("step", f"{len(result.covered)}/{len(result.expected)} matrix cells in the bundle"
                     + (f"; missing: {shown}" if missing else ""), stage="check"))
    report(Event("step", f"{len(result.bundle.variants)} variant(s), {len(result.errors)} error(s)"
                 + (" (--force)" if result.errors else ""), stage="check"))
    return result, checks, forced


def _smoke(bundle: Bundle, kernel: Kernel | None, report: Reporter, contracts: tuple, seed: int | None,
           trials: int = DEFAULT_TRIALS) -> tuple[SmokeReport | None, bool, str]:
    # Importing a variant in place writes __pycache__ into the build tree,
    # which check would then call stray: keep the tree as the build left it.
    old = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        result = run_smoke(bundle, kernel, seed=seed, trials=trials, contracts=contracts,
                           report=staged(report, "smoke"))
    except PipelineError as exc:
        return None, False, f"FAILED: {exc.message}"
    finally:
        sys.dont_write_bytecode = old
    return result, result.passed, smoke_summary(result)


def _untested(smoke_report: SmokeReport, kernel: Kernel | None, allow_untested: bool,
              report: Reporter, require_contracts: bool = False) -> tuple[str, ...]:
    untested = smoke_report.untested
    if require_contracts and weakly_tested(smoke_report) and not allow_untested:
        raise untested_error(smoke_report, kernel, require_contracts=True)
    if require_contracts:
        untested = tuple(dict.fromkeys(untested + weakly_tested(smoke_report)))
    if untested and not allow_untested:
        raise untested_error(smoke_report, kernel)
    if untested:
        report(Event("step", f"UNTESTED (--allow-untested, marked on the card): {', '.join(untested)}",
                     stage="smoke"))
    return untested


def run_gate(source: BundleSource, kernel: Kernel | None, *, force: bool = False, smoke: bool = True,
             report: Reporter = quiet, contracts: tuple[tuple[str, str], ...] = (),
             allow_untested: bool = False, seed: int | None = None, trials: int = DEFAULT_TRIALS,
             require_contracts: bool = False) -> GateResult:
    """Check, then smoke where this host can. A dry run runs both too: the card
    lists their verdicts, so a dry run that skipped smoke would plan another card
    than the real run uploads (and miss the refusal a failing smoke causes)."""
    checked, checks, forced = _check(source, kernel, force, report)
    host = host_choice(source.path)
    smoke_report, untested = None, ()
    if host is None:
        report(Event("step", "skipped: this host can run none of the bundle's variants", stage="smoke"))
    elif smoke:
        report(Event("step", f"running the op contracts and the project's cases on {host}", stage="smoke"))
        smoke_report, passed, summary = _smoke(checked.bundle, kernel, report, contracts, seed, trials)
        if smoke_report is not None:
            report(Event("step", f"seed {smoke_report.seed} (replay: --seed {smoke_report.seed})", stage="smoke"))
            untested = _untested(smoke_report, kernel, allow_untested, report, require_contracts)
            if smoke_report.unavailable:
                report(Event("step", f"not available on {smoke_report.device_type or smoke_report.device} "
                             f"({smoke_report.variant}): {', '.join(smoke_report.unavailable)}", stage="smoke"))
            if untested:  # allowed: what did run must still have passed
                tests = smoke_report.project_tests
                passed = not smoke_report.failures and (tests is None or tests.passed)
        report(Event("step", summary, stage="smoke"))
        if passed:
            checks.append(f"smoke {summary}")
        elif not force:
            raise PublishError(f"smoke test failed on {host}; nothing was uploaded", code="publish-smoke-failed",
                               hint="run `python -m pipeline smoke` for details, fix the kernel, rebuild "
                                    "(or publish anyway with --force, which the card records)")
        else:
            forced.append(f"smoke {summary}")
    return GateResult(check=checked, smoke=smoke_report, checks=tuple(checks), forced=tuple(forced),
                      untested=tuple(untested))

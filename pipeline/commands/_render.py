"""How reports look in a terminal: shared by the commands that print them.
Not a verb (commands never import each other; they may import this)."""

from __future__ import annotations

from pathlib import Path

from pipeline.bundle import CheckReport
from pipeline.console import Output
from pipeline.verify import VerifyReport


def print_check(report: CheckReport, output: Output, *, coverage_note: str = "") -> None:
    bundle = report.bundle
    version = bundle.version if bundle.version is not None else "?"
    output.result(f"{bundle.name or '?'} v{version}: {len(bundle.variants)} variant(s) in {bundle.root}")
    rows = []
    for v in bundle.variants:
        errors = [p for p in report.errors if v.name in Path(p.path).parts]
        status = "ok" if not errors else f"{len(errors)} error(s)"
        rows.append((v.name, v.framework or "?", v.target or "?", v.platform or "any",
                     f"{len(v.files)} files", status))
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(6)]
    for row in rows:
        output.result("  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    if report.expected is not None:
        output.result(f"coverage: {len(report.covered)}/{len(report.expected)} matrix cells built")
        for name in report.covered:
            output.result(f"  built:   {name}")
        for name in report.missing:
            output.result(f"  missing: {name}")
        for name in report.extra:
            output.result(f"  not in the matrix: {name}")
    elif coverage_note:
        output.result(coverage_note)
    for problem in report.problems:
        output.problem(problem.format())
    if report.ok:
        warnings = len(report.problems)
        output.result(f"check: ok ({len(bundle.variants)} variant(s)"
                      + (f", {warnings} warning(s))" if warnings else ")"))
    else:
        output.problem(f"check: {len(report.errors)} error(s) in {bundle.root}")


def print_verify(report: VerifyReport, output: Output) -> None:
    load = report.load
    output.result(f"verify: {report.repo_id} v{report.version} at {report.endpoint} "
                  f"(revision {str(report.revision)[:12]}): published variants: {', '.join(report.published) or 'none'}")
    if load is not None:
        status = "ok" if load.ok else "FAILED"
        trust = " (only with trust_remote_code=True)" if load.trusted is False else ""
        output.result(f"  get_kernel on this host: {status}{trust}: variant {load.variant or '-'}, "
                      f"id {load.kernel_id or '-'}; {load.message}")
        for failure in load.failures:
            output.result(f"    {failure}")
        if load.signature:
            output.result(f"  signature: {load.signature}")
    if report.cells:
        output.result(f"  which published variant kernels picks for a system of each matrix cell "
                      f"(require: {report.require}):")
        width = max(len(c.cell) for c in report.cells)
        for cell in report.cells:
            if cell.chosen:
                status = f"-> {cell.chosen}" + ("" if cell.status == "exact" else " (compatible)")
            else:
                status = "-> nothing: MISSING (promised)" if cell.promised else "-> nothing (not published)"
            output.result(f"    {cell.cell.ljust(width)}  {status}")
    for consumer in report.consumers:
        load = consumer.load
        if consumer.ok and load is not None:
            trust = "" if load.trusted else " (only with trust_remote_code=True: untrusted publisher)"
            output.result(f"  get_kernel with {consumer.label}: ok{trust}; {load.message}")
        elif consumer.error_code == "consumer-index-unreachable":
            output.result(f"  get_kernel with {consumer.label}: not checked: {consumer.error}")
        else:
            why = consumer.error or (load.message if load else "no result")
            output.result(f"  get_kernel with {consumer.label}: FAILED: {why}")
    if report.trusted is False:
        output.result(f"  note: {report.repo_id.split('/')[0]!r} is not a trusted publisher on this Hub: users must "
                      f"call get_kernel({report.repo_id!r}, version={report.version}, trust_remote_code=True)")
    output.result(f"verify: {'ok' if report.ok else 'FAILED'}")

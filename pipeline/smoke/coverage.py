"""What was verified per op (the card's coverage table), and the warnings about
ops no contract covers, inputs an op declined and ops that delegate to PyTorch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.errors import Problem
from pipeline.smoke.report import OpCoverage

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.smoke.run import Execution


def _dims(shape) -> str:
    return "x".join(str(d) for d in shape)


def _op_coverage(op: str, plan, ex: "Execution", seeds: tuple[int, ...]) -> OpCoverage:
    results = [r for r in ex.results if r.op == op and r.check == "values"]
    contract_names = {r.name for r in results if r.contract is not None and not r.declined}
    declined = sorted({r.name for r in results if r.declined} - contract_names)
    project_names = {r.name for r in results if r.contract is None}
    shapes, dtypes = [], []
    for case in ex.cases:
        if case.op != op or (case.name not in contract_names and case.name not in project_names):
            continue
        if case.shape is not None:
            shapes.append(_dims(case.shape))
            dtypes.append(case.dtype)
    for stats in ex.stats:
        if stats.op == op and stats.contract is None and stats.shapes:
            shapes.append(_dims(stats.shapes[0]))
            dtypes.extend(stats.dtypes[:1])
    return OpCoverage(
        op=op, schema=plan.schema if plan is not None else "", contract=plan.family if plan is not None else None,
        how=plan.how if plan is not None else "", contract_cases=len(contract_names),
        project_cases=len(project_names), shapes=tuple(dict.fromkeys(shapes)),
        dtypes=tuple(sorted({d for d in dtypes if d})), seeds=tuple(seeds) if results else (),
        declined=tuple(declined), note=plan.note if plan is not None else "",
        available=op not in ex.unavailable, project_tests=int(ex.project_ops.get(op, 0)),
        categories_declined=tuple(getattr(plan, "declines", ()) or ()) if plan is not None else (),
        categories_limited=tuple(getattr(plan, "limits", ()) or ()) if plan is not None else (),
        unchecked=tuple(getattr(plan, "unchecked", ()) or ()) if plan is not None else (),
    )


def coverage_of(ex: "Execution", seeds: tuple[int, ...]) -> list[OpCoverage]:
    plans = {p.op: p for p in ex.plans if p.schema is not None}
    ops = list(plans) + [c.op for c in ex.cases if c.op not in plans]
    return [_op_coverage(op, plans.get(op), ex, seeds) for op in dict.fromkeys(ops)]


def plan_warnings(ex: "Execution", where: str) -> list[Problem]:
    found = []
    for plan in ex.plans:
        if plan.op in ex.unavailable:
            continue  # said once, as "not available on <device>"
        if plan.code in ("contract-ambiguous", "op-not-covered"):
            covered = any(c.op == plan.op for c in ex.cases)
            note = plan.note + ("; only the project's own cases test it" if covered else
                                "; only the project's own tests call it" if ex.project_ops.get(plan.op) else "")
            found.append(Problem(where, None, plan.code, note, severity="warning",
                                 hint="families: see `pipeline/contracts/`; bind in [workspace.contracts.<kernel>]"))
    declined: dict[str, list] = {}
    for r in ex.results:
        if r.declined:
            declined.setdefault(r.op, []).append(r)
    for op, items in declined.items():
        names = sorted({r.name for r in items})
        found.append(Problem(where, None, "contract-case-declined",
                             f"{op} refused {len(names)} contract input(s) a correct kernel may refuse "
                             f"(non-contiguous, misaligned or empty), e.g. {names[0]}: {items[0].message}",
                             hint="refusing is safe; accepting them is better (callers pass slices and views)",
                             severity="warning"))
    for d in ex.delegation:
        if d.delegates:
            found.append(Problem(where, None, "op-delegates-to-pytorch",
                                 f"{d.op} hands its work to PyTorch: it calls {', '.join(d.aten[:6])}"
                                 + ("" if d.kernels else " (on the CPU the profiler sees operators, not loops)"),
                                 hint="not wrong, but not a custom kernel: the card says so", severity="warning"))
    return found

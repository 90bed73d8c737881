"""Weak-case warnings: what the project's own cases fail to exercise.

Read from the inputs the cases drew (not from their names): a floating input
whose elements are all equal (a weight of ones, a zero bias) cannot show a
kernel that ignores it; last dimensions that are all multiples of 8 never reach
a vector loop's tail; one shape or one dtype per op tests one code path; inputs
that do not change with the generator make every seed the same test.
"""

from __future__ import annotations

from pipeline.errors import Problem
from pipeline.smoke.harness import CaseStats


def _names(stats: list[CaseStats], limit: int = 3) -> str:
    names = [s.name for s in stats]
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _op_warnings(op: str, stats: list[CaseStats], where: str) -> list[Problem]:
    found = []
    constant = [s for s in stats if s.constant]
    if constant:
        found.append(Problem(where, None, "weak-case-constant-input",
                             f"{op}: {len(constant)} case(s) pass an input whose elements are all equal "
                             f"(e.g. a weight of ones or a zero bias): {_names(constant)}",
                             hint="draw every input from the generator, with negative entries", severity="warning"))
    last_dims = {shape[-1] for s in stats for shape in s.shapes if shape}
    if last_dims and all(d % 8 == 0 for d in last_dims):
        found.append(Problem(where, None, "weak-case-aligned-only",
                             f"{op}: every last dimension is a multiple of 8 ({', '.join(map(str, sorted(last_dims)))})",
                             hint="add sizes such as 1, 7, 127 and 4097: they reach the loop tails",
                             severity="warning"))
    if len({s.shapes for s in stats}) == 1:
        found.append(Problem(where, None, "weak-case-one-shape", f"{op}: every case has the same input shapes",
                             hint="vary the shapes: leading dims, odd and large last dims, empty batches",
                             severity="warning"))
    if len({d for s in stats for d in s.dtypes}) == 1:
        found.append(Problem(where, None, "weak-case-one-dtype",
                             f"{op}: every case is {stats[0].dtypes[0] if stats[0].dtypes else 'one dtype'}",
                             hint="cover every dtype the kernel accepts", severity="warning"))
    fixed = [s for s in stats if s.fixed]
    if fixed:
        found.append(Problem(where, None, "weak-case-one-seed",
                             f"{op}: {len(fixed)} case(s) draw the same inputs whatever the seed: {_names(fixed)}",
                             hint="draw inputs from the `generator` argument of make()", severity="warning"))
    return found


def weak_warnings(stats: list[CaseStats], where: str, seeds: int) -> list[Problem]:
    """Warnings over the project's own cases (contract cases are the pipeline's and not judged here)."""
    project = [s for s in stats if s.contract is None]
    by_op: dict[str, list[CaseStats]] = {}
    for s in project:
        by_op.setdefault(s.op, []).append(s)
    found = []
    for op, items in sorted(by_op.items()):
        found.extend(_op_warnings(op, items, where))
    if project and seeds == 1:
        found.append(Problem(where, None, "weak-case-one-seed", "the cases ran with a single seed",
                             hint="run with --seeds 3 (the default)", severity="warning"))
    return found

"""`python -m pipeline verify ORG/NAME --version N`: load it the way users will."""

from __future__ import annotations

from pathlib import Path

from pipeline.errors import PipelineError, VerifyError

HELP = "load a published kernel with get_kernel and check it"
DESCRIPTION = """\
Verify a published kernel with the kernels library itself, in a fresh process
with an empty KERNELS_CACHE:

  1. kernels.get_kernel(ORG/NAME, version=N) loads this host's variant, and its
     ops match the float64 reference on fresh random inputs (the kernel's
     tests/smoke_cases.py);
  2. for every cell of the build matrix, the published variant that kernels'
     own selection code picks for a system of that cell. A cell the
     publication promises (its torch, backend/CUDA major and platform were
     published; --require all: every cell) that resolves to nothing fails.

The Hub is chosen as for publish (--endpoint > HF_ENDPOINT > the Hugging Face
Hub with a token > the embedded Hub's data, served for the run).

example:
  python -m pipeline verify kernels-pipeline/rmsnorm --version 1
"""


def add_arguments(parser) -> None:
    parser.add_argument("repo", metavar="ORG/NAME", help="Hub repository")
    parser.add_argument("--version", type=int, required=True, help="the version (branch v<N>) to verify")
    parser.add_argument("--kernel", type=Path, default=None,
                        help="kernel project (reference cases, build matrix; default: the workspace kernel NAME)")
    parser.add_argument("--endpoint", default=None, help="Hub URL (overrides HF_ENDPOINT)")
    parser.add_argument("--require", choices=["published", "all"], default="published",
                        help="which matrix cells must resolve: those the publication covers (default) or all")
    parser.add_argument("--load-only", action="store_true", help="only check that get_kernel loads it")
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def run(args, output) -> int:
    from pipeline.commands.publish import _project_for
    from pipeline.publish import resolve_target, split_repo_id, started_target
    from pipeline.verify import verify_publication

    name = args.repo.rsplit("/", 1)[-1]
    try:
        project, namespace = _project_for(name, args.kernel, None)
    except PipelineError:  # verifying needs no project: without one there are no cases and no matrix
        project, namespace = None, None
    repo_id, _ = split_repo_id(args.repo, namespace)
    target = resolve_target(args.endpoint)
    output.info(f"  target  {target.describe()}")
    with started_target(target) as live:
        report = verify_publication(live.endpoint, repo_id, args.version, project_root=project,
                                    token=live.token, require=args.require, load_only=args.load_only)
    if output.json_mode:
        output.emit_json(report.to_json())
    else:
        print_report(report, output)
        for problem in report.problems:
            output.problem(problem.format())
    return 0 if report.ok else VerifyError.exit_code


def print_report(report, output) -> None:
    load = report.load
    output.result(f"verify: {report.repo_id} v{report.version} at {report.endpoint} "
                  f"(revision {str(report.revision)[:12]}): published variants: {', '.join(report.published) or 'none'}")
    if load is not None:
        status = "ok" if load.ok else "FAILED"
        output.result(f"  get_kernel on this host: {status}: variant {load.variant or '-'}, id {load.kernel_id or '-'}; "
                      f"{load.message}")
        for failure in load.failures:
            output.result(f"    {failure}")
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
    output.result(f"verify: {'ok' if report.ok else 'FAILED'}")

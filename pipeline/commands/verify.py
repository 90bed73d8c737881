"""`python -m pipeline verify ORG/NAME --version N`: load it the way users will."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from pipeline.commands._render import print_verify
from pipeline.errors import PublishError, VerifyError
from pipeline.target import resolve_target, split_repo_id, started_target
from pipeline.verify import verify_publication
from pipeline.workspace import resolve_for_repo

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

Step 1 needs the kernel project (its smoke cases are the reference): the
workspace kernel NAME, or --kernel PATH; with neither, pass --load-only.

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


@contextlib.contextmanager
def _as_verify_error() -> Iterator[None]:
    """The helpers verify shares with publish raise PublishError; verify exits with its own code."""
    try:
        yield
    except PublishError as exc:
        raise VerifyError(exc.message, hint=exc.hint, path=exc.path, line=exc.line, code=exc.code,
                          problems=exc.problems) from None


def run(args, output) -> int:
    name = args.repo.rsplit("/", 1)[-1]
    with _as_verify_error():
        source = resolve_for_repo(name, args.kernel, required=False)
        repo_id, _ = split_repo_id(args.repo, source.namespace)
    if source.kernel is None and not args.load_only:
        # Checking outputs needs the project's reference cases; say so now, not after the download.
        raise VerifyError(f"no kernel project for {name!r}: its tests/smoke_cases.py are the reference "
                          "the loaded kernel is checked against", code="kernel-not-found",
                          hint="pass --kernel PATH (the kernel project), or --load-only to check only "
                               "that get_kernel loads it")
    target = resolve_target(args.endpoint)
    output.info(f"  target  {target.describe()}")
    with _as_verify_error(), started_target(target) as live, output.reporter() as report:
        report_ = verify_publication(live.endpoint, repo_id, args.version, kernel=source.kernel,
                                     token=live.token, require=args.require, load_only=args.load_only,
                                     report=report)
    if output.json_mode:
        output.emit_json(report_.to_json())
    else:
        print_verify(report_, output)
        for problem in report_.problems:
            output.problem(problem.format())
    return 0 if report_.ok else VerifyError.exit_code

"""`python -m pipeline publish ORG/NAME`: the project's main job."""

from __future__ import annotations

from pathlib import Path

from pipeline.commands._render import print_verify
from pipeline.contracts import parse_bindings
from pipeline.errors import PublishError, VerifyError
from pipeline.publish import PublishRequest, publish
from pipeline.target import resolve_target, split_repo_id
from pipeline.workspace import resolve_for_repo

HELP = "validate, build, check, smoke, upload to the Hub, verify"
DESCRIPTION = """\
Publish a kernel to a Kernel Hub, running the stages it still needs:

  validate -> build (the host's variant, unless build/ or a Nix result/ exists)
  -> check -> smoke (where this host can run a variant) -> upload -> verify

A bundle that fails check or smoke is not uploaded; --force uploads it anyway
and the kernel card says so. An op that neither a contract (--contract OP=FAMILY,
[workspace.contracts.<kernel>], or inferred) nor tests/smoke_cases.py tests is
refused too; --allow-untested publishes it and the card marks it untested. An op
that only the project's own tests call is accepted as a weaker tier (the card says
"tested by the project's own tests only") unless --require-contracts.

Where it goes (printed first):
  --endpoint URL  >  HF_ENDPOINT  >  the Hugging Face Hub when a token is
  configured (HF_TOKEN or `hf auth login`)  >  the embedded Hub, started for
  this run, data kept in ~/.local/share/kernel-pipeline/hub (port 8000).

The upload follows the Hub's kernel conventions: repository type `kernel`;
build/<variant>/ on branch v<version>; the card as README.md on main. Only
files that differ are uploaded; an unchanged bundle makes no commit. The
version branch is committed before the card on main; stopped between the two,
publish says what the Hub holds, and running it again makes the missing commit.

examples:
  python -m pipeline publish kernels-pipeline/rmsnorm
  python -m pipeline publish kernels-pipeline/rmsnorm --dry-run
  python -m pipeline publish my-org/rmsnorm --kernel kernels-src/rmsnorm --endpoint http://127.0.0.1:8000
"""


def add_arguments(parser) -> None:
    parser.add_argument("repo", metavar="ORG/NAME", help="Hub repository; NAME also picks the workspace kernel")
    parser.add_argument("--kernel", type=Path, default=None, help="kernel project to publish (default: the "
                        "workspace kernel named NAME)")
    parser.add_argument("--build-dir", type=Path, default=None,
                        help="publish this build tree (build/ or a Nix result/) instead of finding or building one")
    parser.add_argument("--endpoint", default=None, help="Hub URL (overrides HF_ENDPOINT)")
    parser.add_argument("--version", type=int, default=None,
                        help="version to publish (default: the bundle's; must match it)")
    parser.add_argument("--dry-run", action="store_true", help="run every stage but the upload (smoke too: the card lists its verdict) "
                             "and print the exact file operations the real run would make; change nothing")
    parser.add_argument("--force", action="store_true",
                        help="upload even if check or smoke fails (recorded in the kernel card)")
    parser.add_argument("--rebuild", action="store_true", help="build the host's variant even if a build exists")
    parser.add_argument("--no-verify", action="store_true", help="skip get_kernel verification after the upload")
    parser.add_argument("--contract", action="append", default=[], metavar="OP=FAMILY[:KEY=VALUE,...]",
                        help="smoke-test op OP against contract FAMILY (repeatable; overrides the workspace file)")
    parser.add_argument("--allow-untested", action="store_true",
                        help="publish even if an op has no contract and no case (the card marks it untested)")
    parser.add_argument("--require-contracts", action="store_true",
                        help="refuse ops that only the project's own tests call (no contract, no project case)")
    parser.add_argument("--seed", type=int, default=None, metavar="S", help="smoke's seed (default: a new one)")
    parser.add_argument("--seeds", type=int, default=3, metavar="N", help="smoke's random trials per case (default 3)")
    parser.add_argument("--json", action="store_true", help="print the publication as JSON on stdout")


def run(args, output) -> int:
    if args.seeds < 1:
        raise PublishError(f"--seeds {args.seeds}: at least one seed is needed", code="usage",
                           hint="e.g. --seeds 3 (the default)")
    name = args.repo.rsplit("/", 1)[-1]
    source = resolve_for_repo(name, args.kernel, build_dir=args.build_dir)
    repo_id, _ = split_repo_id(args.repo, source.namespace)
    target = resolve_target(args.endpoint)
    output.info(f"  target  {target.describe()}")
    request = PublishRequest(repo_id=repo_id, kernel=source.kernel, build_dir=args.build_dir, version=args.version,
                             dry_run=args.dry_run, force=args.force, rebuild=args.rebuild, verify=not args.no_verify,
                             contracts=parse_bindings(args.contract), allow_untested=args.allow_untested,
                             require_contracts=args.require_contracts,
                             seed=args.seed, seeds=args.seeds)
    with output.reporter() as report:
        publication = publish(request, target, report=report)
    verify = publication.verify
    if output.json_mode:
        output.emit_json(publication.to_json())
    else:
        _print(publication, output)
    if verify is not None and not verify.ok:
        if not output.json_mode:
            for problem in verify.problems:
                output.problem(problem.format())
        output.problem(f"verify: {repo_id} v{publication.version} failed verification")
        return VerifyError.exit_code
    return 0


def _print(pub, output) -> None:
    where = pub.target.describe()
    if pub.dry_run:
        output.result(f"dry run: {pub.repo_id} v{pub.version} at {where}; nothing was changed. It would:")
        for line in pub.plan.lines():
            output.result(f"  {line}")
        return
    if pub.changed:
        output.result(f"published {pub.repo_id} v{pub.version} to {where}")
        for c in pub.commits:
            output.result(f"  {c.branch}: commit {c.commit} ({c.operations} file operation(s))")
    else:
        output.result(f"{pub.repo_id} v{pub.version} is already published at {where}: nothing changed, "
                      "no commit made, nothing uploaded")
    output.result(f"  variants: {', '.join(pub.variants)}")
    if pub.forced:
        output.result("  published with --force despite:")
        for reason in pub.forced:
            output.result(f"    {reason}")
    if pub.verify is not None:
        print_verify(pub.verify, output)
    if pub.target.embedded:
        root, port = pub.target.hub_root, pub.target.hub_port
        output.result("")
        output.result("The embedded Hub stopped with this command. To load the kernel later, serve the same data:")
        output.result(f"  python -m pipeline hub serve --root {root} --port {port}")
        output.result("and point kernels at it:")
        output.result(f"  HF_ENDPOINT=http://127.0.0.1:{port}")
        output.result(f"  e.g. HF_ENDPOINT=http://127.0.0.1:{port} python -c \"from kernels import get_kernel; "
                      f"print(get_kernel('{pub.repo_id}', version={pub.version}))\"")
        output.result("and, while it serves, read the kernel's page (card, variants, files, history) at:")
        output.result(f"  http://127.0.0.1:{port}/kernels/{pub.repo_id}")

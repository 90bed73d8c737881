"""Sign every variant of the joined bundle with Sigstore, keyless, as this GitHub Actions job.

    python ci/sign.py BUNDLE_DIR [--report sign.json]

Runs in the workflow's sign job only (the one job with `id-token: write`):
each BUNDLE_DIR/<kernel>/<variant>/metadata.json gets metadata.json.sigstore
beside it (pipeline.signing, where kernels' verify_variant looks). Each new
bundle is then verified against Sigstore's production trust root and this
run's own identity (GITHUB_REPOSITORY, GITHUB_WORKFLOW_REF), so a release never
uploads a signature that kernels would reject. A table of the signatures goes
to the job summary. Exit: 0 every variant signed and verified, 1 a signature
does not verify, 9 signing refused or failed (PublishError).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's pipeline, installed or not

from pipeline import signing  # noqa: E402
from pipeline.errors import PipelineError, PublishError  # noqa: E402


def sign_and_verify(bundle: Path) -> list[signing.SignatureReport]:
    with signing.github_signer() as signer:
        written = signing.sign_tree(bundle, signer)
    policy = signing.policy_from_github_env()
    if policy is None:
        raise PublishError("GITHUB_REPOSITORY / GITHUB_WORKFLOW_REF do not name this workflow run",
                           code="sign-no-identity", hint="run ci/sign.py inside a GitHub Actions job")
    return [signing.verify_variant(path.parent, policy) for path in written]


def summary_markdown(bundle: Path, reports: list[signing.SignatureReport]) -> str:
    lines = ["### Signatures", "", f"{sum(r.ok for r in reports)}/{len(reports)} variant(s) signed and verified.",
             "", "| kernel | variant | status | signer | Rekor entry |", "| --- | --- | --- | --- | --- |"]
    for report, path in zip(reports, signing.variant_dirs(bundle)):
        signer = report.identity.build_signer_uri if report.identity else ""
        lines.append(f"| {path.parent.name} | `{report.variant}` | {report.status} | {signer} | {report.log_index} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--report", type=Path, help="write the signature reports here (JSON)")
    args = parser.parse_args(argv)
    try:
        reports = sign_and_verify(args.bundle)
    except PipelineError as exc:
        print(exc.format())
        print(f"::error title=sign::{exc.code}: {exc.message}")
        return exc.exit_code
    text = summary_markdown(args.bundle, reports)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(text)
    print(text)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps([r.to_json() for r in reports], indent=2) + "\n", encoding="utf-8")
    for report in reports:
        if not report.ok:
            print(f"::error title=sign::{report.card_line()}")
    return 0 if all(r.ok for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Signatures in a build tree: each variant's `metadata.json.sigstore`, checked
when present (kernels' own `GitHubWorkflowPolicy`, the identity of the GitHub
workflow run when check runs inside one). Unsigned variants are not an error
here; the publish gate decides whether a release must be signed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.errors import Problem

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.bundle import Bundle

SIGNATURE_FILE = "metadata.json.sigstore"  # as pipeline.signing names it; kept here so an unsigned tree needs no sigstore


def check_signatures(bundle: "Bundle", policy=None, *, verifier=None) -> tuple[tuple, list[Problem]]:
    """(SignatureReport per signed variant, problems). `policy`: a sigstore
    verification policy; default: this GitHub workflow run's identity, else the
    bundle is only parsed (who signed it is reported, not judged)."""
    signed = [v for v in bundle.variants if (v.path / SIGNATURE_FILE).is_file()]
    if not signed:
        return (), []
    from pipeline import signing  # sigstore is heavy: only for trees that hold signatures

    reports, problems = [], []
    for v in signed:
        rel = f"{bundle.root.name}/{v.name}/{SIGNATURE_FILE}"
        report = signing.check_variant(v.path, policy, verifier=verifier)
        reports.append(report)
        if report.status in ("rejected", "bundle-invalid", "metadata-missing"):
            problems.append(Problem(rel, None, "signature-invalid", f"signature {report.status}: {report.reason}",
                                    hint="re-sign the variant in the release job (ci/sign.py); never edit "
                                         "metadata.json after signing"))
        elif report.status == "unverifiable":
            problems.append(Problem(rel, None, "signature-unverifiable", report.reason,
                                    hint="verifying needs Sigstore's trust root (network); run check again online",
                                    severity="warning"))
    return tuple(reports), problems

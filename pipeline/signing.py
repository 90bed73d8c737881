"""Keyless Sigstore signatures of each variant's metadata.json, where kernels looks for them.

`kernels` (`kernels.verify.verify_variant`, `kernels verify-signature`) reads
`<variant>/metadata.json.sigstore`: a Sigstore bundle (v0.3 JSON, what
`cosign sign-blob --bundle` and sigstore-python write) over the exact bytes of
`metadata.json`. metadata.json holds the digest of every other file of the
variant, and kernels' digest leaves out metadata.json and this bundle, so the
one signature covers the whole variant: sign after the last change to the
variant, upload the bundle beside metadata.json, never rewrite either.

Signing (`github_signer`, `sign_tree`) runs only in a GitHub Actions job with
`permissions: id-token: write`: GitHub's OIDC token names the repository,
workflow file, ref and commit; Sigstore's Fulcio puts them in a ten-minute
certificate; every signature is logged in Rekor. A verified signature
therefore proves that this workflow file, at that ref and commit of that
repository, produced these metadata bytes; not that the code is correct or
that its author is trusted.

Verification (`verify_variant`) checks the bundle against a policy: kernels'
own `GitHubWorkflowPolicy` (issuer, repository, workflow@ref), built by
`workflow_policy`. The verifier is Sigstore's production one unless another is
given (offline tests give a stand-in's).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, Literal, Mapping, Protocol

from cryptography.hazmat import asn1
from cryptography.x509 import Certificate, ExtensionNotFound, ObjectIdentifier
from kernels.verify import GitHubWorkflowPolicy
from sigstore.errors import Error as SigstoreError
from sigstore.errors import VerificationError
from sigstore.models import Bundle, ClientTrustConfig, InvalidBundle
from sigstore.oidc import IdentityToken, detect_credential
from sigstore.sign import SigningContext
from sigstore.verify import Verifier
from sigstore.verify.policy import VerificationPolicy

from pipeline.errors import PublishError
from pipeline.fsutil import atomic_write_text

METADATA_FILE = "metadata.json"
SIGNATURE_FILE = "metadata.json.sigstore"  # the name kernels.verify.verify_variant opens
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
WORKFLOW = ".github/workflows/kernels.yml"

# Fulcio's certificate extensions (https://github.com/sigstore/fulcio/blob/main/docs/oid-info.md), DER UTF8String.
_OIDS = {
    "issuer": "1.3.6.1.4.1.57264.1.8",
    "build_signer_uri": "1.3.6.1.4.1.57264.1.9",
    "source_repository": "1.3.6.1.4.1.57264.1.12",
    "source_digest": "1.3.6.1.4.1.57264.1.13",
    "source_ref": "1.3.6.1.4.1.57264.1.14",
    "trigger": "1.3.6.1.4.1.57264.1.20",
    "run_uri": "1.3.6.1.4.1.57264.1.21",
}

# present: a bundle that parses, whose signer is reported but not judged (no policy given).
Status = Literal["verified", "present", "unsigned", "bundle-invalid", "metadata-missing", "rejected", "unverifiable"]


class ArtifactSigner(Protocol):
    def sign_artifact(self, input_: bytes) -> Bundle: ...


@dataclass(frozen=True)
class SignerIdentity:
    """Who signed, as the signing certificate states it."""

    issuer: str | None = None
    build_signer_uri: str | None = None  # https://github.com/o/r/.github/workflows/kernels.yml@refs/tags/v1
    source_repository: str | None = None  # https://github.com/o/r
    source_digest: str | None = None  # the commit
    source_ref: str | None = None
    trigger: str | None = None
    run_uri: str | None = None


@dataclass(frozen=True)
class SignatureReport:
    variant: str
    status: Status
    reason: str = ""
    identity: SignerIdentity | None = None
    log_index: int | None = None  # the Rekor entry

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    def card_line(self) -> str:
        """One line for the kernel card."""
        if self.status == "unsigned":
            return f"`{self.variant}`: not signed"
        who = (self.identity.build_signer_uri if self.identity else None) or "an unknown signer"
        if self.ok:
            return f"`{self.variant}`: signed by {who} (Sigstore, Rekor entry {self.log_index})"
        if self.status == "present":
            return f"`{self.variant}`: signed by {who} (Sigstore, Rekor entry {self.log_index}; signer not checked)"
        return f"`{self.variant}`: signature {self.status} ({who}): {self.reason}"

    def to_json(self) -> dict:
        return asdict(self)


def identity_of(cert: Certificate) -> SignerIdentity:
    values: dict[str, str | None] = {}
    for name, oid in _OIDS.items():
        try:
            raw = cert.extensions.get_extension_for_oid(ObjectIdentifier(oid)).value.value  # type: ignore[attr-defined]
            values[name] = asn1.decode_der(str, raw)
        except (ExtensionNotFound, ValueError, AttributeError):
            values[name] = None
    return SignerIdentity(**values)


def workflow_policy(repository: str, refs: tuple[str, ...], workflow: str = WORKFLOW) -> VerificationPolicy:
    """kernels' own policy for signatures made by `workflow` of GitHub `repository` at one of `refs`
    (e.g. "refs/tags/v1.2.0", "refs/heads/main")."""
    return GitHubWorkflowPolicy(repo_id=repository,
                                signer_uris=[f"https://github.com/{repository}/{workflow}@{ref}" for ref in refs])


def policy_from_github_env(env: Mapping[str, str] = os.environ) -> VerificationPolicy | None:
    """Inside a GitHub Actions job: the policy for this very workflow run's identity
    (GITHUB_REPOSITORY, GITHUB_WORKFLOW_REF = owner/repo/path@ref); None elsewhere."""
    repository, workflow_ref = env.get("GITHUB_REPOSITORY", ""), env.get("GITHUB_WORKFLOW_REF", "")
    prefix = f"{repository}/"
    if not repository or not workflow_ref.startswith(prefix) or "@" not in workflow_ref:
        return None
    workflow, _, ref = workflow_ref[len(prefix):].partition("@")
    return workflow_policy(repository, (ref,), workflow)


def variant_dirs(tree: Path) -> list[Path]:
    """Variant directories of a build tree (`<variant>/`) or a bundle (`<kernel>/<variant>/`)."""
    tree = Path(tree)
    found = {p.parent for p in tree.glob(f"*/{METADATA_FILE}")} | {p.parent for p in tree.glob(f"*/*/{METADATA_FILE}")}
    return sorted(found)


def sign_variant(variant_dir: Path, signer: ArtifactSigner) -> Path:
    """Sign `<variant_dir>/metadata.json`; the bundle goes beside it as metadata.json.sigstore."""
    metadata = Path(variant_dir) / METADATA_FILE
    try:
        data = metadata.read_bytes()
    except FileNotFoundError:
        raise PublishError(f"{variant_dir} has no {METADATA_FILE} to sign", code="sign-metadata-missing",
                           path=str(variant_dir)) from None
    kernel_id = str(json.loads(data).get("id", ""))
    if kernel_id.endswith("_dirty"):
        raise PublishError(f"refusing to sign {variant_dir.name}: built from a dirty tree (id {kernel_id})",
                           code="sign-dirty", path=str(metadata), hint="rebuild from a clean, committed tree")
    bundle = signer.sign_artifact(data)
    target = metadata.with_name(SIGNATURE_FILE)
    atomic_write_text(target, bundle.to_json())
    return target


def sign_tree(tree: Path, signer: ArtifactSigner) -> list[Path]:
    """Sign every variant of `tree`; refuse a tree with none."""
    dirs = variant_dirs(tree)
    if not dirs:
        raise PublishError(f"{tree} holds no variant directory with a {METADATA_FILE}", code="sign-nothing",
                           path=str(tree), hint="give the joined bundle (<kernel>/<variant>/) or a build tree")
    return [sign_variant(d, signer) for d in dirs]


@contextlib.contextmanager
def github_signer() -> Iterator[ArtifactSigner]:
    """The keyless signer of a GitHub Actions job: the job's ambient OIDC token, Sigstore's public
    Fulcio and Rekor. Needs the network and `permissions: id-token: write`: nothing here runs offline."""
    if not os.environ.get("ACTIONS_ID_TOKEN_REQUEST_URL"):
        raise PublishError("no GitHub OIDC token to sign with", code="sign-no-oidc",
                           hint="sign in a GitHub Actions job with `permissions: id-token: write`")
    try:
        token = IdentityToken(detect_credential() or "")
        context = SigningContext.from_trust_config(ClientTrustConfig.production())
        with context.signer(token) as signer:
            yield signer
    except SigstoreError as exc:
        raise PublishError(f"Sigstore signing failed: {exc}", code="sign-failed",
                           hint="the job needs network access to fulcio.sigstore.dev and rekor.sigstore.dev") from None


def _read_bundle(variant_dir: Path) -> tuple[SignatureReport | None, Bundle | None]:
    """The variant's bundle, or the report that says why there is none to check."""
    name = variant_dir.name
    bundle_path = variant_dir / SIGNATURE_FILE
    if not bundle_path.is_file():
        return SignatureReport(name, "unsigned"), None
    try:
        bundle = Bundle.from_json(bundle_path.read_bytes())
    except (InvalidBundle, ValueError) as exc:
        return SignatureReport(name, "bundle-invalid", str(exc).splitlines()[0] if str(exc) else type(exc).__name__), None
    if not (variant_dir / METADATA_FILE).is_file():
        return SignatureReport(name, "metadata-missing", identity=identity_of(bundle.signing_certificate),
                               log_index=_log_index(bundle)), None
    return None, bundle


def _log_index(bundle: Bundle) -> int:
    return int(bundle.log_entry._inner.log_index)  # no public accessor in sigstore 4


def inspect_variant(variant_dir: Path) -> SignatureReport:
    """Who signed the variant, without judging it against a policy (status `present`)."""
    variant_dir = Path(variant_dir)
    early, bundle = _read_bundle(variant_dir)
    if early is not None:
        return early
    return SignatureReport(variant_dir.name, "present", "not checked against a signer policy",
                           identity_of(bundle.signing_certificate), _log_index(bundle))


def verify_variant(variant_dir: Path, policy: VerificationPolicy, *, verifier: Verifier | None = None) -> SignatureReport:
    """Check `<variant_dir>/metadata.json.sigstore` against metadata.json and `policy`, as
    kernels.verify.verify_variant does (its digest half is `pipeline check`'s)."""
    variant_dir = Path(variant_dir)
    name = variant_dir.name
    early, bundle = _read_bundle(variant_dir)
    if early is not None:
        return early
    identity, log_index = identity_of(bundle.signing_certificate), _log_index(bundle)
    metadata = variant_dir / METADATA_FILE
    try:
        # Sigstore's trust root comes from its TUF repository: offline, TUFError says so.
        (verifier or Verifier.production()).verify_artifact(metadata.read_bytes(), bundle, policy)
    except SigstoreError as exc:
        if not isinstance(exc, VerificationError):
            return SignatureReport(name, "unverifiable", str(exc), identity, log_index)
        expected = getattr(policy, "signer_uris", None)  # sigstore's AnyOf says only "0 of 1 policies succeeded"
        reason = f"{exc}; signed by {identity.build_signer_uri}" + (f", expected {' or '.join(expected)}"
                                                                     if expected else "")
        return SignatureReport(name, "rejected", reason, identity, log_index)
    return SignatureReport(name, "verified", identity=identity, log_index=log_index)


def check_variant(variant_dir: Path, policy: VerificationPolicy | None = None, *,
                  verifier: Verifier | None = None) -> SignatureReport:
    """The one judgement every stage makes of a variant's signature: against `policy`, by default
    this GitHub workflow run's identity when inside one; otherwise only read (status `present`)."""
    policy = policy if policy is not None else policy_from_github_env()
    if policy is None:
        return inspect_variant(variant_dir)
    return verify_variant(variant_dir, policy, verifier=verifier)

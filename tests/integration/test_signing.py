"""pipeline/signing.py, offline: sign and verify with a LOCAL STAND-IN for Sigstore's services.

The stand-in (tests/fixtures/sigstore-standin/standin.py) plays Fulcio, its CT
log and Rekor with keys it makes per test, so sigstore-python's real Signer
and Verifier and kernels' own `verify_variant` run here. What only a GitHub
Actions release job exercises: GitHub's OIDC token, Sigstore's production
trust root and the public Fulcio and Rekor (`signing.github_signer`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import signing
from pipeline.build import layout
from pipeline.errors import PublishError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "sigstore-standin"))
from standin import LocalSigstore  # noqa: E402  (a test fixture module, not a package)

REPO_ID = "example/kernel-pipeline"
REF = "refs/tags/v1.0.0"
VARIANTS = ("torch213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux")


def make_variant(root: Path, name: str, kernel_id: str = "_tiny_add_cpu_abc1234") -> Path:
    variant = root / "tiny-add" / name
    variant.mkdir(parents=True)
    (variant / "__init__.py").write_text("from ._ops import ops\n")
    (variant / "_ops.py").write_text(f"import torch\nops = torch.ops.{kernel_id}\n")
    layout.write_metadata(variant, layout.metadata_document(
        name="tiny-add", kernel_id=kernel_id, version=1, license="Apache-2.0", python_depends=(), backend="cpu",
        archs=None, digest=layout.hash_variant(variant), source_commit="a" * 40, source_dirty=False, toolchain={}))
    return variant


@pytest.fixture
def sigstore() -> LocalSigstore:
    return LocalSigstore()


@pytest.fixture
def signed(tmp_path, sigstore) -> Path:
    """A bundle tree with two variants, signed as the release job of example/kernel-pipeline at v1.0.0 would."""
    for name in VARIANTS:
        make_variant(tmp_path / "bundle", name)
    token = sigstore.github_token(REPO_ID, signing.WORKFLOW, REF)
    with sigstore.signing_context().signer(token) as signer:
        written = signing.sign_tree(tmp_path / "bundle", signer)
    assert [p.parent.name for p in written] == sorted(VARIANTS)
    return tmp_path / "bundle"


def policy(ref: str = REF, repo: str = REPO_ID):
    return signing.workflow_policy(repo, (ref,))


def test_every_variant_is_signed_beside_its_metadata_and_verifies(signed, sigstore):
    reports = [signing.verify_variant(v, policy(), verifier=sigstore.verifier()) for v in signing.variant_dirs(signed)]
    assert [r.status for r in reports] == ["verified", "verified"]
    assert sorted(r.log_index for r in reports) == [0, 1]  # one Rekor entry per metadata.json
    identity = reports[0].identity
    assert identity.build_signer_uri == f"https://github.com/{REPO_ID}/.github/workflows/kernels.yml@{REF}"
    assert identity.source_repository == f"https://github.com/{REPO_ID}" and identity.source_ref == REF
    assert identity.issuer == signing.GITHUB_ISSUER
    assert reports[0].card_line().startswith(f"`{reports[0].variant}`: signed by https://github.com/{REPO_ID}/")
    bundle = json.loads((signing.variant_dirs(signed)[0] / "metadata.json.sigstore").read_text())
    assert bundle["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json"


def test_kernels_own_verify_variant_accepts_the_bundle(signed, sigstore, monkeypatch):
    """kernels.verify.verify_variant finds metadata.json.sigstore, parses it, applies its own
    GitHubWorkflowPolicy and checks the digest; only its production verifier is swapped for the stand-in's."""
    from kernels import verify as kernels_verify

    monkeypatch.setattr(kernels_verify.Verifier, "production", classmethod(lambda cls, **_: sigstore.verifier()))
    ours = [kernels_verify.GitHubWorkflowPolicy(
        repo_id=REPO_ID, signer_uris=[f"https://github.com/{REPO_ID}/.github/workflows/kernels.yml@{REF}"])]
    for variant in signing.variant_dirs(signed):
        assert isinstance(kernels_verify.verify_variant(variant, ours), kernels_verify.VerificationResult.Success)
        # kernels' default policies trust only kernels-community's workflows
        result = kernels_verify.verify_variant(variant)
        assert isinstance(result, kernels_verify.VerificationResult.SignatureVerificationFailure)


def test_a_changed_metadata_or_file_is_caught(signed, sigstore, monkeypatch):
    from kernels import verify as kernels_verify

    first, second = signing.variant_dirs(signed)
    meta = first / "metadata.json"
    meta.write_bytes(meta.read_bytes().replace(b'"license": "Apache-2.0"', b'"license": "MIT"'))
    report = signing.verify_variant(first, policy(), verifier=sigstore.verifier())
    assert report.status == "rejected" and report.identity is not None
    # a file changed after signing: the signature still holds, the signed digest no longer matches (kernels' half)
    (second / "_ops.py").write_text("import os\n")
    assert signing.verify_variant(second, policy(), verifier=sigstore.verifier()).ok
    monkeypatch.setattr(kernels_verify.Verifier, "production", classmethod(lambda cls, **_: sigstore.verifier()))
    result = kernels_verify.verify_variant(second, [policy()])
    assert isinstance(result, kernels_verify.VerificationResult.DigestVerificationFailure)


@pytest.mark.parametrize("ref,repo", [("refs/heads/feature", REPO_ID), (REF, "someone/else")])
def test_another_ref_or_repository_is_rejected_naming_the_signer(signed, sigstore, ref, repo):
    report = signing.verify_variant(signing.variant_dirs(signed)[0], policy(ref, repo), verifier=sigstore.verifier())
    assert report.status == "rejected" and not report.ok
    assert f"signed by https://github.com/{REPO_ID}/.github/workflows/kernels.yml@{REF}, expected " \
           f"https://github.com/{repo}/.github/workflows/kernels.yml@{ref}" in report.reason
    assert f"kernels.yml@{REF}" in report.card_line()


def test_unsigned_invalid_and_missing_metadata(tmp_path, signed, sigstore):
    unsigned = make_variant(tmp_path / "other", VARIANTS[0])
    assert signing.verify_variant(unsigned, policy(), verifier=sigstore.verifier()).status == "unsigned"
    (unsigned / signing.SIGNATURE_FILE).write_text('{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}')
    assert signing.verify_variant(unsigned, policy(), verifier=sigstore.verifier()).status == "bundle-invalid"
    variant = signing.variant_dirs(signed)[0]
    (variant / "metadata.json").unlink()
    assert signing.verify_variant(variant, policy(), verifier=sigstore.verifier()).status == "metadata-missing"


def test_the_stand_in_is_not_trusted_by_sigstores_production_root(signed):
    from sigstore.verify import Verifier

    report = signing.verify_variant(signing.variant_dirs(signed)[0], policy(), verifier=Verifier.production(offline=True))
    assert report.status == "rejected"


def test_a_dirty_build_and_an_empty_tree_are_not_signed(tmp_path, sigstore):
    dirty = make_variant(tmp_path / "bundle", VARIANTS[0], kernel_id="_tiny_add_cpu_abc1234_dirty")
    token = sigstore.github_token(REPO_ID, signing.WORKFLOW, REF)
    with sigstore.signing_context().signer(token) as signer:
        with pytest.raises(PublishError) as caught:
            signing.sign_tree(tmp_path / "bundle", signer)
        assert caught.value.code == "sign-dirty" and not (dirty / signing.SIGNATURE_FILE).exists()
        (tmp_path / "empty").mkdir()
        with pytest.raises(PublishError) as caught:
            signing.sign_tree(tmp_path / "empty", signer)
        assert caught.value.code == "sign-nothing"


def test_outside_github_actions_there_is_no_identity_to_sign_with(monkeypatch):
    monkeypatch.delenv("ACTIONS_ID_TOKEN_REQUEST_URL", raising=False)
    with pytest.raises(PublishError) as caught:
        with signing.github_signer():
            pass
    assert caught.value.code == "sign-no-oidc" and "id-token: write" in caught.value.hint


def test_the_policy_of_the_running_workflow_comes_from_githubs_variables():
    env = {"GITHUB_REPOSITORY": REPO_ID, "GITHUB_WORKFLOW_REF": f"{REPO_ID}/.github/workflows/kernels.yml@{REF}"}
    found = signing.policy_from_github_env(env)
    assert found.signer_uris == [f"https://github.com/{REPO_ID}/.github/workflows/kernels.yml@{REF}"]
    assert found.repo_id == REPO_ID
    assert signing.policy_from_github_env({}) is None
    assert signing.policy_from_github_env({**env, "GITHUB_WORKFLOW_REF": "other/repo/x.yml@main"}) is None


def test_ci_sign_refuses_without_an_oidc_token_and_writes_nothing(tmp_path):
    make_variant(tmp_path / "bundle", VARIANTS[0])
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("ACTIONS_", "GITHUB_"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "ci/sign.py", str(tmp_path / "bundle")], cwd=env["PYTHONPATH"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stdout + done.stderr
    assert "sign-no-oidc: no GitHub OIDC token to sign with" in done.stdout + done.stderr
    assert not list((tmp_path / "bundle").rglob(signing.SIGNATURE_FILE))


# --- pipeline check reports the signatures of a tree -------------------------------

def test_check_reports_who_signed_and_refuses_a_broken_or_foreign_signature(signed, sigstore, monkeypatch):
    from pipeline.bundle import check_bundle
    from pipeline.bundle_signatures import check_signatures

    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    tree = signed / "tiny-add"
    report = check_bundle(tree)
    assert [r.status for r in report.signatures] == ["present", "present"]
    assert not [p for p in report.problems if p.code.startswith("signature")]
    assert all("signer not checked" in r.card_line() for r in report.signatures)
    bundle = report.bundle
    reports, problems = check_signatures(bundle, policy(), verifier=sigstore.verifier())
    assert [r.status for r in reports] == ["verified", "verified"] and not problems
    reports, problems = check_signatures(bundle, policy(ref="refs/tags/v9"), verifier=sigstore.verifier())
    assert {r.status for r in reports} == {"rejected"} and {p.code for p in problems} == {"signature-invalid"}
    (tree / VARIANTS[0] / signing.SIGNATURE_FILE).write_text("{not a bundle")
    broken = check_bundle(tree)
    assert not broken.ok and any(p.code == "signature-invalid" and VARIANTS[0] in p.path for p in broken.errors)


# --- a signed bundle through publish and verify -------------------------------------

@pytest.mark.slow
def test_a_signed_variant_is_published_with_its_signature_and_verify_reports_it(tmp_path, sigstore, monkeypatch):
    """The signature is uploaded beside metadata.json, the card names the signer, and verify
    reads it from the variant get_kernel downloaded (here not judged: no workflow identity)."""
    from huggingface_hub import HfApi

    from pipeline.hub import EmbeddedHub
    from pipeline.publish import PublishRequest, publish
    from pipeline.target import Target
    from pipeline.workspace import resolve
    from test_bundle_support import make_project, make_variant as make_built_variant

    monkeypatch.setenv("PIPELINE_CONSUMERS", "none")
    for var in ("GITHUB_REPOSITORY", "GITHUB_WORKFLOW_REF"):
        monkeypatch.delenv(var, raising=False)
    project = make_project(tmp_path / "tiny")
    variant = make_built_variant(project / "build")
    token = sigstore.github_token(REPO_ID, signing.WORKFLOW, REF)
    with sigstore.signing_context().signer(token) as signer:
        signing.sign_tree(project / "build", signer)
    with EmbeddedHub(tmp_path / "hub", port=0, trusted_namespaces=["org"]) as hub:
        result = publish(PublishRequest(repo_id="org/tiny", kernel=resolve(project)),
                         Target("--endpoint", hub.endpoint, hub.admin_token))
        api = HfApi(endpoint=hub.endpoint)
        files = {f.path for f in api.list_repo_tree("org/tiny", recursive=True, revision="v1", repo_type="kernel")
                 if hasattr(f, "blob_id")}
        card = Path(api.hf_hub_download("org/tiny", "README.md", repo_type="kernel",
                                        cache_dir=tmp_path / "dl")).read_text()
    name = Path(variant).name
    assert f"build/{name}/{signing.SIGNATURE_FILE}" in files
    assert "Signatures (Sigstore" in card and REPO_ID in card
    assert result.verify.ok and result.verify.load.signature.startswith("present:")

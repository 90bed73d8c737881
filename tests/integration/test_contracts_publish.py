"""Projects without our case file: a project shaped like kernels-community's
relu (CPU, its own kernels_ci tests, no tests/smoke_cases.py) is smoke-tested
through the contract inferred from its op and published to a fresh embedded
Hub; a project nothing tests is refused with an exact error, and published
with --allow-untested only with an "untested" mark on its card."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from values import bundle_of
from pipeline.build import build_project
from pipeline.errors import PublishError
from pipeline.project import load_project
from pipeline.publish import PublishRequest, publish
from pipeline.smoke import run_smoke
from pipeline.target import Target
from pipeline.workspace import resolve
from test_bundle_support import make_project, make_variant

REPO = Path(__file__).resolve().parents[2]
RELU = REPO / "tests" / "fixtures" / "relu-like"
ORG = "tiny-org"


def _git(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "relu"]):
        subprocess.run(cmd, cwd=root, check=True, env=env, capture_output=True)


@pytest.fixture(scope="module")
def relu_project(tmp_path_factory) -> Path:
    """The fixture copied out (outside any workspace), committed and built: ~30 s."""
    root = tmp_path_factory.mktemp("relu") / "relu"
    shutil.copytree(RELU, root)
    _git(root)
    build_project(load_project(root), root / "build", backend="local")
    return root


@pytest.fixture
def hub(tmp_path):
    from pipeline.hub import EmbeddedHub

    with EmbeddedHub(tmp_path / "hub", host="127.0.0.1", port=0, trusted_namespaces=[ORG]) as h:
        yield h


def _readme(hub, repo_id: str, tmp_path: Path) -> str:
    return Path(HfApi(endpoint=hub.endpoint).hf_hub_download(repo_id, "README.md", repo_type="kernel",
                                                             cache_dir=tmp_path / "dl")).read_text()


@pytest.mark.slow
def test_relu_like_project_is_smoked_through_its_inferred_contract_and_its_tests(relu_project):
    kernel = resolve(relu_project)
    assert kernel.smoke_cases is None and kernel.workspace is None and kernel.contracts == ()
    report = run_smoke(bundle_of(relu_project / "build"), kernel, trials=2, op_checks=False)
    assert report.passed, [f"{r.name}: {r.message}" for r in report.failures][:5]
    (cov,) = report.coverage
    assert (cov.op, cov.contract, cov.how, cov.project_cases) == ("relu", "relu", "inferred", 0)
    assert cov.contract_cases > 40 and "1024x4096" in cov.shapes and len(cov.seeds) == 2
    tests = report.project_tests
    assert tests is not None and (tests.ran, tests.failed) == (3, 0)
    assert report.untested == () and not any(d.delegates for d in report.delegation)


@pytest.mark.slow
def test_relu_like_project_publishes_and_verifies(relu_project, hub, tmp_path):
    request = PublishRequest(repo_id=f"{ORG}/relu", kernel=resolve(relu_project))
    pub = publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))
    assert [c.branch for c in pub.commits] == ["v1", "main"]
    assert pub.verify is not None and pub.verify.ok, pub.verify.to_json()
    assert pub.verify.load.cases > 40  # the contract's cases, in verify's fresh process
    card = _readme(hub, f"{ORG}/relu", tmp_path)
    assert "## Verification" in card and "| `relu` | `relu` (inferred) |" in card
    assert "Untested" not in card


@pytest.fixture
def untested_project(tmp_path) -> Path:
    """The tiny `scale` op (no contract fits it) with its case file removed."""
    root = make_project(tmp_path / "tiny", git=False)
    (root / "tests" / "smoke_cases.py").unlink()
    _git(root)
    make_variant(root / "build")
    return root


def test_a_project_nothing_tests_is_refused_with_the_exact_error(untested_project, hub):
    request = PublishRequest(repo_id=f"{ORG}/tiny", kernel=resolve(untested_project), verify=False)
    with pytest.raises(PublishError) as exc:
        publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))
    err = exc.value
    assert err.code == "publish-untested" and err.exit_code == 9
    assert err.message == ("1 op(s) of tiny are tested by nothing: scale (no contract matches them and no case in "
                           "tests/smoke_cases.py calls them); nothing was uploaded")
    assert "--contract scale=FAMILY" in err.hint and "tests/smoke_cases.py" in err.hint
    assert "--allow-untested" in err.hint
    assert HfApi(endpoint=hub.endpoint).list_models() is not None  # the Hub answers; nothing was created
    with pytest.raises(Exception):
        HfApi(endpoint=hub.endpoint, token=hub.admin_token).list_repo_refs(f"{ORG}/tiny", repo_type="kernel")


def test_allow_untested_publishes_with_the_mark_on_the_card(untested_project, hub, tmp_path):
    request = PublishRequest(repo_id=f"{ORG}/tiny", kernel=resolve(untested_project), verify=False,
                             allow_untested=True)
    pub = publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))
    assert pub.gate.untested == ("scale",) and pub.commits
    card = _readme(hub, f"{ORG}/tiny", tmp_path)
    assert "> **Untested**: published with `--allow-untested`. No contract and no case checked `scale`." in card
    assert "| `scale` | none | 0 | 0 |" in card


def test_publish_cli_takes_contract_and_allow_untested(untested_project):
    bad = subprocess.run([sys.executable, "-m", "pipeline", "publish", f"{ORG}/tiny", "--kernel",
                          str(untested_project), "--contract", "scale", "--dry-run"],
                         capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert bad.returncode == 2 and "expected OP=FAMILY" in bad.stderr
    unknown = subprocess.run([sys.executable, "-m", "pipeline", "publish", f"{ORG}/tiny", "--kernel",
                              str(untested_project), "--contract", "scale=scaling", "--dry-run"],
                             capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert unknown.returncode == 7 and "contract-unknown" in unknown.stderr

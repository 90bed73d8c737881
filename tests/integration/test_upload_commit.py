"""upload.commit stopped part-way (Ctrl-C between the steps) against a real
embedded Hub: what it leaves, what it says, and that a rerun finishes the job."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi

from pipeline.errors import PublishError
from pipeline.hub import EmbeddedHub
from pipeline.publish import PublishRequest, publish
from pipeline.target import Target
from pipeline.upload.commit import RERUN
from pipeline.workspace import resolve
from test_bundle_support import make_project, make_variant

ORG = "tiny-org"
REPO_ID = f"{ORG}/tiny"


@pytest.fixture
def hub(tmp_path):
    with EmbeddedHub(tmp_path / "hub", host="127.0.0.1", port=0, trusted_namespaces=[ORG]) as h:
        yield h


@pytest.fixture
def project(tmp_path):
    root = make_project(tmp_path / "tiny")
    make_variant(root / "build")
    return root


def _publish(project, hub):
    request = PublishRequest(repo_id=REPO_ID, kernel=resolve(project), verify=False)
    return publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))


def _interrupt_commit(monkeypatch, number: int) -> list[str]:
    """Ctrl-C arrives as commit `number` (1-based) is sent; the others go through."""
    real = HfApi.create_commit
    branches: list[str] = []

    def create_commit(self, *args, **kwargs):
        branches.append(kwargs.get("revision"))
        if len(branches) == number:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HfApi, "create_commit", create_commit)
    return branches


def _branches(hub) -> dict[str, list[str]]:
    api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
    refs = api.list_repo_refs(REPO_ID, repo_type="kernel")
    return {b.name: sorted(f.path for f in api.list_repo_tree(REPO_ID, revision=b.name, recursive=True,
                                                                repo_type="kernel") if hasattr(f, "blob_id"))
            for b in refs.branches}


@pytest.mark.slow
def test_interrupted_before_the_first_commit_leaves_no_empty_repository(hub, project, monkeypatch):
    _interrupt_commit(monkeypatch, 1)
    with pytest.raises(PublishError) as err:
        _publish(project, hub)
    assert err.value.code == "publish-interrupted" and err.value.exit_code == 130
    assert "deleted again: the Hub is as it was" in err.value.message and err.value.hint == RERUN
    assert not HfApi(endpoint=hub.endpoint, token=hub.admin_token).repo_exists(REPO_ID, repo_type="kernel")


@pytest.mark.slow
def test_interrupted_between_the_commits_says_so_and_a_rerun_finishes(hub, project, monkeypatch):
    sent = _interrupt_commit(monkeypatch, 2)
    with pytest.raises(PublishError) as err:
        _publish(project, hub)
    assert sent == ["v1", "main"]
    assert err.value.code == "publish-interrupted"
    assert "v1 committed; not yet: main" in err.value.message and "card" in err.value.message
    state = _branches(hub)
    assert any(p.endswith(".abi3.so") for p in state["v1"]) and "README.md" not in state["main"]
    monkeypatch.undo()
    again = _publish(project, hub)
    assert [c.branch for c in again.commits] == ["main"]  # only the missing commit
    assert "README.md" in _branches(hub)["main"]

"""huggingface_hub 1.x and 2.x: publish, verify and the embedded Hub.

huggingface_hub 1.x addresses kernel repositories (URLs, downloads,
create_repo) but its commit methods refuse repository type `kernel`
(`ValueError: Invalid repo type`): `hubclient.guarded` makes such a call
again with the type allowed, and a huggingface_hub that cannot address kernel
repositories at all gets `hub-client-too-old`. The slow tests publish with
huggingface_hub 1.33.0 installed in a venv, as on the H200 image, and load
the publication with kernels 0.16.2 and 0.17.2."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants

from pipeline.consumers import CONSUMERS, ConsumerSpec
from pipeline.errors import PublishError
from pipeline.hubclient import guarded, publisher_trusted, read_remote, refuses_kernel_type

from consumer_support import consumer_env, json_of, pipeline_env, rmsnorm_build, rmsnorm_copy, run_pipeline

REPO_ID = "kernels-pipeline/rmsnorm"


def _hf1_commit(calls: list):
    """What huggingface_hub 1.x's create_commit does with repo_type="kernel"."""
    def create_commit():
        calls.append(list(constants.REPO_TYPES))
        if "kernel" not in constants.REPO_TYPES:
            raise ValueError(f"Invalid repo type, must be one of {constants.REPO_TYPES}")
        return "committed"
    return create_commit


def test_a_kernel_type_refusal_is_retried_with_the_type_allowed_then_restored(monkeypatch):
    monkeypatch.setattr(constants, "REPO_TYPES", [None, "model", "dataset", "space"])
    calls: list = []
    assert guarded("commit", REPO_ID, _hf1_commit(calls)) == "committed"
    assert calls == [[None, "model", "dataset", "space"], [None, "model", "dataset", "space", "kernel"]]
    assert constants.REPO_TYPES == [None, "model", "dataset", "space"]


def test_other_value_errors_are_not_retried():
    calls = []

    def fails():
        calls.append(1)
        raise ValueError("Invalid repo id")

    with pytest.raises(ValueError):
        guarded("commit", REPO_ID, fails)
    assert calls == [1]
    assert not refuses_kernel_type(ValueError("something else"))


def test_a_client_that_cannot_address_kernel_repositories_names_the_version_it_needs(monkeypatch):
    monkeypatch.setattr(constants, "REPO_TYPES", [None, "model", "dataset", "space"])
    monkeypatch.delitem(constants.REPO_TYPES_URL_PREFIXES, "kernel")
    with pytest.raises(PublishError) as err:
        guarded("commit", REPO_ID, _hf1_commit([]))
    assert err.value.code == "hub-client-too-old" and "huggingface_hub>=1.10" in err.value.hint


def test_publisher_trust_is_read_from_the_target_hub(tmp_path):
    """At the target's endpoint (HfApi.get_organization_overview of
    huggingface_hub 1.x asks huggingface.co whatever the endpoint)."""
    from huggingface_hub import HfApi

    from pipeline.hub import EmbeddedHub

    with EmbeddedHub(tmp_path / "hub", port=0, trusted_namespaces=["kernels-pipeline"]) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
        assert [publisher_trusted(api, ns) for ns in ("kernels-pipeline", "other-org")] == [True, False]
        assert read_remote(api, "other-org/x").trusted is False
    assert publisher_trusted(HfApi(endpoint="http://127.0.0.1:9", token=False), "x") is None


def _card(hub, repo_id: str, tmp: Path) -> str:
    """The README.md the publish put on main."""
    from huggingface_hub import HfApi

    path = HfApi(endpoint=hub.endpoint, token=False).hf_hub_download(repo_id, "README.md", repo_type="kernel",
                                                                      cache_dir=tmp)
    return Path(path).read_text()


@pytest.fixture(scope="module")
def published_with_hf133(tmp_path_factory):
    """kernels-pipeline/rmsnorm (the run's shared build) published by `pipeline publish` running
    with huggingface_hub 1.33.0."""
    from pipeline.hub import EmbeddedHub

    tmp = tmp_path_factory.mktemp("hf133")
    publisher = consumer_env(ConsumerSpec(("huggingface_hub==1.33.0",)))
    kernel = rmsnorm_copy(tmp)
    with EmbeddedHub(tmp / "hub", port=0, trusted_namespaces=["kernels-pipeline"]) as hub:
        env = pipeline_env(hub, PIPELINE_CACHE_DIR=str(tmp / "build-cache"))
        proc = run_pipeline(publisher.python, "publish", REPO_ID, "--kernel", str(kernel), "--endpoint", hub.endpoint,
                            "--build-dir", str(rmsnorm_build()), "--json", env=env)
        yield publisher, kernel, hub, env, proc


@pytest.mark.slow
def test_publish_with_huggingface_hub_1_33_and_load_with_kernels_016_and_017(published_with_hf133):
    publisher, _, hub, env, proc = published_with_hf133
    assert publisher.versions["huggingface_hub"] == "1.33.0"
    doc = json_of(proc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["branch"] for c in doc["commits"]] == ["v1", "main"]
    verify = doc["verify"]
    assert verify["ok"] and verify["load"]["versions"]["huggingface_hub"] == "1.33.0", verify
    assert verify["trusted"] is True
    assert verify["consumers_proved"] == [c.label for c in CONSUMERS]
    card = _card(hub, REPO_ID, tmp=Path(env["PIPELINE_CACHE_DIR"]).parent / "card-trusted")
    assert f'get_kernel("{REPO_ID}", version=1)' in card and "## Checked with" in card
    assert all(f"- {c.label}" in card for c in CONSUMERS)
    for consumer in verify["consumers"]:
        load = consumer["load"]
        assert load["ok"] and load["cases"] > 0 and load["trusted"] is True, consumer
        assert load["versions"]["kernels"] == dict(r.split("==") for r in consumer["requirements"])["kernels"]


@pytest.mark.slow
def test_an_untrusted_namespace_is_loaded_as_its_users_must_and_said_so(published_with_hf133):
    publisher, kernel, hub, env, _ = published_with_hf133
    proc = run_pipeline(publisher.python, "publish", "other-org/rmsnorm", "--kernel", str(kernel), "--endpoint",
                        hub.endpoint, "--build-dir", str(rmsnorm_build()), "--json", env={**env, "PIPELINE_CONSUMERS": "kernels==0.16.2,huggingface_hub==1.33.0"})
    doc = json_of(proc)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verify = doc["verify"]
    assert verify["trusted"] is False and verify["load"]["trusted"] is False
    assert [c["load"]["trusted"] for c in verify["consumers"]] == [False]
    assert any(p["code"] == "publisher-untrusted" and p["severity"] == "warning" for p in verify["problems"])
    card = _card(hub, "other-org/rmsnorm", tmp=Path(env["PIPELINE_CACHE_DIR"]).parent / "card-untrusted")
    assert 'get_kernel("other-org/rmsnorm", version=1, trust_remote_code=True)' in card
    plain = run_pipeline(publisher.python, "verify", "other-org/rmsnorm", "--version", "1", "--kernel", str(kernel),
                         "--endpoint", hub.endpoint, "--consumers", "none", env=env)
    assert plain.returncode == 0 and "trust_remote_code=True" in plain.stdout, plain.stdout + plain.stderr


@pytest.mark.slow
def test_kernels_016_with_the_huggingface_hub_floor_loads_it(published_with_hf133):
    publisher, kernel, hub, env, _ = published_with_hf133
    proc = run_pipeline(publisher.python, "verify", REPO_ID, "--version", "1", "--kernel", str(kernel), "--endpoint",
                        hub.endpoint, "--consumers", "kernels==0.16.2,huggingface_hub==1.10.0", "--json", env=env)
    doc = json_of(proc)
    assert doc["consumers"][0]["ok"], doc["consumers"]

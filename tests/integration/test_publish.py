"""publish: target resolution, the upload plan, and real publishes to a fresh
embedded Hub on 127.0.0.1 (a real compiled op, real uploads, get_kernel in a
fresh process), including the failures that must leave the Hub unchanged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from huggingface_hub import HfApi

from pipeline.errors import PublishError
from pipeline.hubclient import RemoteState, read_remote
from pipeline.publish import PublishRequest, publish
from pipeline.target import DEFAULT_HUB_PORT, HF_HUB_ENDPOINT, Target, resolve_target, split_repo_id
from pipeline.upload.commit import execute_plan
from pipeline.upload.plan import plan_upload
from pipeline.workspace import resolve
from test_bundle_support import copy_variant_as, host_cpu_variant, make_project, make_variant

REPO = Path(__file__).resolve().parents[2]
ORG = "tiny-org"
REPO_ID = f"{ORG}/tiny"


# --- target resolution -----------------------------------------------------------

def test_target_precedence(tmp_path):
    env = {"HF_ENDPOINT": "http://env:1"}
    assert resolve_target("http://flag:2/", env=env, token="t").endpoint == "http://flag:2"
    assert resolve_target(None, env=env, token="t").source == "HF_ENDPOINT"
    hf = resolve_target(None, env={}, token="t")
    assert (hf.source, hf.endpoint, hf.token) == ("token", HF_HUB_ENDPOINT, "t")
    emb = resolve_target(None, env={"HF_TOKEN": ""}, token="", hub_root=tmp_path)
    assert emb.source == "embedded" and emb.hub_root == tmp_path and emb.hub_port == DEFAULT_HUB_PORT
    assert "embedded Hub" in emb.describe() and str(tmp_path) in emb.describe()


def test_token_from_env_wins(monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_env")
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    assert resolve_target(None).source == "token"


def test_split_repo_id():
    assert split_repo_id("org/name", "ws") == ("org/name", "name")
    assert split_repo_id("name", "ws") == ("ws/name", "name")
    for bad in ("a/b/c", "/x", "x/", "name"):
        with pytest.raises(PublishError):
            split_repo_id(bad, None if bad == "name" else "ws")


# --- a fresh Hub per test ------------------------------------------------------------

class Recorder:
    """A reporter that keeps every event's line."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, event):
        self.lines.append(f"{event.stage}: {event.message}")


@pytest.fixture
def hub(tmp_path):
    from pipeline.hub import EmbeddedHub

    with EmbeddedHub(tmp_path / "hub", host="127.0.0.1", port=0, trusted_namespaces=[ORG]) as h:
        yield h


@pytest.fixture
def project(tmp_path) -> Path:
    root = make_project(tmp_path / "tiny")
    make_variant(root / "build")
    return root


def target_of(hub, token: str | None = "admin") -> Target:
    return Target("--endpoint", hub.endpoint, hub.admin_token if token == "admin" else token)


def hub_state(hub) -> dict:
    """Everything a client can see: branches and their trees."""
    api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
    try:
        refs = api.list_repo_refs(REPO_ID, repo_type="kernel")
    except Exception as exc:  # no repository yet
        return {"missing": type(exc).__name__}
    state = {}
    for b in refs.branches:
        state[b.name] = (b.target_commit, sorted(f.path for f in api.list_repo_tree(
            REPO_ID, recursive=True, revision=b.target_commit, repo_type="kernel") if hasattr(f, "blob_id")))
    return state


def run_publish(project, hub, **kw) -> object:
    events = kw.pop("events", Recorder())
    target = kw.pop("target", None) or target_of(hub)
    request = PublishRequest(repo_id=kw.pop("repo_id", REPO_ID), kernel=resolve(project), **kw)
    return publish(request, target, report=events)


# --- the main path -----------------------------------------------------------------

@pytest.mark.slow
def test_publish_verify_republish_and_new_version(tmp_path, hub, project):
    host = host_cpu_variant()
    first = run_publish(project, hub)
    assert [c.branch for c in first.commits] == ["v1", "main"]
    assert first.verify is not None and first.verify.ok, first.verify.to_json()
    assert first.verify.load.variant == host and first.verify.load.cases == 1
    cell = next(c for c in first.verify.cells if c.cell == host)
    assert cell.chosen == host and cell.promised
    state = hub_state(hub)
    assert state["v1"][1] == sorted([*(f"build/{host}/{f}" for f in
                                                    ("__init__.py", "_ops.py", "_tiny_cpu_0a1b2c3.abi3.so",
                                                     "metadata.json"))])
    # v1 is mirrored to main, as upstream does: a plain get_kernel(repo) finds the builds there.
    assert state["main"][1] == sorted([*state["v1"][1], "README.md"])
    readme = Path(HfApi(endpoint=hub.endpoint).hf_hub_download(REPO_ID, "README.md", repo_type="kernel",
                                                               cache_dir=tmp_path / "dl")).read_text()
    assert 'get_kernel("tiny-org/tiny", version=1)' in readme and f"`{host}`" in readme
    assert readme.startswith("---\nlibrary_name: kernels\nlicense: apache-2.0\n")

    # Unchanged bundle: no commit, nothing uploaded, the Hub exactly as it was.
    again = run_publish(project, hub)
    assert again.commits == () and again.plan.empty and again.plan.upload_bytes == 0
    assert hub_state(hub) == state

    # A new version: v2 gets its own branch, v1 stays loadable.
    (project / "build.toml").write_text((project / "build.toml").read_text().replace("version = 1", "version = 2"))
    shutil.rmtree(project / "build")
    make_variant(project / "build", version=2, ops_name="_tiny_cpu_4d5e6f7")
    second = run_publish(project, hub)
    assert [c.branch for c in second.commits] == ["v2", "main"] and second.verify.ok
    assert hub_state(hub)["v1"] == state["v1"]
    # main keeps v1's builds (only the card moves to v2); v2 holds only its own.
    assert set(state["v1"][1]) <= set(hub_state(hub)["main"][1])
    assert f"build/{host}/_tiny_cpu_0a1b2c3.abi3.so" not in hub_state(hub)["v2"][1]
    from pipeline.verify import verify_publication

    v1 = verify_publication(hub.endpoint, REPO_ID, 1, kernel=resolve(project))
    assert v1.ok and v1.load.kernel_id == "_tiny_cpu_0a1b2c3", v1.to_json()

    # main's card now describes v2.
    assert "version=2" in Path(HfApi(endpoint=hub.endpoint).hf_hub_download(
        REPO_ID, "README.md", repo_type="kernel", cache_dir=tmp_path / "dl2")).read_text()


@pytest.mark.slow
def test_republished_variant_loses_stale_files_and_others_are_kept(tmp_path, hub, project):
    host = host_cpu_variant()
    other = "torch212-cxx11-cpu-x86_64-linux"
    copy_variant_as(project / "build" / host, project / "build", other)
    run_publish(project, hub, smoke=False, verify=False)
    # Rebuild only the host variant, with another kernel id: its old .so is stale.
    shutil.rmtree(project / "build")
    make_variant(project / "build", ops_name="_tiny_cpu_9f8e7d6")
    result = run_publish(project, hub, verify=False)
    ops = {(op.kind, op.path_in_repo) for b in result.plan.branches for op in b.ops}
    assert ("delete", f"build/{host}/_tiny_cpu_0a1b2c3.abi3.so") in ops
    assert ("add", f"build/{host}/_tiny_cpu_9f8e7d6.abi3.so") in ops
    assert not any(path.startswith(f"build/{other}/") for _, path in ops)
    files = hub_state(hub)["v1"][1]
    assert f"build/{other}/_tiny_cpu_0a1b2c3.abi3.so" in files
    assert f"build/{host}/_tiny_cpu_0a1b2c3.abi3.so" not in files
    # The card lists each variant's kernel id, so main gets a commit too.
    assert [c.branch for c in result.commits] == ["v1", "main"]


@pytest.mark.slow
def test_dry_run_changes_nothing_and_lists_the_operations(hub, project):
    events = Recorder()
    result = run_publish(project, hub, dry_run=True, events=events)
    assert result.commits == () and hub_state(hub) == {"missing": "RepositoryNotFoundError"}
    lines = result.plan.lines()
    assert lines[0] == f"create repository {REPO_ID} (type kernel)"
    assert any(line.strip().startswith(f"add    build/{host_cpu_variant()}/_tiny_cpu_0a1b2c3.abi3.so")
               for line in lines)
    assert any("README.md" in line for line in lines)


@pytest.mark.slow
def test_force_is_recorded_in_the_card(tmp_path, hub, project):
    so = project / "build" / host_cpu_variant() / "_ops.py"
    so.write_text(so.read_text() + "\n# edited after the build\n")
    result = run_publish(project, hub, force=True, verify=False)
    assert result.forced and "digest-mismatch" in result.forced[0]
    readme = Path(HfApi(endpoint=hub.endpoint).hf_hub_download(REPO_ID, "README.md", repo_type="kernel",
                                                               cache_dir=tmp_path / "dl")).read_text()
    assert "Published with `--force`" in readme and "digest mismatch" in readme


# --- failures leave the Hub unchanged --------------------------------------------------

@pytest.fixture
def published(hub, project):
    run_publish(project, hub, verify=False)
    return hub_state(hub)


@pytest.mark.slow
def test_tampered_so_is_refused(hub, project, published):
    so = project / "build" / host_cpu_variant() / "_tiny_cpu_0a1b2c3.abi3.so"
    so.write_bytes(so.read_bytes() + b"\0")
    with pytest.raises(PublishError) as err:
        run_publish(project, hub)
    assert err.value.code == "publish-check-failed" and any(p.code == "digest-mismatch" for p in err.value.problems)
    assert hub_state(hub) == published


@pytest.mark.slow
def test_unparseable_variant_name_is_refused(hub, project, published):
    copy_variant_as(project / "build" / host_cpu_variant(), project / "build", "torch213-cxx11-cpu-x86_64")
    with pytest.raises(PublishError) as err:
        run_publish(project, hub)
    assert any(p.code == "variant-name-invalid" for p in err.value.problems)
    assert hub_state(hub) == published


@pytest.mark.slow
def test_missing_token_for_a_protected_namespace(hub, project):
    with pytest.raises(PublishError) as err:
        run_publish(project, hub, target=target_of(hub, token=None), verify=False)
    assert err.value.code == "hub-write-denied" and "HF_TOKEN" in err.value.hint
    assert hub_state(hub) == {"missing": "RepositoryNotFoundError"}


@pytest.mark.slow
def test_concurrent_publish_is_not_overwritten(hub, project, published):
    from pipeline.bundle import check_bundle

    api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
    shutil.rmtree(project / "build" / host_cpu_variant())  # a rebuild with another kernel id
    make_variant(project / "build", ops_name="_tiny_cpu_1234567")
    bundle = check_bundle(project / "build").bundle
    plan = plan_upload(api, REPO_ID, bundle, 1, lambda names, meta: None)
    # Someone else commits to v1 after we planned.
    api.upload_file(path_or_fileobj=b"theirs\n", path_in_repo="NOTES.txt", repo_id=REPO_ID, repo_type="kernel",
                    revision="v1")
    theirs = hub_state(hub)
    with pytest.raises(PublishError) as err:
        execute_plan(api, plan)
    assert err.value.code == "hub-branch-moved"
    assert hub_state(hub) == theirs
    assert isinstance(read_remote(api, REPO_ID), RemoteState)


@pytest.mark.slow
def test_server_dying_mid_upload_then_retry(tmp_path, project, monkeypatch):
    """A real `hub serve` process, killed with SIGKILL while the .so is being sent
    (through Git LFS, where our reader sees every byte; Xet uploads show hf_xet's own progress)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    from hubtesting import ServerProcess

    token = "hf_testadmintoken0123456789"
    root = tmp_path / "hub-proc"
    server = ServerProcess(root, token=token, trust=(ORG,)).start()
    try:
        target = Target("--endpoint", server.endpoint, token)
        run_publish(project, None, target=target, verify=False)
        api = HfApi(endpoint=server.endpoint, token=token)
        before = {b.name: b.target_commit for b in api.list_repo_refs(REPO_ID, repo_type="kernel").branches}
        # A changed bundle (new kernel id), so there is a .so to upload.
        shutil.rmtree(project / "build")
        make_variant(project / "build", ops_name="_tiny_cpu_5555555")

        class KillOnFirstBytes(Recorder):
            def __call__(self, event):
                super().__call__(event)
                if event.kind == "transfer":
                    server.kill()

        with pytest.raises(PublishError) as err:
            run_publish(project, None, target=target, verify=False, events=KillOnFirstBytes())
        assert err.value.code in ("hub-unreachable", "hub-error")
    finally:
        server.kill()
    # Back up on the same data: nothing changed; then the retry succeeds.
    server = ServerProcess(root, token=token, trust=(ORG,)).start()
    try:
        target = Target("--endpoint", server.endpoint, token)
        api = HfApi(endpoint=server.endpoint, token=token)
        after = {b.name: b.target_commit for b in api.list_repo_refs(REPO_ID, repo_type="kernel").branches}
        assert after == before
        retry = run_publish(project, None, target=target)
        assert [c.branch for c in retry.commits] == ["v1", "main"]
        assert retry.verify.ok and retry.verify.load.kernel_id == "_tiny_cpu_5555555"
    finally:
        server.stop()


# --- the command line --------------------------------------------------------------------

@pytest.mark.slow
def test_cli_publish_json_then_verify(tmp_path, hub, project):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("HF_TOKEN", "HF_ENDPOINT")}
    env["HF_TOKEN"] = hub.admin_token
    cmd = [sys.executable, "-m", "pipeline", "publish", REPO_ID, "--kernel", str(project), "--endpoint", hub.endpoint]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, cwd=REPO, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["changed"] and doc["verify"]["ok"] and doc["target"]["source"] == "--endpoint"
    assert "target" in out.stderr.splitlines()[0]
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert again.returncode == 0 and "nothing changed" in again.stdout
    verify = subprocess.run([sys.executable, "-m", "pipeline", "verify", REPO_ID, "--version", "1", "--kernel",
                             str(project), "--endpoint", hub.endpoint, "--json"],
                            capture_output=True, text=True, cwd=REPO, env=env)
    assert verify.returncode == 0, verify.stderr
    assert json.loads(verify.stdout)["load"]["variant"] == host_cpu_variant()
    missing = subprocess.run([sys.executable, "-m", "pipeline", "verify", REPO_ID, "--version", "7", "--kernel",
                              str(project), "--endpoint", hub.endpoint], capture_output=True, text=True, cwd=REPO,
                             env=env)
    assert missing.returncode == 10 and "Traceback" not in missing.stderr

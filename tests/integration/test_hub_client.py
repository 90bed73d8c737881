"""The real huggingface_hub client against the embedded hub on 127.0.0.1."""

from __future__ import annotations

import filecmp
import hashlib
import os
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, constants
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

from pipeline.hub import EmbeddedHub
from hubtesting import ServerProcess

BIG = 50 * 1024 * 1024
REPO = "org/demo"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        # huggingface_hub uploads through Xet when hf_xet is installed; this hub speaks Git LFS.
        mp.setattr(constants, "HF_HUB_DISABLE_XET", True)
        with EmbeddedHub(tmp_path_factory.mktemp("hub"), trusted_namespaces=["org"]) as h:
            yield h


@pytest.fixture(scope="module")
def published(hub, tmp_path_factory):
    """A kernel repo with branch v1 holding a 50 MB binary and small files."""
    src = tmp_path_factory.mktemp("src")
    cpu, cuda = src / "build" / "torch-cpu", src / "build" / "torch-cuda"
    cpu.mkdir(parents=True)
    cuda.mkdir(parents=True)
    (cpu / "big.bin").write_bytes(os.urandom(BIG))
    (cpu / "__init__.py").write_text("from ._ops import ops\n")
    (cpu / "metadata.json").write_text('{"name": "demo"}\n')
    (cuda / "_demo.abi3.so").write_bytes(b"\x7fELF\x02\x01\x01\x00" + os.urandom(4000))
    (src / "README.md").write_text("---\nlicense: apache-2.0\n---\n# demo\n")
    api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
    url = api.create_repo(REPO, repo_type="kernel")
    api.create_branch(REPO, branch="v1", repo_type="kernel")
    info = api.upload_folder(
        folder_path=src, repo_id=REPO, repo_type="kernel", revision="v1", commit_message="v1 build"
    )
    return {"api": api, "src": src, "commit": info.oid, "url": url}


def _anon(hub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=False)


def test_create_repo_and_branch(hub, published):
    assert published["url"] == f"{hub.endpoint}/kernels/{REPO}" and published["url"].repo_type == "kernel"
    refs = _anon(hub).list_repo_refs(REPO, repo_type="kernel")
    branches = {b.name: b.target_commit for b in refs.branches}
    assert set(branches) == {"main", "v1"} and branches["v1"] == published["commit"]
    assert branches["main"] != branches["v1"]


def test_list_trees(hub, published):
    api = _anon(hub)
    root = {(e.path, type(e).__name__) for e in api.list_repo_tree(REPO, repo_type="kernel", revision="v1")}
    assert root == {("README.md", "RepoFile"), ("build", "RepoFolder")}
    variants = [e.path for e in api.list_repo_tree(REPO, path_in_repo="build", repo_type="kernel", revision="v1")]
    assert sorted(variants) == ["build/torch-cpu", "build/torch-cuda"]
    files = {
        e.path: e
        for e in api.list_repo_tree(REPO, repo_type="kernel", revision="v1", recursive=True)
        if type(e).__name__ == "RepoFile"
    }
    src = published["src"]
    assert set(files) == {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()}
    big = files["build/torch-cpu/big.bin"]
    assert (
        big.size == BIG and big.lfs.sha256 == hashlib.sha256((src / "build/torch-cpu/big.bin").read_bytes()).hexdigest()
    )
    assert files["build/torch-cuda/_demo.abi3.so"].lfs is not None  # binary -> LFS
    assert files["README.md"].lfs is None  # small text -> inline git blob
    info = api.get_paths_info(REPO, ["README.md", "build", "missing"], repo_type="kernel", revision="v1")
    assert [(i.path, type(i).__name__) for i in info] == [("README.md", "RepoFile"), ("build", "RepoFolder")]
    assert api.repo_info(REPO, repo_type="kernel", revision="v1").sha == published["commit"]


def test_downloads_are_byte_identical(hub, published, tmp_path):
    api, src = _anon(hub), published["src"]
    for name in ("build/torch-cpu/big.bin", "build/torch-cpu/__init__.py", "README.md"):
        got = api.hf_hub_download(REPO, name, repo_type="kernel", revision="v1", cache_dir=tmp_path / "c1")
        assert filecmp.cmp(got, src / name, shallow=False), name
    snap = Path(
        api.snapshot_download(
            REPO, repo_type="kernel", revision="v1", cache_dir=tmp_path / "c2", allow_patterns=["build/torch-cuda/*"]
        )
    )
    got = sorted(p.relative_to(snap).as_posix() for p in snap.rglob("*") if p.is_file())
    assert got == ["build/torch-cuda/_demo.abi3.so"]
    assert filecmp.cmp(snap / got[0], src / got[0], shallow=False)
    assert snap.name == published["commit"]  # the snapshot folder is the git commit id
    with pytest.raises(Exception) as err:
        api.hf_hub_download(REPO, "nope.txt", repo_type="kernel", revision="v1", cache_dir=tmp_path / "c3")
    assert "Entry Not Found" in str(err.value) or "EntryNotFound" in type(err.value).__name__
    with pytest.raises(RevisionNotFoundError):
        api.hf_hub_download(REPO, "README.md", repo_type="kernel", revision="v7", cache_dir=tmp_path / "c4")


def test_republishing_a_variant_with_delete_patterns(hub, published, tmp_path):
    api = HfApi(endpoint=hub.endpoint, token=hub.create_token("org2", "write"))
    api.create_repo("org2/re", repo_type="kernel")
    for variant in ("a", "b"):
        d = tmp_path / variant
        d.mkdir()
        (d / "old.py").write_text(variant)
        (d / "keep.py").write_text(variant)
        api.upload_folder(
            folder_path=d,
            path_in_repo=f"build/{variant}",
            repo_id="org2/re",
            repo_type="kernel",
            commit_message=f"add {variant}",
        )
    new = tmp_path / "a2"
    new.mkdir()
    (new / "keep.py").write_text("a, rebuilt")
    api.upload_folder(
        folder_path=new,
        path_in_repo="build/a",
        repo_id="org2/re",
        repo_type="kernel",
        delete_patterns="*",
        commit_message="republish a",
    )
    files = sorted(api.list_repo_files("org2/re", repo_type="kernel"))
    assert files == ["build/a/keep.py", "build/b/keep.py", "build/b/old.py"]
    assert len(api.list_repo_commits("org2/re", repo_type="kernel")) == 4  # one commit per publish


def test_stale_parent_commit_is_refused(hub, published):
    api = published["api"]
    head = api.repo_info(REPO, repo_type="kernel", revision="main").sha
    op = [CommitOperationAdd("notes.txt", b"first")]
    new = api.create_commit(REPO, op, commit_message="c1", repo_type="kernel", parent_commit=head).oid
    with pytest.raises(HfHubHTTPError) as err:
        api.create_commit(
            REPO,
            [CommitOperationAdd("notes.txt", b"second")],
            commit_message="c2",
            repo_type="kernel",
            parent_commit=head,
        )
    assert err.value.response.status_code == 412
    assert api.repo_info(REPO, repo_type="kernel", revision="main").sha == new
    api.create_commit(
        REPO, [CommitOperationDelete("notes.txt")], commit_message="c3", repo_type="kernel", parent_commit=new
    )


def test_auth_refusals_leave_the_branch_unchanged(hub, published):
    before = _anon(hub).list_repo_refs(REPO, repo_type="kernel")
    reader = hub.create_token("org", "read")
    stranger = hub.create_token("elsewhere", "write")
    attempts = [(False, 401), ("hf_this_token_does_not_exist", 401), (reader, 403), (stranger, 403)]
    for token, status in attempts:
        api = HfApi(endpoint=hub.endpoint, token=token)
        with pytest.raises(HfHubHTTPError) as err:
            api.upload_file(
                path_or_fileobj=b"x", path_in_repo="evil.txt", repo_id=REPO, repo_type="kernel", revision="v1"
            )
        assert err.value.response.status_code == status, token
        with pytest.raises(HfHubHTTPError) as err:
            api.create_branch(REPO, branch="v2", repo_type="kernel")
        assert err.value.response.status_code == status
        with pytest.raises(HfHubHTTPError):
            api.create_repo("org/other", repo_type="kernel")
    assert _anon(hub).list_repo_refs(REPO, repo_type="kernel") == before
    with pytest.raises(HfHubHTTPError) as err:
        HfApi(endpoint=hub.endpoint, token="hf_this_token_does_not_exist").whoami()
    assert err.value.response.status_code == 401
    assert HfApi(endpoint=hub.endpoint, token=reader).whoami()["name"] == "org"


def test_private_repo(hub):
    owner = HfApi(endpoint=hub.endpoint, token=hub.create_token("priv", "write"))
    owner.create_repo("priv/k", repo_type="kernel", private=True)
    owner.upload_file(path_or_fileobj=b"secret", path_in_repo="s.txt", repo_id="priv/k", repo_type="kernel")
    assert owner.repo_info("priv/k", repo_type="kernel").private is True
    for token in (False, hub.create_token("other", "write")):
        with pytest.raises(RepositoryNotFoundError):
            HfApi(endpoint=hub.endpoint, token=token).repo_info("priv/k", repo_type="kernel")
    reader = HfApi(endpoint=hub.endpoint, token=hub.create_token("priv", "read"))
    assert reader.list_repo_files("priv/k", repo_type="kernel") == ["s.txt"]
    owner.create_repo("priv/k", repo_type="kernel", private=True, exist_ok=True)  # 409 -> fine


def test_model_repositories(hub, tmp_path):
    api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
    url = api.create_repo("org/model")
    assert url == f"{hub.endpoint}/org/model"
    api.upload_file(path_or_fileobj=b"{}", path_in_repo="config.json", repo_id="org/model")
    got = _anon(hub).hf_hub_download("org/model", "config.json", cache_dir=tmp_path)
    assert Path(got).read_bytes() == b"{}"
    assert [b.name for b in _anon(hub).list_repo_refs("org/model").branches] == ["main"]


def test_server_memory_stays_flat_during_a_large_upload(tmp_path, monkeypatch):
    """The server streams LFS uploads and downloads: its peak RSS barely moves
    while a 50 MB file goes through (the benchmark does 500 MB)."""
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    token = "hf_memory_test_admin_token_1234"
    data = tmp_path / "big.bin"
    data.write_bytes(os.urandom(BIG))
    with ServerProcess(tmp_path / "hub", token=token, log_level="warning") as server:
        api = HfApi(endpoint=server.endpoint, token=token)
        api.create_repo("org/mem", repo_type="kernel")
        api.upload_file(path_or_fileobj=b"warm-up", path_in_repo="w.txt", repo_id="org/mem", repo_type="kernel")
        api.hf_hub_download("org/mem", "w.txt", repo_type="kernel", cache_dir=tmp_path / "c0")
        before = server.peak_rss_kib()
        api.upload_file(path_or_fileobj=str(data), path_in_repo="big.bin", repo_id="org/mem", repo_type="kernel")
        got = api.hf_hub_download("org/mem", "big.bin", repo_type="kernel", cache_dir=tmp_path / "c1")
        growth_mib = (server.peak_rss_kib() - before) / 1024
    assert filecmp.cmp(got, data, shallow=False)
    assert growth_mib < 20, f"server peak RSS grew by {growth_mib:.1f} MiB for a 50 MiB file"

"""Tags, full ref names, paginated commit listing, Range on every file, and
`git clone` / `git fetch` over smart HTTP (pipeline/hub/repository.py,
api_repos.py, api_write.py, downloads.py, githttp.py)."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest
from huggingface_hub import HfApi, constants
from huggingface_hub.errors import RevisionNotFoundError

from pipeline.hub import EmbeddedHub
from pipeline.hub.commits import AddBlob, commit
from pipeline.hub.paths import repo_id


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with EmbeddedHub(tmp_path_factory.mktemp("refs") / "hub") as h:
        yield h


@pytest.fixture(autouse=True)
def _lfs(monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)  # these tests are about refs, not transfer


def _api(hub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.admin_token)


def _repo(hub, name: str) -> str:
    _api(hub).create_repo(f"org/{name}", repo_type="kernel")
    return f"org/{name}"


def test_tags_create_list_resolve_delete(hub, tmp_path):
    repo = _repo(hub, "tags")
    api = _api(hub)
    first = api.upload_file(path_or_fileobj=b"one", path_in_repo="f.txt", repo_id=repo, repo_type="kernel").oid
    api.create_tag(repo, tag="v1.0", repo_type="kernel")
    api.create_tag(repo, tag="annotated", tag_message="a message", repo_type="kernel")
    api.upload_file(path_or_fileobj=b"two", path_in_repo="f.txt", repo_id=repo, repo_type="kernel")
    tags = {t.name: t.target_commit for t in api.list_repo_refs(repo, repo_type="kernel").tags}
    assert tags == {"v1.0": first, "annotated": first}  # an annotated tag lists the commit it names
    for revision in ("v1.0", "refs/tags/v1.0", "annotated"):
        got = api.hf_hub_download(repo, "f.txt", repo_type="kernel", revision=revision, cache_dir=tmp_path / revision)
        assert open(got, "rb").read() == b"one"
    with pytest.raises(Exception) as err:
        api.create_tag(repo, tag="v1.0", repo_type="kernel")
    assert "409" in str(err.value)
    api.create_tag(repo, tag="v1.0", repo_type="kernel", exist_ok=True)
    api.delete_tag(repo, tag="v1.0", repo_type="kernel")
    assert [t.name for t in api.list_repo_refs(repo, repo_type="kernel").tags] == ["annotated"]
    with pytest.raises(RevisionNotFoundError):
        api.delete_tag(repo, tag="v1.0", repo_type="kernel")


def test_full_ref_names_wherever_a_revision_is_taken(hub, tmp_path):
    repo = _repo(hub, "fullrefs")
    api = _api(hub)
    api.create_branch(repo, branch="v1", repo_type="kernel")
    api.upload_file(path_or_fileobj=b"x", path_in_repo="build/a/x.py", repo_id=repo, repo_type="kernel",
                    revision="refs/heads/v1")  # fmt: skip
    got = api.hf_hub_download(repo, "build/a/x.py", repo_type="kernel", revision="refs/heads/v1", cache_dir=tmp_path)
    assert open(got, "rb").read() == b"x"
    tree = api.list_repo_tree(repo, path_in_repo="build", repo_type="kernel", revision="refs/heads/v1")
    assert [e.path for e in tree] == ["build/a"]
    assert api.repo_info(repo, repo_type="kernel", revision="refs/heads/main").sha == api.repo_info(
        repo, repo_type="kernel").sha  # fmt: skip
    assert len(api.list_repo_commits(repo, repo_type="kernel", revision="refs/heads/v1")) == 2
    with pytest.raises(RevisionNotFoundError):
        api.repo_info(repo, repo_type="kernel", revision="refs/heads/nope")


def test_commit_listing_is_paginated_with_a_link_header(hub):
    repo = _repo(hub, "history")
    store = hub._prepared.hub.storage
    r = store.open(repo_id("kernel", "org", "history"))
    for i in range(230):
        commit(r, "main", [AddBlob("n.txt", r.write_blob(str(i).encode()))], summary=f"c{i}")
    page = httpx.get(f"{hub.endpoint}/api/kernels/{repo}/commits/main")
    assert len(page.json()) == 100 and 'rel="next"' in page.headers["link"]
    commits = _api(hub).list_repo_commits(repo, repo_type="kernel")
    assert len(commits) == 231 and commits[0].title == "c229" and commits[-1].title == "initial commit"


def test_range_on_a_regular_file(hub):
    repo = _repo(hub, "range")
    data = bytes(range(256)) * 40
    _api(hub).upload_file(path_or_fileobj=data, path_in_repo="t.txt", repo_id=repo, repo_type="kernel")
    url = f"{hub.endpoint}/kernels/{repo}/resolve/main/t.txt"
    part = httpx.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206 and part.content == data[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(data)}"
    assert httpx.get(url, headers={"Range": "bytes=-5"}).content == data[-5:]
    assert httpx.get(url, headers={"Range": "bytes=100-"}).content == data[100:]
    bad = httpx.get(url, headers={"Range": f"bytes={len(data)}-"})
    assert bad.status_code == 416 and bad.headers["content-range"] == f"bytes */{len(data)}"
    assert httpx.get(url).content == data


def _git(*args, cwd=None, check=True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_LFS_SKIP_SMUDGE": "1", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check, timeout=60)


def test_git_clone_and_fetch_read_only(hub, tmp_path):
    repo = _repo(hub, "cloned")
    api = _api(hub)
    api.upload_file(path_or_fileobj=b"hello\n", path_in_repo="a.txt", repo_id=repo, repo_type="kernel")
    api.create_tag(repo, tag="v1", repo_type="kernel")
    clone = tmp_path / "clone"
    _git("clone", f"{hub.endpoint}/kernels/{repo}", str(clone))
    assert (clone / "a.txt").read_text() == "hello\n"
    assert _git("tag", cwd=clone).stdout.split() == ["v1"]
    head = api.upload_file(path_or_fileobj=b"more\n", path_in_repo="b.txt", repo_id=repo, repo_type="kernel").oid
    _git("fetch", "origin", cwd=clone)
    assert _git("rev-parse", "origin/main", cwd=clone).stdout.strip() == head
    (clone / "c.txt").write_text("c")
    _git("-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qam", "local", cwd=clone, check=False)
    push = _git("push", "origin", "HEAD:main", cwd=clone, check=False)
    assert push.returncode != 0 and "403" in push.stderr
    _git("clone", f"{hub.endpoint}/kernels/{repo}.git", str(tmp_path / "with-suffix"))


def test_git_clone_of_a_private_repository_needs_a_token(hub, tmp_path):
    api = _api(hub)
    api.create_repo("org/private", repo_type="kernel", private=True)
    url = f"{hub.endpoint}/kernels/org/private"
    denied = _git("clone", url, str(tmp_path / "anon"), check=False)
    # A 401 with a Basic challenge: git asks for credentials (here it may not prompt).
    assert denied.returncode != 0 and "could not read Username" in denied.stderr
    assert httpx.get(f"{url}/info/refs?service=git-upload-pack").headers["www-authenticate"].startswith("Basic")
    stranger = hub.create_token("elsewhere", "read", user="stranger")
    host = hub.endpoint.removeprefix("http://")
    other = _git("clone", f"http://stranger:{stranger}@{host}/kernels/org/private", str(tmp_path / "x"), check=False)
    assert other.returncode != 0
    reader = hub.create_token("org", "read", user="reader")
    _git("clone", f"http://reader:{reader}@{host}/kernels/org/private", str(tmp_path / "ok"))
    assert (tmp_path / "ok" / ".git").is_dir()

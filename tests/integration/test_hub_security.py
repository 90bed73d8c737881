"""One test per hole found in the hub (issue 16): .git/.cache aliases, control
characters, deep JSON, body type errors, a full disk, private namespaces,
file modes, tokens on the command line."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess

import httpx
import pytest
from test_hub_app import Env, file_line, header

from hubtesting import ServerProcess
from pipeline.hub import paths
from pipeline.hub.objects import Quarantine


@pytest.fixture
def env(tmp_path):
    e = Env(tmp_path)
    assert e.create().status_code == 200
    return e


ALIASES = [
    ".Git/x", ".GIT/config", "a/.GIT/hooks", "git~1/config", "GIT~2/x", ".git./config", ".git /config",
    ".git.. . /x", ".CACHE/x", "cache~1/x", ".g\u200cit/x", ".git::$INDEX_ALLOCATION/x", "A/.Cache/y",
]  # fmt: skip


@pytest.mark.parametrize("path", ALIASES)
def test_git_and_cache_aliases_are_refused_in_every_spelling(env, path):
    assert any(paths.forbidden_segment(s) for s in path.split("/"))
    before = env.head()
    for line in (file_line(path, b"x"), {"key": "lfsFile", "value": {"path": path, "oid": "a" * 64, "size": 1}}):
        r = env.commit([header(), line])
        assert r.status_code == 400 and ".git or .cache" in r.json()["error"], r.text
    assert env.head() == before
    assert env.commit([header(), file_line("ok.txt", b"fine")]).status_code == 200  # the branch still works
    assert env.client.get("/kernels/org/k/resolve/main/ok.txt").content == b"fine"


def test_names_that_only_look_like_git_are_fine():
    for segment in (".gitignore", ".gitattributes", "git", "gitx~1", ".cached", "x.git"):
        assert not paths.forbidden_segment(segment), segment


def test_control_characters_are_refused_in_every_name(env, tmp_path):
    w = env.h(env.writer)
    sha = env.head()
    body = {"name": "evil\n", "organization": "org", "type": "kernel"}
    r = env.client.post("/api/repos/create", headers=w, json=body)
    assert r.status_code == 400
    assert not any("\n" in p.name for p in (tmp_path / "repos").rglob("*"))
    for url in (
        "/api/kernels/org/k/revision/main%0a",
        f"/api/kernels/org/k/revision/{sha}%0a",
        "/api/kernels/org/k/revision/refs%2Fheads%2Fmain%0a",
        "/api/kernels/org%0a/k",
        "/kernels/org/k/resolve/main%0a/README.md",
        "/kernels/org/k/resolve/main/a%0ab",
        "/api/kernels/org/k/tree/main%09",
    ):
        r = env.client.get(url)
        assert r.status_code == 400, (url, r.status_code)
    assert env.client.post("/api/kernels/org/k/branch/x%0a", headers=w).status_code == 400
    assert env.client.post("/api/kernels/org/k/tag/main", headers=w, json={"tag": "t\n"}).status_code == 400
    assert env.commit([header(), file_line("a\nb", b"x")]).status_code == 400
    assert env.commit([header(), file_line("a\x7fb", b"x")]).status_code == 400
    assert env.head() == sha


DEEP = "[" * 100_000 + "]" * 100_000


def test_deeply_nested_json_is_a_400_on_every_json_endpoint(env):
    w = {**env.h(env.writer), "Content-Type": "application/json"}
    for url in (
        "/api/repos/create",
        "/api/kernels/org/k/paths-info/main",
        "/api/kernels/org/k/preupload/main",
        "/api/kernels/org/k/branch/b",
        "/api/kernels/org/k/tag/main",
        "/api/validate-yaml",
        "/kernels/org/k.git/info/lfs/objects/batch",
    ):
        r = env.client.post(url, headers=w, content=DEEP)
        assert r.status_code == 400 and "deeper" in r.json()["error"], (url, r.status_code)
    r = env.client.post("/api/kernels/org/k/commit/main", headers=env.h(env.writer), content=DEEP + "\n")
    assert r.status_code == 400 and "deeper" in r.json()["error"]


def test_body_type_errors_are_400s(env):
    w = env.h(env.writer)
    cases = [
        ("/api/kernels/org/k/paths-info/main", {"paths": 5}),
        ("/api/kernels/org/k/paths-info/main", {"paths": [5]}),
        ("/api/repos/create", {"name": 5, "organization": "org"}),
        ("/api/repos/create", {"name": "n", "organization": "org", "type": []}),
        ("/api/repos/create", {"name": "n", "organization": ["org"]}),
        ("/api/kernels/org/k/preupload/main", {"files": [{"path": "a", "size": "1"}]}),
        ("/api/kernels/org/k/preupload/main", {"files": [{"path": "a", "size": 1, "sample": 5}]}),
        ("/api/kernels/org/k/branch/b", {"startingPoint": 5}),
        ("/api/kernels/org/k/tag/main", {"tag": 5}),
        ("/api/kernels/org/k/tag/main", {"tag": "t", "message": {}}),
        ("/kernels/org/k.git/info/lfs/objects/batch", {"operation": "upload", "objects": "x"}),
        ("/kernels/org/k.git/info/lfs/objects/batch", {"operation": "upload", "objects": [], "transfers": 5}),
    ]
    for url, body in cases:
        r = env.client.post(url, headers=w, json=body)
        assert r.status_code == 400, (url, body, r.status_code, r.text)
    r = env.client.request("DELETE", "/api/repos/delete", headers=w, json={"name": ["k"], "organization": "org"})
    assert r.status_code == 400
    for value in ({"summary": 5}, {"summary": "s", "description": 5}, {"summary": "s", "parentCommit": 5}):
        assert env.commit([{"key": "header", "value": value}]).status_code == 400
    for line in ({"key": "file", "value": {"path": 5}}, {"key": "file", "value": {"path": "a", "content": 5,
                 "encoding": "base64"}}, {"key": "lfsFile", "value": {"path": "a", "oid": "a" * 64, "size": "1"}},
                 {"key": 5, "value": {}}, [1, 2], "text"):  # fmt: skip
        assert env.commit([header(), line]).status_code == 400, line


def test_a_full_disk_during_a_commit_is_a_507_and_leaves_nothing_behind(env, monkeypatch):
    before = env.head()
    repo_dir = env.storage.repo_dir(paths.repo_id("kernel", "org", "k"))
    objects_before = sorted(p.name for p in repo_dir.glob("objects/??/*"))
    real_store = Quarantine.store
    calls = {"n": 0}

    def store(self, kind, data, written):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_store(self, kind, data, written)

    monkeypatch.setattr(Quarantine, "store", store)
    r = env.commit([header(), *(file_line(f"f{i}.txt", os.urandom(1000)) for i in range(5))])
    assert r.status_code == 507 and r.headers["X-Error-Code"] == "InsufficientStorage" and "full" in r.json()["error"]
    assert env.head() == before
    assert list((repo_dir / "incoming").iterdir()) == []  # the commit's objects are gone
    assert sorted(p.name for p in repo_dir.glob("objects/??/*")) == objects_before
    monkeypatch.setattr(Quarantine, "store", real_store)
    assert env.commit([header(), file_line("small.txt", b"6bytes")]).status_code == 200


def _mount_tmpfs(path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


@pytest.mark.slow
def test_a_really_full_disk_is_a_507_for_lfs_and_inline_commits(tmp_path):
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, "6m"):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        e = Env(disk)
        assert e.create().status_code == 200
        before = e.head()
        big = os.urandom(8 * 1024 * 1024)
        oid = hashlib.sha256(big).hexdigest()
        request = {"operation": "upload", "objects": [{"oid": oid, "size": len(big)}]}
        batch = e.client.post("/kernels/org/k.git/info/lfs/objects/batch", headers=e.h(e.writer), json=request).json()
        put = e.client.put(batch["objects"][0]["actions"]["upload"]["href"].replace("http://hub.test", ""), content=big)
        assert put.status_code == 507
        repo_dir = disk / "repos" / "kernels" / "org" / "k.git"
        assert not any((repo_dir / "lfs").rglob("*.*"))  # no temporary left
        files = [file_line(f"t{i}.bin", os.urandom(2_500_000)) for i in range(3)]  # incompressible
        assert e.commit([header(), *files]).status_code == 507
        assert list((repo_dir / "incoming").iterdir()) == [] and e.head() == before
        assert e.commit([header(), file_line("small.txt", b"6bytes")]).status_code == 200
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)  # lazy: git helper processes may still hold it


def test_a_namespace_with_only_private_repositories_is_invisible(env):
    w = env.h(env.admin)
    body = {"name": "hidden", "organization": "secret", "type": "kernel", "private": True}
    assert env.client.post("/api/repos/create", headers=w, json=body).status_code == 200
    assert env.client.get("/api/organizations/secret/overview").status_code == 404
    assert env.client.get("/api/organizations/secret/overview", headers=env.h(env.stranger)).status_code == 404
    insider = env.auth.create_token("secret", "read", user="insider")
    assert env.client.get("/api/organizations/secret/overview", headers=env.h(insider)).status_code == 200
    assert env.client.get("/api/organizations/org/overview").status_code == 200  # has a public repository


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_is_readable_by_the_hub_alone(tmp_path, monkeypatch):
    from huggingface_hub import HfApi, constants

    from pipeline.hub import EmbeddedHub

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    root = tmp_path / "hub"
    with EmbeddedHub(root) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.admin_token)
        api.create_repo("org/k", repo_type="kernel")
        api.upload_file(path_or_fileobj=b"\0bin" * 1000, path_in_repo="w.bin", repo_id="org/k", repo_type="kernel")
    assert _mode(root) == 0o700 and _mode(root / "repos") == 0o700 and _mode(root / "auth") == 0o700
    (obj,) = [p for p in (root / "repos").rglob("lfs/objects/*/*/*") if p.is_file()]
    assert _mode(obj) == 0o600
    for f in (root / "auth" / "tokens.json", root / "repos" / "kernels" / "org" / "k.git" / "hub.json"):
        assert _mode(f) & 0o077 == 0, f


def test_the_admin_token_is_not_on_the_command_line(tmp_path):
    token = "hf_secret_admin_token_0123456789"
    with ServerProcess(tmp_path / "hub", token=token) as server:
        cmdline = open(f"/proc/{server.pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        assert token not in cmdline and "--token" not in cmdline
        who = httpx.get(f"{server.endpoint}/api/whoami-v2", headers={"Authorization": f"Bearer {token}"})
        assert who.status_code == 200 and json.loads(who.text)["auth"]["accessToken"]["admin"]

"""The HTTP API driven in process (Starlette TestClient): error shapes, auth,
private repositories, path traversal, LFS URL signing, pagination, logging."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os

import pytest
from starlette.testclient import TestClient

from pipeline.hub.app import build_app
from pipeline.hub.auth import AuthStore
from pipeline.hub.context import Hub
from pipeline.hub.registry import Storage
from pipeline.hub.routes import routes


class Env:
    def __init__(self, root):
        self.storage = Storage(root)
        self.auth = AuthStore(root)
        self.client = TestClient(build_app(routes(Hub(self.storage, self.auth))), base_url="http://hub.test")
        self.admin = self.auth.create_token("*", "write")
        self.writer = self.auth.create_token("org", "write")
        self.reader = self.auth.create_token("org", "read", user="reader")
        self.stranger = self.auth.create_token("elsewhere", "write")

    def h(self, token):
        return {"Authorization": f"Bearer {token}"} if token else {}

    def create(self, name="k", private=False, token=None, org="org"):
        return self.client.post(
            "/api/repos/create",
            headers=self.h(token or self.writer),
            json={"name": name, "organization": org, "type": "kernel", "private": private},
        )

    def head(self, name="k", branch="main"):
        refs = self.client.get(f"/api/kernels/org/{name}/refs", headers=self.h(self.admin)).json()
        return {b["name"]: b["targetCommit"] for b in refs["branches"]}[branch]

    def commit(self, lines, token="writer", name="k", branch="main"):
        body = "\n".join(json.dumps(line) for line in lines) + "\n"
        token = self.writer if token == "writer" else token
        return self.client.post(
            f"/api/kernels/org/{name}/commit/{branch}",
            content=body,
            headers={**self.h(token), "Content-Type": "application/x-ndjson"},
        )


def header(summary="s", **extra):
    return {"key": "header", "value": {"summary": summary, "description": "", **extra}}


def file_line(path, data: bytes):
    return {"key": "file", "value": {"path": path, "content": base64.b64encode(data).decode(), "encoding": "base64"}}


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


def test_errors_have_the_hub_shape(env):
    r = env.client.get("/api/kernels/org/missing")
    assert r.status_code == 404 and r.headers["X-Error-Code"] == "RepoNotFound" and "error" in r.json()
    assert env.create().status_code == 200
    r = env.client.get("/api/kernels/org/k/revision/nope")
    assert (r.status_code, r.headers["X-Error-Code"]) == (404, "RevisionNotFound")
    r = env.client.get("/kernels/org/k/resolve/main/missing.txt")
    assert (r.status_code, r.headers["X-Error-Code"]) == (404, "EntryNotFound")
    assert r.headers["X-Repo-Commit"] == env.head()  # huggingface_hub caches the absence per commit
    r = env.client.head("/kernels/org/k/resolve/main/missing.txt")
    assert r.status_code == 404 and r.content == b""
    assert env.client.get("/nothing/here").status_code == 404


def test_create_repo_needs_a_write_token_for_the_namespace(env):
    assert env.create(token="-").status_code == 401  # unknown token
    r = env.client.post("/api/repos/create", json={"name": "k", "organization": "org", "type": "kernel"})
    assert r.status_code == 401
    assert env.create(token=env.reader).status_code == 403
    assert env.create(token=env.stranger).status_code == 403
    r = env.create()
    assert r.status_code == 200 and r.json()["url"] == "http://hub.test/kernels/org/k"
    assert env.create().status_code == 409
    assert env.create(name="m", token=env.admin).status_code == 200
    r = env.client.post(
        "/api/repos/create", headers=env.h(env.writer), json={"name": "s", "organization": "org", "type": "space"}
    )
    assert r.status_code == 400


def test_whoami(env):
    assert env.client.get("/api/whoami-v2").status_code == 401
    r = env.client.get("/api/whoami-v2", headers=env.h("hf_unknown_token_xxxxxxxx"))
    assert r.status_code == 401 and r.headers["X-Error-Message"] == "Invalid credentials in Authorization header"
    me = env.client.get("/api/whoami-v2", headers=env.h(env.reader)).json()
    assert me["name"] == "reader" and me["auth"]["accessToken"]["role"] == "read"
    assert [o["name"] for o in me["orgs"]] == ["org"]


def test_writes_are_refused_without_write_scope_and_change_nothing(env):
    env.create()
    before = env.head()
    for token, status in ((None, 401), ("hf_bad_token_xxxxxxxxxxxx", 401), (env.reader, 403), (env.stranger, 403)):
        body = "\n".join(json.dumps(x) for x in [header(), file_line("a.txt", b"x")])
        r = env.client.post("/api/kernels/org/k/commit/main", content=body, headers=env.h(token))
        assert r.status_code == status, (token, r.text)
        assert "error" in r.json()
        r = env.client.post("/api/kernels/org/k/branch/v9", headers=env.h(token), json={})
        assert r.status_code == status
    assert env.head() == before
    assert set(b["name"] for b in env.client.get("/api/kernels/org/k/refs").json()["branches"]) == {"main"}


def test_private_repositories_are_invisible_to_others(env):
    assert env.create(name="secret", private=True).status_code == 200
    env.commit([header(), file_line("a.txt", b"private bytes")], name="secret")
    for token in (None, env.stranger, "hf_unknown_token_xxxxxxxx"):
        for url in (
            "/api/kernels/org/secret",
            "/api/kernels/org/secret/refs",
            "/api/kernels/org/secret/tree/main",
            "/kernels/org/secret/resolve/main/a.txt",
        ):
            r = env.client.get(url, headers=env.h(token))
            assert (r.status_code, r.headers["X-Error-Code"]) == (404, "RepoNotFound"), url
        r = env.commit([header(), file_line("b.txt", b"x")], token=token, name="secret")
        assert r.status_code in (401, 404)
    assert (
        env.client.get("/kernels/org/secret/resolve/main/a.txt", headers=env.h(env.reader)).content == b"private bytes"
    )
    info = env.client.get("/api/kernels/org/secret", headers=env.h(env.reader)).json()
    assert info["private"] is True and "siblings" not in info  # as the Hugging Face Hub answers for kernels


@pytest.mark.parametrize(
    "path",
    [
        "../evil.txt",
        "a/../../evil.txt",
        "/etc/passwd",
        "a\x00b",
        ".git/config",
        "x/.git/hooks/post-update",
        "a//b",
        "a\\..\\b",
        "./a",
        "a/" + "x" * 300,
    ],
)
def test_path_traversal_in_commits_is_refused(env, tmp_path, path):
    env.create()
    before = env.head()
    r = env.commit([header(), file_line(path, b"pwned")])
    assert r.status_code == 400, r.text
    assert r.json()["error"]
    r = env.commit([header(), {"key": "deletedFile", "value": {"path": path}}])
    assert r.status_code == 400
    assert env.head() == before
    assert not any(p.name == "evil.txt" for p in tmp_path.rglob("*"))


@pytest.mark.parametrize(
    "url",
    [
        "/kernels/org/k/resolve/main/..%2F..%2Fhub.json",
        "/kernels/org/k/resolve/main/%2E%2E/hub.json",
        "/kernels/org/k/resolve/main/a%00b",
        "/kernels/org/k/resolve/main/%2Fetc%2Fpasswd",
        "/api/kernels/org/k/tree/main/..%2F..",
        "/api/kernels/org/%2E%2E/tree/main",
        "/api/kernels/org/k/tree/..%2F..%2F..%2Fauth",
        "/kernels/org/k/resolve/main/.git%2Fconfig",
    ],
)
def test_path_traversal_in_urls_is_refused(env, url):
    env.create()
    r = env.client.get(url)
    assert r.status_code in (400, 404), url
    assert b"private" not in r.content and b"digest" not in r.content and b"[core]" not in r.content


def test_lfs_upload_urls_are_signed(env):
    env.create()
    data = os.urandom(50_000)
    oid = hashlib.sha256(data).hexdigest()
    batch = {
        "operation": "upload",
        "transfers": ["basic"],
        "objects": [{"oid": oid, "size": len(data)}],
        "hash_algo": "sha256",
    }
    assert env.client.post("/kernels/org/k.git/info/lfs/objects/batch", json=batch).status_code == 401
    assert (
        env.client.post("/kernels/org/k.git/info/lfs/objects/batch", json=batch, headers=env.h(env.reader)).status_code
        == 403
    )
    r = env.client.post("/kernels/org/k.git/info/lfs/objects/batch", json=batch, headers=env.h(env.writer))
    assert r.status_code == 200 and r.json()["transfer"] == "basic"
    href = r.json()["objects"][0]["actions"]["upload"]["href"]
    assert href.startswith(f"http://hub.test/kernels/org/k.git/info/lfs/objects/{oid}?")
    assert env.client.put(href.replace("size=50000", "size=50001"), content=data).status_code == 401
    assert env.client.put(href.replace("sig=", "sig=0"), content=data).status_code == 401
    bad = env.client.put(href, content=data[:-1] + b"!")
    assert (bad.status_code, bad.headers["X-Error-Code"]) == (422, "ChecksumMismatch")
    assert env.client.put(href, content=data).status_code == 200
    verify = r.json()["objects"][0]["actions"]["verify"]["href"]
    assert env.client.post(verify, json={"oid": oid, "size": len(data)}, headers=env.h(env.writer)).status_code == 200
    again = env.client.post("/kernels/org/k.git/info/lfs/objects/batch", json=batch, headers=env.h(env.writer)).json()
    assert "actions" not in again["objects"][0]  # already stored: the client skips the upload
    r = env.commit(
        [header(), {"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": oid, "size": len(data)}}]
    )
    assert r.status_code == 200
    got = env.client.get("/kernels/org/k/resolve/main/w.bin")
    assert (
        got.content == data and got.headers["X-Linked-Etag"] == f'"{oid}"' and got.headers["X-Linked-Size"] == "50000"
    )
    ranged = env.client.get("/kernels/org/k/resolve/main/w.bin", headers={"Range": "bytes=100-199"})
    assert ranged.status_code == 206 and ranged.content == data[100:200]


def test_commit_naming_an_lfs_object_never_uploaded_is_refused(env):
    env.create()
    before = env.head()
    r = env.commit(
        [header(), {"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": "c" * 64, "size": 5}}]
    )
    assert (r.status_code, r.headers["X-Error-Code"]) == (422, "LfsObjectMissing")
    assert env.head() == before


def test_stale_parent_commit_is_refused(env):
    env.create()
    parent = env.head()
    assert env.commit([header(parentCommit=parent), file_line("a", b"1")]).status_code == 200
    head = env.head()
    r = env.commit([header(parentCommit=parent), file_line("b", b"2")])
    assert r.status_code == 412 and "refresh" in r.json()["error"].lower()
    assert env.head() == head


def test_preupload_modes_and_remote_oids(env):
    env.create()
    env.commit([header(), file_line("a.txt", b"hello")])
    files = [
        {"path": "a.txt", "sample": base64.b64encode(b"hello").decode(), "size": 5},
        {"path": "lib.so", "sample": base64.b64encode(b"\x7fELF\x02\x01\x01\x00\x00").decode(), "size": 9},
        {"path": "big.txt", "sample": base64.b64encode(b"text").decode(), "size": 20 * 1024 * 1024},
    ]
    r = env.client.post("/api/kernels/org/k/preupload/main", json={"files": files}, headers=env.h(env.writer))
    modes = {f["path"]: (f["uploadMode"], f["oid"]) for f in r.json()["files"]}
    git_oid = hashlib.sha1(b"blob 5\x00hello").hexdigest()
    assert modes == {"a.txt": ("regular", git_oid), "lib.so": ("lfs", None), "big.txt": ("lfs", None)}
    assert env.client.post("/api/kernels/org/k/preupload/main", json={"files": files}).status_code == 401


def test_tree_pagination_follows_the_commit(env):
    env.create()
    env.commit([header()] + [file_line(f"d/f{i:04d}", b"x") for i in range(1100)])
    r = env.client.get("/api/kernels/org/k/tree/main/d")
    assert len(r.json()) == 1000
    next_url = r.links["next"]["url"]
    assert f"/tree/{env.head()}/d?" in next_url  # pinned to the commit, not the branch
    rest = env.client.get(next_url).json()
    assert len(rest) == 100 and rest[-1]["path"] == "d/f1099"


def test_organization_overview_reports_trust(env):
    env.create()
    assert env.client.get("/api/organizations/org/overview").json()["trustedKernelPublisher"] is False
    env.auth.set_trusted("org")
    assert env.client.get("/api/organizations/org/overview").json()["trustedKernelPublisher"] is True
    assert env.client.get("/api/organizations/nobody/overview").status_code == 404


def test_validate_yaml(env):
    assert env.client.post("/api/validate-yaml", json={"content": "---\nlicense: mit\n---\n# x"}).status_code == 200
    r = env.client.post("/api/validate-yaml", json={"content": "---\nlicense: [mit\n---\n# x"})
    assert r.status_code == 400 and r.json()["errors"]


def test_head_of_a_regular_file(env):
    env.create()
    env.commit([header(), file_line("a.txt", b"hello")])
    r = env.client.head("/kernels/org/k/resolve/main/a.txt")
    assert r.status_code == 200 and r.content == b"" and r.headers["Content-Length"] == "5"
    git_oid = hashlib.sha1(b"blob 5\x00hello").hexdigest()
    assert r.headers["ETag"] == f'"{git_oid}"'
    assert r.headers["X-Repo-Commit"] == env.head()


def test_each_request_is_logged(env, caplog):
    with caplog.at_level(logging.INFO, logger="pipeline.hub.access"):
        env.client.get("/api/kernels/org/missing")
    (record,) = [r for r in caplog.records if r.name == "pipeline.hub.access"]
    method, path, status, ms = record.getMessage().split()
    assert (method, path, status) == ("GET", "/api/kernels/org/missing", "404") and ms.endswith("ms")


def test_lfs_download_batch_and_delete_repo(env):
    env.create()
    data = b"\x00binary" * 1000
    oid = hashlib.sha256(data).hexdigest()
    up = {"operation": "upload", "objects": [{"oid": oid, "size": len(data)}]}
    href = env.client.post("/kernels/org/k.git/info/lfs/objects/batch", json=up, headers=env.h(env.writer)).json()
    assert env.client.put(href["objects"][0]["actions"]["upload"]["href"], content=data).status_code == 200
    down = {"operation": "download", "objects": [{"oid": oid, "size": len(data)}, {"oid": "d" * 64, "size": 1}]}
    objects = env.client.post("/kernels/org/k.git/info/lfs/objects/batch", json=down).json()["objects"]
    assert objects[1]["error"]["code"] == 404
    assert env.client.get(objects[0]["actions"]["download"]["href"]).content == data
    body = {"name": "k", "organization": "org", "type": "kernel"}
    assert env.client.request("DELETE", "/api/repos/delete", json=body, headers=env.h(env.reader)).status_code == 403
    assert env.client.request("DELETE", "/api/repos/delete", json=body, headers=env.h(env.writer)).status_code == 200
    assert env.client.get("/api/kernels/org/k").status_code == 404
    assert env.create().status_code == 200  # the name is free again

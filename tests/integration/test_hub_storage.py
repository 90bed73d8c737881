"""Hub repositories as bare git repositories (pipeline/hub/registry.py,
repository.py, objects.py, commits.py, recovery.py)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading

import anyio
import pytest

from pipeline.hub import lfs
from pipeline.hub.errors import (
    BadRequest,
    Conflict,
    EntryNotFound,
    LfsObjectMissing,
    RepoNotFound,
    RevisionNotFound,
    StaleParent,
)
from pipeline.hub.paths import repo_id
from pipeline.hub.commits import AddBlob, AddLfs, DeleteFile, DeleteFolder, commit
from pipeline.hub.recovery import fsck, recover
from pipeline.hub.registry import Storage
from pipeline.hub.xet_store import XetStore

RID = repo_id("kernel", "org", "k")


@pytest.fixture
def repo(tmp_path):
    return Storage(tmp_path).create(RID, private=False, author="alice")


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo.dir), *args], check=True, capture_output=True, text=True).stdout


def _files(repo, rev="main") -> dict[str, bytes]:
    commit = repo.resolve(rev)
    return {e.path: repo.read_blob(e.oid) for e in repo.list_tree(commit, recursive=True) if e.type == "file"}


def test_create_makes_a_bare_repo_with_an_initial_commit(tmp_path, repo):
    assert repo.dir == tmp_path / "repos" / "kernels" / "org" / "k.git"
    assert _git(repo, "rev-parse", "--is-bare-repository").strip() == "true"
    ((name, head),) = repo.branches()
    assert name == "main" and repo.commit_info(head).title == "initial commit"
    with pytest.raises(Conflict):
        Storage(tmp_path).create(RID, private=False, author="bob")
    with pytest.raises(RepoNotFound):
        Storage(tmp_path).open(repo_id("kernel", "org", "missing"))


def test_commit_is_a_git_commit(repo):
    before = repo.branch_head("main")
    sha = commit(
        repo,
        "main",
        [AddBlob("a/b.txt", repo.write_blob(b"hello\n")), AddBlob("c", repo.write_blob(b"x"))],
        summary="add files",
        description="two of them",
        author="alice",
    )
    assert repo.branch_head("main") == sha and _git(repo, "rev-parse", "main").strip() == sha
    assert _git(repo, "show", "main:a/b.txt") == "hello\n"
    assert _git(repo, "log", "-1", "--format=%s/%an", "main").strip() == "add files/alice"
    assert _git(repo, "log", "-1", "--format=%b", "main").strip() == "two of them"
    assert repo.commit_info(sha).parents == (before,)
    _git(repo, "fsck", "--strict")  # a well-formed repository (raises on any problem)


def test_lfs_files_are_pointers_to_verified_objects(repo):
    data = os.urandom(100_000)
    oid = hashlib.sha256(data).hexdigest()

    async def chunks():
        yield data

    with pytest.raises(LfsObjectMissing):  # never uploaded
        commit(repo, "main", [AddLfs("w.bin", oid, len(data))], summary="x")
    anyio.run(repo.lfs.ingest, oid, len(data), chunks())
    with pytest.raises(LfsObjectMissing):  # wrong size
        commit(repo, "main", [AddLfs("w.bin", oid, len(data) + 1)], summary="x")
    sha = commit(repo, "main", [AddLfs("w.bin", oid, len(data))], summary="lfs")
    entry = repo.entry(sha, "w.bin")
    assert (
        entry.size == len(data) and entry.lfs.oid == oid and entry.lfs.pointer_size == len(lfs.pointer(oid, len(data)))
    )
    assert _git(repo, "show", "main:w.bin").encode() == lfs.pointer(oid, len(data))


def test_deletions(repo):
    blob = repo.write_blob(b"1")
    commit(repo, "main", [AddBlob(p, blob) for p in ("build/a/x", "build/a/y", "build/b/z", "README.md")], summary="s")
    with pytest.raises(EntryNotFound):
        commit(repo, "main", [DeleteFile("nope")], summary="d")
    commit(repo, "main", [DeleteFolder("build/a"), DeleteFile("README.md")], summary="d")
    assert set(_files(repo)) == {"build/b/z"}
    # Delete-then-add in one commit keeps the added file (upload_folder with delete_patterns).
    commit(repo, "main", [DeleteFolder("build"), AddBlob("build/b/z", repo.write_blob(b"2"))], summary="r")
    assert _files(repo) == {"build/b/z": b"2"}


def test_file_and_folder_conflicts_are_refused(repo):
    blob = repo.write_blob(b"1")
    commit(repo, "main", [AddBlob("a/b", blob)], summary="s")
    head = repo.branch_head("main")
    for path in ("a", "a/b/c"):
        with pytest.raises(BadRequest):
            commit(repo, "main", [AddBlob(path, blob)], summary="conflict")
    assert repo.branch_head("main") == head


def test_regular_file_that_looks_like_an_lfs_pointer_is_refused(repo):
    with pytest.raises(BadRequest):
        repo.write_blob(lfs.pointer("b" * 64, 10))


def test_stale_parent_is_refused_and_changes_nothing(repo):
    parent = repo.branch_head("main")
    commit(repo, "main", [AddBlob("a", repo.write_blob(b"1"))], summary="first", parent=parent)
    head = repo.branch_head("main")
    with pytest.raises(StaleParent):
        commit(repo, "main", [AddBlob("b", repo.write_blob(b"2"))], summary="stale", parent=parent)
    assert repo.branch_head("main") == head and set(_files(repo)) == {"a"}


def test_concurrent_commits_are_serialised(tmp_path, repo):
    n = 12
    errors = []

    def worker(i: int) -> None:
        try:
            other = Storage(tmp_path).open(RID)  # its own Repository, as each request has
            commit(other, "main", [AddBlob(f"f{i}", other.write_blob(str(i).encode()))], summary=f"c{i}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert set(_files(repo)) == {f"f{i}" for i in range(n)}  # no commit lost another's file
    assert len(repo.log(repo.branch_head("main"))) == n + 1  # linear history


def test_branches_tags_and_revisions(repo):
    first = repo.branch_head("main")
    commit(repo, "main", [AddBlob("a", repo.write_blob(b"1"))], summary="s")
    assert repo.create_branch("v1", first) == first
    with pytest.raises(Conflict):
        repo.create_branch("v1", None)
    assert dict(repo.branches()) == {"main": repo.branch_head("main"), "v1": first}
    _git(repo, "tag", "t1", first)
    assert repo.resolve("t1") == first == repo.resolve(first)
    for bad in ("nope", "f" * 40):
        with pytest.raises(RevisionNotFound):
            repo.resolve(bad)
    with pytest.raises(RevisionNotFound):
        commit(repo, "v2", [], summary="to a branch that does not exist")
    repo.delete_branch("v1")
    assert "v1" not in dict(repo.branches())
    with pytest.raises(BadRequest):
        repo.delete_branch("main")


def test_list_tree(repo):
    blob = repo.write_blob(b"12345")
    sha = commit(
        repo,
        "main", [AddBlob("build/v1/a.py", blob), AddBlob("build/v2/b.py", blob), AddBlob("R", blob)], summary="s"
    )
    assert [(e.path, e.type) for e in repo.list_tree(sha)] == [("R", "file"), ("build", "directory")]
    assert [e.path for e in repo.list_tree(sha, "build")] == ["build/v1", "build/v2"]
    assert [e.path for e in repo.list_tree(sha, recursive=True) if e.type == "file"] == [
        "R",
        "build/v1/a.py",
        "build/v2/b.py",
    ]
    assert repo.entry(sha, "build/v1/a.py").size == 5
    for missing in ("nope", "R"):
        with pytest.raises(EntryNotFound):
            repo.list_tree(sha, missing)


def test_recover_removes_leftovers_and_never_rolls_back_a_head(tmp_path, repo):
    good = commit(repo, "main", [AddBlob("a", repo.write_blob(b"1"))], summary="good")
    # What a crash can leave behind: a ref lock, a temp object, a half upload, a half-created repository.
    (repo.dir / "refs" / "heads" / "main.lock").write_text("")
    (repo.dir / "objects" / "obj12345").write_bytes(b"partial")
    repo.lfs.tmp.mkdir(parents=True)
    (repo.lfs.tmp / "x.1").write_bytes(b"partial")
    (tmp_path / "repos" / ".staging" / "k2.abc").mkdir()
    # A head whose tree is missing (cannot happen with our write order; recover() copes anyway).
    bad_tree = "1" * 40
    bad = _git_commit_object(repo, bad_tree, good)
    (repo.dir / "refs" / "heads" / "main.lock").unlink()
    _git(repo, "update-ref", "refs/heads/main", bad, good)
    (repo.dir / "refs" / "heads" / "main.lock").write_text("")
    assert repo.objects.missing(bad) is not None

    (repo.dir / "incoming" / "q.1" / "ab").mkdir(parents=True)  # a commit's quarantined objects

    notes = recover(Storage(tmp_path))
    # The head may be a commit a client was told had succeeded: reported, never moved.
    assert repo.branch_head("main") == bad
    assert any("incomplete" in n and "hub fsck" in n for n in notes), notes
    assert not (repo.dir / "refs" / "heads" / "main.lock").exists()
    assert not (repo.dir / "objects" / "obj12345").exists()
    assert list((repo.dir / "incoming").iterdir()) == []
    assert list(repo.lfs.tmp.iterdir()) == [] and list((tmp_path / "repos" / ".staging").iterdir()) == []
    again = recover(Storage(tmp_path))
    assert len(again) == 1 and "incomplete" in again[0]  # nothing left to remove; the damage is still reported

    (problem,) = [p for p in fsck(Storage(tmp_path), XetStore(tmp_path)) if "incomplete" in p.problem]
    assert problem.repo == str(repo.dir) and "refs/heads/main" in problem.problem
    assert f"update-ref refs/heads/main {good} {bad}" in problem.fix


def _git_commit_object(repo, tree: str, parent: str) -> str:
    body = f"tree {tree}\nparent {parent}\nauthor a <a@x> 0 +0000\ncommitter a <a@x> 0 +0000\n\nbroken\n"
    out = subprocess.run(
        ["git", "-C", str(repo.dir), "hash-object", "-t", "commit", "-w", "--literally", "--stdin"],
        input=body,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()

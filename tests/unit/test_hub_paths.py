"""Validation of repository ids, branch names and paths (pipeline/hub/paths.py)."""

from __future__ import annotations

import pytest

from pipeline.hub import paths
from pipeline.hub.errors import BadRequest


@pytest.mark.parametrize(
    "value", ["a.txt", "build/torch213-cxx11-cpu-x86_64-linux/_ops.py", "README.md", "a b/c-d_e.f"]
)
def test_file_path_accepts_normal_paths(value):
    assert paths.file_path(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "",
        "/etc/passwd",
        "../x",
        "a/../../b",
        "a/..",
        "./a",
        "a/./b",
        "a//b",
        "a/",
        "a\x00b",
        "a\nb",
        "a\\b",
        ".git/config",
        "x/.git/HEAD",
        ".cache/y",
        "a/" + "x" * 256,
        "x/" * 2049,
    ],
)
def test_file_path_refuses_traversal_and_junk(value):
    with pytest.raises(BadRequest):
        paths.file_path(value)


def test_folder_path_may_end_with_slash():
    assert paths.file_path("build/v/", folder=True) == "build/v"
    with pytest.raises(BadRequest):
        paths.file_path("build/v/")


@pytest.mark.parametrize("ns,name", [("org", "k"), ("kernels-community", "rms.norm"), ("a1", "b_2")])
def test_repo_id_accepts(ns, name):
    rid = paths.repo_id("kernel", ns, name)
    assert (rid.id, rid.url_prefix) == (f"{ns}/{name}", "kernels/")


@pytest.mark.parametrize(
    "ns,name",
    [
        ("org", ".."),
        ("..", "k"),
        ("org", "a--b"),
        ("org", "-a"),
        ("org", "a" * 97),
        ("api", "k"),
        ("kernels", "k"),
        ("org", "k.git"),
        ("o/g", "k"),
        ("org", "k\x00"),
        ("org", ""),
    ],
)
def test_repo_id_refuses(ns, name):
    with pytest.raises(BadRequest):
        paths.repo_id("kernel", ns, name)


def test_repo_types():
    assert paths.repo_type(None) == "model"
    assert paths.repo_type_from_plural("kernels") == "kernel"
    for bad in ("space", "dataset", "x"):
        with pytest.raises(BadRequest):
            paths.repo_type(bad)


@pytest.mark.parametrize("value", ["main", "v1", "feature/x", "release-1.2"])
def test_branch_names(value):
    assert paths.branch_name(value) == value


@pytest.mark.parametrize(
    "value", ["", "refs/heads/x", "a..b", "x.lock", "-x", ".x", "a//b", "a b", "a~1", "0" * 40, "b" * 201]
)
def test_bad_branch_names(value):
    with pytest.raises(BadRequest):
        paths.branch_name(value)


def test_revision_accepts_commit_ids():
    assert paths.revision("a" * 40) == "a" * 40
    assert paths.is_commit_id("0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(BadRequest):
        paths.sha256_hex("xyz")

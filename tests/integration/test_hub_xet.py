"""The real huggingface_hub with hf_xet installed and HF_HUB_DISABLE_XET unset,
against the hub: uploads go through the Xet CAS (xorbs, shards), downloads
through reconstructions, content is stored once (pipeline/hub/xet_*.py)."""

from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, constants, snapshot_download

from hubtesting import subprocess_env
from pipeline.hub import EmbeddedHub

hf_xet = pytest.importorskip("hf_xet")

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    with EmbeddedHub(tmp_path_factory.mktemp("xet") / "hub", trusted_namespaces=["org"]) as h:
        yield h


@pytest.fixture(autouse=True)
def xet_on(monkeypatch, tmp_path):
    # The client as installed: Xet on, its caches private to this test.
    monkeypatch.delenv("HF_HUB_DISABLE_XET", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _api(hub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.admin_token)


def _repo(hub, name: str) -> str:
    _api(hub).create_repo(f"org/{name}", repo_type="kernel")
    return f"org/{name}"


def _xorb_bytes(hub) -> int:
    return sum(p.stat().st_size for p in (hub.root / "xet" / "xorbs").rglob("*.xorb"))


def _cli_env(hub, tmp_path) -> dict[str, str]:
    return subprocess_env(
        {"HF_ENDPOINT": hub.endpoint, "HF_TOKEN": hub.admin_token, "HF_HOME": str(tmp_path / "hf-home"),
         "HF_HUB_DISABLE_PROGRESS_BARS": "1"}  # fmt: skip
    )


def test_upload_file_of_a_12_mb_binary_goes_through_xet(hub, tmp_path):
    repo = _repo(hub, "big")
    data = os.urandom(12 * MiB)
    (tmp_path / "big.bin").write_bytes(data)
    before = _xorb_bytes(hub)
    _api(hub).upload_file(path_or_fileobj=str(tmp_path / "big.bin"), path_in_repo="big.bin", repo_id=repo,
                          repo_type="kernel")  # fmt: skip
    assert _xorb_bytes(hub) - before >= 12 * MiB  # random bytes do not compress
    lfs = hub.root / "repos" / "kernels" / "org" / "big.git" / "lfs" / "objects"
    assert not lfs.exists() or not any(lfs.rglob("*"))  # not through Git LFS

    (entry,) = [e for e in _api(hub).list_repo_tree(repo, repo_type="kernel") if e.path == "big.bin"]
    assert entry.lfs.sha256 == hashlib.sha256(data).hexdigest() and entry.xet_hash

    got = _api(hub).hf_hub_download(repo, "big.bin", repo_type="kernel", cache_dir=tmp_path / "dl")
    assert Path(got).read_bytes() == data

    # A client without Xet (curl, git-lfs, HF_HUB_DISABLE_XET=1) reads the same bytes, Range included.
    url = f"{hub.endpoint}/kernels/{repo}/resolve/main/big.bin"
    head = httpx.head(url)
    assert head.headers["x-xet-hash"] == entry.xet_hash and head.headers["x-linked-size"] == str(len(data))
    assert 'rel="xet-auth"' in head.headers["link"]
    part = httpx.get(url, headers={"Range": "bytes=5000000-5100000"})
    assert part.status_code == 206 and part.content == data[5000000:5100001]
    assert part.headers["content-range"] == f"bytes 5000000-5100000/{len(data)}"
    assert httpx.get(url, headers={"Range": f"bytes={len(data)}-"}).status_code == 416


def test_upload_folder_and_snapshot_download(hub, tmp_path):
    repo = _repo(hub, "folder")
    src = tmp_path / "src"
    variant = src / "build" / "torch213-cxx11-cpu-x86_64-linux"
    variant.mkdir(parents=True)
    (variant / "_k.abi3.so").write_bytes(b"\x7fELF\0" + os.urandom(3 * MiB))
    (variant / "__init__.py").write_text("from ._ops import ops\n")
    (variant / "metadata.json").write_text('{"version": 1}\n')
    (src / "README.md").write_text("# k\n")
    _api(hub).upload_folder(folder_path=src, repo_id=repo, repo_type="kernel")
    out = Path(snapshot_download(repo, repo_type="kernel", cache_dir=tmp_path / "c", endpoint=hub.endpoint))
    files = {p.relative_to(src).as_posix(): p.read_bytes() for p in src.rglob("*") if p.is_file()}
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == files


def test_hf_upload_and_hf_download(hub, tmp_path):
    repo = _repo(hub, "cli")
    data = os.urandom(2 * MiB)
    (tmp_path / "w.bin").write_bytes(data)
    env = _cli_env(hub, tmp_path)
    up = subprocess.run(["hf", "upload", repo, str(tmp_path / "w.bin"), "w.bin", "--repo-type", "kernel"],
                        env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert up.returncode == 0, up.stderr
    down = subprocess.run(["hf", "download", repo, "w.bin", "--repo-type", "kernel", "--local-dir",
                           str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert down.returncode == 0, down.stderr
    assert (tmp_path / "out" / "w.bin").read_bytes() == data


def test_kernels_versions_reads_branches_by_full_ref(hub, tmp_path):
    repo = _repo(hub, "versions")
    api = _api(hub)
    for v in ("v1", "v2"):
        api.create_branch(repo, branch=v, repo_type="kernel")
        api.upload_file(path_or_fileobj=b"\0so", path_in_repo="build/torch213-cxx11-cpu-x86_64-linux/_k.so",
                        repo_id=repo, repo_type="kernel", revision=v)  # fmt: skip
    out = subprocess.run(["kernels", "versions", repo], env=_cli_env(hub, tmp_path), capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "Version 1" in out.stdout and "Version 2" in out.stdout and "torch213-cxx11-cpu" in out.stdout


def _library(seed: int, changed: int | None) -> bytes:
    """Stands in for a kernel's .so: 4 MB of 'functions'; `changed` rewrites one."""
    rng = random.Random(seed)
    functions = [rng.randbytes(rng.randint(2_000, 12_000)) for _ in range(600)]
    if changed is not None:
        functions[changed] = random.Random(seed + 1).randbytes(len(functions[changed]) + 40)
    return b"".join(functions)


UPLOAD = """
import sys
from huggingface_hub import HfApi
endpoint, token, path, revision = sys.argv[1:]
HfApi(endpoint=endpoint, token=token).upload_file(
    path_or_fileobj=path, path_in_repo="build/v/_k.so", repo_id="org/dedup", repo_type="kernel", revision=revision)
"""


def test_republishing_with_one_changed_function_stores_only_the_change(hub, tmp_path):
    """Each upload from a fresh client (its own empty Xet cache): what is not
    sent again was found through the hub's global dedup API."""
    repo = _repo(hub, "dedup")
    api = _api(hub)
    api.create_branch(repo, branch="v2", repo_type="kernel")
    first, second = _library(7, None), _library(7, changed=300)
    added = []
    for i, (data, revision) in enumerate(((first, "main"), (second, "v2"))):
        (tmp_path / f"{i}.so").write_bytes(data)
        env = {**_cli_env(hub, tmp_path), "HF_XET_CACHE": str(tmp_path / f"xet-cache-{i}")}
        before = _xorb_bytes(hub)
        done = subprocess.run([sys.executable, "-c", UPLOAD, hub.endpoint, hub.admin_token, str(tmp_path / f"{i}.so"),
                               revision], env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        added.append(_xorb_bytes(hub) - before)
    print(f"{len(second)} bytes republished with one function changed: {added[1]} bytes of xorbs stored")
    assert added[0] >= len(first) * 0.9  # random bytes: stored once, uncompressed
    # One changed function costs the chunks around it (about 64 KiB each), not a second copy.
    assert 0 < added[1] < 400_000, added
    got = api.hf_hub_download(repo, "build/v/_k.so", repo_type="kernel", revision="v2", cache_dir=tmp_path / "c")
    assert Path(got).read_bytes() == second


def test_a_read_only_xet_token_cannot_upload(hub):
    repo = _repo(hub, "scopes")
    reader = hub.create_token("org", "read", user="reader")
    token = httpx.get(f"{hub.endpoint}/api/kernels/{repo}/xet-read-token/main",
                      headers={"Authorization": f"Bearer {reader}"}).json()  # fmt: skip
    # the store's own id in the CAS URL keeps hf_xet's per-URL caches of two stores apart
    assert re.fullmatch(re.escape(f"{hub.endpoint}/_xet/") + "[0-9a-f]{16}", token["casUrl"])
    other = f"{hub.endpoint}/_xet/{'0' * 16}/v1/xorbs/default/{'0' * 64}"  # a store served here earlier
    assert httpx.post(other, content=b"x", headers={"Authorization": f"Bearer {token['accessToken']}"}).status_code == 404
    post = httpx.post(f"{token['casUrl']}/v1/xorbs/default/{'0' * 64}", content=b"x",
                      headers={"Authorization": f"Bearer {token['accessToken']}"})  # fmt: skip
    assert post.status_code == 403
    assert httpx.get(f"{hub.endpoint}/api/kernels/{repo}/xet-write-token/main",
                     headers={"Authorization": f"Bearer {reader}"}).status_code == 403  # fmt: skip
    assert httpx.post(f"{token['casUrl']}/v1/shards", content=b"x").status_code == 401

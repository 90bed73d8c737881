"""Crashes: a client killed mid-upload, a server killed mid-commit. Each leaves
every branch at a complete commit, and the next try succeeds."""

from __future__ import annotations

import filecmp
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from huggingface_hub import CommitOperationAdd, HfApi, constants

from hubtesting import ServerProcess, subprocess_env

pytestmark = pytest.mark.slow

TOKEN = "hf_crash_test_admin_token_123456"

# A client that uploads slowly (20 ms per 64 KiB read of the PUT body) so the
# test can kill it in the middle of the LFS PUT.
SLOW_CLIENT = textwrap.dedent("""
    import io, sys, time
    from huggingface_hub import HfApi

    class Slow(io.BufferedReader):
        def read(self, n=-1):
            if n == 65536:  # httpx streaming the PUT body (hashing reads 1 MiB at a time)
                time.sleep(0.02)
            return super().read(n)

    endpoint, token, path = sys.argv[1:4]
    HfApi(endpoint=endpoint, token=token).upload_file(
        path_or_fileobj=Slow(io.FileIO(path)), path_in_repo="big.bin", repo_id="org/k",
        repo_type="kernel", revision="v1")
""")


def _heads(api: HfApi, repo: str = "org/k") -> dict[str, str]:
    return {b.name: b.target_commit for b in api.list_repo_refs(repo, repo_type="kernel").branches}


def _fsck(root: Path) -> None:
    for repo in (root / "repos").glob("kernels/*/*.git"):
        subprocess.run(
            ["git", "-C", str(repo), "fsck", "--connectivity-only", "--no-dangling"], check=True, capture_output=True
        )


def test_client_killed_mid_upload_leaves_the_branch_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    data = tmp_path / "big.bin"
    data.write_bytes(os.urandom(20 * 1024 * 1024))
    oid = hashlib.sha256(data.read_bytes()).hexdigest()
    root = tmp_path / "hub"
    with ServerProcess(root, token=TOKEN) as server:
        api = HfApi(endpoint=server.endpoint, token=TOKEN)
        api.create_repo("org/k", repo_type="kernel")
        api.create_branch("org/k", branch="v1", repo_type="kernel")
        before = _heads(api)
        tmp_dir = root / "repos" / "kernels" / "org" / "k.git" / "lfs" / "tmp"
        client = subprocess.Popen(
            [sys.executable, "-c", SLOW_CLIENT, server.endpoint, TOKEN, str(data)],
            env=subprocess_env({"HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp_path / "hf")}),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            partial = [p for p in tmp_dir.glob("*") if p.stat().st_size > 1024 * 1024] if tmp_dir.is_dir() else []
            if partial:
                break
            assert client.poll() is None, "the client finished before it could be killed"
            time.sleep(0.01)
        else:
            pytest.fail("the upload never started")
        client.send_signal(signal.SIGKILL)  # mid-PUT
        client.wait()
        deadline = time.monotonic() + 30
        while any(tmp_dir.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(tmp_dir.iterdir()) == [], "the half upload was not removed"
        assert not (
            root / "repos" / "kernels" / "org" / "k.git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid
        ).exists()
        assert _heads(api) == before
        assert "client went away" in "\n".join(server.log_lines)

        # The retry goes through and the file comes back byte-identical.
        api.upload_file(
            path_or_fileobj=str(data), path_in_repo="big.bin", repo_id="org/k", repo_type="kernel", revision="v1"
        )
        after = _heads(api)
        assert after["main"] == before["main"] and after["v1"] != before["v1"]
        got = api.hf_hub_download("org/k", "big.bin", repo_type="kernel", revision="v1", cache_dir=tmp_path / "c")
        assert filecmp.cmp(got, data, shallow=False)
    _fsck(root)


def _big_commit(n_files: int, tag: str) -> list[CommitOperationAdd]:
    # Text (no NUL) under 10 MB: sent inline, base64, in the NDJSON commit body.
    return [
        CommitOperationAdd(f"bulk/{tag}/f{i:04d}.txt", os.urandom(24 * 1024).hex().encode()) for i in range(n_files)
    ]


def test_server_killed_mid_commit_restarts_with_complete_branches(tmp_path, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    root = tmp_path / "hub"
    n_files = 300
    with ServerProcess(root, token=TOKEN) as server:
        api = HfApi(endpoint=server.endpoint, token=TOKEN)
        api.create_repo("org/k", repo_type="kernel")
        start = time.monotonic()
        api.create_commit("org/k", _big_commit(n_files, "warm"), commit_message="timing", repo_type="kernel")
        duration = time.monotonic() - start

    repo_dir = root / "repos" / "kernels" / "org" / "k.git"

    def n_objects() -> int:
        # A commit's objects wait in incoming/ (its quarantine) until the commit is complete.
        return sum(1 for p in repo_dir.glob("objects/??/*")) + sum(1 for p in repo_dir.glob("incoming/*/??/*"))

    outcomes = []
    for round_, fraction in enumerate((0.3, 0.6, 0.9, 1.3, 2.0)):
        server = ServerProcess(root, token=TOKEN).start()
        api = HfApi(endpoint=server.endpoint, token=TOKEN)
        before = _heads(api)["main"]
        objects_before = n_objects()
        ops = _big_commit(n_files, f"r{round_}")
        result: dict = {}

        def commit(api=api, ops=ops, result=result, round_=round_) -> None:
            try:
                result["oid"] = api.create_commit(
                    "org/k", ops, commit_message=f"round {round_}", repo_type="kernel"
                ).oid
            except Exception as exc:  # the server died under it
                result["error"] = exc

        thread = threading.Thread(target=commit)
        thread.start()
        time.sleep(duration * fraction)
        server.kill()  # SIGKILL: no cleanup, as in a crash
        thread.join(timeout=120)
        written_before_kill = n_objects() - objects_before

        server = ServerProcess(root, token=TOKEN).start()  # recovery runs at start
        try:
            api = HfApi(endpoint=server.endpoint, token=TOKEN)
            head = _heads(api)["main"]
            files = {
                f
                for f in api.list_repo_files("org/k", repo_type="kernel", revision=head)
                if f.startswith(f"bulk/r{round_}/")
            }
            if head == before:
                assert "oid" not in result, "a commit the client saw succeed was lost"
                assert files == set()
                # Objects written but no ref moved: the kill landed inside the commit.
                outcomes.append("killed mid-commit" if written_before_kill else "killed before the commit")
            else:
                assert len(files) == n_files, "the branch points at a partial commit"
                outcomes.append("new head")
            # The hub keeps working after the crash.
            api.upload_file(
                path_or_fileobj=f"after {round_}".encode(),
                path_in_repo=f"after{round_}.txt",
                repo_id="org/k",
                repo_type="kernel",
            )
        finally:
            server.stop()
        _fsck(root)
    assert "killed mid-commit" in outcomes, outcomes

"""The whole job on the real rmsnorm kernel (its CPU variant here), through the CLI:

fresh embedded Hub -> `publish` (local build, check, smoke, upload, verify)
-> `verify` -> a second `publish` that changes nothing -> version 2 on its own
branch, with v1 still loadable by get_kernel.

A copy of kernels-src/rmsnorm in a fresh git repository is published, with a
fresh build cache, so nothing built earlier stands in for this build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "kernels-src" / "rmsnorm"
REPO_ID = "kernels-pipeline/rmsnorm"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not (RMSNORM / "build.toml").is_file(), reason="kernels-src/rmsnorm is not there")]


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _pipeline(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=1500)


def _check_published_card(endpoint: str, where: Path) -> None:
    """main's README.md as the Hub serves it: short, no machine path, its plot and its link to
    benchmarks.md resolving to files main holds (the plot the source's own)."""
    import re

    from huggingface_hub import HfApi

    from pipeline.card import CARD_MAX_BYTES
    from pipeline.portable_paths import absolute_paths

    api = HfApi(endpoint=endpoint)
    files = set(api.list_repo_files(REPO_ID, repo_type="kernel", revision="main"))
    card = Path(api.hf_hub_download(REPO_ID, "README.md", repo_type="kernel", cache_dir=where)).read_text()
    assert len(card.encode()) <= CARD_MAX_BYTES and absolute_paths(card) == []
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", card)
    assert images == ["media/benchmark-h200.png"] and "[benchmarks.md](benchmarks.md)" in card
    assert {"benchmarks.md", *images} <= files
    plot = Path(api.hf_hub_download(REPO_ID, images[0], repo_type="kernel", cache_dir=where))
    assert plot.read_bytes() == (RMSNORM / "benchmarks" / "results" / "h200.png").read_bytes()


def test_rmsnorm_publish_verify_republish_v2(tmp_path):
    from pipeline.hub import EmbeddedHub

    kernel = tmp_path / "rmsnorm"
    shutil.copytree(RMSNORM, kernel, ignore=shutil.ignore_patterns("build", "result", "__pycache__", "*.pyc"))
    _git(kernel, "init", "-q")
    _git(kernel, "add", "-A")
    _git(kernel, "commit", "-qm", "rmsnorm")

    with EmbeddedHub(tmp_path / "hub", port=0, trusted_namespaces=["kernels-pipeline"]) as hub:
        env = {k: v for k, v in os.environ.items() if k not in ("HF_ENDPOINT", "HF_TOKEN")}
        env.update(HF_TOKEN=hub.admin_token, PIPELINE_CACHE_DIR=str(tmp_path / "build-cache"))
        publish = ["publish", REPO_ID, "--kernel", str(kernel), "--endpoint", hub.endpoint]

        first = _pipeline(*publish, "--json", env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        doc = json.loads(first.stdout)
        assert [c["branch"] for c in doc["commits"]] == ["v1", "main"]
        assert doc["bundle"]["source"] == "local build of the host's variant"
        verify = doc["verify"]
        assert verify["ok"] and verify["load"]["ok"] and verify["load"]["cases"] > 0, verify
        host = verify["load"]["variant"]
        assert host in doc["variants"] and verify["load"]["kernel_id"].startswith("_rmsnorm_cpu_")
        assert any(c["cell"] == host and c["chosen"] == host for c in verify["cells"])
        _check_published_card(hub.endpoint, tmp_path / "card")

        again = _pipeline(*publish, env=env)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "nothing changed, no commit made, nothing uploaded" in again.stdout

        v1 = _pipeline("verify", REPO_ID, "--version", "1", "--kernel", str(kernel), "--endpoint", hub.endpoint,
                       "--json", env=env)
        assert v1.returncode == 0, v1.stderr[-3000:]
        v1_id = json.loads(v1.stdout)["load"]["kernel_id"]

        toml = kernel / "build.toml"
        toml.write_text(toml.read_text().replace("version = 1", "version = 2", 1))
        _git(kernel, "commit", "-qam", "version 2")
        second = _pipeline(*publish, "--json", env=env)
        assert second.returncode == 0, second.stderr[-3000:]
        doc2 = json.loads(second.stdout)
        assert doc2["version"] == 2 and [c["branch"] for c in doc2["commits"]] == ["v2", "main"]
        assert doc2["verify"]["ok"]

        still = _pipeline("verify", REPO_ID, "--version", "1", "--kernel", str(kernel), "--endpoint", hub.endpoint,
                          "--json", env=env)
        assert still.returncode == 0, still.stderr[-3000:]
        assert json.loads(still.stdout)["load"]["kernel_id"] == v1_id

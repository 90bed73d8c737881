"""Reproducible local builds: the same commit, checked out at two paths, gives
byte-identical variant directories (the .so included). Before the prefix maps,
the absolute source paths were compiled in (TORCH_CHECK's __FILE__, the symbol
table's file names), so a second clone planned to replace the published binary
under the same kernel id."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.build import toolchain
from pipeline.cli import main

REPO = Path(__file__).resolve().parents[2]
TINY_ADD = REPO / "tests" / "fixtures" / "tiny-add"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}


def test_prefix_maps_put_the_most_specific_prefix_last():
    # GCC tries the last -ffile-prefix-map first: a cache inside the project must win over the project.
    flags = toolchain.prefix_map_flags({Path("/src/proj"): "proj", Path("/src/proj/.cache/w"): "work"})
    assert flags == ["-ffile-prefix-map=/src/proj=proj", "-ffile-prefix-map=/src/proj/.cache/w=work"]
    assert toolchain.host_compiler_flags(flags[:1]) == ["-Xcompiler", "-ffile-prefix-map=/src/proj=proj"]


def test_source_date_epoch_is_fixed_unless_set():
    assert toolchain.source_date_epoch({}) == "0"
    assert toolchain.source_date_epoch({"SOURCE_DATE_EPOCH": "1700000000"}) == "1700000000"
    assert toolchain.source_date_epoch({"SOURCE_DATE_EPOCH": "yesterday"}) == "0"


def _git(args: list[str], cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def _tree(variant: Path) -> dict[str, str]:
    return {p.relative_to(variant).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(variant.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_same_commit_at_two_paths_builds_the_same_bytes(tmp_path, monkeypatch, capsys):
    first = tmp_path / "a" / "deeper" / "checkout" / "tiny-add"
    shutil.copytree(TINY_ADD, first, ignore=shutil.ignore_patterns("build", "__pycache__"))
    _git(["init", "-q"], first)
    _git(["add", "-A"], first)
    _git(["commit", "-qm", "tiny-add"], first)
    second = tmp_path / "b" / "tiny-add"
    _git(["clone", "-q", str(first), str(second)], tmp_path)
    results = []
    for checkout in (first, second):
        # Each its own object cache: nothing compiled for one is reused by the other.
        monkeypatch.setenv("PIPELINE_CACHE_DIR", str(checkout.parent / "cache"))
        assert main(["build", str(checkout), "--backend", "local", "--json"]) == 0
        built = json.loads(capsys.readouterr().out)["kernels"][0]["variants"][0]
        results.append((Path(built["path"]), built["kernel_id"]))
    (a, id_a), (b, id_b) = results
    assert id_a == id_b and not id_a.endswith("_dirty")
    library = f"{id_a}.abi3.so"
    assert (a / library).read_bytes() == (b / library).read_bytes()
    assert _tree(a) == _tree(b)  # metadata.json (digests, provenance) and the Python files too
    assert str(first) not in (a / library).read_bytes().decode("latin-1")

"""Kernel ids and digests without compiling: git tree hashes, dirty state, the digest rules."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.build import layout
from pipeline.build.source import content_tree_hash, kernel_id, project_files, source_state


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A repository with a kernel project in a subdirectory and something beside it."""
    project = tmp_path / "kernels-src" / "k"
    (project / "csrc").mkdir(parents=True)
    (project / "torch-ext" / "k").mkdir(parents=True)
    (project / "build.toml").write_text("[general]\nname = 'k'\n")
    (project / "csrc" / "k.cu").write_text("// kernel\n")
    (project / "torch-ext" / "k" / "__init__.py").write_text("x = 1\n")
    script = project / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (project / ".gitignore").write_text("build/\n")
    (tmp_path / "README.md").write_text("workspace\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    return tmp_path, project


def test_content_tree_hash_is_gits_tree_hash(repo):
    root, project = repo
    files = project_files(project)
    assert content_tree_hash(project, files) == _git(root, "rev-parse", "HEAD:kernels-src/k")


def test_clean_project_takes_its_tree_at_head(repo):
    root, project = repo
    state = source_state(project)
    assert state.method == "git" and not state.dirty
    assert state.tree == _git(root, "rev-parse", "HEAD:kernels-src/k")
    assert state.commit == _git(root, "rev-parse", "HEAD")
    assert kernel_id("k", "cuda", state.unique_id) == f"_k_cuda_{state.tree[:7]}"


def test_changes_elsewhere_in_the_repository_do_not_rename_the_kernel(repo):
    root, project = repo
    before = source_state(project)
    (root / "README.md").write_text("changed\n")
    (root / "other.txt").write_text("new\n")
    assert source_state(project) == before
    _git(root, "commit", "-qam", "readme")
    after = source_state(project)
    assert after.tree == before.tree and after.commit != before.commit and not after.dirty


def test_dirty_when_a_tracked_file_changes_or_a_new_source_appears(repo):
    root, project = repo
    (project / "csrc" / "k.cu").write_text("// changed\n")
    state = source_state(project)
    assert state.dirty and state.unique_id.endswith("_dirty")
    _git(root, "checkout", "--", ".")
    assert not source_state(project).dirty
    (project / "csrc" / "new.cuh").write_text("// new header\n")
    assert source_state(project).dirty
    (project / "csrc" / "new.cuh").unlink()
    (project / "build" / "v").mkdir(parents=True)  # build output is not a source
    (project / "build" / "v" / "lib.so").write_bytes(b"\0")
    assert not source_state(project).dirty


def test_uncommitted_project_and_no_repository(tmp_path_factory, repo):
    root, _ = repo
    fresh = root / "kernels-src" / "fresh"
    (fresh / "csrc").mkdir(parents=True)
    (fresh / "csrc" / "a.cu").write_text("// a\n")
    state = source_state(fresh)
    assert state.dirty and state.method == "content"
    assert state.tree == content_tree_hash(fresh, project_files(fresh))
    alone = tmp_path_factory.mktemp("alone")
    (alone / "a.cpp").write_text("int a;\n")
    lone = source_state(alone)
    assert lone.method == "content" and lone.commit is None and not lone.dirty


def test_digest_rules_match_kernels(tmp_path):
    from kernels._rust import Digest, DigestAlgorithm

    variant = tmp_path / "torch213-cxx11-cpu-x86_64-linux"
    (variant / "sub" / "__pycache__").mkdir(parents=True)
    (variant / "__init__.py").write_text("from ._ops import ops\n")
    (variant / "sub" / "helper.py").write_text("y = 2\n")
    (variant / "sub" / "__pycache__" / "helper.cpython-311.pyc").write_bytes(b"bytecode")
    (variant / "lib.abi3.so").write_bytes(os.urandom(4096))
    (variant / "metadata.json").write_text("{}")
    (variant / "metadata.json.sigstore").write_text("{}")
    (variant / "sub" / "metadata.json").write_text("{}")  # only the top-level one is exempt
    ours = layout._hash_variant_here(variant)
    theirs = Digest.hash_variant(DigestAlgorithm.SHA256, variant).files
    assert ours == dict(sorted(theirs.items()))
    assert set(ours) == {"__init__.py", "sub/helper.py", "lib.abi3.so", "sub/metadata.json"}
    assert layout.hash_variant(variant)["files"] == ours


def test_metadata_document_parses_with_kernels(tmp_path):
    import json

    from kernels._rust import Metadata

    document = layout.metadata_document(
        name="my-kernel", kernel_id="_my_kernel_cuda_abcdef0_dirty", version=2, license="MIT",
        python_depends=("einops",), backend="cuda", archs=["9.0", "8.0", "9.0"],
        digest={"algorithm": "sha256", "files": {}}, source_commit="a" * 40, source_dirty=True,
        toolchain={"torch": "2.13.0", "nvcc": "13.0.88"})
    meta = Metadata.from_bytes(json.dumps(document).encode())
    assert meta.id == "_my_kernel_cuda_abcdef0_dirty" and meta.version == 2
    assert meta.backend.archs == ["8.0", "9.0"] and meta.python_depends == ["einops"]
    assert meta.provenance.kernel.dirty and meta.provenance.dirty
    assert meta.provenance.kernel_builder.version.startswith("kernel-pipeline")
    unknown_revision = layout.metadata_document(
        name="my-kernel", kernel_id="_my_kernel_cpu_abcdef0", version=1, license="MIT", python_depends=(),
        backend="cpu", archs=None, digest={"algorithm": "sha256", "files": {}}, source_commit=None,
        source_dirty=False, toolchain={})
    assert "kernel" not in unknown_revision["provenance"]
    assert Metadata.from_bytes(json.dumps(unknown_revision).encode()).provenance.kernel is None

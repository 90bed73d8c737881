"""pipeline/lock.py and `pipeline lock`: one kernel-builder pin for the root flake and every kernel flake."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import lock
from pipeline.errors import BuildError

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "tiny-add"
GIT = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-c", "init.defaultBranch=main"]
OTHER_REV = "0123456789abcdef0123456789abcdef01234567"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pipeline", "lock", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git workspace with this repository's root flake.lock and two copies of the tiny-add kernel."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy2(REPO / "flake.lock", root / "flake.lock")
    (root / "build.toml").write_text('[workspace]\nkernels = ["kernels-src/*"]\nnamespace = "t"\n\n'
                                     '[workspace.matrix]\ntorch = ["2.13"]\ncuda = ["13.0"]\n'
                                     'archs = ["x86_64"]\nbackends = ["cpu"]\n')
    for name in ("one", "two"):
        shutil.copytree(FIXTURE, root / "kernels-src" / name, ignore=shutil.ignore_patterns("build", "__pycache__"))
    git(root, "init", "-q")
    lock.write_locks(root)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "workspace")
    return root


def codes(problems) -> list[str]:
    return [p.code for p in problems]


def test_the_committed_kernel_locks_agree_with_the_root_lock():
    assert lock.check_locks(REPO) == []
    pin, _ = lock.root_pin(REPO)
    for path in sorted((REPO / "kernels-src").glob("*/flake.lock")):
        text, data = lock.load_lock(path)
        assert lock.read_pin(path, text, data).rev == pin.rev, path


def test_the_derived_lock_is_the_kernel_builder_subgraph_under_a_one_input_root():
    text, root_lock = lock.load_lock(REPO / "flake.lock")
    derived = lock.derive_kernel_lock(root_lock, REPO / "flake.lock")
    assert derived["nodes"]["root"] == {"inputs": {"kernel-builder": "kernel-builder"}}
    assert derived["nodes"]["kernel-builder"] == root_lock["nodes"]["kernel-builder"]
    # every other node of the root lock is reached through kernel-builder (nixpkgs follows it)
    assert set(derived["nodes"]) == set(root_lock["nodes"])
    assert derived["nodes"]["rust-overlay"]["inputs"]["nixpkgs"] == ["kernel-builder", "nixpkgs"]
    assert lock.dump_lock(root_lock) == text  # the layout is Nix's: the root lock round-trips byte for byte


def test_nodes_are_renamed_as_nix_names_them():
    """A root with its own nixpkgs has kernel-builder's as nixpkgs_2; a kernel flake's lock calls it nixpkgs."""
    locked = {"type": "github", "owner": "o", "repo": "r", "rev": "a" * 40, "narHash": "sha256-x"}
    root_lock = {"version": 7, "root": "root", "nodes": {
        "root": {"inputs": {"kernel-builder": "kernel-builder", "nixpkgs": "nixpkgs"}},
        "nixpkgs": {"locked": {**locked, "repo": "own"}, "original": {}},
        "kernel-builder": {"inputs": {"nixpkgs": "nixpkgs_2", "tool": "tool"}, "locked": locked, "original": {}},
        "nixpkgs_2": {"locked": {**locked, "repo": "nixpkgs"}, "original": {}},
        "tool": {"inputs": {"nixpkgs": ["kernel-builder", "nixpkgs"]}, "locked": locked, "original": {}},
    }}
    derived = lock.derive_kernel_lock(root_lock, Path("flake.lock"))
    assert sorted(derived["nodes"]) == ["kernel-builder", "nixpkgs", "root", "tool"]
    assert derived["nodes"]["kernel-builder"]["inputs"] == {"nixpkgs": "nixpkgs", "tool": "tool"}
    assert derived["nodes"]["nixpkgs"]["locked"]["repo"] == "nixpkgs"


def test_a_root_that_overrides_kernel_builders_inputs_cannot_be_mirrored():
    root_lock = {"version": 7, "root": "root", "nodes": {
        "root": {"inputs": {"kernel-builder": "kb", "nixpkgs": "nixpkgs"}},
        "nixpkgs": {"locked": {}, "original": {}},
        "kb": {"inputs": {"nixpkgs": ["nixpkgs"]}, "locked": {}, "original": {}},
    }}
    with pytest.raises(BuildError) as caught:
        lock.derive_kernel_lock(root_lock, Path("flake.lock"))
    assert caught.value.code == "lock-follows-outside"


def test_a_fresh_workspace_is_consistent_and_writing_again_changes_nothing(workspace):
    assert lock.check_locks(workspace) == []
    assert {w.action for w in lock.write_locks(workspace)} == {"unchanged"}
    assert git(workspace, "status", "--porcelain") == ""


def test_a_lock_pinning_another_revision_is_reported_at_its_rev_line(workspace):
    path = workspace / "kernels-src" / "two" / "flake.lock"
    pinned = lock.root_pin(workspace)[0].rev
    path.write_text(path.read_text().replace(pinned, OTHER_REV))
    (problem,) = lock.check_locks(workspace)
    assert (problem.path, problem.code) == ("kernels-src/two/flake.lock", "lock-mismatch")
    assert path.read_text().splitlines()[problem.line - 1].strip() == f'"rev": "{OTHER_REV}",'
    assert problem.message == f"pins kernel-builder 0123456 but the root flake.lock pins {pinned[:7]}"


def test_a_lock_that_differs_elsewhere_is_reported_at_the_first_differing_line(workspace):
    path = workspace / "kernels-src" / "one" / "flake.lock"
    data = json.loads(path.read_text())
    data["nodes"]["nixpkgs"]["locked"]["rev"] = OTHER_REV
    path.write_text(lock.dump_lock(data))
    (problem,) = lock.check_locks(workspace)
    assert problem.code == "lock-differs"
    assert OTHER_REV in path.read_text().splitlines()[problem.line - 1]


def test_missing_malformed_and_untracked_locks(workspace):
    (workspace / "kernels-src" / "one" / "flake.lock").unlink()
    (workspace / "kernels-src" / "two" / "flake.lock").write_text('{"nodes": {\n  "root": \n}\n')
    problems = lock.check_locks(workspace)
    assert codes(problems) == ["lock-missing", "lock-malformed"]
    assert problems[1].line == 3
    lock.write_locks(workspace)
    git(workspace, "rm", "-q", "--cached", "kernels-src/one/flake.lock")
    (problem,) = lock.check_locks(workspace)
    assert (problem.path, problem.code) == ("kernels-src/one/flake.lock", "lock-untracked")


def test_a_kernel_flake_asking_for_another_input_is_refused_and_nothing_is_written(workspace):
    flake = workspace / "kernels-src" / "two" / "flake.nix"
    flake.write_text(flake.read_text().replace('"github:huggingface/kernels"', '"github:huggingface/kernels/main"'))
    (workspace / "kernels-src" / "one" / "flake.lock").unlink()
    problems = lock.check_locks(workspace)
    assert codes(problems) == ["lock-missing", "flake-input-differs"]
    assert problems[1].path == "kernels-src/two/flake.nix"
    assert "github:huggingface/kernels/main" in flake.read_text().splitlines()[problems[1].line - 1]
    with pytest.raises(BuildError) as caught:
        lock.write_locks(workspace)
    assert caught.value.code == "flake-input-differs"
    assert not (workspace / "kernels-src" / "one" / "flake.lock").exists()


def test_the_variant_table_must_be_read_at_the_pinned_revision(workspace, tmp_path):
    table = tmp_path / "pipeline" / "data" / "variants.toml"
    table.parent.mkdir(parents=True)
    text = (REPO / "pipeline" / "data" / "variants.toml").read_text()
    assert lock.check_variants_table(lock.root_pin(REPO)[0]) == []
    pinned = lock.root_pin(workspace)[0].rev
    table.write_text(text.replace(f'read-at = "{pinned}"', f'read-at = "{OTHER_REV}"'))
    (problem,) = lock.check_locks(workspace, table=table)
    assert (problem.path, problem.code) == ("pipeline/data/variants.toml", "variants-pin-differs")
    assert table.read_text().splitlines()[problem.line - 1].startswith("read-at = ")


def test_an_unpinned_root_lock_is_refused(workspace):
    path = workspace / "flake.lock"
    data = json.loads(path.read_text())
    del data["nodes"]["kernel-builder"]["locked"]["narHash"]
    path.write_text(lock.dump_lock(data))
    with pytest.raises(BuildError) as caught:
        lock.write_locks(workspace)
    assert caught.value.code == "lock-unpinned" and caught.value.line is not None
    assert codes(lock.check_locks(workspace)) == ["lock-unpinned"]


def test_the_cli_checks_writes_and_checks_again(workspace):
    path = workspace / "kernels-src" / "one" / "flake.lock"
    path.write_text(path.read_text().replace(lock.root_pin(workspace)[0].rev, OTHER_REV))
    checked = cli(workspace, "--check")
    assert checked.returncode == 14
    assert "kernels-src/one/flake.lock:" in checked.stderr and ": lock-mismatch: pins kernel-builder" in checked.stderr
    assert OTHER_REV in path.read_text()  # --check writes nothing
    written = cli(workspace)
    assert written.returncode == 0, written.stderr
    assert "kernels-src/one/flake.lock: updated" in written.stdout
    assert "kernels-src/two/flake.lock: unchanged" in written.stdout
    document = json.loads(cli(workspace, "--check", "--json").stdout)
    assert document["ok"] is True and document["kernel_builder"]["rev"] == lock.root_pin(workspace)[0].rev

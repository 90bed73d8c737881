"""The Nix wiring, offline: the top-level flake.nix and `pipeline build --backend nix`.

Runs with Debian's nix-bin (no binary caches, no github: inputs reachable):
kernel-builder is replaced by the stand-in flake in
tests/fixtures/kernel-builder-standin/ (it mirrors genKernelFlakeOutputs'
output shape and builds the host's CPU variant with our local backend), in a
throw-away git repository holding this repository's flake.nix, flake.lock and
a workspace with the tiny-add fixture. What is tested is ours: reading the
kernel list and policy from build.toml, joining `<kernel>/<variant>/`, the
ci/per-kernel/devShell outputs, and copying + checking a nix result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.build import layout
from pipeline.matrix import cpu_variant_of, host_variant

pytestmark = [pytest.mark.nix, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
STANDIN = REPO / "tests" / "fixtures" / "kernel-builder-standin"
FIXTURE = REPO / "tests" / "fixtures" / "tiny-add"
HOST_CPU = cpu_variant_of(host_variant())
SYSTEM = HOST_CPU.system

WORKSPACE_TOML = f"""\
[workspace]
kernels = ["kernels-src/*"]
namespace = "test"

[workspace.matrix]
torch = ["2.12", "{HOST_CPU.torch}"]
cuda = ["13"]
archs = ["x86_64", "aarch64"]
backends = ["cuda", "cpu"]

[workspace.matrix.ci]
torch = ["{HOST_CPU.torch}"]
archs = ["{HOST_CPU.arch}"]
backends = ["cpu"]
"""

# What .ci/run puts in nix.conf (here through NIX_CONFIG): flakes on, no
# binary cache or registry to reach, builds as the calling user (root in a
# container; the host's Python lives in its home). Debian's nix.conf already
# says sandbox = false.
NIX_CONFIG = "\n".join([
    "experimental-features = nix-command flakes",
    "substituters =",
    "flake-registry =",
    "build-users-group =",
    "sandbox = false",
])


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "NIX_CONFIG": NIX_CONFIG,
        "KERNEL_BUILDER_STANDIN_PYTHON": sys.executable,
        "KERNEL_BUILDER_STANDIN_PIPELINE": str(REPO),
        "KERNEL_BUILDER_STANDIN_VARIANT": HOST_CPU.name,
        "MAX_JOBS": os.environ.get("MAX_JOBS", "2"),
    }


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, errors="replace", timeout=900)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr[-4000:]}"
    return done


def _git(cwd: Path, *args: str) -> str:
    return _run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd).stdout.strip()


def standin_workspace(root: Path, source: Path, name: str) -> Path:
    """A committed workspace at `root` holding the kernel project `source` as
    kernels-src/`name`, its flake locks pointing at the stand-in (a flake whose
    lock differs from the committed one has no `self.shortRev` in Nix 2.8, and
    kernel-builder needs it, so the lock is rewritten and committed first)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "flake.nix", root / "flake.nix")
    shutil.copy2(REPO / "flake.lock", root / "flake.lock")
    (root / "build.toml").write_text(WORKSPACE_TOML)
    shutil.copytree(source, root / "kernels-src" / name, ignore=shutil.ignore_patterns("build", "__pycache__"))
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "workspace")
    override = ["--override-input", "kernel-builder", f"path:{STANDIN}"]
    _run(["nix", "flake", "lock", *override], root)
    _run(["nix", "flake", "lock", f"./kernels-src/{name}", *override], root)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "lock kernel-builder to the stand-in")
    return root


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return standin_workspace(tmp_path_factory.mktemp("nixws"), FIXTURE, "tiny-add")


def _check_variant_dirs(tree: Path) -> list[Path]:
    variants = sorted(p for p in tree.iterdir() if p.is_dir())
    for variant in variants:
        assert layout.check_variant_dir(variant) == [], variant
    try:
        from pipeline.bundle import check_bundle
    except ImportError:
        return variants
    report = check_bundle(tree)
    assert report.ok, [p.format() for p in report.problems]
    return variants


def test_committed_lock_pins_kernel_builder():
    lock = json.loads((REPO / "flake.lock").read_text())
    node = lock["nodes"][lock["nodes"]["root"]["inputs"]["kernel-builder"]]
    assert node["locked"]["type"] == "github" and node["locked"]["repo"] == "kernels"
    assert len(node["locked"]["rev"]) == 40 and node["locked"]["narHash"].startswith("sha256-")
    assert lock["nodes"]["root"]["inputs"]["nixpkgs"] == ["kernel-builder", "nixpkgs"]


def test_bundle_joins_every_kernel_of_build_toml(workspace):
    _run(["nix", "build", ".#bundle", "--impure", "-L", "--out-link", "result"], workspace)
    result = workspace / "result"
    assert sorted(p.name for p in result.iterdir()) == ["tiny-add"]
    variants = _check_variant_dirs(result / "tiny-add")
    assert [v.name for v in variants] == [HOST_CPU.name]
    rev = _git(workspace, "rev-parse", "--short=7", "HEAD")
    meta = layout.read_metadata(variants[0])
    assert meta["id"] == f"_tiny_add_cpu_{rev}"  # the workspace revision, as kernel-builder names it


def test_ci_per_kernel_and_dev_shell_outputs(workspace):
    _run(["nix", "build", ".#ci", ".#tiny-add", "--impure", "--out-link", "out"], workspace)
    assert [p.name for p in (workspace / "out" / "tiny-add").iterdir()] == [HOST_CPU.name]  # ci: <kernel>/<variant>
    assert [p.name for p in (workspace / "out-1").iterdir()] == [HOST_CPU.name]  # per kernel: <variant>
    shell = _run(["nix", "eval", "--impure", "--raw", f".#devShells.{SYSTEM}.default.name"], workspace)
    assert shell.stdout.strip() == "tiny-add-dev-stand-in"
    dirs = _run(["nix", "eval", "--impure", "--json", ".#lib.kernelDirs"], workspace)
    assert json.loads(dirs.stdout) == ["kernels-src/tiny-add"]


def test_policy_filters_the_bundle(workspace, tmp_path):
    """A ci policy naming another torch selects nothing: the filter reads build.toml."""
    clone = tmp_path / "clone"
    _run(["git", "clone", "-q", str(workspace), str(clone)], tmp_path)
    toml_path = clone / "build.toml"
    toml_path.write_text(toml_path.read_text().replace(f'[workspace.matrix.ci]\ntorch = ["{HOST_CPU.torch}"]',
                                                      '[workspace.matrix.ci]\ntorch = ["2.0"]'))
    _git(clone, "commit", "-qam", "ci policy without this torch")
    _run(["nix", "build", ".#ci", "--impure", "--out-link", "ci"], clone)
    assert list((clone / "ci" / "tiny-add").iterdir()) == []


def test_pipeline_build_nix_copies_and_checks(workspace, tmp_path):
    project = workspace / "kernels-src" / "tiny-add"
    out = tmp_path / "build"
    done = _run([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "nix", "--out", str(out),
                 "--nix-option=--impure", "--override-input", "kernel-builder", f"path:{STANDIN}", "--json"], REPO)
    summary = json.loads(done.stdout)
    (built,) = summary["kernels"][0]["variants"]
    assert built["variant"] == HOST_CPU.name and summary["backend"] == "nix"
    variants = _check_variant_dirs(out)
    assert [v.name for v in variants] == [HOST_CPU.name]
    assert not any(p.is_symlink() for p in variants[0].rglob("*"))  # dereferenced, out of the store
    assert os.access(variants[0] / "metadata.json", os.W_OK)
    # one variant: .#redistributable.<variant>
    single = tmp_path / "single"
    _run([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "nix", "--out", str(single),
          "--variant", HOST_CPU.name, "--nix-option=--impure"], REPO)
    assert [p.name for p in single.iterdir()] == [HOST_CPU.name]


# ------------------------------------------------------------------ one pin, never dirty


def _try(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, errors="replace", timeout=900)


def _pipeline_build(project: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return _try([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "nix", "--out", str(out),
                 "--nix-option=--impure", *extra], REPO)


def _clone(workspace: Path, tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    _run(["git", "clone", "-q", str(workspace), str(clone)], tmp_path)
    return clone


def test_the_kernel_lock_nix_writes_is_the_lock_pipeline_lock_derives(workspace):
    """Both locks of the fixture workspace were written by `nix flake lock`: the kernel's is, byte for
    byte, what pipeline/lock.py derives from the root's (so `pipeline lock` writes what nix would)."""
    from pipeline import lock

    _, root_lock = lock.load_lock(workspace / "flake.lock")
    derived = lock.dump_lock(lock.derive_kernel_lock(root_lock, workspace / "flake.lock"))
    assert (workspace / "kernels-src" / "tiny-add" / "flake.lock").read_text() == derived
    assert lock.check_kernel_lock(workspace / "kernels-src" / "tiny-add") == []


def test_committed_kernel_locks_need_no_change_under_no_update_lock_file(tmp_path):
    """This repository's kernel locks, in a throw-away git copy: nix reads each as current, offline."""
    for kernel in sorted((REPO / "kernels-src").glob("*/flake.lock")):
        copy = tmp_path / kernel.parent.name
        shutil.copytree(kernel.parent, copy, ignore=shutil.ignore_patterns("build", "result", "__pycache__"))
        _git(copy, "init", "-q")
        _git(copy, "add", "-A")
        _git(copy, "commit", "-qm", "kernel")
        done = _run(["nix", "flake", "metadata", "--json", "--no-update-lock-file", "."], copy)
        locked = json.loads(done.stdout)["locks"]["nodes"]["kernel-builder"]["locked"]
        assert locked["rev"] == json.loads((REPO / "flake.lock").read_text())["nodes"]["kernel-builder"]["locked"]["rev"]
        assert _git(copy, "status", "--porcelain") == ""


def test_plain_nix_writes_a_lock_into_the_tree_and_pipeline_build_refuses_that_tree(workspace, tmp_path):
    """The failure being prevented, reproduced: a kernel without a committed lock, built with plain
    nix, gets a new flake.lock marked `git add -N`, so the tree is dirty; `pipeline build` then refuses."""
    clone = _clone(workspace, tmp_path)
    _git(clone, "rm", "-q", "kernels-src/tiny-add/flake.lock")
    flake = clone / "kernels-src" / "tiny-add" / "flake.nix"
    flake.write_text(flake.read_text().replace('"github:huggingface/kernels"', f'"path:{STANDIN}"'))
    _git(clone, "commit", "-qam", "kernel without its lock")
    _try(["nix", "eval", "--impure", "--json", f"./kernels-src/tiny-add#packages.{SYSTEM}.variants"], clone)
    assert _git(clone, "status", "--porcelain") == "A kernels-src/tiny-add/flake.lock"  # intent to add
    out = tmp_path / "out"
    refused = _pipeline_build(clone / "kernels-src" / "tiny-add", out)
    assert refused.returncode == 5, refused.stderr
    assert "tree-dirty: refusing to build from a dirty git tree: 1 tracked path(s) have uncommitted changes " \
           "(kernels-src/tiny-add/flake.lock)" in refused.stderr
    assert "kernels-src/tiny-add/flake.lock: tree-dirty: git status ' A'" in refused.stderr
    assert not out.exists()


def test_pipeline_build_refuses_an_edited_tracked_file(workspace, tmp_path):
    clone = _clone(workspace, tmp_path)
    toml_path = clone / "build.toml"
    toml_path.write_text(toml_path.read_text() + "# edited, not committed\n")
    refused = _pipeline_build(clone / "kernels-src" / "tiny-add", tmp_path / "out",
                              "--override-input", "kernel-builder", f"path:{STANDIN}")
    assert refused.returncode == 5 and "build.toml: tree-dirty: git status ' M'" in refused.stderr
    assert "(build.toml)" in refused.stderr and not (tmp_path / "out").exists()


def test_pipeline_build_refuses_a_missing_or_disagreeing_lock_before_nix_runs(workspace, tmp_path):
    clone = _clone(workspace, tmp_path)
    project = clone / "kernels-src" / "tiny-add"
    _git(clone, "rm", "-q", "kernels-src/tiny-add/flake.lock")
    _git(clone, "commit", "-qm", "no kernel lock")
    refused = _pipeline_build(project, tmp_path / "out", "--override-input", "kernel-builder", f"path:{STANDIN}")
    assert refused.returncode == 5
    assert "kernels-src/tiny-add/flake.lock: lock-missing: a nix build would create or change " \
           "kernels-src/tiny-add/flake.lock: flake.lock does not exist" in refused.stderr
    assert "python -m pipeline lock" in refused.stderr
    assert _git(clone, "status", "--porcelain") == "" and not (project / "flake.lock").exists()
    lock_text = (workspace / "kernels-src" / "tiny-add" / "flake.lock").read_text()
    data = json.loads(lock_text)
    data["nodes"]["kernel-builder"]["locked"]["narHash"] = "sha256-" + "A" * 43 + "="
    (project / "flake.lock").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    _git(clone, "add", "kernels-src/tiny-add/flake.lock")
    _git(clone, "commit", "-qm", "a lock of another kernel-builder")
    refused = _pipeline_build(project, tmp_path / "out", "--override-input", "kernel-builder", f"path:{STANDIN}")
    assert refused.returncode == 5 and ": lock-mismatch: a nix build would create or change" in refused.stderr


def test_a_lock_nix_would_still_change_fails_with_nix_own_message(workspace, tmp_path):
    """Pins agree, but the kernel flake gained an input its lock lacks: nix refuses under
    --no-update-lock-file (no override, so nix really locks) and the lock is not written."""
    clone = _clone(workspace, tmp_path)
    for flake in (clone / "flake.nix", clone / "kernels-src" / "tiny-add" / "flake.nix"):
        flake.write_text(flake.read_text().replace('"github:huggingface/kernels"', f'"path:{STANDIN}"'))
    _run(["nix", "flake", "lock"], clone)
    written = _try([sys.executable, "-m", "pipeline", "lock", str(clone)], REPO)
    assert "kernels-src/tiny-add/flake.lock: updated" in written.stdout, written.stderr
    # the only problem left: the variant table belongs to the real kernel-builder, not to the stand-in
    assert "variants-pin-differs" in written.stderr and "lock-" not in written.stderr
    _git(clone, "commit", "-qam", "kernel-builder as a path input, locked")
    from pipeline import lock

    assert lock.check_kernel_lock(clone / "kernels-src" / "tiny-add") == []
    flake = clone / "kernels-src" / "tiny-add" / "flake.nix"
    flake.write_text(flake.read_text().replace("inputs = {", f'inputs = {{\n    extra.url = "path:{STANDIN}/nixpkgs-lite";'))
    _git(clone, "commit", "-qam", "a new input, not locked")
    refused = _pipeline_build(clone / "kernels-src" / "tiny-add", tmp_path / "out")
    assert refused.returncode == 5, refused.stderr
    assert "lock-stale: the flake.lock is stale: flake 'git+file://" in refused.stderr
    assert "requires lock file changes but they're not allowed due to '--no-update-lock-file'" in refused.stderr
    assert _git(clone, "status", "--porcelain") == ""


# ------------------------------------------------------------------ every variant kind


MIXED = ["torch213-cxx11-cu130-x86_64-linux", "torch213-cxx11-cu132-x86_64-linux",
         "torch212-cxx11-cu130-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cpu-aarch64-linux",
         "torch213-metal-aarch64-darwin", "torch-stable-abi210-cu130-x86_64-linux",
         "torch-stable-abi210-cu132-x86_64-linux", "torch-stable-abi214-cu130-x86_64-linux",
         "tvm-ffi01-cu130-x86_64-linux", "tvm-ffi01-cu132-x86_64-linux", "tvm-ffi01-rocm71-x86_64-linux",
         "torch-cuda", "torch-cpu", "torch-xpu"]


def _select(workspace: Path, policy: str, names: list[str]) -> subprocess.CompletedProcess:
    quoted = " ".join(json.dumps(n) for n in names)
    return _try(["nix", "eval", "--impure", "--json", ".#lib.selectVariants", "--apply",
                 f"f: f {policy} [ {quoted} ]"], workspace)


def test_the_flake_selects_every_variant_kind_kernel_builder_writes(workspace):
    policy = '{ torch = [ "2.13" ]; cuda = [ "13" ]; archs = [ "x86_64" ]; backends = [ "cuda" "cpu" ]; }'
    done = _select(workspace, policy, MIXED)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)) == sorted([
        "torch213-cxx11-cu130-x86_64-linux",  # torch 2.13, lowest minor of CUDA 13, x86_64
        "torch213-cxx11-cpu-x86_64-linux",
        "torch-stable-abi210-cu130-x86_64-linux",  # ABI 2.10 serves torch 2.13; ABI 2.14 does not
        "tvm-ffi01-cu130-x86_64-linux",  # no torch version to filter; CUDA and arch do
        "torch-cuda", "torch-cpu",  # noarch: backend only
    ])
    exact = _select(workspace, '{ torch = [ "2.12" ]; cuda = [ "13.2" ]; archs = [ "x86_64" "aarch64" ]; '
                               'backends = [ "cuda" "metal" "xpu" ]; }', MIXED)
    assert sorted(json.loads(exact.stdout)) == ["torch-cuda", "torch-stable-abi210-cu132-x86_64-linux", "torch-xpu",
                                                 "tvm-ffi01-cu132-x86_64-linux"]  # no torch 2.12 build of 13.2


def test_an_unknown_variant_kind_stops_the_evaluation(workspace):
    done = _select(workspace, '{ torch = [ ]; cuda = [ ]; archs = [ ]; backends = [ ]; }',
                   ["torch213-cxx11-cpu-x86_64-linux", "jax07-cu130-x86_64-linux"])
    assert done.returncode != 0
    assert "kernel-builder produced the variant `jax07-cu130-x86_64-linux`, which is none of the kinds" in done.stderr

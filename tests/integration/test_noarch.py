"""Noarch kernels end to end: matrix, build, check, smoke, publish, verify.

The subject is kernels-src/softmax-triton (`[torch-noarch]`: Triton on CUDA,
torch's softmax on the CPU), copied into a throw-away git
repository so that its ids are clean and nothing is written into this one.
What kernel-builder does with such a project (nix-builder/lib/variants/
torch.nix `kernelVariant`, extension/torch/no-arch.nix, kernel-builder's
create-pyproject) is what these tests hold the pipeline to: one
`torch-<backend>` directory per backend, Python files, `_ops.py`,
`metadata.json` with id `_<python_name>_<backend>_<rev>`, no compiled code.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.build import build_project, layout
from pipeline.bundle import check_bundle
from pipeline.errors import BuildError, MatrixError
from pipeline.matrix import Variant, compute_matrix, host_variant, noarch_variants
from pipeline.policy import MatrixPolicy
from pipeline.project import load_project, validate
from pipeline.workspace import resolve

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "kernels-src" / "softmax-triton"
FILES = ["__init__.py", "_ops.py", "_triton.py", "layers.py", "metadata.json", "op.py"]
POLICY = MatrixPolicy(torch=("2.12", "2.13"), cuda=("12.6", "13.0", "13.2"), archs=("x86_64", "aarch64"),
                      backends=("cuda", "cpu", "rocm", "xpu", "metal"))


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def copy_project(root: Path, *, edit=None) -> Path:
    """softmax-triton in its own committed git repository (optionally with build.toml edited)."""
    dest = root / "softmax-triton"
    shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns("build", "__pycache__", "results"))
    if edit is not None:
        toml_path = dest / "build.toml"
        toml_path.write_text(edit(toml_path.read_text()))
    (dest / ".gitignore").write_text("build/\n__pycache__/\n")  # as this repository ignores kernels-src/*/build/
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "softmax-triton")
    return dest


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory) -> Path:
    return copy_project(tmp_path_factory.mktemp("noarch"))


@pytest.fixture(scope="module")
def built(project_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("noarch-build") / "build"
    return build_project(load_project(project_dir), out), out


# ---------------------------------------------------------------- names and the matrix


def test_noarch_names_parse_with_kernels_parser_and_format_back():
    for backend in ("cuda", "cpu", "rocm", "xpu", "metal"):
        v = Variant.parse(f"torch-{backend}")
        assert v.noarch and v.backend == backend and v.name == f"torch-{backend}" and v.system == ""
    assert not Variant.parse("torch213-cxx11-cu130-x86_64-linux").noarch
    with pytest.raises(MatrixError) as err:
        Variant.parse("torch-universal")
    assert err.value.code == "backend-unsupported"


def test_a_noarch_project_gets_one_variant_per_backend_standing_for_every_build(project_dir):
    project = load_project(project_dir)
    assert validate(project_dir).ok
    variants = compute_matrix(project, POLICY)
    assert [v.name for v in variants] == ["torch-cuda", "torch-cpu"]
    as_arch = compute_matrix(dataclasses.replace(project, framework="torch"), POLICY)
    cuda, cpu = variants
    # What kernel-builder would otherwise build for the backend, each build a cell the variant serves.
    assert set(cuda.serves) == {v.name for v in as_arch if v.backend == "cuda"} and len(cuda.serves) == 12
    assert set(cpu.serves) == {v.name for v in as_arch if v.backend == "cpu"} and cpu.cells == cpu.serves
    # Built and tested with the newest torch, the lowest minor of the newest CUDA major, on x86_64-linux.
    assert (cuda.torch, cuda.backend_version, cuda.system) == ("2.13", "13.0", "x86_64-linux")
    assert (cpu.torch, cpu.system) == ("2.13", "x86_64-linux")
    assert cuda.to_json()["variant"] == "torch-cuda" and cuda.to_json()["noarch"] is True


def test_bounds_that_exclude_every_build_of_a_backend_drop_its_noarch_variant(project_dir):
    project = dataclasses.replace(load_project(project_dir), cuda_minver="14.0")
    assert [v.name for v in compute_matrix(project, POLICY)] == ["torch-cpu"]
    only_cuda = dataclasses.replace(load_project(project_dir), backends=("cuda",))
    assert [v.name for v in compute_matrix(only_cuda, POLICY)] == ["torch-cuda"]
    assert noarch_variants([]) == []


def test_the_workspace_matrix_holds_the_noarch_kernel():
    kernel = resolve(SOURCE)
    assert [v.name for v in kernel.variants] == ["torch-cuda", "torch-cpu"]
    assert [v.name for v in kernel.ci_variants] == ["torch-cuda", "torch-cpu"]


# ---------------------------------------------------------------- build


def test_build_writes_every_backend_as_kernel_builder_lays_it_out(built, project_dir):
    result, out = built
    rev = _git(project_dir, "rev-parse", "HEAD:")[:7]  # the project's git tree, as the arch builds
    assert [v.variant.name for v in result.variants] == ["torch-cuda", "torch-cpu"]
    for backend in ("cuda", "cpu"):
        vdir = out / f"torch-{backend}"
        assert sorted(p.name for p in vdir.iterdir()) == FILES
        meta = layout.read_metadata(vdir)
        kernel_id = f"_softmax_triton_{backend}_{rev}"
        assert (meta["id"], meta["name"], meta["version"], meta["license"]) == (kernel_id, "softmax-triton", 1,
                                                                              "Apache-2.0")
        assert meta["backend"] == {"type": backend} and meta["python-depends"] == []
        assert meta["provenance"]["kernel"] == {"commit": _git(project_dir, "rev-parse", "HEAD"), "dirty": False}
        ops = (vdir / "_ops.py").read_text()
        assert f"ops = torch.ops.{kernel_id}\n" in ops and "import " + kernel_id not in ops
        assert layout.check_variant_dir(vdir, compiled=False) == []
        assert layout.check_variant_dir(vdir) == [f"torch-{backend}: {kernel_id}.abi3.so is missing"]
        for name in ("__init__.py", "op.py", "layers.py", "_triton.py"):  # copied as they are
            assert (vdir / name).read_bytes() == (project_dir / "torch-ext/softmax_triton" / name).read_bytes()


def test_an_unchanged_project_rebuilds_to_the_same_files_untouched(built, project_dir):
    _, out = built
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    again = build_project(load_project(project_dir), out)
    assert all(v.cached for v in again.variants)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_one_variant_on_request_and_the_refusals(project_dir, tmp_path):
    project = load_project(project_dir)
    one = build_project(project, tmp_path / "one", variant="torch-cuda")
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["torch-cuda"] and len(one.variants) == 1
    for name, code in ((host_variant().name, "variant-unbuildable"), ("torch-rocm", "variant-unbuildable"),
                       ("torch-nope", "variant-unknown")):
        with pytest.raises(BuildError) as err:
            build_project(project, tmp_path / "no", variant=name)
        assert err.value.code == code, name
    assert not (tmp_path / "no").exists()


def test_torch_noarch_archs_go_into_metadata_as_kernel_builder_precomputes_them(tmp_path):
    root = copy_project(tmp_path, edit=lambda t: t.replace(
        "[torch-noarch]", '[torch-noarch]\ncuda_capabilities = ["8.0", "9.0"]\nrocm_archs = ["gfx942"]'))
    out = tmp_path / "build"
    build_project(load_project(root), out)
    assert layout.read_metadata(out / "torch-cuda")["backend"] == {"type": "cuda", "archs": ["8.0", "9.0"]}
    assert layout.read_metadata(out / "torch-cpu")["backend"] == {"type": "cpu"}
    assert check_bundle(out).ok  # kernels' Metadata parses the archs


def test_a_tvm_ffi_project_is_sent_to_kernel_builders_nix_flake(project_dir, tmp_path):
    tvm = dataclasses.replace(load_project(project_dir), framework="tvm-ffi")
    with pytest.raises(BuildError) as err:
        build_project(tvm, tmp_path / "build")
    assert err.value.code == "tvm-ffi-needs-nix"
    assert f"nix build {tvm.root}#bundle" in err.value.hint and "--build-dir result" in err.value.hint


def test_the_cli_builds_and_checks_noarch(project_dir, tmp_path, capsys):
    out = tmp_path / "cli"
    assert cli.main(["build", str(project_dir), "--backend", "local", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [v["variant"] for v in summary["kernels"][0]["variants"]] == ["torch-cuda", "torch-cpu"]
    assert cli.main(["check", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and [v["framework"] for v in report["variants"]] == ["torch (noarch)"] * 2
    assert [v["target"] for v in report["variants"]] == ["CPU", "CUDA"]


def test_the_ci_plan_smoke_tests_the_noarch_kernel_whatever_cuda_the_gpu_runner_has(tmp_path):
    outputs = tmp_path / "outputs"
    env = {**os.environ, "GITHUB_OUTPUT": str(outputs), "GPU_RUNNER_LABEL": "gpu", "GPU_RUNNER_CUDA": "13.2",
           "PYTHONPATH": str(REPO)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    subprocess.run([sys.executable, "ci/plan.py", "--mode", "release"], cwd=REPO, env=env, check=True,
                   capture_output=True, text=True)
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    smoke = {r["kernel"]: r for r in json.loads(values["smoke"])["include"]}
    row = smoke["softmax-triton"]
    assert (row["variant"], row["noarch"], row["torch"], row["backend_version"]) == ("torch-cuda", True, "2.13", "13.0")
    assert all(r["backend_version"] == "13.2" for k, r in smoke.items() if k != "softmax-triton")


# ---------------------------------------------------------------- check


def test_check_accepts_noarch_without_a_library_and_refuses_one_with_it(built, tmp_path):
    _, out = built
    report = check_bundle(out, expected=resolve(SOURCE).variants)
    assert report.ok and report.errors == () and report.missing == ()
    assert not any(p.code == "variant-incomplete" for p in report.problems)
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    cpu = bad / "torch-cpu"
    (cpu / "helper.so").write_bytes(b"\x7fELF not really")
    meta = layout.read_metadata(cpu)
    meta["digest"] = layout.hash_variant(cpu)  # digest up to date: only the library is wrong
    layout.write_metadata(cpu, meta)
    shutil.copytree(bad / "torch-cuda", bad / "torch-xpu")  # metadata says cuda
    codes = {(Path(p.path).parts[1], p.code) for p in check_bundle(bad).errors}
    assert ("torch-cpu", "noarch-compiled") in codes and ("torch-xpu", "backend-mismatch") in codes


def test_verify_counts_a_noarch_variant_as_serving_its_backend():
    from pipeline.verify import _families_serving, _family

    published = {_family("torch-cuda"), _family("torch-cpu")}
    for cell in ("torch212-cxx11-cu126-aarch64-linux", "torch213-cpu-aarch64-darwin"):
        assert not published.isdisjoint(_families_serving(cell))
    assert published.isdisjoint(_families_serving("torch213-cxx11-rocm71-x86_64-linux"))


# ---------------------------------------------------------------- smoke, publish, get_kernel


@pytest.mark.slow
def test_smoke_runs_the_cpu_variant_without_triton(built):
    from pipeline.smoke import run_smoke

    _, out = built
    report = run_smoke(check_bundle(out).bundle, resolve(SOURCE))
    assert report.passed and report.variant == "torch-cpu" and len(report.results) > 100
    assert {r.check for r in report.results} == {"values", "opcheck", "compile"}


@pytest.mark.slow
def test_publish_to_the_embedded_hub_and_get_kernel(project_dir, tmp_path):
    from huggingface_hub import HfApi

    from pipeline.hub import EmbeddedHub
    from pipeline.publish import PublishRequest, publish
    from pipeline.target import Target

    with EmbeddedHub(tmp_path / "hub", host="127.0.0.1", port=0, trusted_namespaces=["noarch-org"]) as hub:
        request = PublishRequest(repo_id="noarch-org/softmax-triton", kernel=resolve(project_dir))
        done = publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))
        assert [c.branch for c in done.commits] == ["v1", "main"]
        files = sorted(f for f in HfApi(endpoint=hub.endpoint, token=hub.admin_token).list_repo_files(
            "noarch-org/softmax-triton", repo_type="kernel", revision="v1") if f.startswith("build/"))
        assert files == [f"build/torch-{b}/{f}" for b in ("cpu", "cuda") for f in FILES]
        # verify: get_kernel in a fresh process loads torch-cpu and matches float64; every cell resolves.
        report = done.verify
        assert report is not None and report.ok, report.to_json()
        assert report.load.variant == "torch-cpu" and report.load.cases > 30
        chosen = {c.cell: c.chosen for c in report.cells}
        assert len(chosen) == 18 and all(c.promised for c in report.cells)
        assert {v for k, v in chosen.items() if "-cu" in k} == {"torch-cuda"}
        assert {v for k, v in chosen.items() if "-cpu-" in k} == {"torch-cpu"}


@pytest.mark.slow
def test_get_kernel_loads_the_published_cpu_variant_like_a_user(project_dir, tmp_path):
    """`kernels.get_kernel` as a user runs it, in a fresh process, on the published repository."""
    from pipeline.hub import EmbeddedHub
    from pipeline.publish import PublishRequest, publish
    from pipeline.target import Target

    with EmbeddedHub(tmp_path / "hub", host="127.0.0.1", port=0, trusted_namespaces=["noarch-org"]) as hub:
        request = PublishRequest(repo_id="noarch-org/softmax-triton", kernel=resolve(project_dir), verify=False)
        publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))
        code = ("import torch, kernels; m = kernels.get_kernel('noarch-org/softmax-triton', version=1); "
                "x = torch.randn(4, 3000, dtype=torch.bfloat16); "
                "err = (m.softmax(x).double() - torch.softmax(x.double(), -1)).abs().max().item(); "
                "print(m.__name__, type(m.layers.Softmax).__name__, err < 1e-2)")
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_XET": "1",
               "KERNELS_CACHE": str(tmp_path / "cache"), "HF_HOME": str(tmp_path / "hf")}
        env.pop("HF_TOKEN", None)
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        name, _, ok = done.stdout.split()
        assert name.startswith("_softmax_triton_cpu_") and ok == "True"


# ---------------------------------------------------------------- through Nix (kernel-builder stand-in)


@pytest.mark.nix
@pytest.mark.slow
def test_the_workspace_flake_and_the_nix_backend_carry_noarch_variants(tmp_path):
    """The root flake selects `torch-cpu` from a noarch kernel's outputs and `pipeline build --backend nix`
    copies and checks it (offline: the stand-in of tests/integration/test_nix_wiring.py, which names a
    [torch-noarch] project's variant torch-<backend> as kernel-builder does)."""
    from test_nix_wiring import _git as git, _run, standin_workspace

    root = standin_workspace(tmp_path / "ws", SOURCE, "softmax-triton")

    _run(["nix", "build", ".#bundle", "--impure", "-L", "--out-link", "result"], root)
    tree = root / "result" / "softmax-triton"
    assert [p.name for p in tree.iterdir()] == ["torch-cpu"]
    report = check_bundle(tree)
    assert report.ok, [p.format() for p in report.problems]
    rev = git(root, "rev-parse", "--short=7", "HEAD")
    assert layout.read_metadata(tree / "torch-cpu")["id"] == f"_softmax_triton_cpu_{rev}"

    out = tmp_path / "build"
    _run([sys.executable, "-m", "pipeline", "build", str(root / "kernels-src" / "softmax-triton"), "--backend", "nix",
          "--variant", "torch-cpu", "--out", str(out), "--nix-option=--impure"], REPO)
    assert [p.name for p in out.iterdir()] == ["torch-cpu"] and check_bundle(out).ok

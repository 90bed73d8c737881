"""pipeline.matrix: the variant table, the intersection with build.toml and policy, the CLI rows."""

from __future__ import annotations

import dataclasses
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.errors import MatrixError
from pipeline.matrix import (Variant, compute_matrix, full_table_policy, host_variant, load_table,
                             matrix_rows, reduced_policy, table_variant_names, torch_info, version_key)
from pipeline.project import load_project
from pipeline.policy import MatrixPolicy
from pipeline.workspace import load_workspace, resolve, resolve_all


def matrix_for_path(path, *, ci=False):
    return [e for k in resolve_all(path) for e in k.entries(ci=ci)]

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "tiny-add"
ROW_KEYS = {"kernel", "variant", "backend", "torch", "arch", "os", "system", "runner"}


@pytest.fixture(scope="module")
def project():
    return load_project(FIXTURE)


def policy(**kw) -> MatrixPolicy:
    base = dict(torch=("2.12", "2.13"), cuda=("12.6", "13.0", "13.2"), archs=("x86_64", "aarch64"),
                backends=("cuda", "cpu", "rocm", "xpu", "metal"))
    base.update(kw)
    return MatrixPolicy(**base)


# ---------------------------------------------------------------- names


def test_every_table_variant_parses_with_kernels_parser():
    from kernels.variants import parse_variant

    names = table_variant_names()
    assert len(names) == len(set(names)) and names
    for name in names:
        assert parse_variant(name).variant_str == name
        assert Variant.parse(name).name == name


def test_every_matrix_variant_parses_with_kernels_parser(project):
    from kernels.variants import parse_variant

    everything = dataclasses.replace(project, backends=("cpu", "cuda", "rocm", "xpu", "metal"))
    variants = compute_matrix(everything, full_table_policy())
    assert {v.backend for v in variants} == {"cpu", "cuda", "rocm", "xpu", "metal"}
    for variant in variants:
        parsed = parse_variant(variant.name)
        assert parsed.variant_str == variant.name
        assert parsed.arch.platform == variant.arch and parsed.arch.os == variant.os


def test_names_format_like_kernel_builder():
    assert Variant("2.13", "cuda", "13.0", "x86_64", "linux", True).name == "torch213-cxx11-cu130-x86_64-linux"
    assert Variant("2.12", "metal", None, "aarch64", "darwin", False).name == "torch212-metal-aarch64-darwin"
    assert Variant("2.13", "xpu", "2026.0", "x86_64", "linux", True).name == "torch213-cxx11-xpu20260-x86_64-linux"
    assert Variant.parse("torch212-cxx11-rocm71-x86_64-linux").backend_version == "7.1"
    assert Variant.parse("torch213-cxx11-cu132-aarch64-linux").system == "aarch64-linux"


@pytest.mark.parametrize("name", ["torch-universal", "torch-tpu", "not-a-variant", "torch213-cxx11-tpu-x86_64-linux",
                                  "torch-stable-abi210-cu130-x86_64-linux", ""])
def test_parse_refuses_what_this_pipeline_cannot_build(name):
    with pytest.raises(MatrixError):
        Variant.parse(name)


def test_table_records_its_source():
    source = load_table().source
    assert source["path"] == "nix-builder/build-variants.json"
    assert len(source["commit"]) == 40 and source["date"]
    assert load_table().runner("aarch64-darwin") != load_table().runner("x86_64-linux")


# ---------------------------------------------------------------- intersection


def test_backends_and_policy_narrow_the_table(project):
    variants = compute_matrix(project, policy())
    assert {v.backend for v in variants} == {"cpu", "cuda"}  # the project's backends
    assert all(v.torch in ("2.12", "2.13") for v in variants)
    cuda = [v for v in variants if v.backend == "cuda"]
    assert {v.backend_version for v in cuda} == {"12.6", "13.0", "13.2"}
    assert {v.system for v in cuda} == {"x86_64-linux", "aarch64-linux"}
    assert {v.system for v in variants if v.backend == "cpu"} == {"x86_64-linux", "aarch64-linux", "aarch64-darwin"}
    only_x86 = compute_matrix(project, policy(archs=("x86_64",), backends=("cpu",)))
    assert {v.name for v in only_x86} == {"torch212-cxx11-cpu-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux"}


def test_torch_and_cuda_bounds_of_build_toml(project):
    bounded = dataclasses.replace(project, torch_minver="2.13", cuda_minver="12.8", cuda_maxver="13.0")
    variants = compute_matrix(bounded, policy())
    assert {v.torch for v in variants} == {"2.13"}
    assert {v.backend_version for v in variants if v.backend == "cuda"} == {"13.0"}
    assert compute_matrix(dataclasses.replace(project, torch_maxver="2.11"), policy()) == []


def test_bare_major_builds_the_lowest_minor_the_project_allows(project):
    lowest = compute_matrix(project, policy(cuda=("13",), backends=("cuda",)))
    assert {v.backend_version for v in lowest} == {"13.0"}
    assert len(lowest) == 4  # 2 torch x 2 archs
    newer = compute_matrix(dataclasses.replace(project, cuda_minver="13.1"), policy(cuda=("13",), backends=("cuda",)))
    assert {v.backend_version for v in newer} == {"13.2"}
    exact = compute_matrix(dataclasses.replace(project, cuda_minver="13.1"), policy(cuda=("13.0",), backends=("cuda",)))
    assert exact == []


def test_kernel_cuda_minver_drops_variants_with_nothing_to_compile(project):
    kernels = tuple(dataclasses.replace(k, cuda_minver="13.0") if k.backend == "cuda" else k for k in project.kernels)
    variants = compute_matrix(dataclasses.replace(project, kernels=kernels), policy(backends=("cuda",)))
    assert variants and all(version_key(v.backend_version) >= (13,) for v in variants)


def test_matrix_is_stable_and_duplicate_free(project):
    first = compute_matrix(project, policy(cuda=("13", "13.0", "13.2")))
    assert first == compute_matrix(project, policy(cuda=("13", "13.0", "13.2")))
    assert len({v.name for v in first}) == len(first)


def test_reduced_policy_without_a_workspace():
    reduced = reduced_policy(full_table_policy())
    assert reduced.torch == (max(full_table_policy().torch, key=version_key),)
    assert reduced.archs == ("x86_64",) and set(reduced.backends) == {"cuda", "cpu"}


# ---------------------------------------------------------------- workspace and rows


WORKSPACE_TOML = """
[workspace]
kernels = ["kernels-src/*"]
namespace = "test"

[workspace.matrix]
torch = ["2.12", "2.13"]
cuda = ["12.6", "13.0", "13.2"]
archs = ["x86_64", "aarch64"]
backends = ["cuda", "cpu"]

[workspace.matrix.ci]
torch = ["2.13"]
cuda = ["13"]
archs = ["x86_64"]
"""


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "build.toml").write_text(WORKSPACE_TOML)
    for name in ("tiny-add", "tiny-add-two"):
        shutil.copytree(FIXTURE, tmp_path / "kernels-src" / name, ignore=shutil.ignore_patterns("build"))
    toml_path = tmp_path / "kernels-src" / "tiny-add-two" / "build.toml"
    toml_path.write_text(toml_path.read_text().replace('name = "tiny-add"', 'name = "tiny-add-two"'))
    package = tmp_path / "kernels-src" / "tiny-add-two" / "torch-ext"
    (package / "tiny_add").rename(package / "tiny_add_two")
    return tmp_path


def test_workspace_policy_applies_to_every_kernel(workspace):
    ws = load_workspace(workspace)
    full = matrix_for_path(workspace)
    ci = matrix_for_path(workspace, ci=True)
    assert {e.kernel for e in full} == {e.kernel for e in ci} == {"tiny-add", "tiny-add-two"}
    assert {e.path for e in full} == {"kernels-src/tiny-add", "kernels-src/tiny-add-two"}
    assert len(full) == 2 * len(compute_matrix(load_project(workspace / "kernels-src/tiny-add"), ws.matrix))
    assert sorted(e.variant.name for e in ci if e.kernel == "tiny-add") == [
        "torch213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux"]
    # a kernel path inside the workspace takes the workspace's policy too
    one = matrix_for_path(workspace / "kernels-src" / "tiny-add", ci=True)
    assert [e.variant for e in one] == [e.variant for e in ci if e.kernel == "tiny-add"]
    assert one[0].path == "kernels-src/tiny-add"


def test_json_rows_are_a_strategy_matrix(project, capsys):
    assert cli.main(["matrix", str(FIXTURE), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    rows = document["include"]
    assert rows and all(ROW_KEYS <= set(row) for row in rows)
    assert [r["variant"] for r in rows] == [e.variant.name for e in matrix_for_path(FIXTURE)]
    assert all(r["system"] == f"{r['arch']}-{r['os']}" for r in rows)


def test_group_job_has_one_row_per_kernel_backend_system(project):
    variants = compute_matrix(project, full_table_policy())
    from pipeline.matrix import MatrixEntry

    entries = [MatrixEntry("tiny-add", "tiny-add", v) for v in variants]
    grouped = matrix_rows(entries, group="job")["include"]
    keys = [(r["backend"], r["system"]) for r in grouped]
    assert len(keys) == len(set(keys)) == len({(v.backend, v.system) for v in variants})
    assert sum(len(r["variants"].split()) for r in grouped) == len(variants)
    assert all("variant" not in r for r in grouped)


def test_cli_prints_a_table_and_a_usage_error_exits_non_zero(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pipeline", "matrix", str(FIXTURE), "--ci"], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 0 and "torch213-cxx11-cpu-x86_64-linux" in done.stdout
    missing = subprocess.run([sys.executable, "-m", "pipeline", "matrix", str(tmp_path / "nope"), "--json"],
                             capture_output=True, text=True, cwd=REPO)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


# ---------------------------------------------------------------- host


def test_host_variant_is_the_one_kernels_resolves_here():
    import torch
    from kernels.variants import parse_variant, resolve_variant

    host = host_variant()
    assert torch_info().version == torch.__version__
    assert host.torch == ".".join(torch.__version__.split(".")[:2])
    chosen, _ = resolve_variant([parse_variant(host.name)])
    assert chosen is not None and chosen.variant_str == host.name
    assert host.arch == {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(),
                                                                    platform.machine().lower())

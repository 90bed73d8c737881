"""pipeline/init.py: `init NAME --template T` renders a project that validates,
builds and passes its own smoke cases with no edits.

Fast tests render and validate; the slow ones really build the CPU variant
(once per template per session) and run the project's own smoke cases.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.workspace import resolve

from values import bundle_of

from pipeline import toml
from pipeline.cli import main
from pipeline.errors import InitError
from pipeline.init import TEMPLATES, default_out, render
from pipeline.project import load_project, validate
from pipeline.project.rules import kernels_rust, load_rules


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("template", TEMPLATES)
def test_renders_a_complete_project_that_validates(tmp_path, template):
    result = render("my-op", template, tmp_path / "my-op")
    root = result.root
    assert _files(root) == set(result.files)
    assert {"build.toml", "flake.nix", "CARD.md", ".gitignore", "torch-ext/torch_binding.cpp",
            "torch-ext/torch_binding.h", "torch-ext/my_op/__init__.py", "my_op_cuda/my_op.cu",
            "my_op_cuda/cuda_pack.cuh", "my_op_cpu/my_op_cpu.cpp", "my_op_cpu/vec_io.h",
            "tests/smoke_cases.py", "benchmarks/bench_cases.py"} <= set(result.files)
    report = validate(root)
    assert report.problems == (), [p.format() for p in report.problems]
    project = load_project(root)
    assert (project.name, project.python_name, project.edition) == ("my-op", "my_op", 5)
    assert set(project.backends) == {"cuda", "cpu"}
    assert {k.backend for k in project.kernels} == {"cuda", "cpu"}
    flake = (root / "flake.nix").read_text()
    assert "kernel-builder.lib.genKernelFlakeOutputs" in flake
    binding = (root / "torch-ext/torch_binding.cpp").read_text()
    assert "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)" in binding
    assert "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)" in binding
    package = (root / "torch-ext/my_op/__init__.py").read_text()
    assert "from ._ops import add_op_namespace_prefix, ops" in package
    assert 'register_fake(add_op_namespace_prefix("my_op"))' in package
    cu = (root / "my_op_cuda/my_op.cu").read_text()
    assert "Pack16" in cu and "is_aligned16" in cu
    cpp = (root / "my_op_cpu/my_op_cpu.cpp").read_text()
    assert "at::parallel_for" in cpp and "fVec" in cpp


def test_backend_and_dtype_choices_shape_the_project(tmp_path):
    result = render("cpu-only", "rowwise", tmp_path / "p", backends=["cpu"], dtypes=["fp32", "bf16"])
    assert result.backends == ("cpu",) and result.dtypes == ("bf16", "fp32")
    assert not any(f.startswith("cpu_only_cuda/") for f in result.files)
    data = toml.loads((result.root / "build.toml").read_text())
    assert data["general"]["backends"] == ["cpu"]
    assert list(data["kernel"]) == ["cpu_only_cpu"]
    cpp = (result.root / "cpu_only_cpu/cpu_only_cpu.cpp").read_text()
    assert "ScalarType::BFloat16" in cpp and "ScalarType::Float" in cpp and "ScalarType::Half" not in cpp
    smoke = (result.root / "tests/smoke_cases.py").read_text()
    assert '"bf16": torch.bfloat16' in smoke and "torch.float16" not in smoke
    binding = (result.root / "torch-ext/torch_binding.cpp").read_text()
    assert "kCPU" in binding and "kCUDA" not in binding
    assert validate(result.root).problems == ()


@pytest.mark.parametrize("template", TEMPLATES)
def test_bench_cases_default_to_the_narrowest_dtype_and_take_others(tmp_path, template):
    from pipeline import bench

    root = render("my-op", template, tmp_path / "my-op", dtypes=["fp32", "fp16"]).root
    assert {c["dtype"] for c in bench.load_cases(root)} == {"float16"}
    cases = bench.load_cases(root, "float32")
    assert {c["dtype"] for c in cases} == {"float32"}
    assert [c["name"] for c in cases] == [c["name"] for c in bench.load_cases(root)]


@pytest.mark.parametrize("name", ["my_kernel", "MyKernel", "1st", "a", "ends-", "x y"])
def test_rejects_names_kernels_rejects_with_the_rule(tmp_path, name):
    with pytest.raises(ValueError):
        kernels_rust().KernelName(name)  # the reference: kernels refuses it too
    with pytest.raises(InitError) as err:
        render(name, "elementwise", tmp_path / "p")
    assert err.value.code == "name-invalid"
    assert "lowercase" in err.value.message  # kernels' own rule text
    assert load_rules()["name-invalid"].hint in err.value.hint
    assert not (tmp_path / "p").exists()


def test_suggests_a_valid_name(tmp_path):
    with pytest.raises(InitError) as err:
        render("My_Kernel", "elementwise", tmp_path / "p")
    assert 'try "my-kernel"' in err.value.hint


def test_refuses_a_non_empty_directory_and_leaves_it_alone(tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(InitError) as err:
        render("my-op", "elementwise", out)
    assert err.value.code == "out-not-empty"
    assert _files(out) == {"keep.txt"}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert render("my-op", "elementwise", empty).root == empty


@pytest.mark.parametrize("kwargs, code", [
    ({"backends": ["cuda", "metal"]}, "backend-unknown"),
    ({"dtypes": ["fp64"]}, "dtype-unknown"),
    ({"backends": []}, "backend-unknown"),
])
def test_rejects_unknown_choices(tmp_path, kwargs, code):
    with pytest.raises(InitError) as err:
        render("my-op", "elementwise", tmp_path / "p", **kwargs)
    assert err.value.code == code


def test_default_out_inside_and_outside_a_workspace(tmp_path, repo_root):
    assert default_out("my-op", repo_root / "kernels-src") == repo_root / "kernels-src" / "my-op"
    assert default_out("my-op", tmp_path) == tmp_path / "my-op"


def test_repo_id_takes_the_workspace_namespace(tmp_path):
    (tmp_path / "build.toml").write_text('[workspace]\nkernels = ["kernels-src/*"]\nnamespace = "acme"\n'
                                         '[workspace.matrix]\ntorch = ["2.13"]\ncuda = ["13.0"]\n'
                                         'archs = ["x86_64"]\nbackends = ["cpu"]\n')
    result = render("my-op", "elementwise", cwd=tmp_path)
    assert result.root == tmp_path / "kernels-src" / "my-op"
    assert result.repo_id == "acme/my-op"
    assert 'repo-id = "acme/my-op"' in (result.root / "build.toml").read_text()


def test_cli(tmp_path, capsys):
    assert main(["init", "cli-op", "--template", "rowwise", "--out", str(tmp_path / "c"), "--backends", "cpu",
                 "--dtypes", "fp32", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["python_name"] == "cli_op" and doc["backends"] == ["cpu"] and doc["dtypes"] == ["fp32"]
    assert main(["init", "bad_name", "--template", "rowwise", "--out", str(tmp_path / "d")]) == 12
    assert "name-invalid" in capsys.readouterr().err


# --- slow: build the CPU variant and run the project's own smoke cases ------------


@pytest.fixture(scope="session")
def built_templates(tmp_path_factory):
    """Each template rendered and its CPU variant built once per session."""
    from pipeline.build import build_project

    os.environ.setdefault("MAX_JOBS", "1")
    built = {}
    for template in TEMPLATES:
        root = tmp_path_factory.mktemp("init") / f"t-{template}"
        render(f"t-{template}", template, root)
        result = build_project(load_project(root), root / "build", backend="local")
        built[template] = (root, result)
    return built


@pytest.mark.slow
@pytest.mark.parametrize("template", TEMPLATES)
def test_rendered_project_builds_and_passes_its_smoke_cases(built_templates, template):
    from pipeline.smoke import run_smoke

    root, result = built_templates[template]
    assert [v.variant.backend for v in result.variants] == ["cpu"]
    report = run_smoke(bundle_of(root / "build"), resolve(root), seeds=(0, 1))
    assert report.passed, [f"{r.name} {r.check}: {r.message}" for r in report.failures]
    checks = {r.check for r in report.results}
    assert checks == {"values", "opcheck", "compile"}
    assert len(report.results) > 20


@pytest.mark.slow
@pytest.mark.parametrize("template", TEMPLATES)
def test_rendered_python_api_works_through_get_local_kernel(built_templates, template):
    import kernels
    import torch

    root, _ = built_templates[template]
    module = kernels.get_local_kernel(root / "build")
    fn = getattr(module, f"t_{template}")
    x = torch.randn(3, 4, 40)[..., ::2]  # not contiguous: the wrapper makes it so
    if template == "elementwise":
        torch.testing.assert_close(fn(x), torch.nn.functional.silu(x))
    else:
        w = torch.randn(20)
        ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
        torch.testing.assert_close(fn(x, w), ref)

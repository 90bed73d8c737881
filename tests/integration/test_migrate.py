"""pipeline.project.migrate (`migrate PATH`): agent-written and legacy projects to edition 5.

The two agent fixtures (tests/fixtures/projects/agent-*, shaped like the
projects of the "Custom Kernels for All" post) must come out valid, with only
build.toml, flake.nix, the binding and the Python package touched. The slow
test builds the migrated CPU variant with the local backend and smoke-tests it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pipeline import toml
from pipeline.errors import ValidationError
from pipeline.project import validate
from pipeline.project.migrate import apply_migration, plan_migration
from pipeline.project.migrate_cpp import Unmigratable, rewrite_binding
from pipeline.project.migrate_py import rewrite_module

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "projects"
AGENTS = ("agent-multi-op", "agent-single-op")


def copy_of(case: str, tmp_path: Path) -> Path:
    target = tmp_path / case
    shutil.copytree(FIXTURES / case, target, ignore=shutil.ignore_patterns("expected.toml"))
    return target


def digests(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pipeline", "migrate", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", AGENTS)
def test_agent_project_migrates_to_a_valid_edition_5_project(case, tmp_path):
    project = copy_of(case, tmp_path)
    assert not validate(project).ok
    data = toml.loads((project / "build.toml").read_text())
    kernel_sources = {s for k in data["kernel"].values() for s in k["src"]}
    before = digests(project)
    migration = plan_migration(project)
    apply_migration(migration)
    report = validate(project)
    assert report.ok and report.project is not None, [p.format() for p in report.problems]
    assert report.warnings == 0, [p.format() for p in report.problems]
    assert report.project.edition == 5 and "_" not in report.project.name
    after = digests(project)
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    package = f"torch-ext/{report.project.python_name}/__init__.py"
    assert changed == {"build.toml", "flake.nix", "torch-ext/torch_binding.cpp", package}
    assert not changed & kernel_sources, "migrate never touches kernel math"
    assert not list(project.rglob(".*.tmp*")) and not [p for p in project.rglob(".*") if p.is_file()]
    assert plan_migration(project).changes == (), "a migrated project needs no second migration"


def test_binding_rewrite_derives_schema_and_adapts_float_and_int():
    text = (FIXTURES / "agent-single-op" / "torch-ext" / "torch_binding.cpp").read_text()
    result = rewrite_binding(text, ("cuda", "cpu"), register_elsewhere=False)
    assert "PYBIND11_MODULE" not in result.text and "torch/extension.h" not in result.text
    assert 'ops.def("rmsnorm_forward(Tensor(a!) output, Tensor input, Tensor weight, float eps) -> ()");' in result.text
    assert "static void rmsnorm_forward_op(torch::Tensor& output, const torch::Tensor& input, " \
           "const torch::Tensor& weight, double eps)" in result.text
    assert "rmsnorm_forward(output, input, weight, static_cast<float>(eps));" in result.text
    assert "#if defined(CPU_KERNEL)" in result.text and "torch::kCPU" in result.text and "torch::kCUDA" in result.text
    assert result.text.rstrip().endswith("REGISTER_EXTENSION(TORCH_EXTENSION_NAME)")
    assert '#include "registration.h"' in result.text
    assert result.op_names == ("rmsnorm_forward",)
    # the function the agent wrote is still there, unchanged
    start = text.index("void rmsnorm_forward(")
    assert text[start:text.index("PYBIND11_MODULE")] in result.text


def test_torch_library_with_a_literal_namespace_becomes_expand():
    text = (FIXTURES / "plain-torch-library" / "torch-ext" / "torch_binding.cpp").read_text()
    result = rewrite_binding(text, ("cpu", "cuda"), register_elsewhere=True)
    assert "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)" in result.text
    assert result.namespaces == ("fixture_kernel",)
    assert result.text.count("REGISTER_EXTENSION") == 1


def test_pybind_block_that_is_not_mechanical_is_left_to_the_author(tmp_path):
    project = copy_of("agent-single-op", tmp_path)
    binding = project / "torch-ext" / "torch_binding.cpp"
    binding.write_text(binding.read_text().replace(
        'm.def("rmsnorm_forward", &rmsnorm_forward, "RMSNorm forward");',
        'm.def("rmsnorm_forward", &rmsnorm_forward, py::arg("out"), py::arg("x"));\n    py::class_<Foo>(m, "Foo");'))
    with pytest.raises(Unmigratable):
        rewrite_binding(binding.read_text(), ("cuda",), False)
    result = run_cli(str(project))
    assert result.returncode == 1, result.stderr
    assert "not rewritten: torch-ext/torch_binding.cpp" in result.stderr
    assert "op-registration-missing" in result.stderr  # what is left, located
    assert "PYBIND11_MODULE" in binding.read_text()


def test_python_rewrites_keep_the_rest_of_the_text():
    source = (b'import torch\n\nfrom .. import _ops as ops\n\n\n'
              b'@torch.library.register_fake("old_name::f")\ndef _f(x):\n    return x  # keep me\n\n\n'
              b'def g(x):\n    return torch.ops.old_name.f(x) + torch.ops.aten.relu(x)\n')
    result = rewrite_module(source, 1, {"old_name"}, {})
    assert result.text == ('import torch\n\nfrom .._ops import add_op_namespace_prefix, ops\n\n\n'
                           '@torch.library.register_fake(add_op_namespace_prefix("f"))\ndef _f(x):\n'
                           '    return x  # keep me\n\n\ndef g(x):\n    return ops.f(x) + torch.ops.aten.relu(x)\n')


def test_python_module_without_an_ops_import_gets_one():
    source = b'"""doc"""\nimport torch\n\n\ndef g(x):\n    return torch.ops.my_kernel.f(x)\n'
    result = rewrite_module(source, 0, {"my_kernel"}, {})
    assert result.text == '"""doc"""\nimport torch\nfrom ._ops import ops\n\n\ndef g(x):\n    return ops.f(x)\n'


def test_python_op_that_the_binding_now_registers_is_renamed(tmp_path):
    project = copy_of("agent-multi-op", tmp_path)
    migration = plan_migration(project)
    new = {c.rel: c.new for c in migration.changes}["torch-ext/vidgen_kernels/__init__.py"]
    assert 'custom_op(add_op_namespace_prefix("layernorm_forward_py")' in new
    assert "ops.layernorm_forward_py(input, eps)" in new
    assert "ops.layernorm_forward(out, input.contiguous(), eps)" in new  # the C++ op, called as before
    assert 'add_op_namespace_prefix("silu_gate")' in new  # no clash: kept


@pytest.mark.parametrize("case", ["legacy-v4", "legacy-no-version", "name-underscore", "plain-torch-library",
                                  "op-namespace-prefix", "torch-ops-literal", "pybind11-module", "flake-other-input",
                                  "no-flake"])
def test_legacy_and_one_defect_fixtures_migrate_clean(case, tmp_path):
    project = copy_of(case, tmp_path)
    apply_migration(plan_migration(project))
    report = validate(project)
    assert report.ok and report.warnings == 0, [p.format() for p in report.problems]


def test_legacy_v4_gets_exactly_the_edition_line(tmp_path):
    project = copy_of("legacy-v4", tmp_path)
    migration = plan_migration(project)
    assert [c.rel for c in migration.changes] == ["build.toml"]
    added = [line for line in migration.diff().splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["+edition = 5"]


def test_license_comes_from_the_license_file_or_the_option(tmp_path):
    project = copy_of("agent-single-op", tmp_path)
    (project / "LICENSE").write_text("MIT License\n\nCopyright (c) 2026 someone\n")
    assert 'license = "mit"' in plan_migration(project).diff()
    assert 'license = "bsd-3-clause"' in plan_migration(project, "bsd-3-clause").diff()


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path):
    project = copy_of("agent-single-op", tmp_path)
    before = digests(project)
    result = run_cli(str(project), "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("--- a/build.toml\n+++ b/build.toml\n")
    assert '+name = "tinylm-kernels"' in result.stdout and "+++ b/flake.nix" in result.stdout
    assert "would change 4 file(s); the result validates" in result.stdout
    assert digests(project) == before


def test_writes_are_all_or_nothing(tmp_path, monkeypatch):
    """Every file goes to a temporary file first; a failure before the moves changes nothing."""
    project = copy_of("agent-multi-op", tmp_path)
    before = digests(project)
    migration = plan_migration(project)
    real = tempfile.mkstemp
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", failing)
    with pytest.raises(ValidationError) as info:
        apply_migration(migration)
    assert info.value.code == "migrate-write-failed"
    assert digests(project) == before


def test_not_a_project_is_a_clear_error(tmp_path):
    result = run_cli(str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "migrate-not-a-project" in result.stderr


@pytest.mark.slow
def test_migrated_cpu_variant_builds_locally_and_passes_smoke(tmp_path):
    """agent-single-op has a CPU kernel: migrate it, build its CPU variant, smoke-test it, call its Python API."""
    project = copy_of("agent-single-op", tmp_path)
    assert run_cli(str(project)).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(REPO), "MAX_JOBS": "1"}
    build = subprocess.run([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "local"],
                           cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-3000:]
    smoke = subprocess.run([sys.executable, "-m", "pipeline", "smoke", str(project / "build"), "--kernel",
                            str(project)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert smoke.returncode == 0, smoke.stdout[-3000:] + smoke.stderr[-3000:]
    assert "PASS" in smoke.stdout + smoke.stderr
    check = ("import kernels, torch\nfrom pathlib import Path\n"
             f"m = kernels.get_local_kernel(Path({str(project / 'build')!r}))\n"
             "x, w = torch.randn(5, 64), torch.randn(64)\n"
             "ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w\n"
             "torch.testing.assert_close(m.rmsnorm(x, w), ref)\nprint('api ok')\n")
    api = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=300)
    assert api.returncode == 0 and "api ok" in api.stdout, api.stderr[-3000:]

"""The local build backend, for real: compile the fixture's CPU variant, load it with
kernels.get_local_kernel, rebuild from the cache, fail cleanly on bad input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.build import build_project, layout
from pipeline.events import Event
from pipeline.errors import BuildError, ValidationError
from pipeline.matrix import host_variant
from pipeline.project import load_project

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "tiny-add"
HOST = host_variant()
CPU_NAME = HOST.name if HOST.backend == "cpu" else HOST.name.replace(
    f"-cu{HOST.backend_version.replace('.', '')}-", "-cpu-")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout.strip()


def _copy_fixture(dest: Path, *, git: bool) -> Path:
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("build", "__pycache__"))
    if git:
        _git(dest, "init", "-q")
        _git(dest, "add", "-A")
        _git(dest, "commit", "-qm", "fixture")
    return dest


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIPELINE_CACHE_DIR", str(cache))
        mp.setenv("MAX_JOBS", os.environ.get("MAX_JOBS", "2"))
        yield cache


@pytest.fixture(scope="module")
def built(tmp_path_factory, cache_env):
    """The fixture, committed to a fresh git repository, built once (CPU variant)."""
    src = _copy_fixture(tmp_path_factory.mktemp("proj") / "tiny-add", git=True)
    events: list[Event] = []
    result = build_project(load_project(src), src / "build", backend="local", progress=events.append)
    return src, result, events


@pytest.mark.slow
def test_builds_the_cpu_variant_in_the_kernels_layout(built):
    src, result, events = built
    (variant,) = result.variants
    assert variant.variant.name == CPU_NAME and not variant.cached
    assert variant.path == src / "build" / CPU_NAME
    tree = _git(src, "rev-parse", "HEAD^{tree}")
    assert variant.kernel_id == f"_tiny_add_cpu_{tree[:7]}"
    files = sorted(p.name for p in variant.path.iterdir())
    assert files == sorted(["__init__.py", "_ops.py", f"{variant.kernel_id}.abi3.so", "metadata.json"])
    assert any(e.kind == "compile" for e in events)
    ops = (variant.path / "_ops.py").read_text()
    assert f"ops = torch.ops.{variant.kernel_id}" in ops and "def add_op_namespace_prefix" in ops


@pytest.mark.slow
def test_metadata_is_what_kernels_reads(built):
    from kernels._rust import Digest, DigestAlgorithm, Metadata

    src, result, _ = built
    path = result.variants[0].path
    meta = Metadata.read_from_file(path / "metadata.json")
    assert str(meta.name) == "tiny-add" and meta.version == 1 and meta.license == "Apache-2.0"
    assert meta.id == result.variants[0].kernel_id
    assert str(meta.backend.backend_type) in ("Backend.CPU", "CPU", "cpu")
    meta.digest.validate(Digest.hash_variant(DigestAlgorithm.SHA256, path))
    assert set(meta.digest.files) == {"__init__.py", "_ops.py", f"{meta.id}.abi3.so"}
    assert meta.provenance.kernel.commit == _git(src, "rev-parse", "HEAD")
    assert meta.provenance.kernel.dirty is False
    raw = json.loads((path / "metadata.json").read_text())
    assert raw["provenance"]["toolchain"]["torch"] and raw["provenance"]["toolchain"]["cxx"]
    assert raw["provenance"]["kernel-builder"]["version"].startswith("kernel-pipeline ")
    assert layout.check_variant_dir(path) == []


@pytest.mark.slow
def test_check_accepts_the_build(built):
    bundle = pytest.importorskip("pipeline.bundle")
    _, result, _ = built
    report = bundle.check_bundle(result.variants[0].path.parent)
    assert report.ok, [p.format() for p in report.problems]


@pytest.mark.slow
def test_loads_with_get_local_kernel_and_matches_float64(built, monkeypatch):
    import kernels
    import torch

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    src, result, _ = built
    module = kernels.get_local_kernel(src / "build")
    assert module.__name__ == result.variants[0].kernel_id
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(4099, generator=gen)
    b = torch.randn(4099, generator=gen)
    out = module.add_scaled(a, b, 0.75)
    reference = a.double() + 0.75 * b.double()
    torch.testing.assert_close(out.double(), reference, rtol=1e-6, atol=1e-6)
    assert module._ops.add_op_namespace_prefix("add_scaled") == f"{module.__name__}::add_scaled"


@pytest.mark.slow
def test_unchanged_project_does_not_recompile(built):
    src, result, _ = built
    events: list[Event] = []
    again = build_project(load_project(src), src / "build", backend="local", progress=events.append)
    (variant,) = again.variants
    assert variant.cached and variant.kernel_id == result.variants[0].kernel_id
    assert not any(e.kind == "compile" for e in events)
    done = subprocess.run([sys.executable, "-m", "pipeline", "build", str(src), "--backend", "local", "--json"],
                          capture_output=True, text=True, cwd=REPO, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["kernels"][0]["variants"][0]["cached"] is True


@pytest.mark.slow
def test_python_only_change_reuses_the_library(built):
    src, result, _ = built
    first = result.variants[0]
    init = src / "torch-ext" / "tiny_add" / "__init__.py"
    init.write_text(init.read_text() + "\nEXTRA = 1\n")
    unique = first.kernel_id.rsplit("_", 1)[-1]  # keep the id: only the package changed
    events: list[Event] = []
    again = build_project(load_project(src), src / "build", backend="local", progress=events.append,
                          unique_id=unique)
    (variant,) = again.variants
    assert not variant.cached and variant.kernel_id == first.kernel_id
    assert not any(e.kind == "compile" for e in events)
    assert "EXTRA = 1" in (variant.path / "__init__.py").read_text()
    assert layout.check_variant_dir(variant.path) == []


@pytest.mark.slow
def test_failed_compile_shows_compiler_errors_and_leaves_build_alone(tmp_path, cache_env):
    src = _copy_fixture(tmp_path / "broken", git=False)
    cpp = src / "tiny_add_cpu" / "add.cpp"
    cpp.write_text(cpp.read_text().replace("const float s = static_cast<float>(alpha);",
                                           "const float s = static_cast<float>(alpha) +;"))
    out = tmp_path / "out"
    previous = out / CPU_NAME
    previous.mkdir(parents=True)
    (previous / "marker.txt").write_text("an earlier build")
    with pytest.raises(BuildError) as caught:
        build_project(load_project(src), out, backend="local")
    error = caught.value
    assert error.code == "compile-failed"
    # the flags it compiled with are kernel-builder's, named so a difference can be reported
    assert "kernel-builder's flags" in error.hint and "-DCPU_KERNEL" in error.hint and "nvcc:" not in error.hint
    located = [p for p in error.problems if p.path == "tiny_add_cpu/add.cpp"]
    assert located and all(p.line and "error" not in p.path for p in located)
    assert not any("ninja" in p.message for p in error.problems)
    assert sorted(p.name for p in out.iterdir()) == [CPU_NAME]
    assert [p.name for p in previous.iterdir()] == ["marker.txt"]


@pytest.mark.slow
def test_a_source_in_two_kernels_is_compiled_once_with_both_kernels_flags(tmp_path, cache_env):
    """As CMake does: one object for the file, both kernels' cxx-flags on it,
    linked once (two objects would define add_scaled twice). [torch] cxx-flags
    reach the binding. Each flag is proved by an #error that fires without it."""
    src = _copy_fixture(tmp_path / "shared", git=False)
    toml_text = (src / "build.toml").read_text()
    toml_text = toml_text.replace('[torch]\nsrc = [', '[torch]\ncxx-flags = ["-DTINY_BINDING_FLAG"]\nsrc = [')
    toml_text += textwrap.dedent("""
        [kernel.tiny_add_cpu_again]
        backend = "cpu"
        depends = ["torch"]
        cxx-flags = ["-DTINY_SECOND_KERNEL_FLAG"]
        include = ["tiny_add_cpu"]
        src = ["tiny_add_cpu/add.cpp"]
        """)
    (src / "build.toml").write_text(toml_text)
    for rel, macro in (("tiny_add_cpu/add.cpp", "TINY_SECOND_KERNEL_FLAG"), ("tiny_add_cpu/add.cpp", "TINY_ADD_UNROLL"),
                       ("torch-ext/torch_binding.cpp", "TINY_BINDING_FLAG")):
        path = src / rel
        path.write_text(f"#ifndef {macro}\n#error {macro} did not reach {rel}\n#endif\n" + path.read_text())
    project = load_project(src)
    result = build_project(project, tmp_path / "out", backend="local")
    variant = result.variants[0]
    assert (variant.path / f"{variant.kernel_id}.abi3.so").is_file()
    from pipeline.build import cache

    ninja = (cache.work_dir(src, variant.variant.name) / "build.ninja").read_text()
    compiles = [line for line in ninja.splitlines() if line.startswith("build ") and ": cxx tiny_add_cpu/add.cpp" in line]
    assert len(compiles) == 1, compiles


@pytest.mark.slow
@pytest.mark.parametrize("git", [False, True], ids=["tarball", "git-checkout"])
def test_a_standalone_project_is_not_refused_for_its_own_build(tmp_path, cache_env, git):
    """`pipeline build P` then `smoke P/build --kernel P` (which resolves and
    validates P): the build/ that the build just wrote, in a project without
    .gitignore, is not committed output. Committed in git, it is."""
    from pipeline.workspace import resolve, resolve_for_build

    src = tmp_path / "tiny-add"
    shutil.copytree(FIXTURE, src, ignore=shutil.ignore_patterns("build", "__pycache__", ".gitignore"))
    if git:
        _git(src, "init", "-q")
        _git(src, "add", "-A")
        _git(src, "commit", "-qm", "sources only")
    build_project(load_project(src), src / "build", backend="local")
    kernel = resolve(src)  # smoke --kernel P; publish --kernel P resolves the same way
    assert kernel.project.root == src
    assert resolve_for_build(src / "build", None).project.root.resolve() == src.resolve()
    if git:
        _git(src, "add", "-A")
        _git(src, "commit", "-qm", "the build, committed")
        with pytest.raises(ValidationError) as caught:
            resolve(src)
        assert caught.value.code == "build-output-committed"


# ---------------------------------------------------------------- refusals (no compile)


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "build", *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, **(env or {})})


def test_project_that_fails_validation_is_not_built(tmp_path):
    src = _copy_fixture(tmp_path / "invalid", git=False)
    (src / "build.toml").write_text((src / "build.toml").read_text().replace('license = "Apache-2.0"\n', ""))
    done = _cli(str(src), "--backend", "local")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "build.toml" in done.stderr and not (src / "build").exists()


def test_unknown_variant_name_is_one_sentence(tmp_path):
    done = _cli(str(FIXTURE), "--backend", "local", "--variant", "torch213-banana", "--out", str(tmp_path))
    assert done.returncode == 5 and "Traceback" not in done.stderr
    assert "unknown variant name 'torch213-banana'" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_cpu_torch_refuses_a_cuda_variant(tmp_path):
    if HOST.backend == "cuda":
        pytest.skip("this torch is a CUDA build")
    cuda_name = HOST.name.replace("-cpu-", "-cu130-")
    done = _cli(str(FIXTURE), "--backend", "local", "--variant", cuda_name, "--out", str(tmp_path))
    assert done.returncode == 5
    assert f"is not a CUDA build, so it cannot build {cuda_name}" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_compiler_is_one_sentence(tmp_path):
    done = _cli(str(FIXTURE), "--backend", "local", "--out", str(tmp_path),
                env={"CXX": "no-such-compiler", "PIPELINE_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 5
    assert "no C++ compiler found (looked for 'no-such-compiler' on PATH)" in done.stderr
    assert not (tmp_path / CPU_NAME).exists()


def test_project_without_a_backend_for_this_torch(tmp_path):
    if HOST.backend == "cuda":
        pytest.skip("this torch is a CUDA build")
    src = _copy_fixture(tmp_path / "cuda-only", git=False)
    text = (src / "build.toml").read_text()
    text = text.replace('    "cpu",\n', "")
    text = text[:text.index("[kernel.tiny_add_cpu]")] + text[text.index("[kernel.tiny_add_cuda]"):]
    (src / "build.toml").write_text(text)
    with pytest.raises(BuildError) as caught:
        build_project(load_project(src), tmp_path / "out", backend="local")
    assert caught.value.code == "variant-unbuildable" and "cuda" in caught.value.message


def test_nix_backend_without_nix_is_one_sentence(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError) as caught:
        build_project(load_project(FIXTURE), tmp_path / "out", backend="nix")
    assert caught.value.code == "nix-missing"


def test_unknown_backend():
    with pytest.raises(BuildError):
        build_project(load_project(FIXTURE), Path("/nonexistent"), backend="bazel")


# ---------------------------------------------------------------- compiler output


GCC_LOG = """\
[1/3] compile tiny_add_cpu/add.cpp
FAILED: [code=1] obj/1_tiny_add_cpu_add.cpp.o
/usr/bin/c++ -MMD -MF obj/1.o.d -O3 -c {root}/tiny_add_cpu/add.cpp -o obj/1.o
{root}/tiny_add_cpu/add.cpp: In function 'void add_scaled(at::Tensor&, const at::Tensor&, const at::Tensor&, double)':
{root}/tiny_add_cpu/add.cpp:14:45: error: expected primary-expression before ';' token
   14 |   const float s = static_cast<float>(alpha) +;
      |                                             ^
{root}/kernel.cu(7): error: identifier "blockIdz" is undefined
ninja: build stopped: subcommand failed.
"""


def test_compiler_problems_are_the_error_lines(tmp_path):
    from pipeline.build.diagnostics import compiler_problems

    problems = compiler_problems(GCC_LOG.format(root=tmp_path), tmp_path)
    assert [(p.path, p.line) for p in problems] == [("tiny_add_cpu/add.cpp", 14), ("kernel.cu", 7)]
    assert "expected primary-expression" in problems[0].message and "^" in problems[0].message
    assert 'identifier "blockIdz" is undefined' in problems[1].message


NO_KERNELS_SCRIPT = """
import importlib.abc, json, shutil, sys
from pathlib import Path
from pipeline.project import load_project
from pipeline.build import build_project

src, unique = Path(sys.argv[1]), sys.argv[2]
project = load_project(src)  # validation needs kernels; the build itself must not


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("kernels", "git"):
            raise ImportError(f"{name} is blocked")
        return None


for name in [m for m in sys.modules if m.split(".")[0] in ("kernels", "git")]:
    del sys.modules[name]
sys.meta_path.insert(0, Block())
events = []
result = build_project(project, src / "build", backend="local", unique_id=unique,
                       progress=lambda e: events.append(e.kind))
print(json.dumps({"id": result.variants[0].kernel_id, "compiled": "compile" in events,
                  "kernels_loaded": "kernels" in sys.modules}))
"""


@pytest.mark.slow
def test_build_needs_neither_kernels_nor_gitpython(built):
    """The GPU machine has neither: the build path imports them lazily and falls back."""
    from kernels._rust import Digest, DigestAlgorithm, Metadata

    src, result, _ = built
    first = result.variants[0]
    shutil.rmtree(first.path)
    unique = first.kernel_id.split("_cpu_", 1)[1]
    done = subprocess.run([sys.executable, "-c", NO_KERNELS_SCRIPT, str(src), unique], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"id": first.kernel_id, "compiled": False, "kernels_loaded": False}
    meta = Metadata.read_from_file(first.path / "metadata.json")
    meta.digest.validate(Digest.hash_variant(DigestAlgorithm.SHA256, first.path))
    assert meta.provenance.kernel is None  # no git: the revision is unknown, as kernel-builder writes it


@pytest.mark.slow
def test_rmsnorm_cpu_variant_builds_loads_and_matches_float64(tmp_path, cache_env, monkeypatch):
    """The workspace's rmsnorm, CPU variant: built here, loaded by kernels, checked against float64."""
    import kernels
    import torch

    rmsnorm = REPO / "kernels-src" / "rmsnorm"
    if not rmsnorm.is_dir():
        pytest.skip("kernels-src/rmsnorm is not there yet")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    out = tmp_path / "build"
    result = build_project(load_project(rmsnorm), out, backend="local", variant=CPU_NAME)
    assert [v.variant.name for v in result.variants] == [CPU_NAME]
    module = kernels.get_local_kernel(out)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(8, 1024, generator=gen)
    weight = torch.randn(1024, generator=gen)
    got = module.rms_norm(x, weight, 1e-6)
    xd = x.double()
    reference = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * weight.double()
    torch.testing.assert_close(got.double(), reference, rtol=1e-5, atol=1e-5)

"""kernel-builder's compiler flags as data (pipeline/data/build_flags.toml) and
how the local backend's plan turns sources into compiles (one per file)."""

from __future__ import annotations

import pytest

from pipeline.build import flags
from pipeline.build.plan import Unit, merge_units, stable_abi_for
from pipeline.errors import BuildError

NVCC_COMMON = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
               "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr")
NAME = "torch.utils.cpp_extension.COMMON_NVCC_FLAGS"


def ctx(**overrides) -> flags.BuildContext:
    values = dict(backend="cuda", torch="2.14", kernel_id="_rotary_cuda_abc1234", compiler="gcc",
                  torch_lists=((NAME, NVCC_COMMON),))
    values.update(overrides)
    return flags.BuildContext(**values)


# ------------------------------------------------------------- the table ----

def test_every_entry_names_its_source_and_the_table_names_its_commits():
    table = flags.load_table()
    assert table.entries
    assert all(e.source.split(":", 1)[0] in ("kernel-builder", "torch", "cmake") for e in table.entries)
    kb = table.source["kernel-builder"]
    assert len(kb["read-at"]) == 40 and kb["read-at-date"]
    assert all(len(f["commit"]) == 40 and f["date"] for f in kb["files"])
    assert table.source["torch"]["versions"] and table.source["cmake"]["version"]


def test_the_variant_table_and_the_flag_table_are_read_at_one_commit():
    from pipeline.matrix import _table_text
    from pipeline import toml

    variants = toml.loads(_table_text())["source"]
    assert flags.load_table().source["kernel-builder"]["read-at"] == variants["read-at"]


def test_cuda_sources_get_torchs_cmake_flags_not_cpp_extensions():
    nvcc = flags.compile_flags("cuda", ctx())
    # rotary's 20 errors: "__host__ or __device__ annotation on lambda requires --extended-lambda"
    assert "--expt-extended-lambda" in nvcc and "--expt-relaxed-constexpr" in nvcc
    assert not [f for f in nvcc if f.startswith("-D__CUDA_NO_")]
    assert {"-DENABLE_FP8", "-DONNX_NAMESPACE=onnx_c2", "-std=c++20", "-Xcompiler=-fPIC", "-O3", "-DNDEBUG",
            "-forward-unknown-to-host-compiler", "-DUSE_CUDA=1", "-DCUDA_KERNEL", "-DUSE_C10D_NCCL"} <= set(nvcc)
    assert "-DTORCH_EXTENSION_NAME=_rotary_cuda_abc1234" in nvcc and "-D_rotary_cuda_abc1234_EXPORTS" in nvcc
    assert nvcc.index("-Xcudafe") + 1 < len(nvcc) and nvcc[nvcc.index("-Xcudafe") + 1].startswith("--diag_suppress=")


def test_cxx_sources_get_gnu_dialect_and_no_cuda_flags():
    cpu = flags.compile_flags("cxx", ctx(backend="cpu", kernel_id="_relu_cpu_abc1234"))
    assert {"-O3", "-DNDEBUG", "-std=gnu++20", "-fPIC", "-fno-gnu-unique", "-DCPU_KERNEL",
            "-DPy_LIMITED_API=3", "-DUSE_DISTRIBUTED"} <= set(cpu)
    assert not {"-DUSE_CUDA=1", "-DENABLE_FP8", "-DUSE_C10D_NCCL", "--expt-extended-lambda"} & set(cpu)
    assert "-D_GLIBCXX_USE_CXX11_ABI=0" not in cpu  # the compiler's default, as CMake leaves it
    # the binding of a CUDA build is C++ too: the CUDA definitions, no nvcc options
    cxx_of_cuda = flags.compile_flags("cxx", ctx())
    assert "-DUSE_CUDA=1" in cxx_of_cuda and "--expt-extended-lambda" not in cxx_of_cuda


@pytest.mark.parametrize("torch, cxx, cuda", [("2.11", "-std=gnu++17", "-std=c++17"),
                                              ("2.12", "-std=gnu++20", "-std=c++20")])
def test_the_language_standard_follows_the_torch_version(torch, cxx, cuda):
    assert [f for f in flags.compile_flags("cxx", ctx(torch=torch)) if f.startswith("-std=")] == [cxx]
    assert [f for f in flags.compile_flags("cuda", ctx(torch=torch)) if f.startswith("-std=")] == [cuda]


def test_conditions_clang_old_abi_and_stable_abi():
    assert "-fno-gnu-unique" not in flags.compile_flags("cxx", ctx(compiler="clang"))
    assert "-D_GLIBCXX_USE_CXX11_ABI=0" in flags.compile_flags("cxx", ctx(cxx11_abi=False))
    assert not [f for f in flags.compile_flags("cuda", ctx()) if "TORCH_TARGET_VERSION" in f]
    stable = flags.compile_flags("cuda", ctx(stable_abi="2.10"))
    assert "-DTORCH_TARGET_VERSION=0x20a000000000000" in stable
    assert flags.stable_abi_hex("2.10") == hex((2 << 56) | (10 << 48))


def test_stable_abi_is_read_per_backend():
    section = {"stable-abi": {"cuda": "2.10", "rocm": "2.10"}}
    assert stable_abi_for(section, "cuda") == "2.10" and stable_abi_for(section, "cpu") is None
    assert stable_abi_for({"stable-abi": "2.11"}, "cpu") == "2.11"
    assert stable_abi_for({}, "cuda") is None


def test_a_torch_list_the_table_reads_must_be_given():
    with pytest.raises(BuildError) as info:
        flags.compile_flags("cuda", ctx(torch_lists=()))
    assert info.value.code == "flag-table-invalid"


def test_a_malformed_table_is_refused_with_its_entry():
    with pytest.raises(BuildError) as info:
        flags.parse_table('[[cxx]]\nflags = ["-O3"]\n')
    assert info.value.code == "flag-table-invalid" and "source" in info.value.message
    with pytest.raises(BuildError) as info:
        flags.parse_table('[[cuda]]\nflags = ["-O3"]\nsource = "cmake:x"\nwhen = "always"\n')
    assert "when" in info.value.message


def test_the_failure_message_names_kernel_builders_flags():
    text = flags.described(ctx(), ("cxx", "cuda"))
    assert "kernel-builder" in text and "--expt-extended-lambda" in text and "nvcc:" in text and "c++:" in text


# --------------------------------------------------------- one compile per file ----

def unit(source, kernel, includes=(), flags_=(), archs=(), language="cuda") -> Unit:
    return Unit(source, language, (kernel,), tuple(includes), tuple(flags_), tuple(archs))


def test_a_source_in_two_kernels_is_compiled_once_with_both_kernels_options():
    units = [unit("torch-ext/b.cpp", "torch", language="cxx"),
             unit("k/shared.cu", "first", ["k"], ["-DFIRST=1"], ["8.0"]),
             unit("k/other.cu", "first", ["k"], ["-DFIRST=1"], ["8.0"]),
             unit("k/shared.cu", "second", ["inc", "k"], ["-DSECOND=1", "--use_fast_math"], ["9.0", "8.0"])]
    merged = merge_units(units)
    assert [u.source for u in merged] == ["torch-ext/b.cpp", "k/shared.cu", "k/other.cu"]
    shared = merged[1]
    assert shared.kernels == ("first", "second")
    # CMake appends each kernel's COMPILE_OPTIONS to the file's, in kernel order
    assert shared.flags == ("-DFIRST=1", "-DSECOND=1", "--use_fast_math")
    assert shared.archs == ("8.0", "9.0")
    assert shared.includes == ("k", "inc")


def test_sources_listed_once_are_left_alone():
    units = [unit("a.cu", "k", ["x"], ["-DA"], ["9.0"]), unit("b.cu", "k", ["x"], ["-DA"], ["9.0"])]
    assert merge_units(units) == units


def test_a_dependency_only_nix_provides_is_one_clear_refusal():
    from pipeline.build.plan import _kernel_units
    from pipeline.matrix import Variant
    from pipeline.project import KernelSpec

    spec = KernelSpec(name="moe", backend="cuda", src=("moe.cu",), depends=("torch", "cutlass_3_8"), include=(),
                      cuda_capabilities=("9.0",), cuda_flags=(), cxx_flags=(), cuda_minver=None)
    variant = Variant(torch="2.14", backend="cuda", backend_version="13.0", arch="x86_64", os="linux", cxx11=True)
    with pytest.raises(BuildError) as info:
        _kernel_units(spec, variant, "nvcc", "13.0", [])
    assert info.value.code == "depends-unsupported"
    assert "cutlass_3_8" in info.value.message and "--backend nix" in info.value.hint


def test_a_changed_flag_table_changes_the_compile_key(monkeypatch, tmp_path):
    from types import SimpleNamespace

    from pipeline.build import local

    (tmp_path / "build.toml").write_text("[general]\n")
    project = SimpleNamespace(root=tmp_path)
    plan = SimpleNamespace(variant=SimpleNamespace(name="torch214-cxx11-cpu-x86_64-linux"), kernel_id="_k_cpu_0000000",
                           tools={"torch": "2.14.1"}, units=(), compile_inputs=("build.toml",))
    before = local.compile_key(project, plan, [])
    assert local.compile_key(project, plan, []) == before
    text = flags._table_text()
    monkeypatch.setattr(flags, "_table_text", lambda: text.replace('flags = ["-fPIC"]', 'flags = ["-fPIC", "-g"]'))
    assert local.compile_key(project, plan, []) != before


def test_cuda_flags_older_nvcc_does_not_know_are_dropped_as_kernel_cmake_does():
    from pipeline.build.plan import kernel_cuda_flags

    wanted = ("-static-global-template-stub=false", "-lineinfo")
    assert kernel_cuda_flags(wanted, "12.6") == ("-lineinfo",)
    assert kernel_cuda_flags(wanted, "12.8") == wanted and kernel_cuda_flags(wanted, "13.0") == wanted


def test_a_stable_abi_newer_than_the_torch_is_refused_as_kernel_builder_refuses_it(tmp_path):
    from types import SimpleNamespace

    from pipeline.build.plan import buildable_stable_abi
    from pipeline.matrix import Variant

    project = SimpleNamespace(name="activation", root=tmp_path)
    variant = Variant(torch="2.14", backend="cuda", backend_version="13.0", arch="x86_64", os="linux", cxx11=True)
    assert buildable_stable_abi(project, {"stable-abi": {"cuda": "2.10"}}, variant) == "2.10"
    assert buildable_stable_abi(project, {"stable-abi": {"rocm": "2.10"}}, variant) is None
    with pytest.raises(BuildError) as info:
        buildable_stable_abi(project, {"stable-abi": {"cuda": "2.15"}}, variant)
    assert info.value.code == "variant-unbuildable" and "2.15" in info.value.message

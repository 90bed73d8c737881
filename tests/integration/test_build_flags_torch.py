"""The flag table (pipeline/data/build_flags.toml) against Torch's CMake config
as installed: the definitions of the imported `torch` target and the flags
Caffe2/public/cuda.cmake appends to CMAKE_CUDA_FLAGS are what the table says.
The CPU torch is this interpreter's; the CUDA torch is the cuda_build venv's
($PIPELINE_CUDA_PYTHON, else /work/venv-cu130), read as files (no import)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pipeline.build import flags

DEFAULT_CUDA_PYTHON = Path("/work/venv-cu130/bin/python")


def _cmake_dir_of_this_torch() -> Path:
    import torch

    return Path(torch.__file__).parent / "share" / "cmake"


def _cmake_dir_of_the_cuda_torch() -> Path | None:
    python = os.environ.get("PIPELINE_CUDA_PYTHON") or str(DEFAULT_CUDA_PYTHON)
    venv = Path(python).parent.parent
    found = sorted(venv.glob("lib/python3*/site-packages/torch/share/cmake"))
    return found[0] if found else None


def interface_definitions(cmake_dir: Path, target: str) -> set[str]:
    text = (cmake_dir / "Caffe2" / "Caffe2Targets.cmake").read_text()
    block = re.search(rf"set_target_properties\({target} PROPERTIES\n(.*?)\n\)", text, re.S)
    assert block, f"no {target} in Caffe2Targets.cmake"
    found = re.search(r'INTERFACE_COMPILE_DEFINITIONS "([^"]*)"', block.group(1))
    return {f"-D{d}" for d in found.group(1).split(";")} if found else set()


def table_flags(source_mark: str, **conditions) -> set[str]:
    ctx = flags.BuildContext(backend=conditions.get("backend", "cpu"), torch="2.14", kernel_id="_k_cpu_0000000",
                             compiler="gcc", torch_lists=(("torch.utils.cpp_extension.COMMON_NVCC_FLAGS", ()),))
    return {f for e in flags.load_table().entries if source_mark in e.source and flags.applies(e, ctx)
            for f in e.flags}


def test_cpu_definitions_are_torch_cpus_interface_definitions():
    cmake = _cmake_dir_of_this_torch()
    assert table_flags("torch_cpu INTERFACE_COMPILE_DEFINITIONS") == interface_definitions(cmake, "torch_cpu")


def test_this_torch_sets_no_cxx_flags_the_table_leaves_out():
    import torch

    text = (_cmake_dir_of_this_torch() / "Torch" / "TorchConfig.cmake").read_text()
    assigned = re.findall(r'set\(TORCH_CXX_FLAGS "([^"]*)"\)', text)
    if torch.compiled_with_cxx11_abi():
        assert all("_GLIBCXX_USE_CXX11_ABI=0" not in a for a in assigned)
        assert all(not a.strip() or a.strip() == "-D_GLIBCXX_USE_CXX11_ABI=1" for a in assigned), assigned
    else:  # pragma: no cover - the old-ABI torch builds are gone
        assert "-D_GLIBCXX_USE_CXX11_ABI=0" in assigned


def test_cuda_flags_are_what_torchs_cuda_cmake_appends():
    cmake = _cmake_dir_of_the_cuda_torch()
    if cmake is None:
        pytest.skip("cuda_build: no CUDA torch venv (set PIPELINE_CUDA_PYTHON)")
    text = (cmake / "Caffe2" / "public" / "cuda.cmake").read_text()
    appended = re.findall(r'list\(APPEND CUDA_NVCC_FLAGS ([^)]*)\)', text)
    for flag in table_flags("cuda.cmake (CUDA_NVCC_FLAGS", backend="cuda"):
        if flag.startswith("--diag_suppress="):
            # built from a foreach over the names, then joined with commas
            names = [n.split("=", 1)[1] for n in flag.split(",")]
            assert all(re.search(rf"\b{n}\b", text) for n in names), flag
        elif flag == "-Xcudafe":
            assert any(a.startswith("-Xcudafe") for a in appended)
        else:
            assert any(flag in a for a in appended), f"{flag} is not appended by {cmake}/Caffe2/public/cuda.cmake"
    cuda_only = interface_definitions(cmake, "torch_cuda")
    assert table_flags("torch_cuda INTERFACE_COMPILE_DEFINITIONS", backend="cuda") == cuda_only
    assert table_flags("torch_cpu INTERFACE_COMPILE_DEFINITIONS") == interface_definitions(cmake, "torch_cpu")

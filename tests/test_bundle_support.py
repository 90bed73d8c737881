"""Helpers shared by the check/publish/verify tests (no tests here).

`tiny_so(ops_name)` compiles a real CPU torch op (one .so per op namespace,
compiled once per test session into a temporary directory: ~10 s each), and
`make_variant` lays it out as kernel-builder does: `__init__.py`, `_ops.py`,
`<id>.abi3.so`, `metadata.json` with a digest computed by `kernels`' own
`Digest.hash_variant`.
"""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

_OP_SOURCE = r"""
#define Py_LIMITED_API 0x03090000
#include <Python.h>
#include <torch/library.h>
#include <ATen/ATen.h>
#define STR2(x) #x
#define STR(x) STR2(x)
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
static void scale(at::Tensor& out, const at::Tensor& x, double a) { out.copy_(x * a); }
TORCH_LIBRARY(OPS_NAME, m) { m.def("scale(Tensor(a!) out, Tensor x, float a) -> ()"); }
TORCH_LIBRARY_IMPL(OPS_NAME, CPU, m) { m.impl("scale", &scale); }
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, STR(OPS_NAME), nullptr, 0, nullptr};
extern "C" PyObject* CAT(PyInit_, OPS_NAME)(void) { return PyModule_Create(&def); }
// libstdc++ >= 11 reads glibc 2.32's __libc_single_threaded; manylinux_2_28 has glibc 2.28.
// compat.h renames it to this variable ("never single threaded": always use atomics).
extern "C" __attribute__((visibility("hidden"))) char pipeline_not_single_threaded = 0;
"""
_COMPAT_H = "#define __libc_single_threaded pipeline_not_single_threaded\n"

_INIT_PY = '''import torch

from ._ops import ops


def scale(x: torch.Tensor, a: float) -> torch.Tensor:
    """x * a, computed by the compiled op."""
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    ops.scale(out, x, float(a))
    return out


__all__ = ["scale"]
'''

_OPS_PY = '''import torch
from . import {ops}
ops = torch.ops.{ops}


def add_op_namespace_prefix(op_name: str):
    return f"{ops}::{{op_name}}"
'''

_CACHE: dict[str, Path] = {}
_TMP: Path | None = None


def _tmp() -> Path:
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="pipeline-tiny-op-"))
        atexit.register(shutil.rmtree, _TMP, True)
    return _TMP


def tiny_so(ops_name: str, *, abi_clean: bool = True) -> Path:
    """A compiled CPU op registered under torch.ops.<ops_name> (cached per session)."""
    key = f"{ops_name}-{abi_clean}"
    if key in _CACHE:
        return _CACHE[key]
    import torch.utils.cpp_extension as ce

    work = _tmp() / key
    work.mkdir(parents=True, exist_ok=True)
    (work / "op.cpp").write_text(_OP_SOURCE)
    (work / "compat.h").write_text(_COMPAT_H)
    out = work / f"{ops_name}.abi3.so"
    cmd = ["g++", "-O1", "-shared", "-fPIC", "-std=c++17", "-w", f"-DOPS_NAME={ops_name}"]
    if abi_clean:
        cmd += ["-include", str(work / "compat.h")]
    cmd += [f"-I{p}" for p in ce.include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    cmd += [str(work / "op.cpp"), "-o", str(out)]
    cmd += [f"-L{p}" for p in ce.library_paths()] + ["-lc10", "-ltorch_cpu", "-ltorch"]
    subprocess.run(cmd, check=True, capture_output=True)
    _CACHE[key] = out
    return out


def host_cpu_variant() -> str:
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return f"torch{major}{minor}-cxx11-cpu-{platform.machine()}-{sys.platform}"


def write_metadata(vdir: Path, *, kernel: str, ops_name: str, version: int, backend: str = "cpu",
                   digest: bool = True, extra: dict | None = None) -> None:
    from kernels._rust import Digest, DigestAlgorithm

    meta = {
        "name": kernel, "id": ops_name, "version": version, "license": "Apache-2.0", "python-depends": [],
        "backend": {"type": backend},
        "provenance": {"kernel-builder": {"version": "handmade-test-fixture"},
                       "kernel": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": False}},
    }
    (vdir / "metadata.json").unlink(missing_ok=True)
    if digest:
        d = Digest.hash_variant(DigestAlgorithm.SHA256, vdir)
        meta["digest"] = {"algorithm": "sha256", "files": dict(d.files)}
    meta.update(extra or {})
    (vdir / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")


def make_variant(build_dir: Path, name: str | None = None, *, kernel: str = "tiny", version: int = 1,
                 ops_name: str = "_tiny_cpu_0a1b2c3", backend: str = "cpu", abi_clean: bool = True,
                 digest: bool = True) -> Path:
    """One variant directory laid out as kernel-builder does, with a real compiled op."""
    vdir = Path(build_dir) / (name or host_cpu_variant())
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / "__init__.py").write_text(_INIT_PY)
    (vdir / "_ops.py").write_text(_OPS_PY.format(ops=ops_name))
    shutil.copyfile(tiny_so(ops_name, abi_clean=abi_clean), vdir / f"{ops_name}.abi3.so")
    write_metadata(vdir, kernel=kernel, ops_name=ops_name, version=version, backend=backend, digest=digest)
    return vdir


def copy_variant_as(src: Path, build_dir: Path, name: str, *, backend: str | None = None) -> Path:
    """A copy of a variant under another name (a stand-in for a cell this host cannot build)."""
    dst = Path(build_dir) / name
    shutil.copytree(src, dst)
    meta = json.loads((dst / "metadata.json").read_text())
    if backend:
        meta["backend"]["type"] = backend
        (dst / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
    return dst


# --- a kernel project matching the tiny op (validate, smoke cases, card) --------

_PROJECT_FILES = {
    "build.toml": """[general]
name = "{kernel}"
version = {version}
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.{python}_cpu]
backend = "cpu"
depends = ["torch"]
src = ["{python}_cpu/{python}.cpp"]
""",
    "flake.nix": """{{
  description = "Flake for the {kernel} test kernel";
  inputs = {{ kernel-builder.url = "github:huggingface/kernels"; }};
  outputs = {{ self, kernel-builder, ... }}:
    kernel-builder.lib.genKernelFlakeOutputs {{ inherit self; path = ./.; }};
}}
""",
    "torch-ext/torch_binding.h": """#pragma once
#include <torch/torch.h>
void scale(torch::Tensor &out, torch::Tensor const &x, double a);
""",
    "torch-ext/torch_binding.cpp": """#include <torch/library.h>
#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {{
  ops.def("scale(Tensor(a!) out, Tensor x, float a) -> ()");
  ops.impl("scale", torch::kCPU, &scale);
}}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
""",
    "{python}_cpu/{python}.cpp": """#include <torch/torch.h>

void scale(torch::Tensor &out, torch::Tensor const &x, double a) {{ out.copy_(x * a); }}
""",
    "torch-ext/{python}/__init__.py": _INIT_PY.replace("{", "{{").replace("}", "}}"),
    "tests/smoke_cases.py": """import torch


def smoke_cases():
    def make(device, gen):
        x = torch.randn((4, 33), generator=gen, dtype=torch.float32).to(device)
        return torch.empty_like(x), x, 1.5

    def reference(out, x, a):
        return (x.double() * a,)

    return [{{"name": "scale/fp32/4x33", "op": "scale", "make": make, "outputs": (0,), "reference": reference}}]
""",
}


def make_project(root: Path, *, kernel: str = "tiny", version: int = 1, git: bool = True) -> Path:
    """A small but complete kernel-builder project for the tiny op."""
    python = kernel.replace("-", "_")
    root = Path(root)
    for rel, text in _PROJECT_FILES.items():
        path = root / rel.format(python=python)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(kernel=kernel, version=version, python=python))
    # registration.h and _ops.py are generated by the build; the source tree has neither.
    (root / ".gitignore").write_text("build/\nresult\n__pycache__/\n")
    if git and not (root / ".git").exists():
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "tiny kernel"]):
            subprocess.run(cmd, cwd=root, check=True, env=env, capture_output=True)
    return root

"""Stand-in for `python -m pipeline build` on the GPU runner while that verb is
not available: compiles the host's variant of a kernel project with
torch.utils.cpp_extension into the layout kernels.get_local_kernel loads
(<out>/<variant>/{__init__.py, _ops.py, <id>.abi3.so, metadata.json}).

    python scripts/gpu/build_variant.py kernels-src/rmsnorm OUT_DIR [--arch 9.0]

Only for a project whose build.toml lists its sources plainly (rmsnorm's).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tomllib
from pathlib import Path


REGISTRATION_H = """#pragma once
#include <Python.h>
#define _CONCAT(A, B) A##B
#define CONCAT(A, B) _CONCAT(A, B)
#define _STRINGIFY(A) #A
#define STRINGIFY(A) _STRINGIFY(A)
#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)
#define TORCH_LIBRARY_IMPL_EXPAND(NAME, DEVICE, MODULE) TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)
#define REGISTER_EXTENSION(NAME)                                                                     \\
  PyMODINIT_FUNC CONCAT(PyInit_, NAME)() {                                                           \\
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, STRINGIFY(NAME), nullptr, 0, nullptr}; \\
    return PyModule_Create(&module);                                                                 \\
  }
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("project", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--backend", default=None, choices=("cuda", "cpu"))
    args = ap.parse_args()

    import torch
    from torch.utils import cpp_extension

    proj = args.project.resolve()
    cfg = tomllib.loads((proj / "build.toml").read_text())
    name = cfg["general"]["name"]
    py = name.replace("-", "_")
    backend = args.backend or ("cuda" if torch.version.cuda and torch.cuda.is_available() else "cpu")
    digest = hashlib.sha1()
    srcs, incs, cflags, nvflags = [], [proj / "torch-ext"], ["-O3"], ["-O3"]
    for f in cfg["torch"]["src"]:
        digest.update((proj / f).read_bytes())
        if f.endswith((".cpp", ".cu")):
            srcs.append(proj / f)
    for kname, k in cfg.get("kernel", {}).items():
        if k["backend"] != backend:
            continue
        for f in k["src"]:
            digest.update((proj / f).read_bytes())
            if f.endswith((".cpp", ".cu")):
                srcs.append(proj / f)
        incs += [proj / i for i in k.get("include", [])]
        cflags += k.get("cxx-flags", [])
        nvflags += k.get("cuda-flags", [])
    kid = f"_{py}_{backend}_{digest.hexdigest()[:7]}"
    define = "-DCUDA_KERNEL" if backend == "cuda" else "-DCPU_KERNEL"
    tv = torch.__version__.split("+")[0].split(".")
    if backend == "cuda":
        cu = torch.version.cuda.split(".")
        variant = f"torch{tv[0]}{tv[1]}-cxx11-cu{cu[0]}{cu[1]}-x86_64-linux"
        a = args.arch.replace(".", "")
        nvflags += [define, f"-gencode=arch=compute_{a},code=sm_{a}"]
    else:
        variant = f"torch{tv[0]}{tv[1]}-cxx11-cpu-x86_64-linux"
    tmp = args.out / ".tmp" / kid
    tmp.mkdir(parents=True, exist_ok=True)
    # kernel-builder generates registration.h at build time; so does this.
    (tmp / "gen").mkdir(exist_ok=True)
    (tmp / "gen" / "registration.h").write_text(REGISTRATION_H)
    incs.append(tmp / "gen")
    cpp_extension.load(name=kid, sources=[str(s) for s in srcs], extra_include_paths=[str(i) for i in incs],
                       extra_cflags=cflags + [define], extra_cuda_cflags=nvflags, build_directory=str(tmp),
                       is_python_module=False, verbose=False)
    vd = args.out / variant
    if vd.exists():
        shutil.rmtree(vd)
    shutil.copytree(proj / "torch-ext" / py, vd)
    shutil.copy(tmp / f"{kid}.so", vd / f"{kid}.abi3.so")
    (vd / "_ops.py").write_text(
        f"import torch\nfrom . import {kid}\nops = torch.ops.{kid}\n\n\n"
        f"def add_op_namespace_prefix(op_name: str):\n    return f\"{kid}::{{op_name}}\"\n")
    (vd / "metadata.json").write_text(json.dumps({
        "name": name, "id": kid, "version": cfg["general"].get("version"), "license": cfg["general"].get("license"),
        "python-depends": [], "backend": {"type": backend}}))
    shutil.rmtree(args.out / ".tmp", ignore_errors=True)
    print(vd)
    return 0


if __name__ == "__main__":
    sys.exit(main())

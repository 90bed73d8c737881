"""kernels.get_kernel against the embedded hub: a real compiled CPU kernel,
published with huggingface_hub, found by version, downloaded and run."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from huggingface_hub import HfApi, constants

from pipeline.hub import EmbeddedHub
from hubtesting import REPO_ROOT, subprocess_env

pytestmark = pytest.mark.slow

KERNEL_ID = "_hubtiny_cpu_0a1b2c3"
CPP = f"""
#include <ATen/ATen.h>
#include <torch/library.h>

at::Tensor scale(const at::Tensor& x, double s) {{ return x * s; }}

TORCH_LIBRARY({KERNEL_ID}, m) {{
  m.def("scale(Tensor x, float s) -> Tensor");
  m.impl("scale", c10::DispatchKey::CPU, &scale);
}}
"""


def host_variant() -> str:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return f"torch{major}{minor}-cxx11-cpu-{platform.machine()}-linux"


@pytest.fixture(scope="session")
def tiny_kernel_so() -> Path:
    """One compile of a minimal torch C++ op, cached under .cache/ across runs
    (ninja rebuilds only when the source or torch changes). Compiled in a child
    process so this process never registers the op namespace itself."""
    build = REPO_ROOT / ".cache" / "hub-tiny-kernel" / torch.__version__
    build.mkdir(parents=True, exist_ok=True)
    src = build / "tiny.cpp"
    if not src.exists() or src.read_text() != CPP:
        src.write_text(CPP)
    script = textwrap.dedent(f"""
        from torch.utils.cpp_extension import load
        load(name="{KERNEL_ID}", sources=[r"{src}"], build_directory=r"{build}", is_python_module=False,
             extra_cflags=["-O1"], verbose=False)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, env=subprocess_env(), timeout=900)
    so = build / f"{KERNEL_ID}.so"
    assert so.is_file()
    return so


def kernel_tree(root: Path, so: Path) -> Path:
    """The layout kernels 0.17 loads: build/<variant>/{__init__.py,_ops.py,<id>.abi3.so,metadata.json}."""
    variant = root / "build" / host_variant()
    variant.mkdir(parents=True)
    shutil.copy(so, variant / f"{KERNEL_ID}.abi3.so")
    (variant / "_ops.py").write_text(
        textwrap.dedent(f"""
        import os
        import torch
        torch.ops.load_library(os.path.join(os.path.dirname(__file__), "{KERNEL_ID}.abi3.so"))
        ops = torch.ops.{KERNEL_ID}

        def add_op_namespace_prefix(op_name: str) -> str:
            return f"{KERNEL_ID}::{{op_name}}"
    """)
    )
    (variant / "__init__.py").write_text("from ._ops import ops\n\n\ndef scale(x, s):\n    return ops.scale(x, s)\n")
    (variant / "metadata.json").write_text(
        json.dumps(
            {
                "name": "hubtiny",
                "id": KERNEL_ID,
                "version": 1,
                "license": "Apache-2.0",
                "python-depends": [],
                "backend": {"type": "cpu"},
            }
        )
    )
    return root


LOAD = """
import json, sys, torch, kernels
kwargs = json.loads(sys.argv[2])
try:
    k = kernels.get_kernel(sys.argv[1], version=1, **kwargs)
except ValueError as exc:
    print(json.dumps({"refused": str(exc)}))
else:
    print(json.dumps({"result": k.scale(torch.arange(4.0), 2.5).tolist(), "file": k.__file__}))
"""


def get_kernel(hub: EmbeddedHub, repo: str, cache: Path, **kwargs) -> dict:
    """kernels reads HF_ENDPOINT when it is imported: run it in a fresh process.
    (Not with HF_HUB_DISABLE_TELEMETRY=1: kernels 0.17.2 then sends a User-Agent
    ending in "; ", which httpx refuses, and reports it as an untrusted publisher.)"""
    env = subprocess_env({**hub.client_env(), "HF_HOME": str(cache)})
    out = subprocess.run(
        [sys.executable, "-c", LOAD, repo, json.dumps(kwargs)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hub(tmp_path_factory, tiny_kernel_so):
    tree = kernel_tree(tmp_path_factory.mktemp("kernel"), tiny_kernel_so)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(constants, "HF_HUB_DISABLE_XET", True)
        with EmbeddedHub(tmp_path_factory.mktemp("hub"), trusted_namespaces=["trusted-org"]) as h:
            api = HfApi(endpoint=h.endpoint, token=h.admin_token)
            for repo in ("trusted-org/hubtiny", "someone/hubtiny"):
                api.create_repo(repo, repo_type="kernel")
                api.create_branch(repo, branch="v1", repo_type="kernel")
                api.upload_folder(
                    folder_path=tree,
                    repo_id=repo,
                    repo_type="kernel",
                    revision="v1",
                    commit_message="publish hubtiny v1",
                )
            yield h


def test_get_kernel_from_a_trusted_publisher(hub, tmp_path):
    got = get_kernel(hub, "trusted-org/hubtiny", tmp_path)
    assert got.get("result") == [0.0, 2.5, 5.0, 7.5], got
    assert f"/build/{host_variant()}/__init__.py" in got["file"]


def test_untrusted_publisher_needs_trust_remote_code(hub, tmp_path):
    refused = get_kernel(hub, "someone/hubtiny", tmp_path / "a")
    assert "not from a trusted publisher" in refused["refused"]
    got = get_kernel(hub, "someone/hubtiny", tmp_path / "b", trust_remote_code=True)
    assert got["result"] == [0.0, 2.5, 5.0, 7.5]
    # The org flag is read live from the hub.
    hub.trust("someone")
    assert get_kernel(hub, "someone/hubtiny", tmp_path / "c")["result"] == [0.0, 2.5, 5.0, 7.5]


def test_missing_version_is_reported(hub, tmp_path):
    env = subprocess_env({**hub.client_env(), "HF_HOME": str(tmp_path)})
    code = "import kernels; kernels.get_kernel('trusted-org/hubtiny', version=2)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "Version 2 not found, available versions: 1" in out.stderr

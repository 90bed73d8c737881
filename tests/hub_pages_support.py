"""Repositories for the page tests, published to an embedded hub with the stock
huggingface_hub client (what `publish` uploads, without a build):

- `pages-org/demo` (a trusted publisher): versions v1 and v2 as branches with
  variants under build/ (one signed), the card on main with a benchmark image
  referenced by relative path (`media/benchmark.png`, stored with Xet or LFS);
- `pages-org/hostile`: a card carrying <script>, javascript: links and onerror=
  attributes, a file and a commit message carrying HTML;
- `hidden-org/secret`: a private kernel;
- `pages-org/tiny-model`: a model repository with a card.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCHMARK_PNG = REPO_ROOT / "kernels-src" / "rmsnorm" / "benchmarks" / "results" / "h200-float16.png"

DEMO = "pages-org/demo"
HOSTILE = "pages-org/hostile"
SECRET = "hidden-org/secret"
MODEL = "pages-org/tiny-model"
V1_VARIANTS = ("torch212-cxx11-cu126-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux")
V2_VARIANTS = (
    "torch-cuda",
    "torch213-cxx11-cpu-x86_64-linux",
    "torch213-cxx11-cu130-aarch64-linux",
    "torch213-cxx11-cu130-x86_64-linux",
)
SIGNED = "torch213-cxx11-cpu-x86_64-linux"  # signed in v2
LOG_INDEX = 424242

DEMO_CARD = """---
library_name: kernels
tags:
- kernels
---

# Demo kernel

An RMSNorm for the page tests.

![Benchmark on the H200](media/benchmark.png)

| shape | speed-up |
| --- | ---: |
| 4096 x 4096 | 1.7x |

See [the benchmark notes](benchmarks/NOTES.md) and [How to use](#how-to-use).

## How to use

```python
from kernels import get_kernel
```
"""

# Every way a card could try to run a script or hide a scheme in a URL.
HOSTILE_CARD = """# Hostile card

<script>window.pwned = "script tag"</script>
<img src="x" onerror="window.pwned = 'onerror attribute'">
<a href="javascript:window.pwned='raw anchor'">raw anchor</a>
<svg onload="window.pwned='svg onload'"></svg>

[markdown javascript link](javascript:window.pwned='markdown-link')
[mixed case](JaVaScRiPt:window.pwned='mixed-case')
[entity newline](<java&#10;script:window.pwned='entity'>)
[data url](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)
![image with javascript src](javascript:window.pwned='image')
![image with onerror](x.png" onerror="window.pwned='image-attribute')
[vbscript](vbscript:msgbox)
[climbing out](../../../api/whoami-v2)
"""
HOSTILE_FILE = "<img src=x onerror=window.pwned='file-name'>.txt"
HOSTILE_MESSAGE = "<script>window.pwned='commit'</script> title\n\n<img src=x onerror=window.pwned='body'>"


@dataclass(frozen=True)
class Published:
    endpoint: str
    read_token: str  # reads hidden-org (the private kernel)


def _variant(name: str, signed: bool = False) -> list[CommitOperationAdd]:
    base = f"build/{name}"
    meta = {"name": "demo", "id": "_demo_0a1b2c3", "version": 1, "license": "apache-2.0",
            "python-depends": [], "backend": {"type": "cpu"}}
    ops = [
        CommitOperationAdd(f"{base}/__init__.py", b"from ._ops import ops\n"),
        CommitOperationAdd(f"{base}/metadata.json", json.dumps(meta).encode()),
    ]
    if not name.startswith("torch-"):
        ops.append(CommitOperationAdd(f"{base}/_demo_0a1b2c3.abi3.so", b"\x7fELF\0" + os.urandom(200_000)))
    if signed:
        bundle = {"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                  "verificationMaterial": {"tlogEntries": [{"logIndex": str(LOG_INDEX)}]}}
        ops.append(CommitOperationAdd(f"{base}/metadata.json.sigstore", json.dumps(bundle).encode()))
    return ops


def _kernel(api: HfApi, repo: str, versions: dict[str, list[CommitOperationAdd]], main: list[CommitOperationAdd],
            *, private: bool = False, message: str = "card") -> None:
    api.create_repo(repo, repo_type="kernel", private=private)
    for branch, ops in versions.items():
        api.create_branch(repo, repo_type="kernel", branch=branch)
        api.create_commit(repo, repo_type="kernel", revision=branch, operations=ops,
                          commit_message=f"Builds for {repo} {branch}")
    api.create_commit(repo, repo_type="kernel", operations=main, commit_message=message)


def publish_examples(endpoint: str, admin_token: str, create_token) -> Published:
    api = HfApi(endpoint=endpoint, token=admin_token)
    png = BENCHMARK_PNG.read_bytes()
    _kernel(api, DEMO, {
        "v1": [op for v in V1_VARIANTS for op in _variant(v)],
        "v2": [op for v in V2_VARIANTS for op in _variant(v, signed=v == SIGNED)],
    }, [CommitOperationAdd("README.md", DEMO_CARD.encode()), CommitOperationAdd("media/benchmark.png", png)],
        message="Kernel card for pages-org/demo v2")
    _kernel(api, HOSTILE, {"v1": [*_variant(V1_VARIANTS[1]), CommitOperationAdd(f"build/{HOSTILE_FILE}", b"x")]},
            [CommitOperationAdd("README.md", HOSTILE_CARD.encode())], message=HOSTILE_MESSAGE)
    _kernel(api, SECRET, {"v1": _variant(V1_VARIANTS[1])},
            [CommitOperationAdd("README.md", b"# Secret kernel\n\n![plot](media/secret.png)\n"),
             CommitOperationAdd("media/secret.png", png)], private=True)
    api.create_repo(MODEL, repo_type="model")
    api.create_commit(MODEL, operations=[CommitOperationAdd("README.md", b"# Tiny model\n")], commit_message="card")
    return Published(endpoint, create_token("hidden-org", "read"))

"""How long the embedded hub's pages take (prints figures; not a test).

    python benchmarks/hub_pages.py [--variants 20] [--requests 50] [--card README.md]

Publishes one kernel with --variants variants on branch v1 (each with
__init__.py, _ops.py, layers.py, metadata.json, a 200 kB .so; every other one
signed) and a card with a benchmark image, to `python -m pipeline hub serve` in
a child process. The card: --card, else rmsnorm's card source
(kernels-src/rmsnorm/CARD.md, its template filled in) followed by this
repository's README.md, some 67 kB of tables and code blocks, the size of a
card `publish` generates (rmsnorm's is 90 kB). Then GETs each
page --requests times from this process over 127.0.0.1 and prints the first
request (kernels is imported then) and the median and p95 of the others.
The target: the kernel page under 100 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # hubtesting

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import httpx  # noqa: E402
from huggingface_hub import CommitOperationAdd, HfApi  # noqa: E402

from hubtesting import REPO_ROOT, ServerProcess  # noqa: E402

TOKEN = "hf_benchmark_pages_admin_token_0123456789"
REPO = "bench-org/rmsnorm"
CARD = REPO_ROOT / "kernels-src" / "rmsnorm" / "CARD.md"
IMAGE = REPO_ROOT / "kernels-src" / "rmsnorm" / "benchmarks" / "results" / "h200-float16.png"


def variant_names(count: int) -> list[str]:
    cells = [f"torch{t}-cxx11-{b}-{a}-linux" for t in ("212", "213", "214") for b in ("cu126", "cu130", "cpu", "rocm71")
             for a in ("x86_64", "aarch64")]
    return (cells + [f"torch-{b}" for b in ("cuda", "cpu", "rocm", "xpu", "metal")])[:count]


def default_card() -> str:
    import jinja2

    source = jinja2.Template(CARD.read_text()).render(repo_id=REPO, version=1, license="apache-2.0", trusted=True)
    return source + "\n\n" + (REPO_ROOT / "README.md").read_text()


def publish(endpoint: str, count: int, card: str) -> list[str]:
    api = HfApi(endpoint=endpoint, token=TOKEN)
    api.create_repo(REPO, repo_type="kernel")
    api.create_branch(REPO, repo_type="kernel", branch="v1")
    names = variant_names(count)
    ops = []
    for i, name in enumerate(names):
        base = f"build/{name}"
        ops += [CommitOperationAdd(f"{base}/{f}", f"# {f}\n".encode()) for f in ("__init__.py", "_ops.py", "layers.py")]
        ops.append(CommitOperationAdd(f"{base}/metadata.json", json.dumps({"name": "rmsnorm", "version": 1}).encode()))
        ops.append(CommitOperationAdd(f"{base}/_rmsnorm_{i:07x}.abi3.so", b"\x7fELF\0" + os.urandom(200_000)))
        if i % 2 == 0:
            bundle = {"verificationMaterial": {"tlogEntries": [{"logIndex": str(1000 + i)}]}}
            ops.append(CommitOperationAdd(f"{base}/metadata.json.sigstore", json.dumps(bundle).encode()))
    api.create_commit(REPO, repo_type="kernel", revision="v1", operations=ops, commit_message="builds")
    card += "\n\n![Benchmark on the H200](media/benchmark-h200.png)\n"
    api.create_commit(REPO, repo_type="kernel", commit_message="card", operations=[
        CommitOperationAdd("README.md", card.encode()), CommitOperationAdd("media/benchmark-h200.png", IMAGE.read_bytes())])
    return names


def timed(client: httpx.Client, url: str, requests: int) -> tuple[float, list[float], int]:
    samples = []
    for _ in range(requests + 1):
        start = time.perf_counter()
        r = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        r.raise_for_status()
    return samples[0], samples[1:], len(r.content)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=20)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--card", type=Path, default=None, help="the card (README.md) to publish")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hub-pages-bench-") as tmp:
        server = ServerProcess(Path(tmp) / "hub", token=TOKEN, log_level="warning").start()
        try:
            card = args.card.read_text() if args.card else default_card()
            names = publish(server.endpoint, args.variants, card)
            pages = {
                "listing      /kernels": "/kernels",
                f"kernel page  /kernels/{REPO} ({len(names)} variants)": f"/kernels/{REPO}",
                f"files        /kernels/{REPO}/tree/v1/build": f"/kernels/{REPO}/tree/v1/build",
                f"history      /kernels/{REPO}/commits/main": f"/kernels/{REPO}/commits/main",
            }
            print(f"embedded hub pages, {os.cpu_count()} CPU(s), {args.requests} requests each after the first; "
                  f"card {len(card.encode()) / 1000:.0f} kB")
            with httpx.Client(base_url=server.endpoint, timeout=60) as client:
                for label, url in pages.items():
                    first, rest, size = timed(client, url, args.requests)
                    p95 = statistics.quantiles(rest, n=20)[-1] if len(rest) >= 20 else max(rest)
                    print(f"  {label:<58} first {first:7.1f} ms   median {statistics.median(rest):6.1f} ms"
                          f"   p95 {p95:6.1f} ms   {size / 1000:.1f} kB")
        finally:
            server.stop()


if __name__ == "__main__":
    main()

"""Throughput of the embedded hub (prints figures; not a test).

    python benchmarks/hub_throughput.py [--size-mb 500] [--clients 32] [--variant-mb 20] [--paths lfs,xet]

For each transfer path (Git LFS: HF_HUB_DISABLE_XET=1; Xet: huggingface_hub
with hf_xet, as installed):

1. upload_file of one large random file and hf_hub_download of it, plus a curl
   GET of the same /resolve URL (for Xet files the hub reconstructs the bytes
   from its chunk store), with the server's peak resident memory;
2. `--clients` concurrent snapshot_downloads of one variant of a kernel repo
   (allow_patterns=build/<variant>/*), each into its own cache: all must
   succeed and be byte-identical; prints the median and p99 latency.

Then, for Xet: bytes the hub stores when a 4 MB library is republished with
one function changed, each upload from a fresh client (empty Xet cache).

The server runs as `python -m pipeline hub serve` in a child process on
127.0.0.1; the clients are the real huggingface_hub.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # hubtesting

os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from huggingface_hub import HfApi, constants  # noqa: E402

from hubtesting import ServerProcess, subprocess_env  # noqa: E402

TOKEN = "hf_benchmark_admin_token_0123456789"
MiB = 1024 * 1024
VARIANT = "torch213-cxx11-cpu-x86_64-linux"


def write_random(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            block = os.urandom(min(left, 8 * MiB))
            digest.update(block)
            f.write(block)
            left -= len(block)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(8 * MiB):
            digest.update(block)
    return digest.hexdigest()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def big_file(server: ServerProcess, tmp: Path, path: str, big: Path, big_sha: str) -> list[str]:
    api = HfApi(endpoint=server.endpoint, token=TOKEN)
    repo = f"bench/big-{path}"
    api.create_repo(repo, repo_type="kernel")
    mb = big.stat().st_size / 1e6
    rss_start = server.peak_rss_kib()
    t = time.perf_counter()
    api.upload_file(path_or_fileobj=str(big), path_in_repo="big.bin", repo_id=repo, repo_type="kernel")
    upload_s = time.perf_counter() - t
    rss_upload = server.peak_rss_kib()
    t = time.perf_counter()
    got = Path(api.hf_hub_download(repo, "big.bin", repo_type="kernel", cache_dir=tmp / f"dl-{path}"))
    download_s = time.perf_counter() - t
    identical = sha256_file(got) == big_sha
    got.unlink()
    lines = [
        f"[{path}] upload   {mb:6.0f} MB  {upload_s:6.2f} s  {mb / upload_s:7.1f} MB/s  (upload_file)",
        f"[{path}] download {mb:6.0f} MB  {download_s:6.2f} s  {mb / download_s:7.1f} MB/s  (hf_hub_download)"
        f"  byte-identical: {identical}",
    ]
    if shutil.which("curl"):
        t = time.perf_counter()
        url = f"{server.endpoint}/kernels/{repo}/resolve/main/big.bin"
        subprocess.run(["curl", "-sf", "-o", os.devnull, url], check=True)
        curl_s = time.perf_counter() - t
        lines.append(f"[{path}] download {mb:6.0f} MB  {curl_s:6.2f} s  {mb / curl_s:7.1f} MB/s  (curl GET, to /dev/null)")
    lines.append(f"[{path}] server peak RSS: start {rss_start / 1024:.0f} MiB, after upload {rss_upload / 1024:.0f} MiB, "
                 f"after download {server.peak_rss_kib() / 1024:.0f} MiB")  # fmt: skip
    if not identical:
        raise SystemExit(f"[{path}] download differs from upload")
    return lines


def kernel_repo(api: HfApi, src: Path, repo: str, variant_mb: int) -> dict[str, str]:
    for v, so_size in ((VARIANT, variant_mb * MiB), ("torch213-cxx11-cu130-x86_64-linux", MiB)):
        d = src / "build" / v
        d.mkdir(parents=True, exist_ok=True)
        write_random(d / "_bench_0000000.abi3.so", so_size)
        (d / "__init__.py").write_text("from ._ops import ops\n")
        (d / "_ops.py").write_text("ops = None\n")
        (d / "metadata.json").write_text('{"name": "bench", "id": "_bench_0000000", "version": 1}\n')
    api.create_repo(repo, repo_type="kernel")
    api.create_branch(repo, branch="v1", repo_type="kernel")
    api.upload_folder(folder_path=src, repo_id=repo, repo_type="kernel", revision="v1", commit_message="publish")
    return {f"build/{VARIANT}/{p.name}": sha256_file(p) for p in (src / "build" / VARIANT).iterdir()}


def concurrent(server: ServerProcess, tmp: Path, path: str, clients: int, variant_mb: int) -> list[str]:
    api = HfApi(endpoint=server.endpoint, token=TOKEN)
    repo = f"bench/kernel-{path}"
    expected = kernel_repo(api, tmp / f"kernel-{path}", repo, variant_mb)

    def one(i: int) -> tuple[float, bool]:
        client = HfApi(endpoint=server.endpoint, token=False)
        start = time.perf_counter()
        folder = Path(client.snapshot_download(repo, repo_type="kernel", revision="v1",
                                               allow_patterns=[f"build/{VARIANT}/*"], cache_dir=tmp / f"c-{path}-{i}"))  # fmt: skip
        elapsed = time.perf_counter() - start
        got = {p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()}
        return elapsed, got == expected

    t = time.perf_counter()
    latencies, same, failures = [], [], 0
    with ThreadPoolExecutor(max_workers=clients) as pool:
        for future in [pool.submit(one, i) for i in range(clients)]:
            try:
                elapsed, ok = future.result()
                latencies.append(elapsed)
                same.append(ok)
            except Exception as exc:  # counted, and shown
                failures += 1
                print(f"[{path}] client failed: {exc!r}", file=sys.stderr)
    wall = time.perf_counter() - t
    lines = [f"[{path}] {clients} concurrent snapshot_download of {VARIANT} ({len(expected)} files, {variant_mb} MiB .so):"
             f" {len(latencies)} ok, {failures} failed, {sum(same)} byte-identical; wall {wall:.2f} s"]  # fmt: skip
    if latencies:
        lines.append(f"[{path}] latency: median {statistics.median(latencies):.2f} s, "
                     f"p99 {percentile(latencies, 99):.2f} s, max {max(latencies):.2f} s")  # fmt: skip
    if failures or not all(same):
        raise SystemExit(f"[{path}] concurrent downloads failed")
    return lines


UPLOAD = """
import sys
from huggingface_hub import HfApi
endpoint, token, path, revision = sys.argv[1:]
HfApi(endpoint=endpoint, token=token).upload_file(
    path_or_fileobj=path, path_in_repo="build/v/_k.so", repo_id="bench/dedup", repo_type="kernel", revision=revision)
"""


def library(changed: int | None) -> bytes:
    """Stands in for a kernel's .so: 600 'functions' of 2-12 KB; `changed` rewrites one."""
    rng = random.Random(7)
    functions = [rng.randbytes(rng.randint(2_000, 12_000)) for _ in range(600)]
    if changed is not None:
        functions[changed] = random.Random(8).randbytes(len(functions[changed]) + 40)
    return b"".join(functions)


def republish(server: ServerProcess, tmp: Path) -> list[str]:
    api = HfApi(endpoint=server.endpoint, token=TOKEN)
    api.create_repo("bench/dedup", repo_type="kernel")
    api.create_branch("bench/dedup", branch="v2", repo_type="kernel")
    xorbs = server.root / "xet" / "xorbs"
    added = []
    for i, (data, revision) in enumerate(((library(None), "main"), (library(300), "v2"))):
        (tmp / f"lib{i}.so").write_bytes(data)
        before = sum(p.stat().st_size for p in xorbs.rglob("*"))
        env = subprocess_env({"HF_XET_CACHE": str(tmp / f"xet-cache-{i}"), "HF_HOME": str(tmp / f"hf-home-{i}")})
        env.pop("HF_HUB_DISABLE_XET", None)
        subprocess.run([sys.executable, "-c", UPLOAD, server.endpoint, TOKEN, str(tmp / f"lib{i}.so"), revision],
                       check=True, env=env)  # fmt: skip
        added.append((len(data), sum(p.stat().st_size for p in xorbs.rglob("*")) - before))
    (n0, s0), (n1, s1) = added
    return [f"[xet] publish {n0} B library: {s0} B stored; republish with one function changed ({n1} B): "
            f"{s1} B stored ({100 * s1 / n1:.1f}% of the file), each from a fresh client"]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=500, help="size of the large file (default: %(default)s)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent snapshot_downloads (default: %(default)s)")
    parser.add_argument("--variant-mb", type=int, default=20, help="size of the variant's .so (default: %(default)s)")
    parser.add_argument("--paths", default="lfs,xet", help="transfer paths to measure (default: %(default)s)")
    args = parser.parse_args()
    lines = [f"hub throughput benchmark (server: python -m pipeline hub serve on 127.0.0.1; {os.cpu_count()} CPUs)"]
    with tempfile.TemporaryDirectory(prefix="hub-bench-") as tmp_name:
        tmp = Path(tmp_name)
        big = tmp / "big.bin"
        print(f"writing a {args.size_mb} MiB random file ...", file=sys.stderr)
        big_sha = write_random(big, args.size_mb * MiB)
        with ServerProcess(tmp / "hub", token=TOKEN, log_level="warning") as server:
            for path in args.paths.split(","):
                constants.HF_HUB_DISABLE_XET = path == "lfs"  # read at each upload and download
                lines += big_file(server, tmp, path, big, big_sha)
                lines += concurrent(server, tmp, path, args.clients, args.variant_mb)
            if "xet" in args.paths:
                lines += republish(server, tmp)
            lines.append(f"server peak RSS at the end: {server.peak_rss_kib() / 1024:.0f} MiB")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

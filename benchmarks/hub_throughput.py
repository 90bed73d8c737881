"""Throughput of the embedded hub (prints figures; not a test).

    python benchmarks/hub_throughput.py [--size-mb 500] [--clients 32] [--variant-mb 20]

1. upload_file of one large file (Git LFS: batch + PUT) and hf_hub_download of
   it, with the server's peak resident memory before and after;
2. `--clients` concurrent snapshot_downloads of one variant of a kernel repo
   (allow_patterns=build/<variant>/*), each into its own cache: all must
   succeed and be byte-identical; prints the median and p99 latency.

The server runs as `python -m pipeline hub serve` in a child process on
127.0.0.1; the clients are the real huggingface_hub.
"""

from __future__ import annotations

import argparse
import hashlib
import os
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

os.environ["HF_HUB_DISABLE_XET"] = "1"  # before huggingface_hub is imported: this hub speaks Git LFS
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from huggingface_hub import HfApi  # noqa: E402

from hubtesting import ServerProcess  # noqa: E402

TOKEN = "hf_benchmark_admin_token_0123456789"
MiB = 1024 * 1024


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=500, help="size of the large file (default: %(default)s)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent snapshot_downloads (default: %(default)s)")
    parser.add_argument("--variant-mb", type=int, default=20, help="size of the variant's .so (default: %(default)s)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hub-bench-") as tmp:
        tmp = Path(tmp)
        size = args.size_mb * MiB
        big = tmp / "big.bin"
        print(f"writing a {args.size_mb} MiB random file ...", file=sys.stderr)
        big_sha = write_random(big, size)

        with ServerProcess(tmp / "hub", token=TOKEN, log_level="warning") as server:
            api = HfApi(endpoint=server.endpoint, token=TOKEN)
            api.create_repo("bench/big", repo_type="kernel")
            rss_start = server.peak_rss_kib()

            t = time.perf_counter()
            api.upload_file(path_or_fileobj=str(big), path_in_repo="big.bin", repo_id="bench/big", repo_type="kernel")
            upload_s = time.perf_counter() - t
            rss_after_upload = server.peak_rss_kib()

            t = time.perf_counter()
            got = api.hf_hub_download("bench/big", "big.bin", repo_type="kernel", cache_dir=tmp / "dl")
            download_s = time.perf_counter() - t
            rss_after_download = server.peak_rss_kib()
            identical = sha256_file(Path(got)) == big_sha
            Path(got).unlink()

            # The same GET with curl: what the server delivers without the Python client's own costs.
            curl_s = None
            if shutil.which("curl"):
                t = time.perf_counter()
                subprocess.run(
                    ["curl", "-sf", "-o", os.devnull, f"{server.endpoint}/kernels/bench/big/resolve/main/big.bin"],
                    check=True,
                )
                curl_s = time.perf_counter() - t

            # A kernel repo with two variants; the clients fetch one.
            src = tmp / "kernel"
            variant = "torch213-cxx11-cpu-x86_64-linux"
            for v, so_size in ((variant, args.variant_mb * MiB), ("torch213-cxx11-cu130-x86_64-linux", MiB)):
                d = src / "build" / v
                d.mkdir(parents=True)
                write_random(d / "_bench_0000000.abi3.so", so_size)
                (d / "__init__.py").write_text("from ._ops import ops\n")
                (d / "_ops.py").write_text("ops = None\n")
                (d / "metadata.json").write_text('{"name": "bench", "id": "_bench_0000000", "version": 1}\n')
            api.create_repo("bench/kernel", repo_type="kernel")
            api.create_branch("bench/kernel", branch="v1", repo_type="kernel")
            api.upload_folder(
                folder_path=src, repo_id="bench/kernel", repo_type="kernel", revision="v1", commit_message="publish"
            )
            expected = {p.relative_to(src).as_posix(): sha256_file(p) for p in (src / "build" / variant).iterdir()}
            expected = {f"build/{variant}/{k.rsplit('/', 1)[-1]}": v for k, v in expected.items()}

            def one(i: int) -> tuple[float, bool]:
                client = HfApi(endpoint=server.endpoint, token=False)
                start = time.perf_counter()
                folder = Path(
                    client.snapshot_download(
                        "bench/kernel",
                        repo_type="kernel",
                        revision="v1",
                        allow_patterns=[f"build/{variant}/*"],
                        cache_dir=tmp / f"c{i}",
                    )
                )
                elapsed = time.perf_counter() - start
                got = {p.relative_to(folder).as_posix(): sha256_file(p) for p in folder.rglob("*") if p.is_file()}
                return elapsed, got == expected

            t = time.perf_counter()
            failures = 0
            latencies, ok = [], []
            with ThreadPoolExecutor(max_workers=args.clients) as pool:
                for future in [pool.submit(one, i) for i in range(args.clients)]:
                    try:
                        elapsed, same = future.result()
                        latencies.append(elapsed)
                        ok.append(same)
                    except Exception as exc:  # counted, and shown
                        failures += 1
                        print(f"client failed: {exc!r}", file=sys.stderr)
            wall = time.perf_counter() - t
            rss_end = server.peak_rss_kib()

    mb = size / 1e6
    variant_mb = (args.variant_mb * MiB) / 1e6
    print(f"hub throughput benchmark (server: python -m pipeline hub serve on 127.0.0.1; {os.cpu_count()} CPUs)")
    print(
        f"upload   {args.size_mb} MiB  {upload_s:6.2f} s  {mb / upload_s:7.1f} MB/s"
        "  (upload_file: sha256 + LFS batch + PUT + commit)"
    )
    print(
        f"download {args.size_mb} MiB  {download_s:6.2f} s  {mb / download_s:7.1f} MB/s"
        f"  (hf_hub_download)  byte-identical: {identical}"
    )
    if curl_s is not None:
        print(
            f"download {args.size_mb} MiB  {curl_s:6.2f} s  {mb / curl_s:7.1f} MB/s"
            "  (curl GET of the same URL, to /dev/null)"
        )
    print(
        f"server peak RSS: start {rss_start / 1024:.0f} MiB, after upload {rss_after_upload / 1024:.0f} MiB, "
        f"after download {rss_after_download / 1024:.0f} MiB, end {rss_end / 1024:.0f} MiB"
    )
    print(
        f"{args.clients} concurrent snapshot_download of {variant} ({len(expected)} files, {variant_mb:.0f} MB .so): "
        f"{len(latencies)} ok, {failures} failed, {sum(ok)} byte-identical; wall {wall:.2f} s"
    )
    if latencies:
        print(
            f"latency: median {statistics.median(latencies):.2f} s, p99 {percentile(latencies, 99):.2f} s, "
            f"max {max(latencies):.2f} s"
        )
    return 0 if identical and failures == 0 and all(ok) and len(ok) == args.clients else 1


if __name__ == "__main__":
    sys.exit(main())

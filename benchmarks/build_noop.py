"""How long a no-op `pipeline build` takes (the target: under 2 s), and the first build.

    python benchmarks/build_noop.py [PROJECT] [--runs N]

Copies PROJECT (default: the tiny-add test fixture) to a temporary
directory, builds its host variant once (timed), then times N unchanged
rebuilds through the CLI, as a user would run them (a fresh interpreter
each: imports, validation, hashing every input, the cache check). Prints
the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("project", nargs="?", type=Path, default=REPO / "tests" / "fixtures" / "tiny-add")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="build-noop-") as tmp:
        src = Path(tmp) / args.project.name
        shutil.copytree(args.project, src, ignore=shutil.ignore_patterns("build", "__pycache__"))
        # A git repository, as projects are (validate then knows build/ is ignored).
        for git_args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "benchmark"]):
            subprocess.run(["git", "-c", "user.email=b@example.com", "-c", "user.name=b", *git_args], cwd=src,
                           check=True, capture_output=True)
        env = {**os.environ, "PIPELINE_CACHE_DIR": str(Path(tmp) / "cache"), "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, "-m", "pipeline", "build", str(src), "--backend", "local", "--json"]
        started = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        first = time.perf_counter() - started
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            done = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - started)
            assert '"cached": true' in done.stdout, done.stdout
        print(f"project: {args.project}")
        print(f"first build (compile): {first:.1f} s")
        print(f"no-op rebuild, {args.runs} runs: median {statistics.median(times):.2f} s, "
              f"min {min(times):.2f} s, max {max(times):.2f} s")


if __name__ == "__main__":
    main()

"""How long `validate` takes: the repository's kernels, and every kernels-community project.

    python benchmarks/validate_timing.py [--community DIR] [--repeat N]

Prints, per project, the best of N in-process runs of pipeline.project.validate
and the wall time of one `python -m pipeline validate` (interpreter start-up
and imports included), then the accepted/rejected tally. Without --community
it extracts the kernels-community mirror (if present) with `git archive` into
a temporary directory.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pipeline.project import validate  # noqa: E402

MIRROR = Path("/work/.mirror/huggingface+kernels-community/repo")


def best_of(path: Path, repeat: int) -> tuple[float, object]:
    best, report = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        report = validate(path)
        best = min(best, time.perf_counter() - start)
    return best, report


def cli_seconds(path: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", "validate", str(path)], cwd=REPO, capture_output=True,
                   env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--community", type=Path, help="folder holding extracted kernels-community projects")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    validate(REPO / "tests" / "fixtures" / "projects" / "good")  # warm the imports once
    print("repository kernels (in-process best / CLI wall):")
    for project in sorted((REPO / "kernels-src").glob("*/build.toml")):
        seconds, report = best_of(project.parent, args.repeat)
        print(f"  {project.parent.name:14s} {seconds * 1000:7.1f} ms  {cli_seconds(project.parent):5.2f} s  "
              f"{'ok' if report.ok else f'{report.errors} error(s)'}")

    with tempfile.TemporaryDirectory() as tmp:
        root = args.community
        if root is None:
            if not MIRROR.is_dir():
                print("kernels-community mirror not found; pass --community DIR")
                return
            data = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD"], capture_output=True, check=True).stdout
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(tmp, filter="data")
            root = Path(tmp)
        rows = []
        for project in sorted(root.glob("*/build.toml")):
            seconds, report = best_of(project.parent, args.repeat)
            rows.append((seconds, project.parent, report))
        rows.sort(key=lambda r: r[0])
        accepted = sum(r[2].ok for r in rows)
        print(f"kernels-community: {accepted}/{len(rows)} accepted; median "
              f"{rows[len(rows) // 2][0] * 1000:.1f} ms; slowest:")
        for seconds, path, report in rows[-3:]:
            files = sum(1 for _ in (path / "torch-ext").rglob("*.py")) if (path / "torch-ext").is_dir() else 0
            print(f"  {path.name:24s} {seconds * 1000:7.1f} ms in-process, {cli_seconds(path):5.2f} s CLI "
                  f"({files} Python files)")
        for seconds, path, report in sorted(rows, key=lambda r: r[1].name):
            if not report.ok:
                codes = sorted({p.code for p in report.problems if p.is_error})
                print(f"  rejected {path.name}: {', '.join(codes)}")


if __name__ == "__main__":
    main()

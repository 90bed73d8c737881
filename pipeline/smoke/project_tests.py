"""A project's own `kernels_ci` pytest tests, run against the build being smoke-tested.

kernels-community projects ship tests that `import <kernel>` and are marked
`kernels_ci`. They run in a fresh process with the variant importable under
the kernel's Python name (a link in a temporary directory on PYTHONPATH) and
`<NAME>_BUILD_DIR` pointing at the build tree (what our kernels' conftest
reads). They add to the contracts; they are never the only judge.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from pipeline.smoke.report import ProjectTests

MARKER = "kernels_ci"
TIMEOUT_S = 600


def has_kernels_ci_tests(project_root: Path) -> bool:
    tests = Path(project_root) / "tests"
    if not tests.is_dir():
        return False
    return any(MARKER in p.read_text(encoding="utf-8", errors="replace") for p in tests.rglob("test_*.py"))


def _env(link_dir: Path, build_root: Path, python_name: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(link_dir), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the build tree stays as the build left it
    env[f"{python_name.upper()}_BUILD_DIR"] = str(build_root)
    return env


def _counts(junit: Path) -> tuple[int, int, int]:
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return total - skipped, failed, skipped


def run_project_tests(project_root: Path, variant_dir: Path, build_root: Path, python_name: str) -> ProjectTests | None:
    """Run `pytest -m kernels_ci tests/`; None when the project has no such tests."""
    if not has_kernels_ci_tests(project_root):
        return None
    with tempfile.TemporaryDirectory(prefix="pipeline-kernels-ci-") as tmp:
        tmp_path = Path(tmp)
        (tmp_path / python_name).symlink_to(Path(variant_dir).resolve(), target_is_directory=True)
        junit = tmp_path / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", MARKER, "-p", "no:cacheprovider", "-o", "addopts=",
               "--rootdir", str(project_root), f"--junitxml={junit}", str(Path(project_root) / "tests")]
        shown = f"python -m pytest -m {MARKER} {Path(project_root) / 'tests'}"
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=_env(tmp_path, build_root, python_name), capture_output=True,
                                  text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return ProjectTests(shown, 0, 1, 0, output=f"timed out after {TIMEOUT_S} s")
        if proc.returncode == 5 or not junit.is_file():  # 5: nothing collected under the marker
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            return None if proc.returncode == 5 else ProjectTests(shown, 0, 1, 0, output=tail)
        ran, failed, skipped = _counts(junit)
        tail = "" if proc.returncode == 0 else "\n".join(re.sub(r"\s+$", "", proc.stdout).splitlines()[-20:])
        return ProjectTests(shown, ran, failed, skipped, output=tail)

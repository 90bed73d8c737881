"""nvcc for the tests that compile kernel headers on the host (launch rules, register ledgers):
where it is, and a host program built from a header's rule that answers shapes on stdin."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

CUDA_BIN = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"
NVCC = str(CUDA_BIN / "nvcc") if (CUDA_BIN / "nvcc").exists() else shutil.which("nvcc")


def host_rule(work: Path, program: str, include: Path, *flags: str) -> Callable[[list[tuple]], list[tuple[int, ...]]]:
    """Compile `program` (C++ reading shapes, printing the rule's choice per line) against `include`;
    return a function from shapes to the integers each printed line holds."""
    (work / "rule.cu").write_text(program)
    proc = subprocess.run([NVCC, "-std=c++17", "-x", "cu", "-arch=sm_90", *flags, f"-I{include}",
                           str(work / "rule.cu"), "-o", str(work / "rule")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]

    def run(shapes: list[tuple]) -> list[tuple[int, ...]]:
        text = "".join(" ".join(str(int(v)) for v in shape) + "\n" for shape in shapes)
        out = subprocess.run([str(work / "rule")], input=text, capture_output=True, text=True, check=True).stdout
        return [tuple(int(v) for v in line.split()) for line in out.splitlines()]

    return run

"""The matrix policy: which torch, CUDA, archs and backends a workspace builds.

A value of its own so that the workspace file (which declares it) and the
matrix (which applies it) share it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

KNOWN_BACKENDS = ("cuda", "cpu", "rocm", "xpu", "metal")


@dataclass(frozen=True)
class MatrixPolicy:
    torch: tuple[str, ...]
    cuda: tuple[str, ...]
    archs: tuple[str, ...]
    backends: tuple[str, ...]

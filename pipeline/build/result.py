"""What a build returns: the variant directories it wrote."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline.matrix import Variant


@dataclass(frozen=True)
class BuiltVariant:
    variant: Variant
    path: Path
    kernel_id: str
    cached: bool
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"variant": self.variant.name, "path": str(self.path), "kernel_id": self.kernel_id,
                "cached": self.cached, "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class BuildResult:
    variants: tuple[BuiltVariant, ...]
    backend: str = "local"
    out: Path | None = None
    skipped: tuple[str, ...] = field(default=())  # entries of a nix result that are not variants

    def to_json(self) -> dict:
        return {"backend": self.backend, "out": str(self.out) if self.out else None,
                "variants": [v.to_json() for v in self.variants], "skipped": list(self.skipped)}

"""Tests build the typed values the stages take, the way the commands do."""

from __future__ import annotations

from pathlib import Path

from pipeline.bundle import Bundle, check_bundle, find_build_dir


def bundle_of(build_dir: Path) -> Bundle:
    return check_bundle(find_build_dir(Path(build_dir))).bundle

"""Which build tree a publish uploads: the one given, an existing build/ or Nix
result/, or a fresh local build of the host's variant."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernels.variants import get_variants_local, resolve_variant

from pipeline.build import build_project
from pipeline.bundle import find_build_dir, read_metadata_json
from pipeline.errors import PublishError
from pipeline.events import Event, Reporter, quiet, staged
from pipeline.workspace import Kernel


@dataclass(frozen=True)
class BundleSource:
    path: Path
    how: str  # "given", "existing build/", "Nix result/", "local build of the host's variant", ...


def host_choice(build_dir: Path) -> str | None:
    """The variant `kernels` would load on this machine from this tree (its own
    resolution code), or None when the host can run none of them."""
    try:
        chosen, _ = resolve_variant(get_variants_local(build_dir))
    except ValueError:
        return None
    return chosen.variant_str if chosen is not None else None


def _has_variants(path: Path) -> bool:
    return path.is_dir() and any(p.is_dir() and not p.name.startswith(".") for p in path.iterdir())


def locate_bundle(kernel: Kernel | None, repo_name: str) -> BundleSource | None:
    """An existing build to publish: the project's build/, or a Nix result/."""
    candidates = []
    if kernel is not None:
        candidates.append((kernel.root / "build", "existing build/"))
        candidates.append((kernel.root / "result", "Nix result/"))
        if kernel.workspace is not None:
            candidates.append((kernel.workspace.root / "result" / repo_name, "Nix result/ (workspace bundle)"))
    return next((BundleSource(p, how) for p, how in candidates if _has_variants(p)), None)


def needs_local_build(build_dir: Path) -> bool:
    """Whether to (re)run the local build before publishing an existing build/:
    when it has no variant for this host, or when the host's variant is a local
    build of this pipeline (its cache makes an up-to-date build a no-op, and a
    changed source is rebuilt rather than published stale). A variant built by
    Nix/kernel-builder is taken as it is."""
    chosen = host_choice(build_dir)
    if chosen is None:
        return True
    provenance = read_metadata_json(build_dir / chosen).get("provenance") or {}
    builder = str((provenance.get("kernel-builder") or {}).get("version", ""))
    return builder.startswith("kernel-pipeline ")


def build_host_variant(kernel: Kernel, report: Reporter = quiet) -> BundleSource:
    out = kernel.root / "build"
    report(Event("step", f"local build of the host's variant into {out}", stage="build"))
    result = build_project(kernel.project, out, backend="local", progress=staged(report, "build"))
    for built in result.variants:
        state = "up to date" if built.cached else "built"
        report(Event("step", f"{built.variant.name}: {state} ({built.kernel_id})", stage="build"))
    return BundleSource(out, "local build of the host's variant")


def obtain_bundle(kernel: Kernel | None, repo_name: str, *, build_dir: Path | None = None, rebuild: bool = False,
                  report: Reporter = quiet) -> BundleSource:
    if build_dir is not None:
        return BundleSource(find_build_dir(build_dir), "given")
    found = locate_bundle(kernel, repo_name)
    if kernel is not None and (found is None or rebuild
                               or (found.path == kernel.root / "build" and needs_local_build(found.path))):
        return build_host_variant(kernel, report)
    if found is None:
        raise PublishError("nothing to publish: no build tree and no kernel project", code="nothing-to-publish",
                           hint="pass --kernel PATH or --build-dir PATH")
    return found

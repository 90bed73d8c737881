"""What the card says about the published variants: one table row per backend (a full
build matrix is 18 variants, and 18 rows would be a third of the card), and one line per
signer for the bundle's Sigstore signatures."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernels.variants import parse_variant

from pipeline.bundle import VariantBundle, describe_variant


@dataclass(frozen=True)
class CardVariant:
    name: str
    framework: str | None
    target: str | None
    platform: str | None
    archs: tuple[str, ...] = ()
    kernel_id: str | None = None
    backend: str | None = None


def variant_from_bundle(v: VariantBundle) -> CardVariant:
    return CardVariant(name=v.name, framework=v.framework, target=v.target, platform=v.platform,
                       archs=tuple(v.archs), kernel_id=v.kernel_id, backend=v.backend)


def variant_from_name(name: str, metadata: dict | None = None) -> CardVariant:
    """A variant already on the Hub: described from its name (kernels' parser)
    and, when we have it, its metadata.json."""
    try:
        framework, target, platform = describe_variant(parse_variant(name))
    except ValueError:
        framework = target = platform = None
    metadata = metadata or {}
    backend = (metadata.get("backend") or {})
    return CardVariant(name=name, framework=framework, target=target, platform=platform,
                       archs=tuple(backend.get("archs") or ()), kernel_id=metadata.get("id"),
                       backend=str(backend.get("type", "")).lower() or None)


@dataclass(frozen=True)
class VariantGroup:
    """Variants that differ only by torch version and platform: one row of the card's table."""

    target: str | None
    archs: tuple[str, ...]
    kernel_ids: tuple[str, ...]
    names: tuple[str, ...]
    frameworks: tuple[str, ...] = ()  # set when the group is every framework x every platform
    platforms: tuple[str, ...] = ()

    @property
    def which(self) -> str:
        """The group's variants: "torch 2.12, 2.13 on x86_64-linux, aarch64-linux" when they are
        every pairing of those (a matrix), else their names."""
        if self.frameworks:
            versions = [f.removeprefix("torch ") for f in self.frameworks]
            return (f"torch {', '.join(versions)} on {', '.join(self.platforms)} ({len(self.names)})")
        return ", ".join(f"`{n}`" for n in self.names)


def variant_groups(variants: tuple[CardVariant, ...]) -> tuple[VariantGroup, ...]:
    """One row per backend (and GPU archs): a full build matrix is 18 variants, and 18 rows
    would be a third of the card."""
    groups: dict[tuple, list[CardVariant]] = {}
    for v in sorted(variants, key=lambda v: v.name):
        groups.setdefault((v.target or "?", v.archs), []).append(v)
    rows = []
    for (target, archs), vs in sorted(groups.items(), key=lambda item: item[0]):
        frameworks = sorted({v.framework for v in vs if v.framework}, key=_natural)
        platforms = sorted({v.platform for v in vs if v.platform})
        pairs = {(v.framework, v.platform) for v in vs}
        matrix = (len(vs) > 1 and len(pairs) == len(vs) == len(frameworks) * len(platforms)
                  and all(v.framework and v.platform for v in vs))
        rows.append(VariantGroup(target=target, archs=archs,
                                 kernel_ids=tuple(sorted({v.kernel_id for v in vs if v.kernel_id})),
                                 names=tuple(v.name for v in vs), frameworks=tuple(frameworks) if matrix else (),
                                 platforms=tuple(platforms) if matrix else ()))
    return tuple(rows)


def _natural(text: str) -> tuple:
    """"torch 2.9" before "torch 2.12"."""
    return tuple(int(n) for n in re.findall(r"\d+", text)), text


def _runs(numbers: list[int]) -> str:
    """1, 2, 3, 7 -> "1-3, 7"."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def signature_lines(reports: tuple) -> tuple[str, ...]:
    """The card's lines for the bundle's signatures (pipeline.signing.SignatureReport), variants
    with the same signer and status on one line, their Rekor entries listed."""
    groups: dict[tuple, list] = {}
    for r in reports:
        who = (r.identity.build_signer_uri if r.identity else None) or "an unknown signer"
        groups.setdefault((r.status, who, r.reason), []).append(r)
    lines = []
    for (status, who, reason), rs in groups.items():
        names = (f"all {len(rs)} variants" if len(rs) == len(reports) and len(rs) > 1
                 else ", ".join(f"`{r.variant}`" for r in sorted(rs, key=lambda r: r.variant)))
        entries = _runs([r.log_index for r in rs if r.log_index is not None])
        rekor = f", Rekor {'entries' if len(rs) > 1 else 'entry'} {entries}" if entries else ""
        if status == "unsigned":
            lines.append(f"{names}: not signed")
        elif status in ("verified", "present"):
            lines.append(f"{names}: signed by {who} (Sigstore{rekor}"
                         + ("; signer not checked)" if status == "present" else ")"))
        else:
            lines.append(f"{names}: signature {status} ({who}): {reason}")
    return tuple(lines)

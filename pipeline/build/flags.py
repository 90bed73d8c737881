"""kernel-builder's compiler flags, from pipeline/data/build_flags.toml.

The table lists, with the file each comes from, the flags kernel-builder's
CMake build gives every C++ and CUDA source (definitions on the extension
target, Torch's CMake config, CMake's Release flags). `compile_flags` picks
the entries that apply to one build and fills in their placeholders; the
project's own `cxx-flags`/`cuda-flags` follow them on the command line, as
CMake appends a source's COMPILE_OPTIONS after the target's.

Nothing here imports torch: the caller passes what an entry reads from the
running torch (COMMON_NVCC_FLAGS), so the table's rules stay unit-testable.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

from pipeline import toml
from pipeline.errors import BuildError
from pipeline.matrix import version_key

GROUPS = ("defines", "cxx", "cuda")
LANGUAGES = {"cxx": ("defines", "cxx"), "cuda": ("defines", "cuda")}
_CONDITIONS = {"backend", "torch-from", "torch-below", "compiler", "stable-abi", "cxx11-abi"}
_KEYS = _CONDITIONS | {"flags", "source", "from-torch", "remove"}
TABLE_PATH = "pipeline/data/build_flags.toml"


@dataclass(frozen=True)
class FlagEntry:
    group: str  # "defines" (every source) | "cxx" | "cuda"
    flags: tuple[str, ...]
    source: str
    conditions: tuple[tuple[str, Any], ...] = ()
    from_torch: str | None = None  # a torch attribute whose list comes first
    remove: tuple[str, ...] = ()  # taken out of that list


@dataclass(frozen=True)
class FlagTable:
    entries: tuple[FlagEntry, ...]
    source: dict[str, Any]


@dataclass(frozen=True)
class BuildContext:
    """What decides which entries apply, and the placeholders' values."""

    backend: str  # "cpu" | "cuda"
    torch: str  # the variant's torch, "2.14"
    kernel_id: str
    compiler: str  # "gcc" | "clang"
    cxx11_abi: bool = True
    stable_abi: str | None = None  # [torch.stable-abi] for this backend, "2.10"
    torch_lists: tuple[tuple[str, tuple[str, ...]], ...] = ()  # from-torch values, by name


def _table_text() -> str:
    return resources.files("pipeline").joinpath("data/build_flags.toml").read_text(encoding="utf-8")


def parse_table(text: str) -> FlagTable:
    data = toml.loads(text)
    entries: list[FlagEntry] = []
    for group in GROUPS:
        for index, raw in enumerate(data.get(group, [])):
            where = f"{TABLE_PATH} [[{group}]] #{index + 1}"
            unknown = set(raw) - _KEYS
            if unknown:
                raise BuildError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}", code="flag-table-invalid")
            if not raw.get("source"):
                raise BuildError(f"{where}: every flag names its source", code="flag-table-invalid")
            flags = raw.get("flags", [])
            if not isinstance(flags, list) or not all(isinstance(f, str) and f for f in flags):
                raise BuildError(f"{where}: flags must be a list of strings", code="flag-table-invalid")
            entries.append(FlagEntry(
                group=group, flags=tuple(flags), source=raw["source"],
                conditions=tuple(sorted((k, raw[k]) for k in _CONDITIONS if k in raw)),
                from_torch=raw.get("from-torch"), remove=tuple(raw.get("remove", ()))))
    return FlagTable(entries=tuple(entries), source=dict(data.get("source", {})))


def table_fingerprint() -> str:
    """sha256 of the table: part of the compile key, so a changed flag recompiles."""
    import hashlib

    return hashlib.sha256(_table_text().encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def load_table() -> FlagTable:
    return parse_table(_table_text())


def stable_abi_hex(version: str) -> str:
    """TORCH_TARGET_VERSION for a stable-ABI torch version: ((major << 56) | (minor << 48)) in hex."""
    major, minor = (int(p) for p in version.split(".")[:2])
    return hex((major << 56) | (minor << 48))


def applies(entry: FlagEntry, ctx: BuildContext) -> bool:
    for key, value in entry.conditions:
        if key == "backend" and value != ctx.backend:
            return False
        if key == "torch-from" and version_key(ctx.torch) < version_key(value):
            return False
        if key == "torch-below" and version_key(ctx.torch) >= version_key(value):
            return False
        if key == "compiler" and value != ctx.compiler:
            return False
        if key == "stable-abi" and bool(value) != (ctx.stable_abi is not None):
            return False
        if key == "cxx11-abi" and bool(value) != ctx.cxx11_abi:
            return False
    return True


def _expand(flag: str, ctx: BuildContext) -> str:
    values = {"kernel_id": ctx.kernel_id,
              "torch_target_version": stable_abi_hex(ctx.stable_abi) if ctx.stable_abi else ""}
    return flag.format(**values)


def entry_flags(entry: FlagEntry, ctx: BuildContext) -> list[str]:
    flags: list[str] = []
    if entry.from_torch:
        found = dict(ctx.torch_lists).get(entry.from_torch)
        if found is None:
            raise BuildError(f"{TABLE_PATH}: {entry.from_torch} was not read from torch", code="flag-table-invalid")
        flags += [f for f in found if f not in entry.remove]
    flags += [_expand(f, ctx) for f in entry.flags]
    return flags


def compile_flags(language: str, ctx: BuildContext, table: FlagTable | None = None) -> tuple[str, ...]:
    """kernel-builder's flags for a `language` ("cxx" | "cuda") source of this build, in CMake's order."""
    table = table or load_table()
    flags: list[str] = []
    for group in LANGUAGES[language]:
        for entry in table.entries:
            if entry.group == group and applies(entry, ctx):
                flags += entry_flags(entry, ctx)
    return tuple(flags)


def torch_lists_needed(table: FlagTable | None = None) -> tuple[str, ...]:
    """The torch attributes the table reads (e.g. torch.utils.cpp_extension.COMMON_NVCC_FLAGS)."""
    table = table or load_table()
    return tuple(sorted({e.from_torch for e in table.entries if e.from_torch}))


def described(ctx: BuildContext, languages: tuple[str, ...], table: FlagTable | None = None) -> str:
    """One line per language: the flags, for messages about a failed compile."""
    table = table or load_table()
    names = {"cxx": "c++", "cuda": "nvcc"}
    source = table.source.get("kernel-builder", {})
    at = f" at {str(source.get('read-at', ''))[:12]}" if source.get("read-at") else ""
    lines = [f"{names[lang]}: {' '.join(compile_flags(lang, ctx, table))}" for lang in languages]
    return f"kernel-builder's flags ({TABLE_PATH}, read from huggingface/kernels{at}), used here: " + "; ".join(lines)

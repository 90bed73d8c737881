"""build.toml and flake.nix rewrites, for `migrate`: line edits that keep the
author's comments and layout (kernel-builder's `update-build` re-serialises
the file and drops them)."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline import toml
from pipeline.project.fields import suggest_name
from pipeline.project.lines import table_end_line, table_line
from pipeline.project.rules import kernels_rust

FLAKE_TEMPLATE = """\
{
  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    { self, kernel-builder, ... }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
    };
}
"""

# First words of a LICENSE file → the Hub's license identifier.
_LICENSES = (("apache license", "apache-2.0"), ("mit license", "mit"), ("bsd 3-clause", "bsd-3-clause"),
             ("bsd 2-clause", "bsd-2-clause"), ("gnu general public license", "gpl-3.0"))


def detect_license(root: Path) -> str | None:
    """The project's license as a Hub identifier, from LICENSE* or pyproject.toml; None when unknown."""
    for path in sorted(root.glob("LICEN[CS]E*")):
        head = path.read_text(encoding="utf-8", errors="replace")[:400].lower()
        for words, ident in _LICENSES:
            if words in head:
                return ident
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = toml.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        except (toml.TOMLDecodeError, UnicodeDecodeError):
            project = {}
        value = project.get("license")
        value = value.get("text") if isinstance(value, dict) else value
        if isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9.+-]+", value.strip()):
            return value.strip().lower()
    return None


def _valid_name(name: object) -> bool:
    try:
        kernels_rust().KernelName(name if isinstance(name, str) else "")
    except ValueError:
        return False
    return True


def rewrite_build_toml(text: str, root: Path, license_id: str) -> tuple[str, str, list[str]]:
    """(new text, kernel name, notes): the name fixed; version, license, edition added to [general]."""
    data = toml.loads(text)
    general = data.get("general") if isinstance(data.get("general"), dict) else None
    if general is None:
        raise ValueError("build.toml has no [general] table")
    lines = text.splitlines(keepends=True)
    notes: list[str] = []
    name = general.get("name")
    if not _valid_name(name):
        new = suggest_name(name if isinstance(name, str) else "") or suggest_name(root.name)
        if not new:
            raise ValueError(f"cannot make a kernel name out of {name!r}")
        number = toml.key_line(text, "name", "general")
        if number is None:
            raise ValueError("[general] has no name = ... line")
        lines[number - 1] = re.sub(r'=\s*("[^"]*"|\'[^\']*\'|\S+)', f'= "{new}"', lines[number - 1], count=1)
        notes.append(f"name {name!r} → {new!r} (python package {new.replace('-', '_')})")
        name = new
    add = [(k, v) for k, v in (("version", "1"), ("license", f'"{license_id}"'), ("edition", "5"))
           if k not in general]
    if add:
        end = table_end_line("".join(lines), "general") or table_line("".join(lines), "general")
        block = "".join(f"{k} = {v}\n" for k, v in add)
        lines.insert(end, block)
        notes.append("[general]: added " + ", ".join(f"{k} = {v}" for k, v in add))
    return "".join(lines), name, notes


def add_framework(text: str, root: Path) -> tuple[str, list[str]]:
    """A build.toml without [torch]/[torch-noarch]/[tvm-ffi]: [torch] for a binding in torch-ext/,
    else [torch-noarch] (what the legacy format without a framework table meant)."""
    data = toml.loads(text)
    if any(isinstance(data.get(fw), dict) for fw in ("torch", "torch-noarch", "tvm-ffi")):
        return text, []
    binding = [p for p in ("torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h") if (root / p).is_file()]
    if binding:
        block = "\n[torch]\nsrc = [\n" + "".join(f'    "{p}",\n' for p in binding) + "]\n"
        what = "[torch] with src " + ", ".join(binding)
    else:
        block, what = "\n[torch-noarch]\n", "[torch-noarch] (no binding in torch-ext/)"
    end = table_end_line(text, "general") or 0
    lines = text.splitlines(keepends=True)
    # after [general] and its sub-tables ([general.cuda], [general.hub], ...)
    for number, line in enumerate(lines[end:], start=end + 1):
        if re.match(r"^\s*\[(?!general\b)", line):
            break
        end = number
    lines.insert(end, block)
    return "".join(lines), [f"added {what}"]


_URL = re.compile(r'(kernel-builder\.url\s*=\s*")([^"]*)"')


def rewrite_flake(text: str | None) -> tuple[str, list[str]]:
    """flake.nix with kernel-builder's current input and genKernelFlakeOutputs { inherit self; ... }."""
    if text is None:
        return FLAKE_TEMPLATE, ["flake.nix written (kernel-builder's template)"]
    if "genKernelFlakeOutputs" in text and "inherit self" in text and "huggingface/kernels" in text:
        return text, []
    url = _URL.search(text)
    if ("genFlakeOutputs" not in text and "genKernelFlakeOutputs" not in text) or url is None:
        return FLAKE_TEMPLATE, ["flake.nix replaced by kernel-builder's template (it did not use kernel-builder)"]
    new = text
    if not url.group(2).startswith(("github:huggingface/kernels", "path:")):
        new = text[:url.start(2)] + "github:huggingface/kernels" + text[url.end(2):]
    new = re.sub(r"\bgenFlakeOutputs\b", "genKernelFlakeOutputs", new)
    new = re.sub(r"^[ \t]*rev[ \t]*=[^;]*;[ \t]*\n", "", new, flags=re.M)  # deprecated: `inherit self` replaces it
    if "inherit self" not in new:
        new = re.sub(r"(genKernelFlakeOutputs\s*\{[ \t]*\n)([ \t]*)", r"\1\2inherit self;\n\2", new, count=1)
    return new, ["flake.nix: github:huggingface/kernels, genKernelFlakeOutputs { inherit self; ... }"]

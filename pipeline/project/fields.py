"""Every schema error of a build.toml in one run (pipeline/data/build_schema.toml).

kernels' parser stops at its first error and names no line, so an agent that
fixes one error at a time needs as many runs as there are errors. This walk
visits every table and key against kernel-builder's schema (kept as data) and
reports them all, each at its line, with the line to add for a missing key.
It runs only when kernels refuses the file: kernels stays the judge.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import toml
from pipeline.project.lines import did_you_mean, line_of, table_end_line, table_line
from pipeline.project.rules import kernels_rust

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "data" / "build_schema.toml"


@dataclass(frozen=True)
class FieldProblem:
    code: str
    message: str
    line: int | None
    hint: str = ""


@dataclass(frozen=True)
class Schema:
    enums: dict[str, tuple[str, ...]]
    tables: dict[str, dict[str, Any]]
    suggest: dict[str, str]


@functools.lru_cache(maxsize=1)
def load_schema() -> Schema:
    doc = toml.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return Schema(enums={k: tuple(v) for k, v in doc["enums"].items()}, tables=doc["tables"],
                  suggest=dict(doc.get("suggest", {})))


def suggest_name(name: str) -> str:
    """A valid kernel name close to `name` ("" when none): lowercase, dashes for anything else."""
    guess = re.sub(r"[^a-z0-9-]+", "-", str(name).strip().lower().replace("_", "-"))
    guess = re.sub(r"^[^a-z]+", "", re.sub(r"-+", "-", guess).strip("-"))
    try:
        kernels_rust().KernelName(guess)
    except ValueError:
        return ""
    return guess


def name_hint(name: str) -> str:
    guess = suggest_name(name)
    return f'write name = "{guess}" (the Python package becomes {guess.replace("-", "_")}).' if guess else ""


def _kind(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "float", str: "string", list: "array",
            dict: "table"}.get(type(value), type(value).__name__)


class _Walker:
    def __init__(self, text: str, legacy: bool) -> None:
        self.text, self.legacy, self.schema = text, legacy, load_schema()
        self.problems: list[FieldProblem] = []

    def add(self, code: str, message: str, line: int | None, hint: str = "") -> None:
        self.problems.append(FieldProblem(code, message, line, hint))

    def key_line(self, table: str, key: str) -> int | None:
        if not table:
            return table_line(self.text, key) or line_of(self.text, rf"^[ \t]*{re.escape(key)}[ \t]*=")
        return (toml.key_line(self.text, key, table) or table_line(self.text, f"{table}.{key}")
                or table_line(self.text, table))

    def table(self, kind: str, value: dict, where: str) -> None:
        spec = self.schema.tables[kind]
        keys = dict(spec["keys"])
        if kind == "kernel" and isinstance(value.get("backend"), str):
            keys.update(spec["by-backend"].get(value["backend"], {}))
        shown = f"[{where}]" if where else "build.toml"
        for key in spec.get("required", ()):
            if key not in value and not (self.legacy and kind == "general" and key == "edition"):
                self.missing(kind, where, key)
        if kind == "root":
            self.frameworks(value, spec["frameworks"])
        for key, item in value.items():
            if kind == "root" and key in spec["frameworks"]:
                continue  # walked by frameworks()
            if key in keys:
                self.check(keys[key], item, where, key)
            else:
                self.unknown(kind, where, key, keys, shown)

    def frameworks(self, value: dict, frameworks: list[str]) -> None:
        present = [f for f in frameworks if f in value]
        if not present:
            self.add("no-framework", "build.toml has no [torch], [torch-noarch] or [tvm-ffi] table",
                     table_line(self.text, "general"))
        for extra in present[1:]:
            self.add("unknown-key", f"unknown key {extra!r}: a second framework table", table_line(self.text, extra),
                     "keep exactly one of [torch], [torch-noarch] and [tvm-ffi].")
        for fw in present[:1]:
            if isinstance(value[fw], dict):
                self.table(fw, value[fw], fw)
            else:
                self.add("invalid-value", f"[{fw}] must be a table, got {_kind(value[fw])}", self.key_line("", fw))

    def missing(self, kind: str, where: str, key: str) -> None:
        line = table_line(self.text, where) if where else None
        add = self.schema.suggest.get(f"{kind}.{key}", f"{key} = ...")
        end = table_end_line(self.text, where) if where else None
        place = f"to [{where}] after line {end}" if end else f"to [{where}]" if where else "to build.toml"
        legacy = " (a build.toml without edition is the legacy v4 format, which needs it too)" \
            if self.legacy and kind == "general" else ""
        self.add("missing-key", f"missing key {key!r}" + (f" in [{where}]" if where else ""), line,
                 f"add `{add}` {place}{legacy}.")

    def unknown(self, kind: str, where: str, key: str, keys: dict, shown: str) -> None:
        hint = did_you_mean(key, keys)
        if not hint and kind == "kernel":
            owner = next((b for b, extra in self.schema.tables["kernel"]["by-backend"].items() if key in extra), None)
            if owner:
                hint = f"{key} is a key of backend = \"{owner}\" kernels only."
        if not hint:
            hint = f"known keys here: {', '.join(keys)}."
        self.add("unknown-key", f"unknown key {key!r} in {shown}", self.key_line(where, key), hint)

    def check(self, type_: str, value: Any, where: str, key: str) -> None:
        line = lambda: self.key_line(where, key)  # noqa: E731 - only computed for a problem
        path = f"{where}.{key}" if where else key
        if type_.startswith("list "):
            if not isinstance(value, list):
                self.add("invalid-value", f"{path} must be an array, got {_kind(value)}", line())
                return
            for item in value:
                self.check(type_[5:], item, where, key)
        elif type_.startswith("table "):
            if isinstance(value, dict):
                # a kernel-dependency is an inline table: its keys are located in the enclosing table
                self.table(type_[6:], value, where if type_[6:] == "kernel-dependency" else path)
            else:
                self.add("invalid-value", f"{path} must be a table, got {_kind(value)}", line())
        elif type_.startswith("enum "):
            self.enum(type_[5:], value, path, line)
        elif type_ == "kernels":
            self.kernels(value, line)
        else:
            self.scalar(type_, value, path, line)

    def enum(self, name: str, value: Any, path: str, line) -> None:
        allowed = self.schema.enums[name]
        if isinstance(value, str) and value in allowed:
            return
        if not isinstance(value, str):
            self.add("invalid-value", f"wrong type: got {_kind(value)} {value!r} in {path}, expected a string",
                     line())
            return
        hint = did_you_mean(value, allowed)
        if name == "kernel-backend" and value in self.schema.enums["backend"]:
            hint = f"kernel-builder compiles [kernel.*] tables only for {', '.join(allowed)}."
        self.add("invalid-value", f"{value!r} is not allowed here (expected one of {', '.join(allowed)})",
                 line_of(self.text, rf'"{re.escape(value)}"') or line(), hint)

    def kernels(self, value: Any, line) -> None:
        if not isinstance(value, dict):
            self.add("invalid-value", f"kernel must be tables [kernel.NAME], got {_kind(value)}", line())
            return
        for name, table in value.items():
            if isinstance(table, dict):
                self.table("kernel", table, f"kernel.{name}")
            else:
                self.add("invalid-value", f"[kernel.{name}] must be a table, got {_kind(table)}",
                         line_of(self.text, rf"^[ \t]*kernel\.{re.escape(name)}[ \t]*=") or line())

    def scalar(self, type_: str, value: Any, path: str, line) -> None:
        rust = kernels_rust()
        if type_ == "edition":
            if isinstance(value, int) and not isinstance(value, bool) and value != 5:
                self.add("edition-unsupported", f"edition {value} is not supported (kernels reads edition 5)", line())
            elif value != 5 or isinstance(value, bool):
                self.add("edition-unsupported", f"edition must be the integer 5, got {_kind(value)} {value!r}",
                         line())
        elif type_ == "uint":
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                self.add("invalid-value", f"wrong type: got {_kind(value)} {value!r} in {path}, expected an "
                         "unsigned integer", line())
        elif not isinstance(value, str) and type_ != "stable-abi":
            self.add("invalid-value", f"wrong type: got {_kind(value)} {value!r} in {path}, expected a string",
                     line())
        elif type_ == "kernel-name":
            try:
                rust.KernelName(value)
            except ValueError:
                self.add("name-invalid", f"invalid kernel name {value!r}", line(), name_hint(value))
        elif type_ == "version" or (type_ == "stable-abi" and isinstance(value, str)):
            self.version(value, line)
        elif type_ == "stable-abi":
            if not isinstance(value, dict):
                self.add("invalid-value", f"{path} must be a version or a table backend -> version", line())
                return
            for backend, version in value.items():
                self.enum("backend", backend, path, line)
                self.scalar("version", version, f"{path}.{backend}", line)

    def version(self, value: str, line) -> None:
        try:
            kernels_rust().Version.from_str(value)
        except ValueError:
            self.add("invalid-value", f"version {value!r} must be numbers separated by dots (e.g. \"12.8\")",
                     line_of(self.text, rf'"{re.escape(value)}"') or line())


def walk(text: str, data: dict, *, legacy: bool) -> list[FieldProblem]:
    """Every schema problem of the parsed build.toml `data` (whose source is `text`)."""
    walker = _Walker(text, legacy)
    walker.table("root", data, "")
    return walker.problems

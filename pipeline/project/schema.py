"""build.toml through kernels' own parser: refusals become located problems."""

from __future__ import annotations

import difflib
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Iterable

from pipeline import toml
from pipeline.project.model import BUILD_TOML, FRAMEWORKS, KernelProject, KernelSpec, TorchExt
from pipeline.project.rules import kernels_rust, Sink


def line_of(text: str, pattern: str, flags: int = re.M) -> int | None:
    m = re.search(pattern, text, flags)
    return text.count("\n", 0, m.start()) + 1 if m else None


def table_line(text: str, table: str) -> int | None:
    return line_of(text, rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\]")


def _key_line_any(text: str, key: str) -> int | None:
    """The first `key = ...` line, or a `[... key]` / `[... .key.]` header, in any table."""
    k = re.escape(key)
    return (line_of(text, rf'^[ \t]*"?{k}"?[ \t]*=')
            or line_of(text, rf'^[ \t]*\[+[^\]\n]*(?:[.\[ \t"]){k}(?:["\t .\]])'))


def kernel_key_line(text: str, kernel: str, key: str) -> int | None:
    return toml.key_line(text, key, f"kernel.{kernel}")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _suggest_name(name: str) -> str:
    KernelName = kernels_rust().KernelName

    guess = re.sub(r"[^a-z0-9-]+", "-", name.strip().lower().replace("_", "-"))
    guess = re.sub(r"-+", "-", guess).strip("-")
    guess = re.sub(r"^[^a-z]+", "", guess)
    try:
        KernelName(guess)
    except ValueError:
        return ""
    return f'write name = "{guess}" (the Python package becomes {guess.replace("-", "_")}).'


def schema_problem(sink: Sink, text: str, message: str) -> None:
    """Turn Build.open's refusal into one located problem."""
    msg = message.strip()
    # "Cannot parse build configuration in `X`: Cannot parse TOML in X/build.toml: <reason>"
    reason = re.sub(r"^Cannot parse build configuration in `[^`]*`:\s*", "", msg)
    reason = re.sub(r"^Cannot parse TOML in \S*build\.toml:\s*", "", reason)
    m = re.match(r"did not match v4 \((.*)\) or v3 \((.*)\)\s*$", reason, re.S)
    extra = ""
    if m:
        reason = m.group(1)
        extra = "(build.toml has no `edition`, so it was read as the legacy v4 format; add edition = 5 to [general])"
    first = reason.splitlines()[0] if reason else msg
    rel = BUILD_TOML

    if m := re.search(r"Invalid kernel name `([^`]*)`", reason):
        sink.add("name-invalid", f"invalid kernel name {m.group(1)!r}", rel,
                 toml.key_line(text, "name", "general"), hint=_suggest_name(m.group(1)))
    elif m := re.search(r"Unknown field `?([\w-]+)`?(?:\. Expected one of (.*))?", reason, re.I):
        key = m.group(1)
        expected = [e.strip(" `") for e in m.group(2).split(",")] if m.group(2) else []
        if key in FRAMEWORKS:
            hint = "keep exactly one of [torch], [torch-noarch] and [tvm-ffi]."
        else:
            hint = did_you_mean(key, expected) or (f"known keys here: {', '.join(expected)}." if expected else "")
        sink.add("unknown-key", f"unknown key {key!r}", rel, _key_line_any(text, key), hint=f"{hint} {extra}".strip())
    elif m := re.search(r"Missing field `?([\w-]+)`?", reason):
        key = m.group(1)
        sink.add("missing-key", f"missing key {key!r}", rel, _missing_key_line(text, key),
                 hint=extra or f"add {key} = ... to the table shown.")
    elif "no variant of enum Framework" in reason:
        sink.add("no-framework", "build.toml has no [torch], [torch-noarch] or [tvm-ffi] table", rel,
                 table_line(text, "general"), hint=extra)
    elif m := re.search(r"unsupported build edition (\d+)", reason):
        sink.add("edition-unsupported", f"edition {m.group(1)} is not supported (kernels reads edition 5)", rel,
                 toml.key_line(text, "edition", "general"))
    elif "general.edition" in reason:
        sink.add("edition-unsupported", f"edition must be the integer 5: {first}", rel,
                 toml.key_line(text, "edition", "general"))
    elif "unsupported legacy format" in reason:
        sink.add("edition-unsupported", first, rel, table_line(text, "general"))
    elif m := re.search(r"Unknown variant `?([^`.\s]+)`?\. Expected one of (.*)", reason):
        value, expected = m.group(1), [e.strip(" `") for e in m.group(2).split(",")]
        hint = did_you_mean(value, expected)
        sink.add("invalid-value", f"{value!r} is not allowed here (expected one of {', '.join(expected)})", rel,
                 line_of(text, rf'"{re.escape(value)}"'), hint=f"{hint} {extra}".strip())
    elif m := re.search(r"Invalid (?:type|value) (\w+) (.*?)\. Expected (.*)", reason):
        kind, shown, expected = m.groups()
        needle = shown.strip("`")
        line = line_of(text, rf"=\s*{re.escape(needle)}") or line_of(text, re.escape(needle))
        sink.add("invalid-value", f"wrong type: got {kind} {shown}, expected {expected}", rel, line, hint=extra)
    elif m := re.search(r"Version must consist of numbers: (\S+)", reason):
        sink.add("invalid-value", f"version {m.group(1)!r} must be numbers separated by dots (e.g. \"12.8\")",
                 rel, line_of(text, rf'"{re.escape(m.group(1))}"'), hint=extra)
    elif m := re.search(r"invalid git URL `([^`]*)`", reason):
        sink.add("invalid-value", f"{m.group(1)!r} is not a git URL", rel,
                 line_of(text, rf'"{re.escape(m.group(1))}"'), hint=extra)
    elif m := re.search(r"TOML parse error at line (\d+)", reason):
        sink.add("toml-syntax", " ".join(reason.split()), rel, int(m.group(1)))
    elif "valid UTF-8" in reason:
        sink.add("build-toml-unreadable", "build.toml is not UTF-8 text", rel)
    else:
        sink.add("build-config-invalid", " ".join(reason.split()) or msg, rel, hint=extra)


def _missing_key_line(text: str, key: str) -> int | None:
    if key == "general":
        return None
    if key in ("name", "version", "license", "backends", "edition"):
        return table_line(text, "general")
    if key in ("backend", "depends", "src"):
        try:
            data = toml.loads(text)
        except toml.TOMLDecodeError:
            return None
        for kname, table in (data.get("kernel") or {}).items():
            if isinstance(table, dict) and key not in table:
                return table_line(text, f"kernel.{kname}") or table_line(text, f'kernel."{kname}"')
        for fw in FRAMEWORKS:
            if isinstance(data.get(fw), dict) and key not in data[fw]:
                return table_line(text, fw)
    return None


def open_build(root: Path):
    """Build.open → (build, error message, what it printed).

    kernels prints the legacy-v4 notice straight to fd 2 from Rust; it is
    captured (fd 2 points at a temporary file for the ~0.1 ms of the call) so
    that the notice becomes a located warning and --json output stays clean."""
    Build = kernels_rust().Build

    def call():
        try:
            return Build.open(str(root)), None
        except ValueError as exc:
            return None, str(exc)

    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 at all (a daemon): nothing to keep clean
        build, error = call()
        return build, error, ""
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            build, error = call()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        notice = tmp.read().decode("utf-8", "replace")
    return build, error, notice


# --------------------------------------------------------------- reading ----

def _strs(value) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _opt_strs(value) -> tuple[str, ...] | None:
    return tuple(str(v) for v in value) if isinstance(value, list) else None


def _opt_str(value) -> str | None:
    return None if value is None else str(value)


def project_from(root: Path, data: dict, build, edition: int) -> KernelProject:
    KernelName = kernels_rust().KernelName

    general = data["general"]
    name = general["name"]
    framework = next(fw for fw in FRAMEWORKS if fw in data)
    ext = data.get(framework) or {}
    kernels = []
    for kname, k in (data.get("kernel") or {}).items():
        kernels.append(KernelSpec(
            name=kname, backend=k["backend"], src=_strs(k.get("src")), depends=_strs(k.get("depends")),
            include=_strs(k.get("include")), cuda_capabilities=_opt_strs(k.get("cuda-capabilities")),
            cuda_flags=_strs(k.get("cuda-flags")), cxx_flags=_strs(k.get("cxx-flags")),
            cuda_minver=_opt_str(k.get("cuda-minver")), rocm_archs=_opt_strs(k.get("rocm-archs"))))
    torch_ext = None
    if framework in ("torch", "torch-noarch"):
        torch_ext = TorchExt(src=_strs(ext.get("src")), pyext=_strs(ext.get("pyext")) or ("py", "pyi"),
                             include=_strs(ext.get("include")))
    cuda = general.get("cuda") or {}
    backend_deps = tuple(
        (b, _strs((general.get(b) or {}).get("python-depends")))
        for b in ("cuda", "xpu", "neuron", "tpu") if (general.get(b) or {}).get("python-depends"))
    return KernelProject(
        root=root, name=name, python_name=KernelName(name).python_name, version=general.get("version"),
        license=general.get("license"), edition=edition,
        backends=tuple(str(b) for b in build.general.backends), kernels=tuple(kernels), torch_ext=torch_ext,
        torch_minver=_opt_str(ext.get("minver")), torch_maxver=_opt_str(ext.get("maxver")),
        cuda_minver=_opt_str(cuda.get("minver")), cuda_maxver=_opt_str(cuda.get("maxver")),
        hub_repo_id=_opt_str((general.get("hub") or {}).get("repo-id")),
        python_depends=_strs(general.get("python-depends")), framework=framework,
        backend_python_depends=backend_deps)

"""build.toml through kernels' own parser, then every schema error located.

kernels (`Build.open`) is the judge: what it accepts is accepted. When it
refuses the file, the schema walk (fields.py) reports every error it finds,
each at its line; kernels' own one-line refusal is added only when the walk
did not already say the same thing.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

from pipeline import toml
from pipeline.project.fields import FieldProblem, name_hint, suggest_name, walk
from pipeline.project.lines import did_you_mean, key_line_any, line_of, table_end_line, table_line
from pipeline.project.model import BUILD_TOML, FRAMEWORKS, KernelProject, KernelSpec, TorchExt
from pipeline.project.rules import kernels_rust, Sink

_LEGACY = "(build.toml has no `edition`, so it was read as the legacy v4 format; add edition = 5 to [general])"


def check_schema(sink: Sink, root: Path, text: str, data: dict) -> tuple[bool, int]:
    """Judge build.toml; (accepted by kernels, edition read). Problems go to `sink`."""
    _build, error, _notice = open_build(root)
    general = data.get("general") if isinstance(data.get("general"), dict) else {}
    legacy = "edition" not in general
    if legacy:
        end = table_end_line(text, "general")
        sink.add("edition-legacy", "build.toml has no edition: read as the legacy v4 format", BUILD_TOML,
                 table_line(text, "general"),
                 hint=f"add `edition = 5` to [general]{f' after line {end}' if end else ''}.")
    if error is None:
        return True, 4 if legacy else 5
    found = walk(text, data, legacy=legacy)
    judged = judge_problem(text, error)
    errors = [p for p in found if p.code != "edition-legacy"]
    # The judge's legacy-format refusal only restates what the walk located (missing version, license).
    if not errors or (judged.code not in {p.code for p in errors} and not _legacy_refusal(error)):
        found.append(judged)
    for p in found:
        sink.add(p.code, p.message, BUILD_TOML, p.line, hint=p.hint)
    return False, 4 if legacy else 5


def _legacy_refusal(message: str) -> bool:
    return "unsupported legacy format" in message or "did not match v4" in message


def _reason(message: str) -> tuple[str, str]:
    """kernels' message without its 'Cannot parse ...' prefixes, and the legacy remark it implies."""
    reason = re.sub(r"^Cannot parse build configuration in `[^`]*`:\s*", "", message.strip())
    reason = re.sub(r"^Cannot parse TOML in \S*build\.toml:\s*", "", reason)
    m = re.match(r"did not match v4 \((.*)\) or v3 \((.*)\)\s*$", reason, re.S)
    return (m.group(1), _LEGACY) if m else (reason, "")


def judge_problem(text: str, message: str) -> FieldProblem:
    """Build.open's refusal as one located problem."""
    reason, extra = _reason(message)
    first = reason.splitlines()[0] if reason else message.strip()
    for translate in (_name_or_key, _edition_or_framework, _value):
        problem = translate(text, reason, first, extra)
        if problem is not None:
            return problem
    if m := re.search(r"TOML parse error at line (\d+)", reason):
        return FieldProblem("toml-syntax", " ".join(reason.split()), int(m.group(1)))
    if "valid UTF-8" in reason:
        return FieldProblem("build-toml-unreadable", "build.toml is not UTF-8 text", None)
    return FieldProblem("build-config-invalid", " ".join(reason.split()) or message.strip(), None, extra)


def _name_or_key(text: str, reason: str, first: str, extra: str) -> FieldProblem | None:
    if m := re.search(r"Invalid kernel name `([^`]*)`", reason):
        return FieldProblem("name-invalid", f"invalid kernel name {m.group(1)!r}",
                            toml.key_line(text, "name", "general"), name_hint(m.group(1)))
    if m := re.search(r"Unknown field `?([\w-]+)`?(?:\. Expected one of (.*))?", reason, re.I):
        key = m.group(1)
        expected = [e.strip(" `") for e in m.group(2).split(",")] if m.group(2) else []
        if key in FRAMEWORKS:
            hint = "keep exactly one of [torch], [torch-noarch] and [tvm-ffi]."
        else:
            hint = did_you_mean(key, expected) or (f"known keys here: {', '.join(expected)}." if expected else "")
        return FieldProblem("unknown-key", f"unknown key {key!r}", key_line_any(text, key), f"{hint} {extra}".strip())
    if m := re.search(r"Missing field `?([\w-]+)`?", reason):
        return FieldProblem("missing-key", f"missing key {m.group(1)!r}", _missing_key_line(text, m.group(1)),
                            extra or f"add {m.group(1)} = ... to the table shown.")
    return None


def _edition_or_framework(text: str, reason: str, first: str, extra: str) -> FieldProblem | None:
    edition_line = toml.key_line(text, "edition", "general")
    if "no variant of enum Framework" in reason:
        return FieldProblem("no-framework", "build.toml has no [torch], [torch-noarch] or [tvm-ffi] table",
                            table_line(text, "general"), extra)
    if m := re.search(r"unsupported build edition (\d+)", reason):
        return FieldProblem("edition-unsupported", f"edition {m.group(1)} is not supported (kernels reads edition 5)",
                            edition_line)
    if "general.edition" in reason:
        return FieldProblem("edition-unsupported", f"edition must be the integer 5: {first}", edition_line)
    if "unsupported legacy format" in reason:
        end = table_end_line(text, "general")
        return FieldProblem("edition-unsupported", "build.toml is in a legacy format kernels no longer reads",
                            table_line(text, "general"),
                            f"add `edition = 5`, `version = 1` and `license = \"...\"` to [general]"
                            f"{f' after line {end}' if end else ''}.")
    return None


def _value(text: str, reason: str, first: str, extra: str) -> FieldProblem | None:
    if m := re.search(r"Unknown variant `?([^`.\s]+)`?\. Expected one of (.*)", reason):
        value, expected = m.group(1), [e.strip(" `") for e in m.group(2).split(",")]
        return FieldProblem("invalid-value", f"{value!r} is not allowed here (expected one of {', '.join(expected)})",
                            line_of(text, rf'"{re.escape(value)}"'), f"{did_you_mean(value, expected)} {extra}".strip())
    if m := re.search(r"Invalid (?:type|value) (\w+) (.*?)\. Expected (.*)", reason):
        kind, shown, expected = m.groups()
        needle = shown.strip("`")
        line = line_of(text, rf"=\s*{re.escape(needle)}") or line_of(text, re.escape(needle))
        return FieldProblem("invalid-value", f"wrong type: got {kind} {shown}, expected {expected}", line, extra)
    if m := re.search(r"Version must consist of numbers: (\S+)", reason):
        return FieldProblem("invalid-value", f"version {m.group(1)!r} must be numbers separated by dots "
                            "(e.g. \"12.8\")", line_of(text, rf'"{re.escape(m.group(1))}"'), extra)
    if m := re.search(r"invalid git URL `([^`]*)`", reason):
        return FieldProblem("invalid-value", f"{m.group(1)!r} is not a git URL",
                            line_of(text, rf'"{re.escape(m.group(1))}"'), extra)
    return None


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
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _opt_strs(value) -> tuple[str, ...] | None:
    return _strs(value) if isinstance(value, list) else None


def _version(value) -> str | None:
    """A version string kernels can read, else None (the schema walk reports the bad one)."""
    if not isinstance(value, str):
        return None
    try:
        kernels_rust().Version.from_str(value)
    except ValueError:
        return None
    return value


def _table(value) -> dict:
    return value if isinstance(value, dict) else {}


_KERNEL_BACKENDS = ("cpu", "cuda", "metal", "rocm", "xpu")
_BACKENDS = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")


def _kernel(name: str, k: dict) -> KernelSpec:
    return KernelSpec(
        name=name, backend=k["backend"], src=_strs(k.get("src")), depends=_strs(k.get("depends")),
        include=_strs(k.get("include")), cuda_capabilities=_opt_strs(k.get("cuda-capabilities")),
        cuda_flags=_strs(k.get("cuda-flags")), cxx_flags=_strs(k.get("cxx-flags")),
        cuda_minver=_version(k.get("cuda-minver")), rocm_archs=_opt_strs(k.get("rocm-archs")))


def project_from(root: Path, data: dict, edition: int) -> KernelProject | None:
    """The project as build.toml describes it. For a file kernels refused, the
    parts that are well formed (a bad name replaced by the one its hint
    suggests), so the checks of sources and package still run in the same
    pass; None when not even a name can be made out."""
    general = _table(data.get("general"))
    name = general.get("name") if isinstance(general.get("name"), str) else ""
    try:
        kernels_rust().KernelName(name)
    except ValueError:
        name = suggest_name(name) or suggest_name(root.name)
        if not name:
            return None
    framework = next((fw for fw in FRAMEWORKS if isinstance(data.get(fw), dict)), "torch")
    ext = _table(data.get(framework))
    kernels = tuple(_kernel(kname, k) for kname, k in _table(data.get("kernel")).items()
                    if isinstance(k, dict) and k.get("backend") in _KERNEL_BACKENDS)
    torch_ext = None
    if framework in ("torch", "torch-noarch") and isinstance(data.get(framework), dict):
        torch_ext = TorchExt(src=_strs(ext.get("src")), pyext=_strs(ext.get("pyext")) or ("py", "pyi"),
                             include=_strs(ext.get("include")))
    cuda = _table(general.get("cuda"))
    backend_deps = tuple((b, _strs(_table(general.get(b)).get("python-depends")))
                         for b in ("cuda", "xpu", "neuron", "tpu") if _table(general.get(b)).get("python-depends"))
    version = general.get("version")
    return KernelProject(
        root=root, name=name, python_name=name.replace("-", "_"),
        version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        license=general.get("license") if isinstance(general.get("license"), str) else None, edition=edition,
        backends=tuple(b for b in _strs(general.get("backends")) if b in _BACKENDS), kernels=kernels,
        torch_ext=torch_ext, torch_minver=_version(ext.get("minver")), torch_maxver=_version(ext.get("maxver")),
        cuda_minver=_version(cuda.get("minver")), cuda_maxver=_version(cuda.get("maxver")),
        hub_repo_id=_table(general.get("hub")).get("repo-id") if isinstance(
            _table(general.get("hub")).get("repo-id"), str) else None,
        python_depends=_strs(general.get("python-depends")), framework=framework,
        backend_python_depends=backend_deps,
        pyext=_strs(ext.get("pyext")) or ("py", "pyi"))

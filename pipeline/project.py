"""Validate a kernel-builder project: `validate PATH` → KernelProject or problems.

kernels' own parser (`kernels._rust.Build.open`) is the judge of build.toml's
schema; this module turns its one-line refusals into located problems and then
checks what it leaves alone: the files the build will need (src, headers, the
Python package), how ops are registered, what the Python package imports,
CUDA capabilities, committed build output and flake.nix.

Every problem carries a code from pipeline/data/rules.toml (`load_rules()`);
the hint printed with it comes from there too, so the table is the one place
an agent learns how to fix each defect.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from pipeline import toml
from pipeline.errors import Problem, ValidationError

RULES_FILE = Path(__file__).parent / "data" / "rules.toml"
BUILD_TOML = "build.toml"
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")
# Where each framework keeps its Python package (kernel-layout-check-hook.sh).
EXT_DIRS = {"torch": "torch-ext", "torch-noarch": "torch-ext", "tvm-ffi": "tvm-ffi-ext"}
# Files C/C++ preprocessors read: the ones whose #include lines we follow.
C_LIKE = {".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inc", ".inl",
          ".ipp", ".tcc", ".mm", ".m", ".metal", ".hip", ".cl"}
# Functions of torch.library whose first argument names an op (the kernel-builder
# torch-ops check covers the decorators; impl_abstract/define/impl are the older API).
OP_NAMING_CALLS = {"custom_op", "triton_op", "register_kernel", "register_fake", "register_vmap",
                   "register_torch_dispatch", "register_autograd", "impl_abstract"}
_OP_WORDS = re.compile(rb"custom_op|triton_op|register_kernel|register_fake|register_vmap|register_torch_dispatch|"
                       rb"register_autograd|impl_abstract|Library")
BUILDER_DECORATORS = {"custom_op", "triton_op", "register_kernel", "register_fake", "register_vmap",
                      "register_torch_dispatch"}


# ---------------------------------------------------------------- values ----

@dataclass(frozen=True)
class KernelSpec:
    name: str
    backend: str
    src: tuple[str, ...]
    depends: tuple[str, ...]
    include: tuple[str, ...]
    cuda_capabilities: tuple[str, ...] | None
    cuda_flags: tuple[str, ...]
    cxx_flags: tuple[str, ...]
    cuda_minver: str | None
    rocm_archs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TorchExt:
    src: tuple[str, ...]
    pyext: tuple[str, ...]
    include: tuple[str, ...]


@dataclass(frozen=True)
class KernelProject:
    root: Path
    name: str
    python_name: str
    version: int | None
    license: str | None
    edition: int
    backends: tuple[str, ...]
    kernels: tuple[KernelSpec, ...]
    torch_ext: TorchExt | None
    torch_minver: str | None
    torch_maxver: str | None
    cuda_minver: str | None
    cuda_maxver: str | None
    hub_repo_id: str | None
    python_depends: tuple[str, ...]
    # "torch" (compiled), "torch-noarch" (pure Python) or "tvm-ffi".
    framework: str = "torch"
    # Backend-specific python-depends ([general.cuda].python-depends, ...).
    backend_python_depends: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def noarch(self) -> bool:
        return self.framework == "torch-noarch"

    @property
    def package_dir(self) -> Path:
        return self.root / EXT_DIRS[self.framework] / self.python_name

    def python_depends_for(self, backend: str) -> tuple[str, ...]:
        extra = dict(self.backend_python_depends).get(backend, ())
        return self.python_depends + tuple(d for d in extra if d not in self.python_depends)


@dataclass(frozen=True)
class ValidationReport:
    project: KernelProject | None
    problems: tuple[Problem, ...]
    path: str = ""

    @property
    def errors(self) -> int:
        return sum(p.is_error for p in self.problems)

    @property
    def warnings(self) -> int:
        return sum(not p.is_error for p in self.problems)

    @property
    def ok(self) -> bool:
        return self.errors == 0

    def to_json(self) -> dict:
        return {"path": self.path, "ok": self.ok, "errors": self.errors, "warnings": self.warnings,
                "problems": [p.to_json() for p in self.problems]}


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    title: str
    hint: str
    example: str = ""


@dataclass(frozen=True)
class _Data:
    rules: dict[str, Rule]
    cuda_capabilities: tuple[str, ...]
    always_importable: frozenset[str]
    provides: dict[str, tuple[str, ...]]


@functools.lru_cache(maxsize=1)
def _data() -> _Data:
    doc = toml.loads(RULES_FILE.read_text(encoding="utf-8"))
    rules = {code: Rule(code=code, severity=r["severity"], title=r["title"], hint=r["hint"],
                        example=r.get("example", ""))
             for code, r in doc["rules"].items()}
    return _Data(rules=rules, cuda_capabilities=tuple(doc["cuda"]["capabilities"]),
                 always_importable=frozenset(doc["imports"]["always"]),
                 provides={k: tuple(v) for k, v in doc["imports"].get("provides", {}).items()})


def _kernels_dir() -> Path:
    """kernels' install directory, found without importing the package: its
    __init__ pulls in huggingface_hub's HTTP stack (~0.3 s), and validate must
    stay well under a second."""
    import importlib.util

    spec = importlib.util.find_spec("kernels")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kernels is not installed", name="kernels")
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=1)
def _rust():
    """kernels._rust (Build, KernelName, Version): the reference parser.

    Loaded straight from its extension file and registered under its own name,
    so a later `import kernels` finds and reuses this very module."""
    if "kernels._rust" in sys.modules:
        return sys.modules["kernels._rust"]
    import importlib.util

    candidates = sorted(_kernels_dir().glob("_rust*.so")) + sorted(_kernels_dir().glob("_rust*.pyd"))
    if not candidates:
        import kernels._rust as rust  # unusual install: take the slow path

        return rust
    spec = importlib.util.spec_from_file_location("kernels._rust", candidates[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["kernels._rust"] = module
    return module


def load_rules() -> dict[str, Rule]:
    """The rule table, code → Rule (pipeline/data/rules.toml), in file order."""
    return dict(_data().rules)


# ------------------------------------------------------------ reporting ----

class _Sink:
    """Collects problems; the severity and hint always come from the rule table."""

    def __init__(self, shown_root: str) -> None:
        self.shown_root = shown_root
        self.problems: list[Problem] = []

    def where(self, rel: str | Path | None) -> str:
        if rel is None or str(rel) in ("", "."):
            return self.shown_root
        return os.path.join(self.shown_root, str(rel))

    def add(self, code: str, message: str, rel: str | Path | None = None, line: int | None = None,
            hint: str = "") -> None:
        rule = _data().rules[code]  # KeyError here is a bug: every code must be in the table
        text = f"{hint} {rule.hint}".strip() if hint else rule.hint
        self.problems.append(Problem(path=self.where(rel), line=line, code=code, message=message,
                                     hint=text, severity=rule.severity))  # type: ignore[arg-type]


# ------------------------------------------------------------- build.toml ----

def _line_of(text: str, pattern: str, flags: int = re.M) -> int | None:
    m = re.search(pattern, text, flags)
    return text.count("\n", 0, m.start()) + 1 if m else None


def _table_line(text: str, table: str) -> int | None:
    return _line_of(text, rf"^\s*\[\s*{re.escape(table)}\s*\]")


def _key_line_any(text: str, key: str) -> int | None:
    """The first `key = ...` line, or a `[... key]` / `[... .key.]` header, in any table."""
    k = re.escape(key)
    return (_line_of(text, rf'^\s*"?{k}"?\s*=')
            or _line_of(text, rf'^\s*\[+[^\]\n]*(?:^|[.\[\s"]){k}(?:["\s.\]])'))


def _kernel_key_line(text: str, kernel: str, key: str) -> int | None:
    return toml.key_line(text, key, f"kernel.{kernel}")


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else ""


def _suggest_name(name: str) -> str:
    KernelName = _rust().KernelName

    guess = re.sub(r"[^a-z0-9-]+", "-", name.strip().lower().replace("_", "-"))
    guess = re.sub(r"-+", "-", guess).strip("-")
    guess = re.sub(r"^[^a-z]+", "", guess)
    try:
        KernelName(guess)
    except ValueError:
        return ""
    return f'write name = "{guess}" (the Python package becomes {guess.replace("-", "_")}).'


def _schema_problem(sink: _Sink, text: str, message: str, legacy: bool) -> None:
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
    elif m := re.search(r"Unknown field `?([\w.-]+)`?(?:\. Expected one of (.*))?", reason, re.I):
        key = m.group(1)
        expected = [e.strip(" `") for e in m.group(2).split(",")] if m.group(2) else []
        if key in FRAMEWORKS:
            hint = "keep exactly one of [torch], [torch-noarch] and [tvm-ffi]."
        else:
            hint = _did_you_mean(key, expected) or (f"known keys here: {', '.join(expected)}." if expected else "")
        sink.add("unknown-key", f"unknown key {key!r}", rel, _key_line_any(text, key), hint=f"{hint} {extra}".strip())
    elif m := re.search(r"Missing field `?([\w.-]+)`?", reason):
        key = m.group(1)
        sink.add("missing-key", f"missing key {key!r}", rel, _missing_key_line(text, key),
                 hint=extra or f"add {key} = ... to the table shown.")
    elif "no variant of enum Framework" in reason:
        sink.add("no-framework", "build.toml has no [torch], [torch-noarch] or [tvm-ffi] table", rel,
                 _table_line(text, "general"), hint=extra)
    elif m := re.search(r"unsupported build edition (\d+)", reason):
        sink.add("edition-unsupported", f"edition {m.group(1)} is not supported (kernels reads edition 5)", rel,
                 toml.key_line(text, "edition", "general"))
    elif "general.edition" in reason:
        sink.add("edition-unsupported", f"edition must be the integer 5: {first}", rel,
                 toml.key_line(text, "edition", "general"))
    elif "unsupported legacy format" in reason:
        sink.add("edition-unsupported", first, rel, _table_line(text, "general"))
    elif m := re.search(r"Unknown variant `?([^`.\s]+)`?\. Expected one of (.*)", reason):
        value, expected = m.group(1), [e.strip(" `") for e in m.group(2).split(",")]
        hint = _did_you_mean(value, expected) or f"allowed: {', '.join(expected)}."
        sink.add("invalid-value", f"{value!r} is not allowed here (expected one of {', '.join(expected)})", rel,
                 _line_of(text, rf'"{re.escape(value)}"'), hint=f"{hint} {extra}".strip())
    elif m := re.search(r"Invalid (?:type|value) (\w+) (.*?)\. Expected (.*)", reason):
        kind, shown, expected = m.groups()
        needle = shown.strip("`")
        line = _line_of(text, rf"=\s*{re.escape(needle)}") or _line_of(text, re.escape(needle))
        sink.add("invalid-value", f"wrong type: got {kind} {shown}, expected {expected}", rel, line, hint=extra)
    elif m := re.search(r"Version must consist of numbers: (\S+)", reason):
        sink.add("invalid-value", f"version {m.group(1)!r} must be numbers separated by dots (e.g. \"12.8\")",
                 rel, _line_of(text, rf'"{re.escape(m.group(1))}"'), hint=extra)
    elif m := re.search(r"invalid git URL `([^`]*)`", reason):
        sink.add("invalid-value", f"{m.group(1)!r} is not a git URL", rel,
                 _line_of(text, rf'"{re.escape(m.group(1))}"'), hint=extra)
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
        return _table_line(text, "general")
    if key in ("backend", "depends", "src"):
        try:
            data = toml.loads(text)
        except toml.TOMLDecodeError:
            return None
        for kname, table in (data.get("kernel") or {}).items():
            if isinstance(table, dict) and key not in table:
                return _table_line(text, f"kernel.{kname}") or _table_line(text, f'kernel."{kname}"')
        for fw in FRAMEWORKS:
            if isinstance(data.get(fw), dict) and key not in data[fw]:
                return _table_line(text, fw)
    return None


def _open_build(root: Path):
    """Build.open with its stderr captured: kernels prints the legacy-v4 notice
    straight to fd 2, and our --json output must stay clean."""
    Build = _rust().Build

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            build = Build.open(str(root))
            error = None
        except ValueError as exc:
            build, error = None, str(exc)
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


def _project_from(root: Path, data: dict, build, edition: int) -> KernelProject:
    KernelName = _rust().KernelName

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


# ------------------------------------------------------------ the checks ----

def _inside(root_real: Path, path: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(root_real)
        return True
    except ValueError:
        return False


def _norm(rel: str) -> str:
    return os.path.normpath(rel).replace(os.sep, "/")


def _check_backends(sink: _Sink, p: KernelProject, text: str) -> None:
    declared = set(p.backends)
    used = set()
    for k in p.kernels:
        used.add(k.backend)
        if k.backend not in declared:
            sink.add("backend-not-declared",
                     f"[kernel.{k.name}] has backend {k.backend!r}, which [general].backends does not list "
                     f"({', '.join(p.backends) or 'empty'})", BUILD_TOML, _kernel_key_line(text, k.name, "backend"))
    if p.framework == "torch" and p.kernels:
        for b in p.backends:
            if b not in used:
                sink.add("backend-no-kernel", f"backend {b!r} has no [kernel.*] with backend = {b!r}", BUILD_TOML,
                         toml.key_line(text, "backends", "general"))


def _check_versions(sink: _Sink, p: KernelProject, text: str) -> None:
    Version = _rust().Version

    for lo, hi, table in ((p.torch_minver, p.torch_maxver, p.framework), (p.cuda_minver, p.cuda_maxver, "general.cuda")):
        if lo and hi:
            try:
                bad = Version.from_str(lo) > Version.from_str(hi)
            except ValueError:
                continue
            if bad:
                sink.add("version-range-empty", f"[{table}] minver {lo} is greater than maxver {hi}", BUILD_TOML,
                         toml.key_line(text, "minver", table))


def _check_hub(sink: _Sink, p: KernelProject, text: str) -> None:
    if p.hub_repo_id is None:
        return
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    ok = p.hub_repo_id.count("/") == 1
    try:
        validate_repo_id(p.hub_repo_id)
    except HFValidationError:
        ok = False
    if not ok:
        sink.add("hub-repo-id-invalid", f"repo-id {p.hub_repo_id!r} is not of the form namespace/name", BUILD_TOML,
                 toml.key_line(text, "repo-id", "general.hub"))


def _python_dep_table() -> dict:
    path = _kernels_dir() / "python_depends.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _check_python_depends(sink: _Sink, p: KernelProject, text: str, table: dict) -> set[str]:
    """Unknown python-depends are errors; returns the import names the known ones allow."""
    allowed: set[str] = set()
    provides = _data().provides
    general = table.get("general", {})

    def allow(dep: str, info: dict) -> None:
        for py in info.get("python", []):
            allowed.add(py.get("import") or py["pkg"].replace("-", "_"))
        allowed.update(provides.get(dep, ()))

    for dep in p.python_depends:
        if dep in general:
            allow(dep, general[dep])
        else:
            sink.add("python-depends-unknown", f"python-depends entry {dep!r} is not a dependency kernels knows "
                     f"(general: {', '.join(sorted(general))})", BUILD_TOML,
                     _line_of(text, rf'"{re.escape(dep)}"'), hint=_did_you_mean(dep, general))
    for backend, deps in p.backend_python_depends:
        known = table.get("backends", {}).get(backend, {})
        for dep in deps:
            if dep in known:
                allow(dep, known[dep])
            elif dep in general:
                allow(dep, general[dep])
            else:
                sink.add("python-depends-unknown", f"[general.{backend}].python-depends entry {dep!r} is not a "
                         f"{backend} dependency kernels knows ({', '.join(sorted(known)) or 'none'})", BUILD_TOML,
                         _line_of(text, rf'"{re.escape(dep)}"'), hint=_did_you_mean(dep, known))
    return allowed


_CAPABILITY = re.compile(r"^(\d+)\.(\d+)([af])?(\+PTX)?$")


def _check_capabilities(sink: _Sink, p: KernelProject, text: str) -> None:
    known = _data().cuda_capabilities
    for k in p.kernels:
        for cap in k.cuda_capabilities or ():
            m = _CAPABILITY.match(cap)
            if m and f"{m.group(1)}.{m.group(2)}" in known:
                continue
            sink.add("cuda-capability-unknown", f"[kernel.{k.name}] cuda-capabilities has {cap!r}; kernel-builder "
                     f"knows {', '.join(known)}", BUILD_TOML, _line_of(text, rf'"{re.escape(cap)}"')
                     or _kernel_key_line(text, k.name, "cuda-capabilities"))


@dataclass
class _SrcIndex:
    """The project's listed files: what the nix source set will contain."""

    listed: set[str] = field(default_factory=set)  # normalised relative paths of existing listed files
    files: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)  # (rel, include dirs, owner)


class _Tree:
    """Symlinks of the project, found once: only a path through a symlink can
    leave the project, so realpath (slow) runs only for those."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root_real = Path(os.path.realpath(root))
        self.links: set[str] = set()
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                entries = list(os.scandir(os.path.join(root, rel_dir) if rel_dir else root))
            except OSError:
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if entry.is_symlink():
                    self.links.add(rel)
                elif entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                    stack.append(rel)

    def escapes(self, rel: str) -> bool:
        if not self.links:
            return False
        parts = rel.split("/")
        if not any("/".join(parts[:i]) in self.links for i in range(1, len(parts) + 1)):
            return False
        return not _inside(self.root_real, self.root / rel)


def _check_src(sink: _Sink, p: KernelProject, text: str, tree: _Tree) -> _SrcIndex:
    index = _SrcIndex()
    lists: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = []  # (owner, table, src, include)
    if p.torch_ext is not None:
        lists.append(("[torch]", p.framework, p.torch_ext.src, p.torch_ext.include))
    for k in p.kernels:
        lists.append((f"[kernel.{k.name}]", f"kernel.{k.name}", k.src, k.include))
    # One pass over build.toml for every quoted string's first line: a project
    # can list thousands of sources, and one search per entry would be quadratic.
    string_lines: dict[str, int] = {}
    for number, body in enumerate(text.splitlines(), start=1):
        for quoted in re.findall(r'"([^"\n]*)"', body):
            string_lines.setdefault(quoted, number)
    root = str(p.root)
    for owner, table, srcs, includes in lists:
        seen: set[str] = set()
        for entry in srcs:
            line = string_lines.get(entry) or toml.key_line(text, "src", table)
            rel = _norm(entry)
            if entry.startswith("/") or rel == ".." or rel.startswith("../") or re.match(r"^[A-Za-z]:[\\/]", entry):
                sink.add("src-outside", f"{owner} src {entry!r} is not a path inside the project", BUILD_TOML, line)
                continue
            if rel in seen:
                sink.add("src-duplicate", f"{owner} lists {entry!r} twice", BUILD_TOML, line)
                continue
            seen.add(rel)
            full = os.path.join(root, rel)
            if tree.escapes(rel):
                sink.add("src-outside", f"{owner} src {entry!r} is a symlink that points outside the project "
                         f"(to {os.path.realpath(full)})", BUILD_TOML, line)
                continue
            if not os.path.exists(full):
                sink.add("src-missing", f"{owner} src {entry!r} does not exist", BUILD_TOML, line,
                         hint=_near_file(p.root, rel))
                continue
            if not os.path.isfile(full):
                sink.add("src-not-file", f"{owner} src {entry!r} is a directory", BUILD_TOML, line)
                continue
            index.listed.add(rel)
            index.files.append((rel, includes, owner))
    return index


def _near_file(root: Path, rel: str) -> str:
    """'did you mean' for a missing src file: a file of that name elsewhere in its folder tree."""
    parent = (root / rel).parent
    if not parent.is_dir():
        return ""
    names = [c.name for c in parent.iterdir() if c.is_file()]
    close = difflib.get_close_matches(Path(rel).name, names, n=1, cutoff=0.7)
    if close:
        return f"did you mean {str(Path(rel).parent / close[0])!r}?"
    return ""


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*(?:include|import)[ \t]*"([^"\n]+)"', re.M)


def _read_source(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def _check_headers(sink: _Sink, p: KernelProject, index: _SrcIndex, sources: dict[str, str], tree: _Tree) -> None:
    """Quoted #includes resolved the way the compiler does (the including file's
    folder, then the kernel's include dirs, then csrc/); one that lands on a
    project file no src list names is missing from the nix build's source set."""
    root = str(p.root)
    is_file_cache: dict[str, bool] = {}

    def is_file(rel: str) -> bool:
        if rel not in is_file_cache:
            is_file_cache[rel] = os.path.isfile(os.path.join(root, rel))
        return is_file_cache[rel]

    reported: set[tuple[str, str]] = set()
    for rel, includes, owner in index.files:
        body = sources.get(rel)
        if not body or "#" not in body:
            continue
        search = [os.path.dirname(rel)] + [_norm(i) for i in includes] + ["csrc"]
        for m in _INCLUDE.finditer(body):
            target = m.group(1)
            found = None
            for base in search:
                candidate = _norm(os.path.join(base, target))
                if is_file(candidate):
                    found = candidate
                    break
            if found is None:
                continue  # from torch, CUDA, a depends entry, or generated (registration.h)
            line = body.count("\n", 0, m.start()) + 1
            if found.startswith("../") or tree.escapes(found):
                if (rel, found) not in reported:
                    reported.add((rel, found))
                    sink.add("header-unlisted", f"{target!r} resolves to {os.path.normpath(os.path.join(root, found))}, "
                             f"outside the project", rel, line)
                continue
            if found in index.listed or (rel, found) in reported:
                continue
            reported.add((rel, found))
            sink.add("header-unlisted", f"{rel} includes {found!r}, which no src list names "
                     f"(add it to {owner} src)", rel, line)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# A preprocessor directive with its backslash continuations (#define TORCH_LIBRARY_EXPAND ... \ ...).
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_REG = re.compile(r"\b((?:STABLE_)?TORCH_LIBRARY(?:_IMPL|_FRAGMENT)?)(_EXPAND)?\s*\(\s*([A-Za-z_]\w*)?")
_REGISTER_EXT = re.compile(r"\bREGISTER_EXTENSION\s*\(")


def _blank_comments(body: str) -> str:
    """Comments and preprocessor directives blanked out, newlines kept so line numbers still match."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    return _DIRECTIVE.sub(blank, _COMMENT.sub(blank, body))


def _check_registration(sink: _Sink, p: KernelProject, index: _SrcIndex, sources: dict[str, str],
                        text: str) -> None:
    if p.framework != "torch":
        return
    expand_seen = register_seen = False
    for rel, _includes, _owner in index.files:
        if Path(rel).suffix.lower() not in C_LIKE:
            continue
        body = sources[rel]
        if "TORCH_LIBRARY" not in body and "REGISTER_EXTENSION" not in body:
            continue
        code = _blank_comments(body)
        if _REGISTER_EXT.search(code):
            register_seen = True
        for m in _REG.finditer(code):
            line_no = code.count("\n", 0, m.start()) + 1
            macro, expand, namespace = m.groups()
            if not expand:
                sink.add("torch-library-not-expand", f"{macro}({namespace or ''}, ...) registers ops under a "
                         f"fixed namespace", rel, line_no)
            else:
                expand_seen = True
                if namespace and namespace != "TORCH_EXTENSION_NAME":
                    sink.add("op-namespace-literal", f"{macro}_EXPAND({namespace}, ...) must use "
                             f"TORCH_EXTENSION_NAME as the namespace", rel, line_no)
    if p.torch_ext is not None and p.torch_ext.src:
        line = _table_line(text, "torch")
        if not expand_seen and not any(pr.code == "torch-library-not-expand" for pr in sink.problems):
            sink.add("op-registration-missing", "no listed source has TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ...)",
                     BUILD_TOML, line)
        if not register_seen:
            sink.add("register-extension-missing", "no listed source calls REGISTER_EXTENSION(TORCH_EXTENSION_NAME)",
                     BUILD_TOML, line)


def _check_package(sink: _Sink, p: KernelProject, allowed_imports: set[str]) -> None:
    ext_dir = p.root / EXT_DIRS[p.framework]
    ext_rel = EXT_DIRS[p.framework]
    if not ext_dir.is_dir():
        sink.add("torch-ext-missing", f"{ext_rel}/ does not exist", ext_rel)
        return
    pkg = ext_dir / p.python_name
    pkg_rel = f"{ext_rel}/{p.python_name}"
    if not (pkg / "__init__.py").is_file():
        others = [c.name for c in ext_dir.iterdir() if c.is_dir() and (c / "__init__.py").is_file()]
        hint = f"found {ext_rel}/{others[0]}/ instead: rename it to {ext_rel}/{p.python_name}/." if others else ""
        sink.add("init-missing", f"{pkg_rel}/__init__.py does not exist (python_name of {p.name!r} is "
                 f"{p.python_name!r})", pkg_rel, hint=hint)
        return
    # kernel-layout-check-hook.sh: `[ -e torch-ext/<name>/<name> ]` fails the build.
    if (pkg / p.python_name).exists():
        sink.add("module-nested", f"{pkg_rel}/{p.python_name} must not exist", f"{pkg_rel}/{p.python_name}")
    if (pkg / "_ops.py").exists():
        sink.add("ops-py-committed", f"{pkg_rel}/_ops.py is generated by the builder", f"{pkg_rel}/_ops.py")
    allowed = set(_data().always_importable) | allowed_imports | set(sys.stdlib_module_names) | {"__future__"}
    _PackageChecker(sink, p, pkg, allowed).run()


@dataclass
class _Import:
    node: ast.stmt
    top: str               # top-level module of an absolute import ("" for relative)
    shown: str             # the statement as written, for messages
    targets: tuple[Path, ...]  # package files a relative/self import executes
    missing: str           # a relative module that does not exist ("" when fine)
    lazy: bool             # inside a function: runs only when it is called
    guarded: bool          # inside try/except ImportError
    typing_only: bool      # under `if TYPE_CHECKING:`


class _PackageChecker:
    """Imports and op naming of the Python package torch-ext/<python_name>/.

    An undeclared import is an error when it runs as the kernel loads: at module
    level, unguarded, in a module that __init__.py reaches through module-level
    imports. Elsewhere (inside a function, or in an optional submodule nobody
    imports on load) it only fails when used: a warning."""

    def __init__(self, sink: _Sink, p: KernelProject, pkg: Path, allowed: set[str]) -> None:
        self.sink, self.p, self.pkg, self.allowed = sink, p, pkg, allowed
        self.files = sorted(f for f in pkg.rglob("*.py") if "__pycache__" not in f.parts)
        self.known = set(self.files)
        self.dirs = {f.parent for f in self.files} | {d for d in pkg.rglob("*") if d.is_dir()}
        self.init_text: dict[Path, str] = {}

    def rel(self, path: Path) -> str:
        return path.relative_to(self.p.root).as_posix()

    def run(self) -> None:
        imports: dict[Path, list[_Import]] = {}
        for path in self.files:
            source = self._read(path)
            tree = self._parse(path, source) if source is not None else None
            if tree is not None:
                imports[path] = self._imports(path, tree)
                self._op_names(path, tree, source)
        reachable = self._reachable(imports)
        for path, records in imports.items():
            rel = self.rel(path)
            for imp in records:
                self._judge(rel, imp, path in reachable)

    def _read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except OSError as exc:
            self.sink.add("python-syntax", f"cannot read: {exc.strerror or exc}", self.rel(path))
            return None

    def _parse(self, path: Path, source: bytes) -> ast.Module | None:
        rel = self.rel(path)
        try:
            return ast.parse(source, filename=rel)
        except SyntaxError as exc:
            self.sink.add("python-syntax", f"syntax error: {exc.msg}", rel, exc.lineno)
        except (ValueError, OSError) as exc:  # NUL bytes, unreadable
            self.sink.add("python-syntax", f"cannot parse: {exc}", rel)
        return None

    def _module_files(self, base: Path, parts: list[str]) -> tuple[list[Path], bool]:
        """Files executed by importing base/<parts> (parents' __init__ included), and whether it exists."""
        files: list[Path] = []
        here = base
        for i, part in enumerate(parts):
            here = here / part
            if (here / "__init__.py") in self.known:
                files.append(here / "__init__.py")
            elif here.with_suffix(".py") in self.known and i == len(parts) - 1:
                files.append(here.with_suffix(".py"))
            elif here in self.dirs and i < len(parts) - 1:
                continue  # namespace package
            elif here in self.dirs:
                continue
            else:
                return files, False
        return files, True

    def _imports(self, path: Path, tree: ast.Module) -> list[_Import]:
        out: list[_Import] = []
        pkg_parent = self.pkg.parent
        context: dict[int, tuple[bool, bool, bool]] = {}

        def record(node, top, shown, targets=(), missing=""):
            lazy, guarded, typing_only = context[id(node)]
            out.append(_Import(node, top, shown, tuple(targets), missing, lazy, guarded, typing_only))

        statements = []
        for node, lazy, guarded, typing_only in _statements(tree.body, False, False, False):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                context[id(node)] = (lazy, guarded, typing_only)
                statements.append(node)
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    targets = self._module_files(pkg_parent, parts)[0] if parts[0] == self.p.python_name else []
                    record(node, parts[0], f"import {alias.name}", targets)
            elif isinstance(node, ast.ImportFrom):
                names = ", ".join(a.name for a in node.names)
                if node.level == 0 and node.module:
                    parts = node.module.split(".")
                    targets = self._module_files(pkg_parent, parts)[0] if parts[0] == self.p.python_name else []
                    record(node, parts[0], f"from {node.module} import {names}", targets)
                elif node.level > 0:
                    base = path.parent
                    for _ in range(node.level - 1):
                        base = base.parent
                    dots = "." * node.level
                    shown = f"from {dots}{node.module or ''} import {names}"
                    if not (base == self.pkg or self.pkg in base.parents):
                        continue  # climbs above the package: not ours to judge
                    parts = node.module.split(".") if node.module else []
                    if parts[:1] == ["_ops"]:
                        continue  # generated at build time
                    targets, exists = self._module_files(base, parts)
                    if parts and not exists:
                        record(node, "", shown, targets, missing="/".join(parts))
                        continue
                    target_dir = base.joinpath(*parts)
                    missing = ""
                    for alias in node.names:
                        if alias.name in ("*", "_ops"):
                            continue
                        sub_files, sub_exists = self._module_files(target_dir, [alias.name])
                        if sub_exists:
                            targets = [*targets, *sub_files]
                        elif not parts and not self._defined_in_init(target_dir, alias.name):
                            missing = alias.name
                    record(node, "", shown, targets, missing=missing)
        return out

    def _defined_in_init(self, directory: Path, name: str) -> bool:
        init = directory / "__init__.py"
        if init not in self.known:
            return False
        if init not in self.init_text:
            self.init_text[init] = _read_source(init)
        return re.search(rf"\b{re.escape(name)}\b", self.init_text[init]) is not None

    def _reachable(self, imports: dict[Path, list[_Import]]) -> set[Path]:
        start = self.pkg / "__init__.py"
        seen = {start}
        todo = [start]
        while todo:
            current = todo.pop()
            for imp in imports.get(current, ()):
                if imp.lazy or imp.typing_only or imp.guarded:
                    continue  # a guarded import's failure is caught: what it reaches is optional
                for target in imp.targets:
                    # importing a.b runs a/__init__.py first
                    chain = [target] + [d / "__init__.py" for d in target.parents if self.pkg in d.parents]
                    for f in chain:
                        if f in self.known and f not in seen:
                            seen.add(f)
                            todo.append(f)
        return seen

    def _judge(self, rel: str, imp: _Import, reachable: bool) -> None:
        line = imp.node.lineno
        if imp.missing and not imp.guarded:
            self.sink.add("import-relative-missing", f"`{imp.shown}`: no module {imp.missing!r} in the package", rel,
                          line)
            return
        top = imp.top
        if not top:
            return
        if top == self.p.python_name:
            node = imp.node
            module = node.module if isinstance(node, ast.ImportFrom) else imp.shown.split()[1]
            rest = module[len(top):].lstrip(".")
            names = ", ".join(a.name for a in node.names) if isinstance(node, ast.ImportFrom) else "..."
            fix = f"from .{rest} import {names}" if rest else f"from . import {names}"
            self.sink.add("import-self-absolute", f"`{imp.shown}` imports the kernel package by its absolute name",
                          rel, line, hint=f"write `{fix}`.")
            return
        if top in self.allowed or imp.guarded or imp.typing_only:
            return
        if imp.lazy:
            self.sink.add("import-lazy-undeclared", f"`{imp.shown}` inside a function: {top!r} is not declared",
                          rel, line)
        elif not reachable:
            self.sink.add("import-lazy-undeclared", f"`{imp.shown}`: {top!r} is not declared (this module is not "
                          f"imported when the kernel loads)", rel, line)
        else:
            self.sink.add("import-undeclared", f"`{imp.shown}` runs when the kernel loads: {top!r} is not the "
                          f"standard library, torch, kernels or a declared python-depends", rel, line)

    def _op_names(self, path: Path, tree: ast.Module, source: bytes) -> None:
        rel = self.rel(path)
        if not _OP_WORDS.search(source):
            return  # no torch.library call in this file: skip the full tree walk
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                _check_op_call(self.sink, node, rel)
        # The kernel-builder torch-ops check: top-level decorated definitions only.
        for node in ast.iter_child_nodes(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for dec in node.decorator_list:
                    if (isinstance(dec, ast.Call) and dec.args and _call_name(dec) in BUILDER_DECORATORS
                            and not _is_prefix_call(dec.args[0]) and not _is_literal(dec.args[0])):
                        self.sink.add("op-namespace-prefix-missing", f"@{_call_name(dec)}(...) on {node.name} "
                                      f"names its op without add_op_namespace_prefix", rel, dec.lineno)


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(node: ast.Try) -> bool:
    for handler in node.handlers:
        if handler.type is None:
            return True
        for t in handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]:
            name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else ""
            if name in _IMPORT_ERRORS:
                return True
    return False


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(body: list[ast.stmt], lazy: bool, guarded: bool, typing_only: bool):
    """Every statement with its context: (stmt, inside a function, inside try/except
    ImportError, under `if TYPE_CHECKING`). Imports are statements, so walking
    statements only is enough, and much cheaper than ast.walk on big packages."""
    for st in body:
        yield st, lazy, guarded, typing_only
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _statements(st.body, True, guarded, typing_only)
        elif isinstance(st, ast.ClassDef):
            yield from _statements(st.body, lazy, guarded, typing_only)
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            yield from _statements(st.body, lazy, guarded or _catches_import_error(st), typing_only)
            for handler in st.handlers:
                yield from _statements(handler.body, lazy, guarded, typing_only)
            yield from _statements(st.orelse, lazy, guarded, typing_only)
            yield from _statements(st.finalbody, lazy, guarded, typing_only)
        elif isinstance(st, ast.If):
            yield from _statements(st.body, lazy, guarded, typing_only or _is_type_checking(st.test))
            yield from _statements(st.orelse, lazy, guarded, typing_only)
        elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
            yield from _statements(st.body, lazy, guarded, typing_only)
            yield from _statements(st.orelse, lazy, guarded, typing_only)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            yield from _statements(st.body, lazy, guarded, typing_only)
        elif isinstance(st, ast.Match):
            for case in st.cases:
                yield from _statements(case.body, lazy, guarded, typing_only)


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _is_prefix_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _call_name(node) == "add_op_namespace_prefix"


def _is_literal(node: ast.expr) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(node, ast.JoinedStr)


def _check_op_call(sink: _Sink, node: ast.Call, rel: str) -> None:
    name = _call_name(node)
    if not node.args or not _is_literal(node.args[0]):
        return
    literal = node.args[0].value if isinstance(node.args[0], ast.Constant) else "f-string"
    if name in OP_NAMING_CALLS:
        op = str(literal).split("::")[-1]
        sink.add("op-namespace-prefix-missing", f"{name}({literal!r}) names the op with a literal", rel, node.lineno,
                 hint=f'write {name}(add_op_namespace_prefix("{op}")).' if literal != "f-string" else "")
    elif name == "Library":
        sink.add("op-namespace-prefix-missing", f"Library({literal!r}, ...) opens a fixed op namespace", rel,
                 node.lineno, hint="derive the namespace from ops (`from ._ops import ops`; ops.__name__) instead.")


_ROOT_OUTPUT_DIRS = {"build", "result", ".eggs", "dist"}
_OUTPUT_SUFFIXES = {".so", ".o", ".obj", ".pyc", ".dylib", ".metallib"}
_GENERATED_ROOT = {"CMakeLists.txt", "setup.py", "pyproject.toml"}
# Markers the kernel-builder templates write into the files they generate.
_GENERATED_MARKERS = ("kernel-builder", "build2cmake", "cuda_kernel_component", "define_gpu_extension_target",
                      "get_gpu_lang", "add_kernels_install_target", "kernels_install")


def _walk(root: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".direnv", "node_modules")]
        yield Path(dirpath), dirnames, filenames


def _ignored_by_git(root: Path, candidates: list[str]) -> set[str]:
    """The candidates git ignores (so they would never be committed). Outside a
    git work tree nothing is ignored: the files are there, so they ship."""
    if not candidates:
        return set()
    try:
        out = subprocess.run(["git", "-C", str(root), "check-ignore", "--stdin", "-z"], input="\0".join(candidates),
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return set()
    if out.returncode not in (0, 1):
        return set()
    return {c.rstrip("/") for c in out.stdout.split("\0") if c}


def _check_committed(sink: _Sink, root: Path, ext_dir: str) -> None:
    found: list[tuple[str, str, str]] = []  # (rel, code, message)
    for dirpath, dirnames, filenames in _walk(root):
        rel_dir = dirpath.relative_to(root)
        at_root = not rel_dir.parts
        for d in list(dirnames):
            rel = (rel_dir / d).as_posix()
            if (at_root and d in _ROOT_OUTPUT_DIRS) or d == "__pycache__" or d.endswith(".egg-info"):
                found.append((rel, "build-output-committed", f"{rel}/ is build output"))
                dirnames.remove(d)
            elif at_root and d == "cmake" and any((dirpath / d / f).exists() for f in ("utils.cmake", "kernel.cmake")):
                found.append((rel, "generated-file-committed", f"{rel}/ holds kernel-builder's generated CMake files"))
                dirnames.remove(d)
        for f in filenames:
            path = dirpath / f
            rel = (rel_dir / f).as_posix()
            if (at_root and (f == "result" or f.startswith("result-")) and path.is_symlink()) \
                    or path.suffix in _OUTPUT_SUFFIXES:
                found.append((rel, "build-output-committed", f"{rel} is build output"))
            elif at_root and f in _GENERATED_ROOT:
                head = _read_source(path)[:4000]
                if f == "CMakeLists.txt" or any(mark in head for mark in _GENERATED_MARKERS):
                    found.append((rel, "generated-file-committed", f"{rel} is generated by kernel-builder"))
            elif rel == f"{ext_dir}/registration.h":
                found.append((rel, "generated-file-committed", f"{rel} is generated by kernel-builder (`kernel-builder "
                              "create-pyproject` stops with 'File(s) already exists' when the source has it)"))
    if not found:
        return
    ignored = _ignored_by_git(root, [rel for rel, _c, _m in found])
    for rel, code, message in found:
        if rel not in ignored:
            sink.add(code, message, rel)


_FLAKE_URL = re.compile(r'kernel-builder(?:\.url)?\s*=\s*(?:\{[^}]*url\s*=\s*)?"([^"]+)"')


def _check_flake(sink: _Sink, root: Path) -> None:
    flake = root / "flake.nix"
    if not flake.is_file():
        sink.add("flake-missing", "flake.nix does not exist", "flake.nix")
        return
    text = _read_source(flake)
    m = _FLAKE_URL.search(text)
    url = m.group(1) if m else ""
    builder_url = bool(re.search(r"huggingface/(kernels|kernel-builder)\b", url)) or url.startswith("path:")
    uses_lib = "genKernelFlakeOutputs" in text
    if not m or not builder_url:
        line = _line_of(text, r"kernel-builder") if m else _line_of(text, r"\binputs\b")
        sink.add("flake-no-builder", f"flake.nix has no kernel-builder input pointing at github:huggingface/kernels"
                 + (f" (it points at {url!r})" if url else ""), "flake.nix", line)
    elif not uses_lib:
        sink.add("flake-no-builder", "flake.nix does not call kernel-builder.lib.genKernelFlakeOutputs", "flake.nix",
                 _line_of(text, r"\boutputs\b"))


# ----------------------------------------------------------- entry points ----

def _shown(path: Path) -> str:
    return str(path)


def validate(path: Path) -> ValidationReport:
    """Check one kernel project (or every kernel of a workspace root). Never raises for bad input."""
    path = Path(path)
    shown = _shown(path)
    sink = _Sink(shown)
    if not path.exists() and not path.is_symlink():
        sink.add("path-missing", f"{shown} does not exist")
        return ValidationReport(None, tuple(sink.problems), shown)
    if path.is_file() and path.name == BUILD_TOML:
        path = path.parent
        shown = _shown(path)
        sink = _Sink(shown)
    if not path.is_dir():
        sink.add("path-not-directory", f"{shown} is a file, not a project directory")
        return ValidationReport(None, tuple(sink.problems), shown)
    build_toml = path / BUILD_TOML
    if not build_toml.is_file():
        sink.add("build-toml-missing", f"no build.toml in {shown}", BUILD_TOML)
        return ValidationReport(None, tuple(sink.problems), shown)
    try:
        text = toml.read_text(build_toml)
    except UnicodeDecodeError:
        sink.add("build-toml-unreadable", "build.toml is not UTF-8 text (binary data?)", BUILD_TOML)
        return ValidationReport(None, tuple(sink.problems), shown)
    except OSError as exc:
        sink.add("build-toml-unreadable", f"cannot read build.toml: {exc.strerror or exc}", BUILD_TOML)
        return ValidationReport(None, tuple(sink.problems), shown)
    try:
        data = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        sink.add("toml-syntax", f"malformed TOML: {exc}", BUILD_TOML, toml.error_line(exc))
        return ValidationReport(None, tuple(sink.problems), shown)
    if "workspace" in data:
        return _validate_workspace(path, shown)
    return _validate_project(path, shown, text, data)


def _validate_project(root: Path, shown: str, text: str, data: dict) -> ValidationReport:
    sink = _Sink(shown)
    build, error, notice = _open_build(root)
    framework = next((fw for fw in FRAMEWORKS if isinstance(data.get(fw), dict)), "torch")
    ext_dir = EXT_DIRS[framework]
    # What needs no parsed build.toml runs either way, so one pass shows the most.
    _check_flake(sink, root)
    _check_committed(sink, root, ext_dir)
    if error is not None:
        _schema_problem(sink, text, error, legacy="edition" not in (data.get("general") or {}))
        return ValidationReport(None, _ordered(sink.problems), shown)
    edition = 5
    if "legacy v4" in notice or "edition" not in (data.get("general") or {}):
        edition = 4
        sink.add("edition-legacy", "build.toml has no edition: read as the legacy v4 format", BUILD_TOML,
                 _table_line(text, "general"))
    project = _project_from(root, data, build, edition)
    _check_backends(sink, project, text)
    _check_versions(sink, project, text)
    _check_hub(sink, project, text)
    allowed = _check_python_depends(sink, project, text, _python_dep_table())
    _check_capabilities(sink, project, text)
    tree = _Tree(root)
    index = _check_src(sink, project, text, tree)
    sources = {rel: _read_source(project.root / rel) for rel, _i, _o in index.files
               if os.path.splitext(rel)[1].lower() in C_LIKE}
    _check_headers(sink, project, index, sources, tree)
    _check_registration(sink, project, index, sources, text)
    _check_package(sink, project, allowed)
    return ValidationReport(project, _ordered(sink.problems), shown)


def _ordered(problems: list[Problem]) -> tuple[Problem, ...]:
    return tuple(sorted(problems, key=lambda p: (not p.is_error, p.path, p.line or 0, p.code)))


def _validate_workspace(root: Path, shown: str) -> ValidationReport:
    problems: list[Problem] = []
    for report in validate_workspace(root):
        problems.extend(report.problems)
    return ValidationReport(None, tuple(problems), shown)


def validate_workspace(root: Path) -> tuple[ValidationReport, ...]:
    """One report per kernel the workspace file lists (raises WorkspaceError for a bad workspace file)."""
    from pipeline.workspace import load_workspace

    ws = load_workspace(Path(root))
    reports = []
    for kernel_path in ws.kernel_paths:
        try:
            shown = os.path.relpath(kernel_path)
        except ValueError:
            shown = str(kernel_path)
        reports.append(validate(Path(shown)))
    return tuple(reports)


def load_project(path: Path) -> KernelProject:
    """The parsed project, or ValidationError carrying every problem when any is an error."""
    report = validate(Path(path))
    if report.project is None or not report.ok:
        errors = [p for p in report.problems if p.is_error]
        first = errors[0] if errors else None
        raise ValidationError(
            f"{len(errors)} error(s) in kernel project {report.path}" if errors else
            f"{report.path} is not a kernel project",
            path=first.path if first else report.path, line=first.line if first else None,
            code=first.code if first else "validate",
            hint=f"run `python -m pipeline validate {report.path}` for the full list",
            problems=report.problems)
    return report.project

"""The files the build compiles: src lists, included headers, op registration."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import toml
from pipeline.project.model import BUILD_TOML, EXT_DIRS, KernelProject
from pipeline.project.rules import Sink
from pipeline.project.lines import table_line

# Files C/C++ preprocessors read: the ones whose #include lines we follow.
C_LIKE = {".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inc", ".inl",
          ".ipp", ".tcc", ".mm", ".m", ".metal", ".hip", ".cl"}
# The ones compiled on their own (one object each), as opposed to included.
COMPILED = {".c", ".cc", ".cpp", ".cxx", ".cu", ".mm", ".m", ".metal", ".hip", ".cl"}


def is_inside(root_real: Path, path: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(root_real)
        return True
    except ValueError:
        return False


def norm_rel(rel: str) -> str:
    return os.path.normpath(rel).replace(os.sep, "/")


@dataclass
class _SrcIndex:
    """The project's listed files: what the nix source set will contain."""

    listed: set[str] = field(default_factory=set)  # normalised relative paths of existing listed files
    files: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)  # (rel, include dirs, owner)


class Tree:
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
        return not is_inside(self.root_real, self.root / rel)


def check_src(sink: Sink, p: KernelProject, text: str, tree: Tree) -> _SrcIndex:
    index = _SrcIndex()
    # (owner, table, src, include, backend); the binding is compiled into every backend's build.
    lists: list[tuple[str, str, tuple[str, ...], tuple[str, ...], str | None]] = []
    if p.torch_ext is not None:
        lists.append(("[torch]", p.framework, p.torch_ext.src, p.torch_ext.include, None))
    for k in p.kernels:
        lists.append((f"[kernel.{k.name}]", f"kernel.{k.name}", k.src, k.include, k.backend))
    # One pass over build.toml for every quoted string's first line: a project
    # can list thousands of sources, and one search per entry would be quadratic.
    string_lines: dict[str, int] = {}
    for number, body in enumerate(text.splitlines(), start=1):
        for quoted in re.findall(r'"([^"\n]*)"', body):
            string_lines.setdefault(quoted, number)
    root = str(p.root)
    compiled: dict[str, list[tuple[str, str | None]]] = {}  # rel -> (owner, backend) of each list compiling it
    for owner, table, srcs, includes, backend in lists:
        seen: set[str] = set()
        for entry in srcs:
            line = string_lines.get(entry) or toml.key_line(text, "src", table)
            rel = norm_rel(entry)
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
            if os.path.splitext(rel)[1].lower() in COMPILED:
                _check_shared(sink, compiled.setdefault(rel, []), entry, owner, backend,
                              lambda t=table, e=entry, d=line: _line_in_table(text, t, e) or d)
    return index


def _line_in_table(text: str, table: str, entry: str) -> int | None:
    start = table_line(text, table) or table_line(text, table.replace(".", '."', 1) + '"')
    if start is None:
        return None
    for number, body in enumerate(text.splitlines()[start:], start=start + 1):
        if f'"{entry}"' in body:
            return number
    return None


def _check_shared(sink: Sink, owners: list[tuple[str, str | None]], entry: str, owner: str, backend: str | None,
                  line) -> None:
    """A compiled source listed by two lists that end up in one backend's extension."""
    clash = next((o for o, b in owners if b is None or backend is None or b == backend), None)
    owners.append((owner, backend))
    if clash is not None:
        where = f"backend {backend!r}" if backend else "every backend (the [torch] binding is compiled into each)"
        sink.add("src-shared-between-kernels", f"{entry!r} is listed in {clash} and {owner}, both compiled into "
                 f"the extension of {where}", BUILD_TOML, line())  # located only when reported


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


# "quoted" includes search the including file's folder first; <angled> ones only the -I dirs.
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*(?:include|import)[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.M)


def read_source(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def check_headers(sink: Sink, p: KernelProject, index: _SrcIndex, sources: dict[str, str], tree: Tree) -> None:
    """#includes resolved the way the compiler does ("quoted": the including
    file's folder first; then the kernel's include dirs and csrc/); one that
    lands on a project file no src list names is missing from the nix build's
    source set."""
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
        include_dirs = [norm_rel(i) for i in includes] + ["csrc"]
        for m in _INCLUDE.finditer(body):
            target = m.group(1) or m.group(2)
            found = None
            for base in ([os.path.dirname(rel)] if m.group(1) else []) + include_dirs:
                candidate = norm_rel(os.path.join(base, target))
                if is_file(candidate):
                    found = candidate
                    break
            if found is None:
                continue  # from torch, CUDA, a depends entry, or generated (registration.h)
            line = body.count("\n", 0, m.start()) + 1
            if found == f"{EXT_DIRS[p.framework]}/registration.h":
                continue  # the builder writes it (a committed copy is reported as a generated file)
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
_PYBIND = re.compile(r"\bPYBIND11_MODULE\s*\(")


def _blank_comments(body: str) -> str:
    """Comments and preprocessor directives blanked out, newlines kept so line numbers still match."""
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    return _DIRECTIVE.sub(blank, _COMMENT.sub(blank, body))


def check_registration(sink: Sink, p: KernelProject, index: _SrcIndex, sources: dict[str, str],
                        text: str) -> None:
    if p.framework != "torch":
        return
    expand_seen = register_seen = False
    pybind: tuple[str, int] | None = None
    for rel, _includes, _owner in index.files:
        if Path(rel).suffix.lower() not in C_LIKE:
            continue
        body = sources[rel]
        if "TORCH_LIBRARY" not in body and "REGISTER_EXTENSION" not in body and "PYBIND11_MODULE" not in body:
            continue
        code = _blank_comments(body)
        if pybind is None and (m := _PYBIND.search(code)):
            pybind = (rel, code.count("\n", 0, m.start()) + 1)
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
    if p.torch_ext is not None and (p.torch_ext.src or p.kernels):
        # A PYBIND11_MODULE block is where the registration belongs: point there, not at build.toml.
        where, line = pybind if pybind else (BUILD_TOML, table_line(text, "torch"))
        via = " (PYBIND11_MODULE binds the functions to Python only, not as Torch ops: replace it)" if pybind else ""
        if not expand_seen and not any(pr.code == "torch-library-not-expand" for pr in sink.problems):
            sink.add("op-registration-missing", "no listed source has TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, "
                     f"...){via}", where, line)
        if not register_seen:
            sink.add("register-extension-missing", "no listed source calls REGISTER_EXTENSION(TORCH_EXTENSION_NAME)"
                     + (" (it goes where PYBIND11_MODULE is)" if pybind else ""), where, line)

"""The workspace file: the top-level build.toml with a [workspace] table.

Parsing only; `pipeline.workspace.resolve` turns it, with a kernel project,
into the `Kernel` value every later stage takes."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import toml
from pipeline.contracts import FAMILIES, OPTIONS, WORKSPACE, Binding, check_categories, unknown_family_hint
from pipeline.errors import WorkspaceError
from pipeline.policy import KNOWN_BACKENDS, MatrixPolicy

WORKSPACE_FILE = "build.toml"

@dataclass(frozen=True)
class Workspace:
    root: Path
    kernel_paths: tuple[Path, ...]
    namespace: str
    matrix: MatrixPolicy
    ci_matrix: MatrixPolicy
    # [workspace.contracts.<kernel>]: kernel directory name -> ((op, Binding), ...)
    contracts: dict = field(default_factory=dict)

    def contracts_for(self, kernel_dir: str) -> tuple[tuple[str, Binding], ...]:
        return self.contracts.get(kernel_dir, ())

    def kernel(self, name: str) -> Path:
        for path in self.kernel_paths:
            if path.name == name:
                return path
        known = [p.name for p in self.kernel_paths]
        close = difflib.get_close_matches(name, known, n=1)
        raise WorkspaceError(
            f"no kernel named {name!r} in the workspace",
            path=str(self.root / WORKSPACE_FILE),
            code="kernel-not-found",
            hint=(f"did you mean {close[0]!r}? " if close else "") + f"known kernels: {', '.join(known) or 'none'}",
        )

    @property
    def kernel_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.kernel_paths)


_POLICY_KEYS = ("torch", "cuda", "archs", "backends")
_WORKSPACE_KEYS = ("kernels", "namespace", "matrix", "contracts")


def is_workspace_file(path: Path) -> bool:
    """Whether `path` (a build.toml, or a directory holding one) is a workspace file."""
    path = Path(path)
    candidate = path / WORKSPACE_FILE if path.is_dir() else path
    if not candidate.is_file():
        return False
    try:
        return "workspace" in toml.loads(toml.read_text(candidate))
    except (toml.TOMLDecodeError, UnicodeDecodeError, OSError):
        return False


def find_workspace(start: Path) -> Path | None:
    """The nearest directory at or above `start` whose build.toml has [workspace]."""
    start = Path(start).resolve()
    for directory in (start, *start.parents):
        if is_workspace_file(directory / WORKSPACE_FILE):
            return directory
    return None


def _string_list(value, where: str, path: Path, text: str, key: str, table: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise WorkspaceError(
            f"{where} must be a list of strings, got {value!r}",
            path=str(path), line=toml.key_line(text, key, table), code="workspace-type-error",
            hint=f'write it as {key} = ["..."]',
        )
    return tuple(value)


def _policy(table: dict, name: str, path: Path, text: str, default: MatrixPolicy | None) -> MatrixPolicy:
    # Only [workspace.matrix] may hold a sub-table, and only `ci`.
    allowed_tables = ("ci",) if default is None else ()
    for key in table:
        if key in allowed_tables:
            if not isinstance(table[key], dict):
                raise WorkspaceError(
                    f"[{name}].{key} must be a table", path=str(path), line=toml.key_line(text, key, name),
                    code="workspace-type-error", hint=f"write it as a table: [{name}.{key}]",
                )
            continue
        if key not in _POLICY_KEYS:
            close = difflib.get_close_matches(key, _POLICY_KEYS + allowed_tables, n=1)
            raise WorkspaceError(
                f"unknown key {key!r} in [{name}]",
                path=str(path), line=toml.key_line(text, key, name), code="workspace-key-unknown",
                hint=f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(_POLICY_KEYS)}",
            )
    values = {}
    for key in _POLICY_KEYS:
        if key in table:
            values[key] = _string_list(table[key], f"[{name}].{key}", path, text, key, name)
        elif default is not None:
            values[key] = getattr(default, key)
        else:
            raise WorkspaceError(
                f"[{name}] is missing {key!r}", path=str(path), line=toml.key_line(text, "", name), code="workspace-key-missing",
                hint=f"add {key} = [...] to [{name}]",
            )
    for backend in values["backends"]:
        if backend not in KNOWN_BACKENDS:
            raise WorkspaceError(
                f"unknown backend {backend!r} in [{name}].backends",
                path=str(path), line=toml.key_line(text, "backends", name), code="workspace-backend-unknown",
                hint=f"known backends: {', '.join(KNOWN_BACKENDS)}",
            )
    return MatrixPolicy(**values)


_BINDING_HINT = ('e.g. rms_norm = "rms_norm", or apply_rms_norm = { family = "rms_norm", declines = ["empty"], '
                 'unchecked = ["rstd"] }, or dropout_add_ln_fwd = { family = "layer_norm", args = { z_numrows = 0 } }')


def _binding(value, op: str, name: str, path: Path, text: str) -> Binding:
    """One op's binding: "FAMILY", or an inline table { family = ..., declines = [...], args = {...}, ... }."""
    line = toml.key_line(text, op, name)

    def wrong(message: str, code: str = "workspace-type-error", hint: str = _BINDING_HINT) -> WorkspaceError:
        return WorkspaceError(f"[{name}].{op}: {message}", path=str(path), line=line, code=code, hint=hint)

    if isinstance(value, str):
        value = {"family": value}
    if not isinstance(value, dict) or not isinstance(value.get("family"), str):
        raise wrong("must be a contract family, or a table with family = \"FAMILY\"")
    unknown = sorted(set(value) - {"family", *OPTIONS})
    if unknown:
        close = difflib.get_close_matches(unknown[0], OPTIONS, n=1)
        raise wrong(f"unknown key {unknown[0]!r}", code="workspace-key-unknown",
                    hint=(f"did you mean {close[0]!r}? " if close else "") + f"keys: family, {', '.join(OPTIONS)}")
    family = value["family"]
    if family not in FAMILIES:
        raise wrong(f"no contract family {family!r}", code="contract-unknown", hint=unknown_family_hint(family))
    lists = {}
    for key in ("declines", "unchecked", "returns"):
        items = value.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise wrong(f"{key} must be a list of strings")
        lists[key] = tuple(items)
    for key, kinds in (("args", (bool, int, float)), ("roles", (str,))):
        table = value.get(key, {})
        if not isinstance(table, dict) or not all(isinstance(v, kinds) for v in table.values()):
            what = "numbers or booleans" if key == "args" else "argument names"
            raise wrong(f"{key} must be a table of {what}")
    declines = check_categories(lists["declines"], WorkspaceError, f"[{name}].{op}.declines", path=str(path),
                                line=line)
    return Binding(family, WORKSPACE, declines=declines, args=tuple(value.get("args", {}).items()),
                   roles=tuple(value.get("roles", {}).items()), returns=lists["returns"],
                   unchecked=lists["unchecked"])


def _contracts(table, path: Path, text: str, kernel_names: tuple[str, ...]) -> dict:
    """[workspace.contracts.<kernel>] tables: `OP = "FAMILY"` or `OP = { family = ..., ... }` per line."""
    if not isinstance(table, dict):
        raise WorkspaceError("[workspace.contracts] must be a table of tables", path=str(path),
                             line=toml.key_line(text, "contracts", "workspace"), code="workspace-type-error",
                             hint='write [workspace.contracts.rmsnorm] with rms_norm = "rms_norm"')
    found = {}
    for kernel, ops in table.items():
        name = f"workspace.contracts.{kernel}"
        line = toml.key_line(text, "", name)
        if kernel not in kernel_names:
            close = difflib.get_close_matches(kernel, kernel_names, n=1)
            raise WorkspaceError(f"[{name}] names no kernel of the workspace", path=str(path), line=line,
                                 code="workspace-contract-kernel-unknown",
                                 hint=(f"did you mean {close[0]!r}? " if close else "")
                                 + f"kernels: {', '.join(kernel_names) or 'none'} (their directory names)")
        if not isinstance(ops, dict):
            raise WorkspaceError(f"[{name}] must map op names to contract families", path=str(path), line=line,
                                 code="workspace-type-error", hint=_BINDING_HINT)
        found[kernel] = tuple((op, _binding(value, op, name, path, text)) for op, value in ops.items())
    return found


def load_workspace(root: Path) -> Workspace:
    path = root / WORKSPACE_FILE
    if not path.is_file():
        raise WorkspaceError("no workspace build.toml here", path=str(path), code="workspace-missing",
                             hint="run from the repository root, or pass the path of a kernel project instead")
    try:
        text = toml.read_text(path)
        data = toml.loads(text)
    except UnicodeDecodeError:
        raise WorkspaceError("build.toml is not UTF-8 text", path=str(path), code="workspace-toml-invalid") from None
    except toml.TOMLDecodeError as exc:
        raise WorkspaceError(f"malformed TOML: {exc}", path=str(path), line=toml.error_line(exc), code="workspace-toml-invalid") from None
    if "workspace" not in data:
        raise WorkspaceError(
            "this build.toml has no [workspace] table", path=str(path), code="workspace-missing",
            hint="this looks like a kernel project's build.toml; the workspace file is the repository's top-level one",
        )
    ws = data["workspace"]
    for key in ws:
        if key not in _WORKSPACE_KEYS:
            close = difflib.get_close_matches(key, _WORKSPACE_KEYS, n=1)
            raise WorkspaceError(
                f"unknown key {key!r} in [workspace]", path=str(path), line=toml.key_line(text, key, "workspace"),
                code="workspace-key-unknown", hint=f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(_WORKSPACE_KEYS)}",
            )
    patterns = _string_list(ws.get("kernels", []), "[workspace].kernels", path, text, "kernels", "workspace")
    kernel_paths: list[Path] = []
    for pattern in patterns:
        if pattern.startswith("/") or ".." in Path(pattern).parts:
            raise WorkspaceError(f"kernel path {pattern!r} leaves the workspace", path=str(path),
                                 line=toml.key_line(text, "kernels", "workspace"), code="workspace-path-outside",
                                 hint="use paths relative to the workspace root, e.g. kernels-src/*")
        matches = sorted(p for p in root.glob(pattern) if (p / "build.toml").is_file())
        if not matches and not any(ch in pattern for ch in "*?["):
            raise WorkspaceError(f"kernel project {pattern!r} has no build.toml", path=str(path),
                                 line=toml.key_line(text, "kernels", "workspace"), code="workspace-kernel-missing")
        kernel_paths.extend(m for m in matches if m not in kernel_paths)
    namespace = ws.get("namespace", "")
    if not isinstance(namespace, str) or not namespace:
        raise WorkspaceError("[workspace].namespace must be a non-empty string", path=str(path),
                             line=toml.key_line(text, "namespace", "workspace"), code="workspace-namespace-invalid",
                             hint='e.g. namespace = "my-org"')
    matrix_table = ws.get("matrix", {})
    if not isinstance(matrix_table, dict):
        raise WorkspaceError("[workspace.matrix] must be a table", path=str(path), code="workspace-type-error")
    full = _policy(matrix_table, "workspace.matrix", path, text, None)
    ci = _policy(matrix_table.get("ci", {}), "workspace.matrix.ci", path, text, full)
    contracts = _contracts(ws.get("contracts", {}), path, text, tuple(p.name for p in kernel_paths))
    return Workspace(root=root.resolve(), kernel_paths=tuple(kernel_paths), namespace=namespace,
                     matrix=full, ci_matrix=ci, contracts=contracts)

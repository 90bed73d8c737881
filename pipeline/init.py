"""`init`: render a new kernel project from a template.

The templates live in `pipeline/templates/init/` (data, not code): `common/`
for every project, then `<template>/` on top. What comes out is a complete
kernel-builder project (build.toml edition 5, flake.nix, CUDA and CPU
sources, torch-ext bindings and package, smoke and bench cases) that
validates, builds and passes its own smoke cases with no edits.

The name goes through kernels' own `KernelName` parser, so `init` refuses
exactly the names kernel-builder refuses; the message is kernels' rule and the
hint the validator's (`name-invalid` in pipeline/data/rules.toml).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import jinja2

from pipeline import toml
from pipeline.errors import InitError
from pipeline.fsutil import require_out_path, staged_dir
from pipeline.project.fields import suggest_name
from pipeline.project.rules import kernels_rust, load_rules
from pipeline.workspace_file import find_workspace

TEMPLATE_ROOT = Path(__file__).parent / "templates" / "init"
TEMPLATES = ("elementwise", "rowwise")
BACKENDS = ("cuda", "cpu")
DTYPES = ("bf16", "fp16", "fp32")
DEFAULT_NAMESPACE = "my-org"

_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
_PATH_TOKEN = "{py}"
# Files whose installed name starts with a dot: package data keeps no dotfiles.
_RENAMES = {"gitignore": ".gitignore"}


@dataclass(frozen=True)
class InitResult:
    root: Path
    name: str
    python_name: str
    template: str
    backends: tuple[str, ...]
    dtypes: tuple[str, ...]
    repo_id: str
    files: tuple[str, ...]

    def to_json(self) -> dict:
        return {"root": str(self.root), "name": self.name, "python_name": self.python_name,
                "template": self.template, "backends": list(self.backends), "dtypes": list(self.dtypes),
                "repo_id": self.repo_id, "files": list(self.files)}


def check_name(name: str) -> str:
    """The Python name of `name`, or InitError with kernels' own rule."""
    try:
        return kernels_rust().KernelName(name).python_name
    except ValueError as exc:
        rule = load_rules().get("name-invalid")
        suggestion = suggest_name(name)
        hint = (f'try "{suggestion}". ' if suggestion else "") + (rule.hint if rule else "")
        # kernels' message spells out the rule ("Name must: - Start with ...").
        lines = [line.strip(" -") for line in str(exc).splitlines() if line.strip()]
        message = lines[0] + (" " + "; ".join(lines[1:]) if len(lines) > 1 else "")
        raise InitError(message, code="name-invalid", hint=hint) from None


def _choices(values: Iterable[str], allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    chosen = []
    for value in values:
        value = value.strip().lower()
        if not value:
            continue
        if value not in allowed:
            raise InitError(f"unknown {what} {value!r}", code=f"{what}-unknown",
                            hint=f"choose from: {', '.join(allowed)}")
        if value not in chosen:
            chosen.append(value)
    if not chosen:
        raise InitError(f"no {what} chosen", code=f"{what}-unknown", hint=f"choose from: {', '.join(allowed)}")
    # Keep the canonical order, so the output does not depend on how they were typed.
    return tuple(v for v in allowed if v in chosen)


def default_out(name: str, cwd: Path | None = None) -> Path:
    """`kernels-src/NAME` in the workspace holding `cwd`, else `./NAME`."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    workspace = find_workspace(cwd)
    return (workspace / "kernels-src" / name) if workspace else (cwd / name)


def _namespace(out: Path) -> str:
    existing = next((p for p in (out, *out.parents) if p.exists()), Path.cwd())
    workspace = find_workspace(existing)
    if workspace is None:
        return DEFAULT_NAMESPACE
    try:
        value = toml.loads(toml.read_text(workspace / "build.toml"))["workspace"].get("namespace")
    except (KeyError, OSError, UnicodeDecodeError, toml.TOMLDecodeError):
        return DEFAULT_NAMESPACE
    return value if isinstance(value, str) and value else DEFAULT_NAMESPACE


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_ROOT)),
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined, autoescape=False,
    )


def _template_files(template: str, backends: tuple[str, ...]) -> dict[str, str]:
    """Output path (with {py}) -> template name, `common/` first, then the template's own."""
    files: dict[str, str] = {}
    for layer in ("common", template):
        base = TEMPLATE_ROOT / layer
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            rel = path.relative_to(base).as_posix()
            if rel == "template.toml" or "__pycache__" in rel:
                continue
            first = rel.split("/")[0]
            backend = next((b for b in BACKENDS if first == f"{_PATH_TOKEN}_{b}"), None)
            if backend is not None and backend not in backends:
                continue
            out_rel = rel[:-3] if rel.endswith(".j2") else rel
            parts = out_rel.split("/")
            parts[-1] = _RENAMES.get(parts[-1], parts[-1])
            files["/".join(parts)] = f"{layer}/{rel}"
    return files


def render(name: str, template: str, out: Path | None = None, *, backends: Iterable[str] = BACKENDS,
           dtypes: Iterable[str] = DTYPES, cwd: Path | None = None) -> InitResult:
    """Write a new project for `name` from `template` into `out` (see module docstring)."""
    python_name = check_name(name)
    if template not in TEMPLATES:
        raise InitError(f"unknown template {template!r}", code="template-unknown",
                        hint=f"choose from: {', '.join(TEMPLATES)}")
    backends = _choices(backends, BACKENDS, "backend")
    dtypes = _choices(dtypes, DTYPES, "dtype")
    out = Path(out) if out is not None else default_out(name, cwd)
    require_out_path(out, "directory", InitError, "--out")
    if out.is_dir() and any(out.iterdir()):
        raise InitError("the output directory is not empty; init never overwrites files", path=str(out),
                        code="out-not-empty", hint="pass --out with a new or empty directory, or remove this one")

    env = _environment()
    spec = toml.loads((TEMPLATE_ROOT / template / "template.toml").read_text(encoding="utf-8"))
    context = {
        "name": name, "py": python_name, "template": template, "backends": list(backends),
        "dtypes": list(dtypes), "repo_id": f"{_namespace(out)}/{name}", "torch_dtypes": _TORCH_DTYPES,
        "dtype_names": ", ".join(_TORCH_DTYPES[d] for d in dtypes),
        # Benchmarks use the narrowest dtype chosen: what the GPU runs fastest.
        "bench_dtype": dtypes[0],
    }
    for key in ("summary", "schema", "cxx_params"):
        context[key] = env.from_string(spec[key]).render(context)

    written: list[str] = []
    with staged_dir(out) as tmp:
        for out_rel, template_name in _template_files(template, backends).items():
            target = tmp / out_rel.replace(_PATH_TOKEN, python_name)
            target.parent.mkdir(parents=True, exist_ok=True)
            if template_name.endswith(".j2"):
                target.write_text(env.get_template(template_name).render(context), encoding="utf-8")
            else:
                target.write_bytes((TEMPLATE_ROOT / template_name).read_bytes())
            written.append(target.relative_to(tmp).as_posix())
    return InitResult(root=out, name=name, python_name=python_name, template=template, backends=backends,
                      dtypes=dtypes, repo_id=context["repo_id"], files=tuple(sorted(written)))

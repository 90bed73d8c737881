"""The rule table (pipeline/data/rules.toml), the problem sink, and kernels' parser.

Every problem is added through `Sink.add(code, ...)`: severity and hint come
from the table, so a code missing from it is a bug that fails loudly.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from pipeline import toml
from pipeline.errors import Problem, ValidationError

RULES_FILE = Path(__file__).resolve().parents[1] / "data" / "rules.toml"
LOAD_ENV_FILE = RULES_FILE.with_name("load_environment.toml")


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
    rocm_archs: tuple[str, ...]
    always_importable: frozenset[str]
    provides: dict[str, tuple[str, ...]]
    backend_imports: dict[str, tuple[str, ...]]
    framework_imports: dict[str, tuple[str, ...]]


@functools.lru_cache(maxsize=1)
def rule_data() -> _Data:
    doc = toml.loads(RULES_FILE.read_text(encoding="utf-8"))
    env = toml.loads(LOAD_ENV_FILE.read_text(encoding="utf-8"))["imports"]
    rules = {code: Rule(code=code, severity=r["severity"], title=r["title"], hint=r["hint"],
                        example=r.get("example", ""))
             for code, r in doc["rules"].items()}
    tables = ("provides", "backends", "frameworks")
    always = {name for key, names in env.items() if key not in tables for name in names}
    return _Data(rules=rules, cuda_capabilities=tuple(doc["cuda"]["capabilities"]),
                 rocm_archs=tuple(doc["rocm"]["archs"]), always_importable=frozenset(always),
                 provides={k: tuple(v) for k, v in env.get("provides", {}).items()},
                 backend_imports={k: tuple(v) for k, v in env.get("backends", {}).items()},
                 framework_imports={k: tuple(v) for k, v in env.get("frameworks", {}).items()})


def kernels_dir() -> Path:
    """kernels' install directory, found without importing the package: its
    __init__ pulls in huggingface_hub's HTTP stack (~0.3 s), and validate must
    stay well under a second."""
    import importlib.util

    spec = importlib.util.find_spec("kernels")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kernels is not installed", name="kernels")
    return Path(list(spec.submodule_search_locations)[0])


@functools.lru_cache(maxsize=1)
def kernels_rust():
    """kernels._rust (Build, KernelName, Version): the reference parser.

    Loaded straight from its extension file and registered under its own name,
    so a later `import kernels` finds and reuses this very module."""
    if "kernels._rust" in sys.modules:
        return sys.modules["kernels._rust"]
    import importlib.util

    candidates = sorted(kernels_dir().glob("_rust*.so")) + sorted(kernels_dir().glob("_rust*.pyd"))
    if not candidates:
        try:
            import kernels._rust as rust  # unusual install: take the slow path
        except ModuleNotFoundError:
            # kernels 0.16 has no build.toml parser: the pipeline needs 0.17 (users' 0.16 is
            # proved by verify's consumer environments).
            raise ValidationError("this kernels release has no build.toml parser (kernels._rust)",
                                  code="kernels-missing",
                                  hint="pip install 'kernels>=0.17.2,<0.18' where the pipeline runs; "
                                       "kernels 0.16 is supported as a consumer (verify checks it)") from None
        return rust
    spec = importlib.util.spec_from_file_location("kernels._rust", candidates[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["kernels._rust"] = module
    return module


def load_rules() -> dict[str, Rule]:
    """The rule table, code → Rule (pipeline/data/rules.toml), in file order."""
    return dict(rule_data().rules)


class Sink:
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
        rule = rule_data().rules[code]  # KeyError here is a bug: every code must be in the table
        text = f"{hint.strip()} {rule.hint[:1].upper()}{rule.hint[1:]}" if hint.strip() else rule.hint
        self.problems.append(Problem(path=self.where(rel), line=line, code=code, message=message,
                                     hint=text, severity=rule.severity))  # type: ignore[arg-type]

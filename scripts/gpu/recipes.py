"""The device recipes (scripts/gpu/recipes.toml) as values: a recipe resolved for a card and the
options given, its plan within the time budget (each step with its estimate), and what in it names
nothing real. No GPU needed: run.py's `--dry-run` and tests/integration/test_gpu_scripts.py use it.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "scripts" / "gpu"
RECIPES_FILE = GPU / "recipes.toml"
TUNE = GPU / "tune"
CARDS = ("H100", "H200")
STEPS = ("build", "check", "smoke", "bench", "model", "shapes", "sweep", "corpus", "sass", "repro", "harness")


@dataclass(frozen=True)
class Recipe:
    name: str
    about: str
    steps: tuple[str, ...]
    kernels: tuple[str, ...]
    budget: int
    dtypes: tuple[str, ...] = ("bfloat16",)
    samples: int = 1
    seeds: int = 2
    reps: int = 100
    sets: tuple[str, ...] = ()
    models: dict = field(default_factory=dict)
    model_args: tuple[str, ...] = ()
    consumers: str = ""
    corpus: str = ".gpu/corpus"
    against: str = ""
    jobs: int = 4  # corpus: projects run at once (their builds share the cores)
    flaws: tuple[str, ...] = ()  # harness: the planted flaws (tests/fixtures/planted) to smoke


@dataclass(frozen=True)
class Task:
    step: str
    kernels: tuple[str, ...] = ()
    detail: str = ""  # bench: the dtype; sweep: the set; corpus: the project; model: the model
    seconds: int = 0


def load(path: Path = RECIPES_FILE) -> dict:
    return tomllib.loads(path.read_text())


def resolve(name: str, card: str, overrides: dict | None = None, data: dict | None = None) -> Recipe:
    """Recipe `name` with its `on.<card>` table and then `overrides` (the options given) applied."""
    data = data or load()
    if name not in data["recipe"]:
        raise SystemExit(f"no recipe {name!r}: one of {', '.join(sorted(data['recipe']))}")
    raw = {k: v for k, v in data["recipe"][name].items() if k != "on"}
    raw.update(data["recipe"][name].get("on", {}).get(card, {}))
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
    return Recipe(name=name, **fields)


def cost(seconds: dict, step: str, kernel: str | None = None) -> int:
    value = seconds[step]
    return int(value.get(kernel, value["default"]) if isinstance(value, dict) else value)


def project_of(sweep_set: str) -> str:
    return sweep_set.split("-")[0].rstrip("0123456789")


def corpus_projects(recipe: Recipe) -> list[Path]:
    root = REPO / recipe.corpus
    return sorted(p.parent for p in root.glob("*/build.toml")) if root.is_dir() else []


def plan(recipe: Recipe, card: str, data: dict | None = None) -> tuple[list[Task], list[Task]]:
    """(tasks that fit the budget, tasks left out), in run order, each with its estimate."""
    seconds = (data or load())["seconds"][card]
    ks = recipe.kernels
    tasks = [Task("setup", seconds=cost(seconds, "setup"))]
    for step in recipe.steps:
        if step == "build":
            tasks.append(Task("build", ks, seconds=max(cost(seconds, "build", k) for k in ks)))
        elif step == "check":
            tasks.append(Task("check", ks, seconds=cost(seconds, "check") * len(ks)))
        elif step == "smoke":
            tasks.append(Task("smoke", ks, seconds=max(cost(seconds, "smoke", k) for k in ks)))
        elif step == "bench":
            tasks += [Task("bench", (k,), d, cost(seconds, "bench", k)) for k in ks for d in recipe.dtypes]
        elif step == "model":
            tasks += [Task("model", (k,), recipe.models[k], cost(seconds, "model")) for k in ks if k in recipe.models]
        elif step == "shapes":
            tasks += [Task("shapes", (k,), seconds=cost(seconds, "shapes")) for k in ks]
        elif step == "sweep":
            tasks += [Task("sweep", (project_of(s),), s, cost(seconds, "build", project_of(s)) + cost(seconds, "sweep"))
                      for s in recipe.sets]
        elif step == "corpus":
            projects = corpus_projects(recipe)
            rounds = -(-len(projects) // max(1, recipe.jobs))
            # A long corpus runs to the budget's end (the runner cuts it off there), not past it.
            estimate = min(cost(seconds, "corpus") * rounds, recipe.budget - cost(seconds, "setup"))
            tasks.append(Task("corpus", (), ",".join(p.name for p in projects), estimate))
        elif step == "harness":
            tasks += [Task("harness", (), flaw, cost(seconds, "harness")) for flaw in recipe.flaws]
        elif step == "sass":
            tasks.append(Task("sass", ks, recipe.against, cost(seconds, "sass")))
        elif step == "repro":
            tasks.append(Task("repro", seconds=cost(seconds, "repro")))
        else:
            raise SystemExit(f"recipe {recipe.name}: unknown step {step!r} (one of {', '.join(STEPS)})")
    fits, left, used = [], [], 0
    for task in tasks:
        if used + task.seconds <= recipe.budget or task.step == "setup":
            fits.append(task)
            used += task.seconds
        else:
            left.append(task)
    return fits, left


def problems(recipe: Recipe) -> list[str]:
    """What in `recipe` names nothing real: kernels, dtypes, sweep sets and their patches, models."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(GPU))
    from pipeline import bench, model_check

    found = []
    for k in recipe.kernels:
        if not (REPO / "kernels-src" / k / "build.toml").is_file():
            found.append(f"kernel {k}: no kernels-src/{k}/build.toml")
        elif "bench" in recipe.steps:
            found += [f"{k}: no bench cases in {d}" for d in recipe.dtypes
                      if d in bench.DTYPES and not bench.load_cases(REPO / "kernels-src" / k, d)]
    found += [f"dtype {d}: not one of {bench.DTYPES}" for d in recipe.dtypes if d not in bench.DTYPES]
    if "sweep" in recipe.steps:
        import sweep

        for s in recipe.sets:
            if s not in sweep.SWEEPS:
                found.append(f"sweep set {s}: not in scripts/gpu/sweep.py")
            elif not (TUNE / f"{project_of(s)}.patch").is_file():
                found.append(f"sweep set {s}: no scripts/gpu/tune/{project_of(s)}.patch")
    planted = (REPO / "tests" / "fixtures" / "planted" / "torch-ext" / "planted" / "op.py").read_text()
    found += [f"flaw {f}: tests/fixtures/planted plants no such flaw" for f in recipe.flaws if f'"{f}"' not in planted]
    for k, model in recipe.models.items():
        if model not in model_check.MODELS:
            found.append(f"model {model} ({k}): not one of {model_check.MODELS}")
    return found

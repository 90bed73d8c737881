"""The device runner (scripts/gpu/run.py, its recipes in recipes.toml read by recipes.py) and its
tools run only on a lent GPU, where a typo costs a call: every recipe resolves to real kernels, cases, sweep sets and patches on either card and
keeps to its budget; records are stamped, filed by card, and RUNS.md is what they say."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import bench

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "scripts" / "gpu"
FIELDS = {"RMSNORM_CONFIG": 6, "ADALN_CONFIG": 3, "GEGLU_CONFIG": 3}


def _script(name: str):
    """A Python script of scripts/gpu imported as a module (it runs nothing on import)."""
    sys.path.insert(0, str(GPU))
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


recipes = _script("recipes")
run = _script("run")
RECIPES = sorted(recipes.load()["recipe"])


@pytest.mark.parametrize("card", recipes.CARDS)
@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_resolves_to_real_cases(name, card):
    overrides = {"corpus": "tests/fixtures/projects", "against": "HEAD"}
    recipe = recipes.resolve(name, card, overrides)
    assert not recipes.problems(recipe), recipes.problems(recipe)
    tasks, left = recipes.plan(recipe, card)
    assert [t.step for t in tasks][0] == "setup" and len(tasks) > 1, "the recipe's first step fits its budget"
    assert sum(t.seconds for t in tasks) <= recipe.budget
    assert {t.step for t in tasks + left} - {"setup"} == set(recipe.steps) - {"corpus"} | (
        {"corpus"} if "corpus" in recipe.steps else set())
    for t in tasks + left:
        for k in t.kernels:
            assert (REPO / "kernels-src" / k / "build.toml").is_file(), k
        if t.step == "bench":
            assert bench.load_cases(REPO / "kernels-src" / t.kernels[0], t.detail), t
        if t.step == "smoke":
            assert all((REPO / "kernels-src" / k / "tests" / "smoke_cases.py").is_file() for k in t.kernels)
        if t.step == "corpus":
            assert all((REPO / recipe.corpus / p / "build.toml").is_file() for p in t.detail.split(","))
        if t.step == "harness":
            assert t.detail in recipe.flaws


def test_a_recipe_names_nothing_that_is_not_there():
    recipe = recipes.resolve("record", "H100", {"kernels": ("rmsnorm", "nothere"), "dtypes": ("float8",)})
    found = recipes.problems(recipe)
    assert any("nothere" in p for p in found) and any("float8" in p for p in found)
    harness = recipes.resolve("harness", "H100", {"flaws": ("oob-4097", "melts-the-gpu")})
    assert [p for p in recipes.problems(harness) if "flaw" in p] == [
        "flaw melts-the-gpu: tests/fixtures/planted plants no such flaw"]
    sweep = recipes.resolve("sweep", "H200", {"sets": ("rmsnorm-opq",)})
    assert any("rmsnorm-opq" in p for p in recipes.problems(sweep))


def test_plan_keeps_to_the_budget_and_the_card_decides_the_estimates():
    recipe = recipes.resolve("record", "H200", {"kernels": ("rmsnorm",), "dtypes": ("bfloat16", "float16", "float32")})
    tasks, left = recipes.plan(recipe, "H200")
    assert [t.detail for t in tasks if t.step == "bench"] == ["bfloat16", "float16"]
    assert [(t.step, t.detail) for t in left] == [("bench", "float32")]
    small = recipes.resolve("record", "H200", {"budget": 10})
    tasks, left = recipes.plan(small, "H200")
    assert [t.step for t in tasks] == ["setup"] and left  # setup always; the rest left out, none cut midway
    h100, _ = recipes.plan(recipes.resolve("record", "H100"), "H100")
    h200, _ = recipes.plan(recipes.resolve("record", "H200"), "H200")
    assert [t.seconds for t in h100] != [t.seconds for t in h200]


def test_a_cards_table_overrides_the_recipe(tmp_path):
    data = recipes.load()
    data["recipe"]["record"]["on"] = {"H100": {"kernels": ["rmsnorm"]}}
    assert recipes.resolve("record", "H100", data=data).kernels == ("rmsnorm",)
    assert recipes.resolve("record", "H200", data=data).kernels == ("rmsnorm", "geglu", "rope", "adaln")
    assert recipes.resolve("record", "H100", {"kernels": ("adaln",)}, data=data).kernels == ("adaln",)


def test_dry_run_prints_the_plan_and_runs_nothing(capsys, tmp_path):
    assert run.main(["record", "--dry-run", "--card", "H100", "--kernels", "rope", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "record on H100" in out and "bench rope bfloat16" in out
    assert not any(tmp_path.iterdir())


def test_records_carry_their_command_card_build_and_date(tmp_path):
    recipe = recipes.resolve("record", "H100", {"kernels": ("adaln",)})
    runner = run.Runner(recipe, "H100", "NVIDIA H100 80GB HBM3", tmp_path, ["record", "--kernels", "adaln"])
    path = runner.record_name("adaln", "-smoke")
    assert path.name == "adaln-h100-smoke.json"
    path.write_text(json.dumps({"kernel": "adaln", "kernel_id": "_adaln_cuda_abc1234", "passed": True}))
    runner.stamp(path, "python -m pipeline smoke /tmp/build-adaln", "adaln")
    stamp = json.loads(path.read_text())["run"]
    assert stamp["command"] == "python scripts/gpu/run.py record --kernels adaln"
    assert stamp["card"] == "H100" and stamp["build_id"] == "_adaln_cuda_abc1234" and stamp["date"].endswith("Z")
    assert stamp["step"].startswith("python -m pipeline smoke") and stamp["commit"]


def test_sass_comparison_masks_only_nvccs_per_file_id():
    a = "Function : _ZN39_GLOBAL__N__b1233d62_7_rope_cu_d925a83b18rope_scalar_kernelI13__nv_bfloat16EEvv"
    b = "Function : _ZN39_GLOBAL__N__1a222686_7_rope_cu_d925a83b18rope_scalar_kernelI13__nv_bfloat16EEvv"
    c = "Function : _ZN37_INTERNAL_1a222686_7_rope_cu_d925a83b4cuda3std3__4"
    assert run.FILE_ID.sub("<id>", a) == run.FILE_ID.sub("<id>", b) != a
    assert "<id>" in run.FILE_ID.sub("<id>", c)
    assert run.FILE_ID.sub("<id>", "Function : _ZN10geglu_cuda9geglu_vecI") == "Function : _ZN10geglu_cuda9geglu_vecI"


@pytest.mark.parametrize("patch", sorted((GPU / "tune").glob("*.patch")), ids=lambda p: p.name)
def test_tuning_patch_applies_to_the_shipped_source(patch, tmp_path):
    kernel = patch.stem
    shutil.copytree(REPO / "kernels-src" / kernel, tmp_path / "kernels-src" / kernel,
                    ignore=shutil.ignore_patterns("build", "__pycache__"))
    proc = subprocess.run(["git", "apply", "-p1", str(patch)], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    glue = next((tmp_path / "kernels-src" / kernel).glob("*_cuda/*.cu")).read_text()
    assert f'getenv("{kernel.upper()}_CONFIG")' in glue  # the override sweep.py sets


@pytest.mark.parametrize("name", sorted(_script("sweep").SWEEPS))
def test_sweep_names_real_cases(name):
    module = _script("sweep")
    variable, plan = module.SWEEPS[name]
    cases = set(module.sweep_cases(name))  # the bench's cases and more_shapes.py's
    assert set(plan) <= cases, sorted(set(plan) - cases)
    assert (GPU / "tune" / f"{module.project_of(name)}.patch").is_file()
    for configs in plan.values():
        for config in configs:
            fields = config.split(",")
            assert len(fields) == FIELDS[variable] and all(f.lstrip("-").isdigit() for f in fields), config


@pytest.mark.parametrize("script", sorted(GPU.glob("*.sh")), ids=lambda p: p.name)
def test_device_shell_script_parses(script):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_compare_bench_reports_the_run_drift_from_the_steady_baselines(tmp_path, capsys):
    module = _script("compare_bench")

    def case(name, kernel, eager, fused_eager, compiled, graph_eager=None):
        r = {"name": name, "times_us": {"kernel": kernel, "eager": eager, "add + F.rms_norm": fused_eager,
                                        "torch.compile": compiled}}
        if graph_eager:
            r["graph_times_us"] = {"kernel": kernel / 3, "eager": graph_eager, "torch.compile": compiled / 3}
        return r

    first = {"a": case("a", 10.0, 20.0, 30.0, 11.0, 4.0), "b": case("b", 5.0, 8.0, 12.0, 6.0),
             "c": case("c", 1.0, 2.0, 3.0, 1.0)}
    # the second run 2 % faster for every steady baseline; torch.compile drew a slower compile (ignored),
    # case c is not in the later record (a run with --only), d not in the first
    later = {"a": case("a", 9.0, 19.6, 29.4, 14.0, 4.0), "b": case("b", 4.5, 7.84, 11.76, 9.0),
             "d": case("d", 1.0, 1.0, 1.0, 1.0)}
    drift = module.baseline_drift(first, later)
    assert set(drift) == {"eager", "add + F.rms_norm"}
    assert all(abs(v - 0.98) < 1e-9 for v in drift.values())
    assert module.baseline_drift(first, later, "graph_times_us") == {"eager": 1.0}
    assert module.baseline_drift(first, first) == {"eager": 1.0, "add + F.rms_norm": 1.0}

    paths = []
    for n, rows in (("base", first), ("new", later)):
        p = tmp_path / f"{n}.json"
        p.write_text(json.dumps({"results": list(rows.values())}))
        paths.append(f"{n}={p}")
    assert module.main(paths) == 0
    out = capsys.readouterr().out
    assert "drift new against base, flushed: eager x0.980, add + F.rms_norm x0.980" in out
    assert "drift new against base, graph: eager x1.000" in out


@pytest.mark.parametrize("kernel", sorted(_script("more_shapes").CASES))
def test_more_shapes_are_well_formed_cases_outside_the_benchmark(kernel):
    """more_shapes.py exists to time what the benchmark does not: each of its cases follows bench's
    case contract, names are unique, and none repeats a bench case (in any dtype it is run in)."""
    module = _script("more_shapes")
    for dtype in bench.DTYPES:
        cases = module.CASES[kernel](dtype)
        assert cases and not bench.case_problems(cases, dtype), bench.case_problems(cases, dtype)
        for case in cases:
            assert callable(case["setup"]) and "torch.compile" in case["baselines"], case["name"]
        names = [c["name"] for c in cases]
        known = {c["name"] for c in bench.load_cases(REPO / "kernels-src" / kernel, dtype)}
        assert not set(names) & known, sorted(set(names) & known)


def test_take_records_files_each_record_under_the_card_it_names(tmp_path):
    module = _script("take_records")
    record = json.loads((REPO / "kernels-src" / "adaln" / "benchmarks" / "results" / "h100.json").read_text())
    results, kernels = tmp_path / "results", tmp_path / "kernels-src"
    results.mkdir()
    for k in ("adaln", "softmax-triton"):
        (kernels / k / "benchmarks" / "results").mkdir(parents=True)
    (results / "adaln-h200.json").write_text(json.dumps(record))  # an H100's record under an H200's name
    (results / "adaln-h200.md").write_text("table")
    (results / "adaln-h100-float32.json").write_text(json.dumps({**record, "device": "NVIDIA H200"}))
    (results / "adaln-h100-check.json").write_text(json.dumps({"kernel": "adaln", "ok": True}))  # not a record
    (results / "nothere-h100.json").write_text(json.dumps({**record, "kernel": "nothere"}))  # no such project
    (results / "softmax-triton-h200.json").write_text(json.dumps({**record, "kernel": "softmax-triton",
                                                                  "device": "NVIDIA H200"}))
    smoke = {"kernel": "adaln", "device": "NVIDIA H100 80GB HBM3", "passed": True, "counts": {"total": 3}}
    (results / "adaln-h100-smoke.json").write_text(json.dumps(smoke))
    model = {"ok": True, "models": [{"model": "qwen3", "device_name": "NVIDIA H200", "cases": []}]}
    (results / "adaln-h200-model.json").write_text(json.dumps(model))
    assert module.main([str(results), "--kernels", str(kernels)]) == 0
    filed = kernels / "adaln" / "benchmarks" / "results"
    assert sorted(p.name for p in filed.iterdir()) == ["h100-smoke.json", "h100.json", "h100.md",
                                                       "h200-float32.json", "model-h200.json"]
    assert json.loads((filed / "h100-smoke.json").read_text()) == smoke
    assert json.loads((filed / "h100.json").read_text()) == record
    assert (kernels / "softmax-triton" / "benchmarks" / "results" / "h200.json").is_file()
    (results / "adaln-h200.json").write_text(json.dumps({**record, "device": "NVIDIA A100"}))
    with pytest.raises(ValueError, match="no known card"):
        module.plan(results, kernels)


def test_runs_md_is_what_the_records_say():
    module = _script("runs")
    assert module.main(["--check"]) == 0, "RUNS.md is stale: python3 scripts/gpu/runs.py"
    text = (GPU / "RUNS.md").read_text()
    for path in REPO.glob("kernels-src/*/benchmarks/results/*.json"):
        assert f"`{path.relative_to(REPO).as_posix()}`" in text


def test_runs_md_row_takes_the_stamp_over_the_records_own_fields(tmp_path):
    module = _script("runs")
    path = REPO / "kernels-src" / "adaln" / "benchmarks" / "results" / "h100.json"
    row = module.row(path)
    assert "| H100 |" in row and "`python -m pipeline bench /tmp/build-adaln" in row
    assert module.MISSING in row  # no commit: made before run.py stamped records

"""The device scripts (scripts/gpu) are only run on a lent GPU, where a typo costs a call:
every shell script parses, and every sweep names real bench (or more_shapes) cases with well-formed configurations."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
from pathlib import Path

import pytest

from pipeline import bench

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "scripts" / "gpu"
FIELDS = {"RMSNORM_CONFIG": 6, "ADALN_CONFIG": 3, "GEGLU_CONFIG": 3}


@pytest.mark.parametrize("script", sorted(GPU.glob("*.sh")), ids=lambda p: p.name)
def test_device_script_parses(script):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _script(name: str):
    """A Python script of scripts/gpu imported as a module (it runs nothing on import)."""
    spec = importlib.util.spec_from_file_location(f"gpu_{name}", GPU / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(_script("sweep").SWEEPS))
def test_sweep_names_real_cases(name):
    module = _script("sweep")
    variable, plan = module.SWEEPS[name]
    cases = set(module.sweep_cases(name))  # the bench's cases and more_shapes.py's
    assert set(plan) <= cases, sorted(set(plan) - cases)
    for configs in plan.values():
        for config in configs:
            fields = config.split(",")
            assert len(fields) == FIELDS[variable] and all(f.lstrip("-").isdigit() for f in fields), config


def _variant_specs():
    for script in sorted(GPU.glob("*.sh")):
        for line in script.read_text().replace("\\\n", " ").splitlines():  # continued lines joined
            if line.startswith("variants "):
                yield from ((script.name, spec) for spec in line.split()[1:])


@pytest.mark.parametrize("script,spec", list(_variant_specs()), ids=lambda v: v)
def test_variant_flags_name_a_knob_of_the_kernel(script, spec):
    kernel, name, tag, dtype, flag = spec.split(":")
    assert dtype in ("bfloat16", "float16", "float32") and name and tag
    sources = [p for p in (REPO / "kernels-src" / kernel).rglob("*") if p.suffix in (".cu", ".cuh", ".h")]
    # A past call's script whose knobs were removed afterwards says so, with the commit that has them.
    header = (GPU / script).read_text().replace("\n# ", " ")
    removed = re.search(r"(\S+) (?:and (\S+) )?(?:was|were) removed after this call \(not shipped; "
                        r"(?:it is|they are) in commit [0-9a-f]{7}", header)
    for one in flag.split(","):  # several flags, comma-separated
        knob = one.removeprefix("-D").split("=")[0]
        if removed and knob in removed.groups():
            continue
        assert any(f"#ifndef {knob}\n" in p.read_text() for p in sources), f"{script}: {knob} is no knob of {kernel}"


def test_variants_sets_the_steps_run_all_runs(tmp_path):
    # variants.sh with a stub variant_build.sh: the smoke and bench steps it hands run_all_h200.sh parse,
    # smoke every variant and compare each with the shipped build's record of its dtype.
    (tmp_path / "scripts" / "gpu").mkdir(parents=True)
    (tmp_path / "scripts" / "gpu" / "variants.sh").write_text((GPU / "variants.sh").read_text())
    (tmp_path / "scripts" / "gpu" / "variant_build.sh").write_text('echo "built $*" >> built.txt\n')
    script = ('source scripts/gpu/variants.sh; variants a:a-x:x:bfloat16:-DA_X=1 b:b-y:y:float32:-DB_Y=2,-DB_Z=3; wait; '
              'printf "%s" "$VARIANT_SMOKES" > smokes.sh; printf "%s" "$VARIANT_BENCHES" > benches.sh')
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True)
    # the builds run in the background, in either order
    built = sorted((tmp_path / "built.txt").read_text().splitlines())
    assert built == ["built a a-x -DA_X=1", "built b b-y -DB_Y=2 -DB_Z=3"]
    for step in ("smokes.sh", "benches.sh"):
        assert subprocess.run(["bash", "-n", str(tmp_path / step)]).returncode == 0
    smokes, benches = (tmp_path / "smokes.sh").read_text(), (tmp_path / "benches.sh").read_text()
    assert "for name in a-x b-y;" in smokes and "--seeds 2" in smokes
    assert 'base="$RES/a-h200.json" x="$RES/a-x-h200.json"' in benches
    assert "--dtype float32" in benches and 'base="$RES/b-h200-float32.json" y="$RES/b-y-h200-float32.json"' in benches


def test_sweep_pick_takes_the_fastest_configuration_timed_everywhere(tmp_path):
    module = _script("sweep_pick")
    rows = [
        {"case": "a", "config": "rule", "us": 10.0}, {"case": "b", "config": "rule", "us": 20.0},
        {"case": "a", "config": "9,1", "us": 9.0}, {"case": "b", "config": "9,1", "us": 21.0},   # 0.975
        {"case": "a", "config": "9,2", "us": 9.5}, {"case": "b", "config": "9,2", "us": 19.0},   # 0.95
        {"case": "a", "config": "9,3", "us": 5.0},                                                # not timed at b
        {"case": "a", "config": "9,4", "us": 1.0}, {"case": "b", "config": "9,4", "error": "x"},  # wrong at b
        {"case": "a", "config": "6,1", "us": 1.0}, {"case": "b", "config": "6,1", "us": 1.0},    # other prefix
    ]
    best, mean = module.pick(rows, "9,")
    assert best == "9,2" and abs(mean - 0.95) < 1e-9
    assert module.pick(rows, "7,") is None


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
    (kernels / "adaln" / "benchmarks" / "results").mkdir(parents=True)
    (results / "adaln-h200.json").write_text(json.dumps(record))  # an H100's record, under run_all's name
    (results / "adaln-h200.md").write_text("table")
    (results / "adaln-h200-float32.json").write_text(json.dumps({**record, "device": "NVIDIA H200"}))
    (results / "adaln-h200-check.json").write_text(json.dumps({"kernel": "adaln", "ok": True}))  # not a record
    (results / "nothere-h200.json").write_text(json.dumps({**record, "kernel": "nothere"}))  # no such project
    smoke = {"kernel": "adaln", "device": "NVIDIA H100 80GB HBM3", "passed": True, "counts": {"total": 3}}
    (results / "adaln-smoke.json").write_text(json.dumps(smoke))
    assert module.main([str(results), "--kernels", str(kernels)]) == 0
    filed = kernels / "adaln" / "benchmarks" / "results"
    assert sorted(p.name for p in filed.iterdir()) == ["h100-smoke.json", "h100.json", "h100.md", "h200-float32.json"]
    assert json.loads((filed / "h100-smoke.json").read_text()) == smoke
    assert json.loads((filed / "h100.json").read_text()) == record
    (results / "adaln-h200.json").write_text(json.dumps({**record, "device": "NVIDIA A100"}))
    with pytest.raises(ValueError, match="no known card"):
        module.plan(results, kernels)

"""pipeline.bench: the timing loop, report, Markdown table and plot on fake
ops (fast); the CLI on a real CPU build of rmsnorm (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
import types
import weakref
from pathlib import Path

import pytest
import torch

from pipeline import bench, bench_report
from pipeline.errors import BenchError

REPO = Path(__file__).resolve().parents[2]
RMSNORM = REPO / "kernels-src" / "rmsnorm"


def _fake_cases(n=2048):
    def setup(kernel, device):
        x = torch.randn(64, n)
        return {
            "kernel": lambda: kernel.double(x),
            "slow": lambda: sum([x for _ in range(8)]) / 4,
            "off": lambda: x * 2.5,
        }

    return [{"name": f"double/64x{n}", "op": "double", "group": "toy", "shape": f"64x{n}", "dtype": "float32",
             "bytes": 2 * 64 * n * 4, "setup": setup, "baselines": ("slow", "off")}]


def _report(cases=None, reps=5):
    module = types.SimpleNamespace(double=lambda x: x * 2)
    copy_gbs, results = bench.run_cases(module, cases or _fake_cases(), torch.device("cpu"), reps=reps, warmup=1)
    return bench.BenchReport(kernel="toy", kernel_id="_toy_cpu_1", variant="torch-cpu", device="cpu", torch="x",
                             copy_gbs=copy_gbs, method={"timer": "host perf_counter", "reps": reps, "warmup": 1},
                             cases=tuple(results), command="python -m pipeline bench toy")


def test_timer_median_and_reps():
    calls = []
    timer = bench.Timer(torch.device("cpu"), reps=11, warmup=3)
    t = timer(lambda: calls.append(1))
    assert len(calls) == 14
    assert t.reps == 11 and t.min_us <= t.median_us <= t.p90_us


def test_report_figures_are_consistent():
    data = _report().to_json()
    row = data["results"][0]
    assert set(row["times_us"]) == {"kernel", "slow", "off"}
    assert row["speedup"]["slow"] == pytest.approx(row["times_us"]["slow"] / row["times_us"]["kernel"], rel=1e-2)
    assert row["bandwidth_gbs"]["kernel"] == pytest.approx(row["bytes"] / (row["times_us"]["kernel"] * 1e3), rel=1e-2)
    assert row["copy_fraction"]["kernel"] == pytest.approx(row["bandwidth_gbs"]["kernel"] / data["copy_bandwidth_gbs"],
                                                           rel=2e-2)
    # Each baseline's output is compared with the kernel's.
    assert row["max_rel_diff"]["slow"] == pytest.approx(0.0, abs=1e-6)
    assert row["max_rel_diff"]["off"] == pytest.approx(0.25, rel=1e-3)
    assert data["copy_bandwidth_gbs"] > 0


def test_cases_from_64_mib_are_also_measured_against_a_copy_of_their_own_bytes(tmp_path):
    module = types.SimpleNamespace(double=lambda x: x * 2)
    copy_gbs, results = bench.run_cases(module, _fake_cases(), torch.device("cpu"), reps=3, warmup=1,
                                        same_size_min_bytes=0)
    report = bench.BenchReport(kernel="toy", kernel_id="_toy_cpu_1", variant="torch-cpu", device="cpu", torch="x",
                               copy_gbs=copy_gbs, method={"timer": "host perf_counter", "reps": 3, "warmup": 1},
                               cases=tuple(results))
    row = report.to_json()["results"][0]
    assert row["same_size_copy_us"] > 0
    for impl in ("kernel", "slow", "off"):
        assert row["same_size_copy_fraction"][impl] == pytest.approx(row["same_size_copy_us"] / row["times_us"][impl],
                                                                     rel=1e-2)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report.to_json()))
    table = bench.markdown_table(path)
    assert "| of same-size copy |" in table and f"| {row['same_size_copy_fraction']['kernel']:.2f} |" in table
    # Below the threshold (the default's 64 MiB here) no copy is timed and the table has no such column.
    assert "same_size_copy_us" not in _report().to_json()["results"][0]


def test_a_bandwidth_miss_names_the_same_size_copy_fraction_too():
    row = {"name": "op/big", "op": "op", "group": "g", "shape": "big", "dtype": "bfloat16", "bytes": 128 << 20,
           "baselines": ["b"], "times_us": {"kernel": 1.0, "b": 2.0}, "copy_fraction": {"kernel": 0.8, "b": 0.4},
           "same_size_copy_fraction": {"kernel": 0.93, "b": 0.47}}
    data = {"kernel": "k", "device": "d", "torch": "t", "variant": "v", "method": {"reps": 1, "timer": "x"},
            "copy_bandwidth_gbs": 4000.0, "results": [row]}
    assert bench.target_misses(data) == [
        "op/big: 0.800 of copy bandwidth (target 0.90 from 64 MiB); 0.930 of a copy of the same bytes"]


def test_markdown_table_from_json(tmp_path):
    data = _report().to_json()
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    table = bench.markdown_table(path)
    row = data["results"][0]
    assert "| toy | 64x2048 |" in table
    assert f"{row['times_us']['kernel']:.1f}" in table
    assert f"{row['speedup']['slow']:.2f}" in table
    assert "× vs slow" in table and "`python -m pipeline bench toy`" in table
    assert table == bench.markdown_table(data)


def test_plot_writes_png(tmp_path):
    out = bench.plot(_report().to_json(), tmp_path / "p.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _fake_graph(self, fn, calls=bench.GRAPH_CALLS):
    # CPU stand-in for CUDA-graph replay: the same per-call statistic, host-timed.
    if getattr(fn, "uncapturable", False):
        raise RuntimeError("operation not permitted when stream is capturing")
    return bench.Timer.__call__(self, fn)


def test_graph_replay_figures_in_report_and_table(monkeypatch, tmp_path):
    monkeypatch.setattr(bench.Timer, "graph", _fake_graph)
    module = types.SimpleNamespace(double=lambda x: x * 2)
    cases = _fake_cases()
    setup = cases[0]["setup"]

    def setup_with_uncapturable(kernel, device):
        fns = setup(kernel, device)
        off = fns["off"]
        fns["off"] = lambda: off()
        fns["off"].uncapturable = True
        return fns

    cases[0]["setup"] = setup_with_uncapturable
    copy_gbs, results = bench.run_cases(module, cases, torch.device("cpu"), reps=5, warmup=1, graph=True)
    report = bench.BenchReport(kernel="toy", kernel_id="k", variant="torch-cpu", device="cpu", torch="x",
                               copy_gbs=copy_gbs, method={"timer": "host", "reps": 5, "warmup": 1},
                               cases=tuple(results))
    row = report.to_json()["results"][0]
    assert set(row["graph_times_us"]) == {"kernel", "slow"}
    assert row["graph_speedup"]["slow"] == pytest.approx(
        row["graph_times_us"]["slow"] / row["graph_times_us"]["kernel"], rel=1e-2)
    assert "off" not in row["graph_speedup"] and "capturing" in row["graph_errors"]["off"]
    table = bench.markdown_table(report.to_json())
    assert "**double, under CUDA-graph replay**" in table
    # Without graph=True a CPU run has no graph figures at all.
    _, plain = bench.run_cases(module, _fake_cases(), torch.device("cpu"), reps=3, warmup=1)
    assert plain[0].graph_timings == {} and "graph_times_us" not in bench.BenchReport(
        kernel="t", kernel_id="k", variant="v", device="cpu", torch="x", copy_gbs=1.0, method={},
        cases=tuple(plain)).to_json()["results"][0]
    out = bench.plot(report.to_json(), tmp_path / "g.png")
    assert out.stat().st_size > 0


def test_wants_graph_by_size_and_by_key():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert bench.wants_graph({"bytes": bench.GRAPH_MAX_BYTES}, cuda)
    assert not bench.wants_graph({"bytes": bench.GRAPH_MAX_BYTES + 1}, cuda)
    assert not bench.wants_graph({"bytes": 1}, cpu)
    assert bench.wants_graph({"bytes": 1 << 40, "graph": True}, cuda)
    assert not bench.wants_graph({"bytes": 1, "graph": False}, cuda)


def test_samples_are_fresh_setups_and_give_the_spread(monkeypatch):
    monkeypatch.setattr(bench.Timer, "graph", _fake_graph)
    setups, alive_at_setup = [], []

    def setup(kernel, device):
        # the previous sample's tensors are still held while this one allocates (new addresses)
        alive_at_setup.append(bool(setups) and setups[-1]() is not None)
        x = torch.randn(64, 1024)
        setups.append(weakref.ref(x))
        return {"kernel": lambda: kernel.double(x), "slow": lambda: sum([x for _ in range(8)]) / 4}

    case = {"name": "double/64x1024", "op": "double", "group": "toy", "shape": "64x1024", "dtype": "float32",
            "bytes": 2 * 64 * 1024 * 4, "setup": setup, "baselines": ("slow",)}
    module = types.SimpleNamespace(double=lambda x: x * 2)
    _, (result,) = bench.run_cases(module, [case], torch.device("cpu"), reps=4, warmup=1, samples=3, graph=True)
    assert alive_at_setup == [False, True, True]
    assert all(ref() is None for ref in setups)  # and nothing is held after the case
    for impl in ("kernel", "slow"):
        t = result.timings[impl]
        assert len(t.samples_us) == 3 and t.median_us == sorted(t.samples_us)[1] and t.reps == 12
        assert t.spread_us == (min(t.samples_us), max(t.samples_us))
        assert len(result.graph_timings[impl].samples_us) == 3
    report = bench.BenchReport(kernel="toy", kernel_id="_toy_cpu_1", variant="torch-cpu", device="cpu", torch="x",
                               copy_gbs=1.0, method={"timer": "host perf_counter", "reps": 4, "samples": 3},
                               cases=(result,))
    row = report.to_json()["results"][0]
    assert row["spread_us"]["kernel"] == [round(v, 3) for v in result.timings["kernel"].spread_us]
    assert set(row["graph_spread_us"]) == {"kernel", "slow"}
    table = bench.markdown_table(report.to_json())
    assert "median of 3 samples" in table and "–" in table.split("| toy |")[1].split("\n")[0]
    # one sample: no spread anywhere, as before
    _, (single,) = bench.run_cases(module, [case], torch.device("cpu"), reps=2, warmup=1)
    assert single.timings["kernel"].spread_us is None and "spread_us" not in bench.BenchReport(
        kernel="toy", kernel_id="k", variant="v", device="cpu", torch="x", copy_gbs=1.0,
        method={"timer": "t", "reps": 2}, cases=(single,)).to_json()["results"][0]
    with pytest.raises(bench.BenchError, match="samples must be at least 1"):
        bench.run_cases(module, [case], torch.device("cpu"), reps=2, warmup=1, samples=0)


def test_every_sample_compiles_its_baseline_afresh(monkeypatch):
    # Inductor's autotuning pick differs between compiles (the H200 records: torch.compile's fused
    # 64x4096 under graph replay 1.96-2.06 or 2.28-2.31 µs by run): a sample that reused the first
    # one's kernel, through dynamo's cache or Inductor's, would not sample that choice.
    import torch._dynamo
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(bench.Timer, "graph", _fake_graph)
    resets, seen = [], []
    real_reset = torch._dynamo.reset
    monkeypatch.setattr(torch._dynamo, "reset", lambda: (resets.append(1), real_reset())[1])

    def setup(kernel, device):
        seen.append((len(resets), inductor_config.force_disable_caches))
        x = torch.randn(8, 8)
        return {"kernel": lambda: x * 2, "b": lambda: x + x}

    case = {"name": "t/8x8", "op": "t", "group": "toy", "shape": "8x8", "dtype": "float32", "bytes": 512,
            "setup": setup, "baselines": ("b",)}
    before = inductor_config.force_disable_caches
    bench.run_cases(types.SimpleNamespace(), [case, dict(case, name="t/8x8b")], torch.device("cpu"),
                    reps=2, warmup=1, samples=3)
    assert seen == [(1, True), (2, True), (3, True), (4, True), (5, True), (6, True)]
    assert inductor_config.force_disable_caches == before  # restored after the run


def test_a_baseline_compiled_per_sample_counts_with_its_fastest_compile():
    # Two of three compiles got Inductor's slower pick: the medians say the kernel wins, the
    # fastest compile says it loses; and the kernel counts with its own fastest sample too.
    row = {"name": "fused/64x4096", "dtype": "bfloat16", "bytes": 1 << 20, "baselines": ("eager", "torch.compile"),
           "times_us": {"kernel": 2.08, "eager": 6.2, "torch.compile": 2.27},
           "spread_us": {"kernel": [2.06, 2.09], "eager": [6.0, 6.3], "torch.compile": [1.97, 2.30]},
           "graph_times_us": {"kernel": 2.08, "eager": 6.2, "torch.compile": 2.27},
           "graph_spread_us": {"kernel": [2.07, 2.09], "eager": [6.0, 6.3], "torch.compile": [2.05, 2.30]},
           "copy_fraction": {"kernel": 0.1}}
    fresh = {"device": "H200", "torch": "x", "variant": "v", "copy_bandwidth_gbs": 1.0,
             "method": {"reps": 1, "timer": "t", "samples": 3, "torch_compile": "afresh"}, "results": [row]}
    misses = bench.target_misses(fresh)
    assert [m.split(":")[0] for m in misses] == ["fused/64x4096", "fused/64x4096 (graph replay)"]
    assert misses[0].startswith("fused/64x4096: torch.compile 1.97 µs, kernel 2.06 µs (fastest of 3 samples")
    assert "kernel 2.07 µs" in misses[1]
    # eager is deterministic: medians, as before; and a record whose samples shared one compile reads medians
    assert bench_report.compared_figures(fresh, row, "eager") == (2.08, 6.2, "")
    shared = dict(fresh, method={"reps": 1, "timer": "t", "samples": 3})
    assert bench.target_misses(shared) == []
    # the kernel's fastest sample beating the fastest compile is a win
    row["spread_us"]["kernel"] = [1.95, 2.09]
    row["graph_spread_us"]["kernel"] = [2.04, 2.09]
    assert bench.target_misses(fresh) == []


def test_a_miss_within_the_samples_spread_says_so():
    def row(name, kernel, base, spread):
        return {"name": name, "op": "o", "group": "g", "shape": "1x1", "dtype": "bfloat16", "bytes": 1 << 20,
                "baselines": ["b"], "times_us": {"kernel": kernel, "b": base}, "speedup": {"b": base / kernel},
                "copy_fraction": {"kernel": 0.5, "b": 0.5}, "spread_us": spread}

    data = {"device": "H200", "torch": "x", "variant": "v", "method": {"reps": 1, "timer": "t", "samples": 3},
            "copy_bandwidth_gbs": 4000.0, "results": [
                row("close", 2.0, 1.9, {"kernel": [1.95, 2.1], "b": [1.85, 1.98]}),
                row("clear", 2.0, 1.5, {"kernel": [1.95, 2.1], "b": [1.45, 1.55]}),
            ]}
    misses = bench.target_misses(data)
    assert misses[0] == "close: b 1.90 µs, kernel 2.00 µs (the samples overlap: kernel 1.95-2.10, b 1.85-1.98)"
    assert misses[1] == "clear: b 1.50 µs, kernel 2.00 µs"


def test_target_misses_names_every_loss():
    def row(name, kernel, base, nbytes, fraction, graph=None):
        r = {"name": name, "op": "o", "group": "g", "shape": "1x1", "dtype": "bfloat16", "bytes": nbytes,
             "baselines": ["b"], "times_us": {"kernel": kernel, "b": base}, "speedup": {"b": base / kernel},
             "copy_fraction": {"kernel": fraction, "b": fraction}}
        if graph:
            r["graph_times_us"] = graph
        return r

    data = {"device": "H200", "torch": "x", "variant": "v", "method": {"reps": 1, "timer": "t"},
            "copy_bandwidth_gbs": 4000.0, "results": [
                row("win", 1.0, 2.0, 100 << 20, 0.95),
                row("slow", 2.0, 1.5, 1 << 20, 0.10),
                row("tie", 2.0, 2.0, 1 << 20, 0.10),
                row("low-bw", 1.0, 2.0, 64 << 20, 0.85),
                row("graph", 1.0, 2.0, 1 << 20, 0.5, graph={"kernel": 2.0, "b": 1.9}),
                row("graph-tie", 1.0, 2.0, 1 << 20, 0.5, graph={"kernel": 2.0, "b": 2.0}),
            ]}
    misses = bench.target_misses(data)
    text = "\n".join(misses)
    assert not any(m.startswith("win") for m in misses)
    assert "slow: b 1.50 µs, kernel 2.00 µs" in text and "tie: b" in text
    assert "low-bw: 0.850 of copy bandwidth" in text
    assert "graph (graph replay): b 1.90 µs" in text
    assert "graph-tie" not in text  # under graph replay the target is at most equal
    assert "**Where the kernel does not win**" in bench.markdown_table(data)


def test_target_misses_outside_the_primary_dtype_only_when_behind():
    def row(name, kernel, base, graph=None, dtype="float16"):
        r = {"name": name, "op": "o", "group": "g", "shape": "1x1", "dtype": dtype, "bytes": 256 << 20,
             "baselines": ["b"], "times_us": {"kernel": kernel, "b": base}, "speedup": {"b": base / kernel},
             "copy_fraction": {"kernel": 0.5, "b": 0.5}}
        if graph:
            r["graph_times_us"] = graph
        return r

    data = {"device": "H200", "torch": "x", "variant": "v", "method": {"reps": 1, "timer": "t"},
            "copy_bandwidth_gbs": 4000.0, "results": [
                row("tie", 2.0, 2.0), row("behind", 2.0, 1.9), row("ahead", 1.0, 2.0),
                row("graph-behind", 1.0, 2.0, graph={"kernel": 2.0, "b": 1.9}),
                row("bf16-tie", 2.0, 2.0, dtype="bfloat16"),
            ]}
    text = "\n".join(bench.target_misses(data))
    assert "behind: b 1.90 µs" in text and "graph-behind (graph replay): b 1.90 µs" in text
    # a tie is not behind, and 0.5 of copy at 256 MiB is no miss outside bf16; in bf16 both are
    assert "tie: b" not in text.replace("bf16-tie", "") and "ahead" not in text
    assert "bf16-tie: b 2.00 µs" in text and "bf16-tie: 0.500 of copy bandwidth" in text
    assert "of copy bandwidth" not in text.replace("bf16-tie: 0.500 of copy bandwidth", "")
    only_fp16 = dict(data, results=data["results"][:4])
    assert "**Where the kernel is behind**" in bench.markdown_table(only_fp16)


@pytest.mark.parametrize("kernel", ["rmsnorm", "geglu", "rope", "adaln"])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_bench_cases_in_other_dtypes(kernel, dtype):
    # The same shapes, named alike, in the dtype asked for: the tensors really are that dtype
    # (the smallest case's eager baseline runs here, on the CPU) and the byte counts follow.
    project = REPO / "kernels-src" / kernel
    default = {c["name"]: c for c in bench.load_cases(project)}
    cases = bench.load_cases(project, dtype)
    assert [c["name"] for c in cases] == list(default)
    assert {c["dtype"] for c in cases} == {dtype} and {c["dtype"] for c in default.values()} == {"bfloat16"}
    assert all(c["bytes"] > default[c["name"]]["bytes"] for c in cases) if dtype == "float32" else \
        all(c["bytes"] == default[c["name"]]["bytes"] for c in cases)
    smallest = min(cases, key=lambda c: c["bytes"])
    eager = next(b for b in smallest["baselines"] if b != "torch.compile")
    out = smallest["setup"](types.SimpleNamespace(), torch.device("cpu"))[eager]()
    out = out[0] if isinstance(out, tuple) else out
    assert out.dtype == getattr(torch, dtype)


def test_dtype_runs_follow_the_contract(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    cases_file = tmp_path / "benchmarks" / "bench_cases.py"
    case = ("{'name': n, 'op': 'o', 'group': 'g', 'shape': '1', 'dtype': %s, 'bytes': 1, "
            "'setup': None, 'baselines': ()}")
    cases_file.write_text("def bench_cases():\n    return [%s for n in 'ab']\n" % (case % "'bfloat16'"))
    assert len(bench.load_cases(tmp_path)) == 2
    with pytest.raises(BenchError) as exc:
        bench.load_cases(tmp_path, "float16")
    assert exc.value.code == "bench-dtype-unsupported" and "def bench_cases(dtype" in exc.value.hint
    cases_file.write_text("def bench_cases(dtype='bfloat16'):\n    return [%s for n in 'ab']\n" % (case % "'bfloat16'"))
    with pytest.raises(BenchError) as exc:
        bench.load_cases(tmp_path, "float16")
    assert exc.value.code == "bench-cases-invalid" and "says dtype 'bfloat16' in a float16 run" in exc.value.message
    cases_file.write_text("def bench_cases(dtype='bfloat16'):\n    return [%s for n in 'aa']\n" % (case % "dtype"))
    with pytest.raises(BenchError) as exc:
        bench.load_cases(tmp_path, "float16")
    assert "case name 'a' is not unique" in exc.value.message
    with pytest.raises(BenchError) as exc:
        bench.load_cases(tmp_path, "int8")
    assert exc.value.code == "bench-dtype-unknown"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_graph_replay_on_cuda():
    timer = bench.Timer(torch.device("cuda"), reps=5, warmup=1)
    x = torch.randn(1024, device="cuda")
    t = timer.graph(lambda: x * 2, calls=4)
    assert t.reps == 5 and 0 < t.median_us < 1000


def test_case_that_raises_is_a_bench_error():
    def setup(kernel, device):
        raise RuntimeError("no memory")

    case = dict(_fake_cases()[0], setup=setup)
    with pytest.raises(BenchError, match="no memory"):
        _report([case])


def test_case_file_contract(tmp_path):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_cases.py").write_text("def bench_cases():\n    return [{'name': 'x'}]\n")
    with pytest.raises(BenchError) as exc:
        bench.load_cases(tmp_path)
    assert exc.value.code == "bench-cases-invalid"
    with pytest.raises(BenchError) as exc:
        bench.load_cases(tmp_path / "nothing")
    assert exc.value.code == "bench-cases-missing"


def test_rmsnorm_bench_cases_cover_the_brief():
    cases = bench.load_cases(RMSNORM)
    shapes = {(c["op"], c["shape"]) for c in cases}
    for tokens in (1, 8, 64, 128, 8192, 32768):
        assert ("rms_norm", f"{tokens}x4096") in shapes
        assert ("fused_add_rms_norm", f"{tokens}x4096") in shapes
    # issue 19: per-head norms, the hidden sizes of larger models, their decode batches
    for shape in ("65536x128", "70000x128", "262144x128", "262144x64", "8192x5120", "8192x7168", "4096x8192",
                  "2048x16384", "1x16384", "64x8192"):
        assert ("rms_norm", shape) in shapes, shape
    assert all(bench.wants_graph(c, torch.device("cuda")) for c in cases if c["shape"].split("x")[0] in ("1", "64"))
    assert any(s.endswith("x2048") for _, s in shapes) and any(s.endswith("x3072") for _, s in shapes)
    plain = [c for c in cases if c["op"] == "rms_norm"]
    assert all(c["baselines"] == ("eager", "F.rms_norm", "torch.compile") for c in plain)
    row = next(c for c in plain if c["shape"] == "8192x4096")
    assert row["bytes"] == 2 * 8192 * 4096 * 2 + 4096 * 2


# The cards the records were made on: results/<card>.json (bf16) and <card>-<dtype>.json. Issue 19's
# targets are the H200's; the device tool also lends H100s (the same sm_90 code), whose records are
# checked the same way against their own known misses.
CARDS = {name: word for word, name in bench_report.CARDS.items()}  # h200 -> H200


@pytest.mark.parametrize("card", sorted(CARDS))
@pytest.mark.parametrize("kernel", ["rmsnorm", "geglu", "rope", "adaln"])
def test_committed_results_have_their_command(kernel, card):
    path = REPO / "kernels-src" / kernel / "benchmarks" / "results" / f"{card}.json"
    assert path.exists(), f"{kernel}: no recorded {CARDS[card]} benchmark"
    data = json.loads(path.read_text())
    assert data["command"].startswith(f"python -m pipeline bench /tmp/build-{kernel} --kernel kernels-src/{kernel}")
    assert CARDS[card] in data["device"] and data["copy_bandwidth_gbs"] > 3000
    # KNOWN_MISSES marks each miss overlap or apart: only a record with three samples per case says which
    assert "--samples 3" in data["command"], "record with `--samples 3` (the method KNOWN_MISSES reads)"
    names = {r["name"] for r in data["results"]}
    cases = {c["name"] for c in bench.load_cases(REPO / "kernels-src" / kernel)}
    assert names == cases, "the recorded run must cover the kernel's current bench cases"
    assert "of copy BW" in bench.markdown_table(path)


# Issue 19's targets (faster than every baseline at every shape, at most equal to
# torch.compile under graph replay, >= 0.90 of copy from 64 MiB), read off each
# committed run. What the recorded runs still miss is listed here, by case and
# kind, with the reason in the kernel's benchmarks/NOTES.md ("Open misses, and
# why"): a re-recorded run that misses anything else fails, and one that
# stops missing a listed shape leaves a stale entry that the second test reports.
KNOWN_MISSES_H200 = {
    # H200 records of 2026-12-03's sixth session (commit 6f4aad8; the device scripts v24_h200.sh and
    # v26_h200.sh are in git history there), every case timed from three fresh setups (`--samples 3`: new tensors and a new
    # torch.compile each; the figure is the median). The sources are those the records before timed.
    # Each entry says whether the kernel's three samples and the baseline's overlap (the margin is
    # within what one build moves between setups) or lie apart (a loss this record shows); bandwidth
    # misses are under 0.90 of the 1 GiB copy, at 0.88-1.16 of a copy of the case's own bytes.
    # Reasons in each kernel's benchmarks/NOTES.md.
    # rmsnorm: the record of 2026-12-07's fourteenth session (commit 45043a9; `pipeline bench
    # --samples 3`, the command in the record): the build as shipped, every torch.compile compiled and
    # autotuned afresh per sample (bench.fresh_compiles); both sides count with their fastest sample
    # (bench_report.compared_figures). The build before (2026-12-04) is archive/v36-h200.json at 7a97039.
    "rmsnorm": {
        "rms_norm/4096x4096": {"bandwidth"},
        "rms_norm/65536x128": {"compile"},  # samples: compile overlap
        "rms_norm/70000x128": {"compile"},  # samples: compile overlap
        "rms_norm/262144x128": {"compile"},  # samples: compile overlap
        "rms_norm/262144x64": {"bandwidth"},
        "rms_norm/16384x128": {"compile"},  # samples: compile overlap
        "rms_norm/32768x128": {"compile"},  # samples: compile overlap
        "rms_norm/131072x128": {"bandwidth", "compile"},  # samples: compile apart
        "rms_norm/8192x7168": {"compile"},  # samples: compile apart
        "rms_norm/64x7168": {"compile", "graph"},  # samples: compile overlap, graph overlap
        "rms_norm/4096x8192": {"compile"},  # samples: compile apart
        "rms_norm/8192x2048": {"bandwidth"},
        "fused_add_rms_norm/2048x4096": {"bandwidth", "compile"},  # samples: compile overlap
    },
    "adaln": {
        "adaln/layer/8x4096x1152": {"bandwidth"},
    },
    "rope": {
        "rope/qwen3/1x32x4096x128": {"bandwidth", "compile"},  # samples: compile apart
        "rope/qwen3/1x32x16384x128": {"bandwidth", "compile"},  # samples: compile overlap
        "rope/qwen3/decode/1x32x1x128": {"compile", "graph"},  # samples: compile overlap, graph overlap
        "rope/qwen3/decode/8x32x1x128": {"compile", "graph"},  # samples: compile overlap, graph apart
        "rope/qwen3/decode/64x32x1x128": {"graph"},  # samples: graph apart
    },
    "geglu": {
        "geglu/tanh/gate-first/1x28672": {"compile", "graph"},  # samples: compile overlap, graph overlap
        "geglu/tanh/gate-first/8x28672": {"compile", "graph"},  # samples: compile apart, graph overlap
    },
}

# H100 records of 2026-12-07's thirteenth session (commit c1004d6, the device script v40_h200.sh in git
# history there; rmsnorm re-recorded as shipped in f264cac), the same
# method as the H200's rmsnorm record: `--samples 3`, torch.compile compiled afresh per sample, both
# sides counted with their fastest sample. Reasons in each kernel's benchmarks/NOTES.md ("Open
# misses, and why"): all are within 1-5 % of torch.compile, at its copy-bandwidth level or at
# the ~4.5 us launch floor of a decode step.
KNOWN_MISSES_H100 = {
    "rmsnorm": {
        "rms_norm/65536x128": {"compile"},  # samples: compile apart
        "rms_norm/70000x128": {"compile"},  # samples: compile overlap
        "rms_norm/262144x128": {"compile"},  # samples: compile apart
        "rms_norm/2048x128": {"compile", "graph"},  # samples: compile overlap, graph overlap
        "rms_norm/16384x128": {"compile"},  # samples: compile overlap
        "rms_norm/8192x5120": {"compile"},  # samples: compile overlap
        "rms_norm/8192x7168": {"compile"},  # samples: compile apart
        "rms_norm/4096x8192": {"compile"},  # samples: compile apart
        "rms_norm/2048x16384": {"compile"},  # samples: compile overlap
        "fused_add_rms_norm/512x4096": {"compile"},  # samples: compile overlap
    },
    "adaln": {},
    "rope": {
        "rope/ltx/2x16384x2048": {"compile"},  # samples: compile overlap
        "rope/qwen3/1x32x4096x128": {"compile"},  # samples: compile apart
        "rope/qwen3/1x32x16384x128": {"bandwidth", "compile"},  # samples: compile overlap
        "rope/qwen3/decode/1x32x1x128": {"compile"},  # samples: compile overlap
        "rope/qwen3/decode/8x32x1x128": {"compile", "graph"},  # samples: compile overlap, graph overlap
        "rope/qwen3/decode/64x32x1x128": {"compile", "graph"},  # samples: compile overlap, graph apart
    },
    "geglu": {
        "geglu/tanh/gate-first/1x28672": {"compile"},  # samples: compile overlap
        "geglu/tanh/gate-first/8x28672": {"compile", "graph"},  # samples: compile overlap, graph apart
        "geglu/tanh/gate-first/32x28672": {"compile"},  # samples: compile overlap
        "geglu/tanh/gate-first/64x28672": {"compile"},  # samples: compile overlap
    },
}

KNOWN_MISSES = {"h200": KNOWN_MISSES_H200, "h100": KNOWN_MISSES_H100}
MISS_RECORDS = [(card, kernel) for card, misses in sorted(KNOWN_MISSES.items()) for kernel in sorted(misses)]


def _misses(card: str, kernel: str) -> dict[str, set[str]]:
    path = REPO / "kernels-src" / kernel / "benchmarks" / "results" / f"{card}.json"
    found: dict[str, set[str]] = {}
    for line in bench.target_misses(path):
        name = line.split(":")[0].replace(" (graph replay)", "")
        kind = "graph" if "(graph replay)" in line else ("bandwidth" if "of copy bandwidth" in line else "compile")
        if kind == "compile" and "torch.compile" not in line:
            kind = "baseline " + line.split(": ", 1)[1].split(" ")[0]
        found.setdefault(name, set()).add(kind)
    return found


@pytest.mark.parametrize("card,kernel", MISS_RECORDS)
def test_recorded_run_misses_only_the_known_shapes(card, kernel):
    found = _misses(card, kernel)
    unexpected = {n: k - KNOWN_MISSES[card][kernel].get(n, set()) for n, k in found.items()}
    assert not {n: k for n, k in unexpected.items() if k}, "a target missed that NOTES.md does not explain"


@pytest.mark.parametrize("card,kernel", MISS_RECORDS)
def test_known_misses_are_still_misses(card, kernel):
    found = _misses(card, kernel)
    stale = {n: k - found.get(n, set()) for n, k in KNOWN_MISSES[card][kernel].items()}
    assert not {n: k for n, k in stale.items() if k}, "met now: drop it from KNOWN_MISSES and NOTES.md"


# Records of the same cases in another dtype (`pipeline bench --dtype`, `run.py record --dtypes`),
# where the target is "not behind": what they still miss, by (kernel, dtype), with the reason in NOTES.md.
OTHER_DTYPE_RECORDS = sorted(p for card in CARDS for p in REPO.glob(f"kernels-src/*/benchmarks/results/{card}-float*.json"))


# Records in float16 and float32, same calls and method as KNOWN_MISSES' (commit 6f4aad8, `--samples 3`):
# every case where a baseline is strictly faster, by name, "(graph replay)" for the graph figure;
# "overlap" marks a margin within the samples' ranges. Reasons in each kernel's NOTES.md.
KNOWN_BEHIND_H200: dict[tuple[str, str], set[str]] = {
    # rmsnorm: the ninth session's calls 2 and 4 (the shipped build; samples sharing one compile, the
    # method before bench.fresh_compiles, so medians on both sides)
    ("rmsnorm", "float16"): {
        "rms_norm/32x4096 (graph replay)",
        "rms_norm/128x4096 (graph replay)",
        "rms_norm/512x4096",  # overlap
        "rms_norm/262144x128",
        "rms_norm/262144x64",
        "rms_norm/16384x128",  # overlap
        "rms_norm/131072x128",
        "rms_norm/8192x7168",
        "rms_norm/4096x8192",
        "rms_norm/1x8192 (graph replay)",
        "rms_norm/64x8192 (graph replay)",
        "rms_norm/2048x16384",  # overlap
        "fused_add_rms_norm/1x4096 (graph replay)",
        "fused_add_rms_norm/32x4096 (graph replay)",
        "fused_add_rms_norm/64x4096",  # overlap
        "fused_add_rms_norm/64x4096 (graph replay)",
        "fused_add_rms_norm/512x4096",
        "fused_add_rms_norm/1024x4096",
        "fused_add_rms_norm/2048x4096",
    },
    ("rmsnorm", "float32"): {
        "rms_norm/1x4096 (graph replay)",  # overlap
        "rms_norm/8x4096 (graph replay)",
        "rms_norm/32x4096",
        "rms_norm/32x4096 (graph replay)",
        "rms_norm/64x4096",  # overlap
        "rms_norm/64x4096 (graph replay)",
        "rms_norm/128x4096",  # overlap
        "rms_norm/128x4096 (graph replay)",
        "rms_norm/4096x4096",
        "rms_norm/8192x4096",
        "rms_norm/16384x4096",
        "rms_norm/32768x4096",
        "rms_norm/65536x128",
        "rms_norm/70000x128",  # overlap
        "rms_norm/65536x64",  # overlap
        "rms_norm/262144x64",
        "rms_norm/32768x128",
        "rms_norm/131072x128",  # overlap
        "rms_norm/8192x5120",
        "rms_norm/2048x7168",
        "rms_norm/8192x7168",
        "rms_norm/1x8192 (graph replay)",  # overlap
        "rms_norm/2048x16384",
        "rms_norm/1024x2048",  # overlap
        "rms_norm/8192x2048",
        "rms_norm/16384x2048",
        "rms_norm/8192x3072",
        "rms_norm/16384x3072",
        "fused_add_rms_norm/1x4096 (graph replay)",  # overlap
        "fused_add_rms_norm/8x4096 (graph replay)",
        "fused_add_rms_norm/32x4096",
        "fused_add_rms_norm/32x4096 (graph replay)",
        "fused_add_rms_norm/64x4096",
        "fused_add_rms_norm/64x4096 (graph replay)",
        "fused_add_rms_norm/512x4096",
        "fused_add_rms_norm/1024x4096",  # overlap
    },
    ("rope", "float16"): {
        "rope/qwen3/1x32x4096x128",
        "rope/qwen3/1x32x16384x128",  # overlap
        "rope/qwen3/1x8x4096x128",
        "rope/qwen3/decode/1x32x1x128",  # overlap
        "rope/qwen3/decode/1x32x1x128 (graph replay)",  # overlap
        "rope/qwen3/decode/8x32x1x128 (graph replay)",  # overlap
        "rope/qwen3/decode/64x32x1x128",
        "rope/qwen3/decode/64x32x1x128 (graph replay)",
    },
    ("rope", "float32"): {
        "rope/ltx/1x6144x2048",
        "rope/ltx/2x16384x2048",
        "rope/qwen3/decode/1x32x1x128",  # overlap
        "rope/qwen3/decode/1x32x1x128 (graph replay)",  # overlap
        "rope/qwen3/decode/8x32x1x128 (graph replay)",  # overlap
        "rope/qwen3/decode/64x32x1x128 (graph replay)",  # overlap
    },
    ("geglu", "float16"): {
        "geglu/tanh/gate-first/1x28672 (graph replay)",  # overlap
        "geglu/tanh/gate-first/32x28672",
    },
    ("geglu", "float32"): {
        "geglu/tanh/gate-first/1x28672",  # overlap
        "geglu/tanh/gate-first/1x28672 (graph replay)",
        "geglu/tanh/gate-first/32x28672",  # overlap
        "geglu/tanh/gate-first/32x28672 (graph replay)",  # overlap
    },
    # adaln in float16: behind nowhere
    ("adaln", "float32"): {
        "adaln/rms/2x16384x2048",
        "adaln/rms/1x384x2048",
        "adaln/rms/1x384x2048 (graph replay)",
        "adaln/layer/2x256x1152",
    },
}


# H100, 2026-12-07 (thirteenth session), the same calls and method as KNOWN_MISSES_H100's.
KNOWN_BEHIND_H100: dict[tuple[str, str], set[str]] = {
    ("rmsnorm", "float16"): {
        "fused_add_rms_norm/1024x4096",
        "fused_add_rms_norm/512x4096",  # overlap
        "rms_norm/1x8192 (graph replay)",  # overlap
        "rms_norm/2048x128",  # overlap
        "rms_norm/2048x128 (graph replay)",  # overlap
        "rms_norm/2048x16384",
        "rms_norm/262144x128",
        "rms_norm/262144x64",  # overlap
        "rms_norm/4096x8192",  # overlap
        "rms_norm/64x7168 (graph replay)",  # overlap
        "rms_norm/65536x128",  # overlap
        "rms_norm/70000x128",  # overlap
        "rms_norm/8192x5120",  # overlap
        "rms_norm/8192x7168",
    },
    ("rmsnorm", "float32"): {
        "fused_add_rms_norm/1024x4096",
        "fused_add_rms_norm/32x4096 (graph replay)",  # overlap
        "fused_add_rms_norm/512x4096",
        "fused_add_rms_norm/64x4096",  # overlap
        "fused_add_rms_norm/64x4096 (graph replay)",  # overlap
        "rms_norm/128x4096",  # overlap
        "rms_norm/128x4096 (graph replay)",  # overlap
        "rms_norm/131072x128",
        "rms_norm/16384x2048",
        "rms_norm/16384x3072",
        "rms_norm/16384x4096",
        "rms_norm/1x8192",  # overlap
        "rms_norm/1x8192 (graph replay)",
        "rms_norm/2048x128",  # overlap
        "rms_norm/2048x128 (graph replay)",  # overlap
        "rms_norm/2048x16384",
        "rms_norm/262144x64",
        "rms_norm/32768x4096",
        "rms_norm/32x4096 (graph replay)",  # overlap
        "rms_norm/4096x4096",  # overlap
        "rms_norm/64x4096 (graph replay)",  # overlap
        "rms_norm/65536x64",  # overlap
        "rms_norm/8192x2048",  # overlap
        "rms_norm/8192x3072",  # overlap
        "rms_norm/8192x4096",
        "rms_norm/8192x5120",  # overlap
        "rms_norm/8x4096",  # overlap
        "rms_norm/8x4096 (graph replay)",  # overlap
    },
    ("rope", "float16"): {
        "rope/qwen3/1x32x16384x128",  # overlap
        "rope/qwen3/1x32x4096x128",
        "rope/qwen3/decode/1x32x1x128",  # overlap
        "rope/qwen3/decode/64x32x1x128 (graph replay)",
        "rope/qwen3/decode/8x32x1x128",  # overlap
        "rope/qwen3/decode/8x32x1x128 (graph replay)",  # overlap
    },
    ("rope", "float32"): {
        "rope/ltx/1x6144x2048",  # overlap
        "rope/ltx/2x16384x2048",
        "rope/qwen3/decode/1x32x1x128 (graph replay)",  # overlap
        "rope/qwen3/decode/64x32x1x128",  # overlap
        "rope/qwen3/decode/64x32x1x128 (graph replay)",
        "rope/qwen3/decode/8x32x1x128",  # overlap
        "rope/qwen3/decode/8x32x1x128 (graph replay)",  # overlap
    },
    ("geglu", "float16"): {
        "geglu/none/16384x16384",  # overlap
        "geglu/tanh/4096x16384",
        "geglu/tanh/gate-first/1x28672",
        "geglu/tanh/gate-first/2048x28672",  # overlap
        "geglu/tanh/gate-first/32x28672",  # overlap
        "geglu/tanh/gate-first/64x28672",  # overlap
        "geglu/tanh/gate-first/8x28672",  # overlap
        "geglu/tanh/gate-first/8x28672 (graph replay)",  # overlap
    },
    ("geglu", "float32"): {
        "geglu/none/16384x16384",
        "geglu/none/4096x16384",  # overlap
        "geglu/none/6144x16384",
        "geglu/tanh/gate-first/1x28672",  # overlap
        "geglu/tanh/gate-first/32x28672",  # overlap
        "geglu/tanh/gate-first/32x28672 (graph replay)",  # overlap
        "geglu/tanh/gate-first/64x28672",  # overlap
        "geglu/tanh/gate-first/8x28672",  # overlap
        "geglu/tanh/gate-first/8x28672 (graph replay)",  # overlap
    },
    ("adaln", "float16"): {
        "adaln/rms/1x384x2048",  # overlap
        "adaln/rms/1x6144x2048",  # overlap
    },
    ("adaln", "float32"): {
        "adaln/layer/2x256x1152",
        "adaln/rms/1x384x2048",
        "adaln/rms/1x384x2048 (graph replay)",
        "adaln/rms/1x6144x2048",
        "adaln/rms/2x16384x2048",
    },
}

KNOWN_BEHIND = {"h200": KNOWN_BEHIND_H200, "h100": KNOWN_BEHIND_H100}


@pytest.mark.parametrize("path", OTHER_DTYPE_RECORDS, ids=lambda p: f"{p.parents[2].name}-{p.stem}")
def test_recorded_runs_in_other_dtypes(path):
    kernel, (card, dtype) = path.parents[2].name, path.stem.split("-", 1)
    data = json.loads(path.read_text())
    assert f"--dtype {dtype}" in data["command"] and CARDS[card] in data["device"]
    assert "--samples 3" in data["command"], "record with `--samples 3` (the method KNOWN_BEHIND reads)"
    cases = [c["name"] for c in bench.load_cases(REPO / "kernels-src" / kernel, dtype)]
    assert [r["name"] for r in data["results"]] == cases and {r["dtype"] for r in data["results"]} == {dtype}
    behind = {line.split(":")[0] for line in bench.target_misses(data)}
    assert behind == KNOWN_BEHIND[card].get((kernel, dtype), set()), "behind a baseline: explain in NOTES.md or fix"


def test_rmsnorm_recorded_h200_run_keeps_version_3s_targets():
    # The targets met since version 3 (NOTES.md), which issue 19's work must not lose.
    data = json.loads((RMSNORM / "benchmarks" / "results" / "h200.json").read_text())
    by_name = {r["name"]: r for r in data["results"]}
    for name in ("rms_norm/8192x4096", "rms_norm/32768x4096", "fused_add_rms_norm/8192x4096"):
        assert by_name[name]["copy_fraction"]["kernel"] >= 0.90, name
    for r in data["results"]:
        t = r["times_us"]
        for b in r["baselines"]:
            if b != "torch.compile":  # eager, F.rms_norm, add + F.rms_norm: beaten everywhere
                assert t["kernel"] < t[b], (r["name"], b)
        if r["op"] == "rms_norm" and r["shape"].endswith("x4096") and int(r["shape"].split("x")[0]) >= 2048:
            assert t["kernel"] < t["torch.compile"], r["name"]


@pytest.mark.slow
def test_bench_cli_on_cpu_build(tmp_path):
    import test_smoke_support as builds

    build = builds.good_build()
    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "pipeline", "bench", str(build), "--only", "rms_norm/128x4096",
                           "--reps", "3", "--warmup", "1", "--out", str(out), "--plot", str(tmp_path / "r.png"),
                           "--markdown", str(tmp_path / "r.md")], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["command"].startswith("python -m pipeline bench")
    names = [r["name"] for r in data["results"]]
    assert "rms_norm/128x4096" in names and all("rms_norm/128x4096" in n for n in names)
    assert (tmp_path / "r.png").stat().st_size > 0
    assert "rms_norm" in (tmp_path / "r.md").read_text()


@pytest.mark.slow
def test_bench_cli_in_another_dtype_on_cpu_build(tmp_path):
    import test_smoke_support as builds

    out = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "pipeline", "bench", str(builds.good_build()), "--dtype", "float16",
                           "--only", "rms_norm/8x4096", "--reps", "3", "--warmup", "1", "--samples", "2",
                           "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert "--dtype float16" in data["command"]
    # two fresh setups per case: each figure carries both samples' range
    assert data["method"]["samples"] == 2 and all(len(r["spread_us"]) == 1 + len(r["baselines"])
                                                  for r in data["results"])
    assert [r["dtype"] for r in data["results"]] == ["float16", "float16"]
    # a float16 record's kernel and baselines agree as closely as float16 allows
    assert all(v < 1e-2 for r in data["results"] for v in r["max_rel_diff"].values())


def test_markdown_table_refuses_other_json(tmp_path):
    path = tmp_path / "smoke.json"
    path.write_text(json.dumps({"kernel": "x", "results": []}))
    with pytest.raises(BenchError) as exc:
        bench.markdown_table(path)
    assert exc.value.code == "bench-results-invalid"

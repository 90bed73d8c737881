"""Kernel cards: usage lines name the repository actually published, with
trust_remote_code=True only where the namespace is not a trusted publisher;
the consumer releases verify checks and the recorded model figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.card import Card, CardVariant, project_template, render_card
from pipeline.card_bench import bench_records, bench_summary, model_table
from pipeline.consumers import CONSUMERS

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted(p.parent for p in (REPO / "kernels-src").glob("*/CARD.md"))


def _card(template: str | None, **kw) -> str:
    base = dict(repo_id="my-org/thing", name="thing", version=3, license="apache-2.0", functions=("f",),
                variants=(CardVariant("torch213-cxx11-cpu-x86_64-linux", "torch 2.13", "cpu", "x86_64-linux"),),
                template=template, consumers=tuple(c.label for c in CONSUMERS))
    return render_card(Card(**{**base, **kw}))


@pytest.mark.parametrize("project", KERNELS, ids=[p.name for p in KERNELS])
def test_project_cards_name_the_published_repository(project):
    template = project_template(project)
    for trusted in (True, None):
        text = _card(template, trusted=trusted)
        assert 'get_kernel("my-org/thing", version=3)' in text
        assert "kernels-pipeline/" not in text and "trust_remote_code=True" not in text
    untrusted = _card(template, trusted=False)
    assert 'get_kernel("my-org/thing", version=3, trust_remote_code=True)' in untrusted
    assert "`my-org` is not a trusted kernel publisher" in untrusted


def test_generated_card_usage_and_checked_with():
    text = _card(None, trusted=True)
    assert 'kernel_module = get_kernel("my-org/thing", version=3)' in text and "Unless" not in text
    assert "### Checked with" in text and "Publishing ends with `pipeline verify`" in text
    for consumer in CONSUMERS:
        assert f"- {consumer.label}" in text
    unknown = _card(None, trusted=None)
    assert "Unless my-org is a trusted kernel publisher" in unknown
    assert 'get_kernel("my-org/thing", version=3, trust_remote_code=True)' in _card(None, trusted=False)


def _model_doc() -> dict:
    case = {"tokens": 2048, "replaced": 17, "kernel_calls": 17, "stock_error": 0.0223, "kernel_error": 0.0198,
            "stock_ms": 8.43, "kernel_ms": 7.05, "ok": True, "message": ""}
    return {"ok": True, "models": [{"model": "qwen3", "device": "cuda", "device_name": "NVIDIA H200",
                                    "consumer": "kernels 0.16.2 + transformers 5.17.0",
                                    "config": {"layers": 4, "hidden": 4096, "dtype": "bfloat16"}, "cases": [case]}]}


def test_recorded_model_figures_go_into_the_card_and_not_into_the_benchmark_table(tmp_path):
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "model-h200.json").write_text(json.dumps(_model_doc()))
    assert bench_records(tmp_path) == ()  # not a bench results file: not read as one
    table = model_table(tmp_path)
    assert "| qwen3 (4 layers, hidden 4096, bfloat16) | NVIDIA H200 | kernels 0.16.2 + transformers 5.17.0 | 2048 | 17 |" \
        in table
    assert "8.43 -> 7.05 | 1.20x | 0.0223 -> 0.0198 |" in table
    assert "Measured with" not in table  # no command recorded, none claimed
    doc = {**_model_doc(), "command": "python -m pipeline verify my-org/thing --model qwen3", "created": "2026-12-01"}
    (results / "model-h200.json").write_text(json.dumps(doc))
    with_command = model_table(tmp_path)
    assert with_command.endswith("Measured with `python -m pipeline verify my-org/thing --model qwen3` (2026-12-01).")
    (results / "model-h200.json").write_text(json.dumps(_model_doc()))
    text = _card(None, model_table=table)
    assert "## In a model" in text and table in text
    (results / "model-broken.json").write_text("{")
    assert model_table(tmp_path) == table
    assert "## In a model" not in _card(None)


def test_benchmark_records_keep_each_card_together_primary_dtype_first(tmp_path):
    # One real record copied under the names a project holds: each card's bf16 record before its
    # other dtypes (name order alone puts "-float16" first), the H200 before the H100 (bench_report's
    # CARDS order), in the summary's columns and in benchmarks.md alike.
    record = (REPO / "kernels-src" / "adaln" / "benchmarks" / "results" / "h200.json").read_text()
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    for name in ("h200-float16", "h100", "h200", "h100-float32"):
        doc = json.loads(record)
        doc["device"] = f"device {name}"
        (results / f"{name}.json").write_text(json.dumps(doc))
    assert [r.stem for r in bench_records(tmp_path)] == ["h200", "h200-float16", "h100", "h100-float32"]
    summary = bench_summary("adaln", tmp_path)
    assert summary.table.splitlines()[0] == "| op | shape class | shapes | H200 bf16 | H100 bf16 |"
    order = [line.split("device ", 1)[1].split(" ")[0] for line in summary.page.splitlines()
             if line.startswith("Measured on")]
    assert order == ["h200", "h200-float16", "h100", "h100-float32"]

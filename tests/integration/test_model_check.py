"""The model check (pipeline/model_check.py, pipeline/model_zoo.py) and the
rmsnorm layer as a drop-in for the real classes.

Slow: the rmsnorm CPU variant is built and published to an embedded Hub; in a
consumer environment with transformers 5.17.0 + kernels 0.16.2 (the kernels
release transformers 5.17 accepts) + huggingface_hub 1.33.0, a tiny Qwen3
made from a config gets its RMSNorms from that Hub through kernels.kernelize
and LayerRepository, and must show the swap and meet the accuracy bound
against float32."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.consumers import MODEL_CONSUMERS, child_env
from pipeline.model_check import ERROR_FACTOR, ModelCase, ModelConfig, ModelReport, config_from_json

from consumer_support import REPO, consumer_env, json_of, pipeline_env, rmsnorm_build, rmsnorm_copy, run_pipeline

REPO_ID = "kernels-pipeline/rmsnorm"


def _case(**kw) -> ModelCase:
    base = dict(tokens=64, replaced=9, kernel_calls=9, stock_error=0.01, kernel_error=0.009, stock_ms=2.0,
                kernel_ms=1.0, ok=True)
    return ModelCase(**{**base, **kw})


def test_report_ok_problems_and_json():
    good = ModelReport(REPO_ID, 1, "qwen3", "kernels 0.16.2", ModelConfig(), cases=(_case(),))
    assert good.ok and not good.problems() and good.cases[0].speedup == 2.0
    doc = good.to_json()
    assert doc["error_factor"] == ERROR_FACTOR and doc["cases"][0]["speedup"] == 2.0
    bad = ModelReport(REPO_ID, 1, "qwen3", "kernels 0.16.2", ModelConfig(),
                      cases=(_case(ok=False, replaced=0, message="kernelize replaced no module"),))
    assert not bad.ok and [p.code for p in bad.problems()] == ["model-check-failed"]
    broken = ModelReport(REPO_ID, 1, "qwen3", "kernels 0.16.2", ModelConfig(), error="ImportError: no transformers")
    assert not broken.ok and "no transformers" in broken.problems()[0].message
    assert not ModelReport(REPO_ID, 1, "qwen3", "k", ModelConfig()).ok  # no case: nothing proved


def test_config_round_trips_through_json():
    config = ModelConfig(layers=4, hidden=4096, tokens=(128, 2048), device="cuda")
    assert config_from_json(json.loads(json.dumps(config.to_json()))) == config


def test_unknown_model_is_a_usage_error():
    from pipeline.errors import VerifyError
    from pipeline.model_check import check_model

    with pytest.raises(VerifyError) as err:
        check_model("http://127.0.0.1:9", None, REPO_ID, 1, "gpt2")
    assert err.value.code == "usage"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """rmsnorm's CPU variant (the run's shared build) published to an embedded Hub (host kernels)."""
    import sys

    from pipeline.hub import EmbeddedHub

    tmp = tmp_path_factory.mktemp("model")
    kernel = rmsnorm_copy(tmp)
    with EmbeddedHub(tmp / "hub", port=0, trusted_namespaces=["kernels-pipeline"]) as hub:
        env = pipeline_env(hub, PIPELINE_CACHE_DIR=str(tmp / "build-cache"))
        proc = run_pipeline(sys.executable, "publish", REPO_ID, "--kernel", str(kernel), "--endpoint", hub.endpoint,
                            "--build-dir", str(rmsnorm_build()), "--no-verify", "--json", env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield kernel, hub, env


@pytest.mark.slow
def test_tiny_qwen3_with_transformers_5_and_kernels_016_swaps_and_meets_the_bound(published):
    import sys

    kernel, hub, env = published
    spec = MODEL_CONSUMERS[0]
    assert spec.pins["transformers"].startswith("5.") and spec.kernels.startswith("0.16.")
    consumer_env(spec)
    proc = run_pipeline(sys.executable, "verify", REPO_ID, "--version", "1", "--kernel", str(kernel), "--endpoint",
                        hub.endpoint, "--consumers", "none", "--model", "qwen3", "--model-consumers",
                        ",".join(spec.requirements), "--tokens", "16,48", "--json", env=env)
    doc = json_of(proc)
    assert proc.returncode == 0 and doc["ok"], doc["models"]
    [model] = doc["models"]
    assert model["versions"]["kernels"] == "0.16.2" and model["versions"]["transformers"] == "5.17.0"
    assert model["device"] == "cpu" and model["layers"] == ["RMSNorm"] and model["trusted"] is True
    config = ModelConfig()
    for case in model["cases"]:
        # Qwen3: input, post-attention, q and k norms per layer, and the final norm.
        assert case["replaced"] == 4 * config.layers + 1 and case["kernel_calls"] == case["replaced"], case
        assert 0 < case["kernel_error"] <= ERROR_FACTOR * case["stock_error"], case
        assert case["stock_ms"] > 0 and case["kernel_ms"] > 0


@pytest.mark.slow
def test_ltx_video_block_swaps_diffusers_rmsnorm_without_weight(published):
    """diffusers declares no kernel layer name for its RMSNorm: the check
    registers one as a diffusers user must, and the two norms (weight None,
    elementwise_affine=False) take the kernel's forward."""
    import sys

    kernel, hub, env = published
    spec = MODEL_CONSUMERS[0]
    consumer_env(spec)
    proc = run_pipeline(sys.executable, "verify", REPO_ID, "--version", "1", "--kernel", str(kernel), "--endpoint",
                        hub.endpoint, "--consumers", "none", "--model", "ltx-video", "--model-consumers",
                        ",".join(spec.requirements), "--tokens", "32", "--json", env=env)
    doc = json_of(proc)
    [model] = doc["models"]
    assert model["versions"].get("diffusers") and model["layers"] == ["RMSNorm"], model
    # norm1 and norm2 (diffusers RMSNorm, weight None); the attention's torch.nn.RMSNorm is not theirs.
    assert [c["replaced"] for c in model["cases"]] == [2] and doc["ok"], model


@pytest.mark.slow
def test_rmsnorm_layer_is_a_drop_in_for_the_real_classes(published):
    kernel, hub, env = published
    consumer = consumer_env(MODEL_CONSUMERS[0])
    cache = Path(env["PIPELINE_CACHE_DIR"]).parent / "layers-kernels"
    proc = subprocess.run([str(consumer.python), str(REPO / "tests" / "layer_dropins_child.py"), REPO_ID, "1"],
                          capture_output=True, text=True, timeout=600,
                          env={**child_env(env), "HF_ENDPOINT": hub.endpoint, "HF_HUB_DISABLE_XET": "1",
                               "KERNELS_CACHE": str(cache), "HF_HOME": str(cache / "hf")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    assert len(results) == 4 and results["diffusers RMSNorm (elementwise_affine=False)"]["weight_is_none"]
    for name, r in results.items():
        assert r["dtype"] == "torch.bfloat16" and r["shape"] == [3, 5, 384], (name, r)
        assert r["kernel_error"] <= max(ERROR_FACTOR * r["stock_error"], 4e-3), (name, r)

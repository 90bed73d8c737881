"""Consumer environments (pipeline/consumers.py): specs, keys, the cache, the
child environment, and how an unreachable index is told apart from a failure.
The environments themselves are made for real in tests/integration/test_hub_compat.py and
tests/integration/test_model_check.py (slow)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import pytest

from pipeline import consumers
from pipeline.consumers import (
    CONSUMERS,
    MODEL_CONSUMERS,
    ConsumerSpec,
    cache_root,
    child_env,
    default_consumers,
    ensure_env,
    parse_specs,
    wheel_dirs,
)
from pipeline.errors import VerifyError


def test_the_matrix_is_the_newest_016_and_017_with_the_hub_client_their_stacks_pin():
    assert [c.kernels for c in CONSUMERS] == ["0.16.2", "0.17.2"]
    # transformers 5.17 accepts kernels>=0.16,<0.17 and huggingface_hub<2; 5.21 kernels>=0.17,<0.18.
    assert CONSUMERS[0].pins["huggingface_hub"].startswith("1.")
    assert {c.pins["transformers"]: c.kernels for c in MODEL_CONSUMERS} == {"5.17.0": "0.16.2", "5.21.1": "0.17.2"}


def test_spec_label_and_key_name_the_versions_and_differ_by_requirement():
    a = ConsumerSpec(("kernels==0.16.2", "huggingface_hub==1.33.0"))
    b = ConsumerSpec(("kernels==0.16.2", "huggingface_hub==1.32.0"))
    assert a.label == "kernels 0.16.2 + huggingface_hub 1.33.0"
    assert a.key().startswith("kernels0.16.2-huggingface-hub1.33.0-")
    assert a.key() != b.key() and a.key() == ConsumerSpec(a.requirements).key()


def test_parse_specs_and_the_environment_override():
    specs = parse_specs("kernels==0.16.2,huggingface_hub==1.33.0; kernels==0.17.2")
    assert [s.requirements for s in specs] == [("kernels==0.16.2", "huggingface_hub==1.33.0"), ("kernels==0.17.2",)]
    with pytest.raises(VerifyError) as err:
        parse_specs("huggingface_hub==1.33.0")
    assert err.value.code == "usage"
    assert default_consumers({}) == CONSUMERS
    assert default_consumers({"PIPELINE_CONSUMERS": "none"}) == ()
    assert default_consumers({"PIPELINE_CONSUMERS": "kernels==0.17.2"}) == (ConsumerSpec(("kernels==0.17.2",)),)


def test_cache_root_and_wheel_dirs_come_from_their_own_variables(tmp_path):
    assert cache_root({"PIPELINE_CONSUMER_CACHE": str(tmp_path)}) == tmp_path
    # A fresh build cache (PIPELINE_CACHE_DIR) must not mean fresh venvs.
    assert cache_root({"PIPELINE_CACHE_DIR": str(tmp_path)}).parts[-2:] == ("kernel-pipeline", "consumers")
    assert wheel_dirs({"PIPELINE_CONSUMER_WHEELS": f"/a{os.pathsep}/b"}) == (consumers.Path("/a"), consumers.Path("/b"))
    assert wheel_dirs({}) == ()


def test_child_env_drops_the_import_path_that_could_hold_another_kernels():
    env = child_env({"PYTHONPATH": "/tmp/site", "HF_ENDPOINT": "http://x", "PYTHONHOME": "/h"})
    assert "PYTHONPATH" not in env and "PYTHONHOME" not in env
    assert env["HF_ENDPOINT"] == "http://x" and env["PYTHONNOUSERSITE"] == "1"


@pytest.mark.slow
def test_an_unreachable_index_is_its_own_code_and_leaves_no_environment(tmp_path, monkeypatch):
    # A real pip in a real venv, pointed at a port where nothing listens.
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    with pytest.raises(VerifyError) as err:
        ensure_env(ConsumerSpec(("kernels==0.16.2",)), root=tmp_path, wheels=())
    assert err.value.code == "consumer-index-unreachable"
    assert "PIPELINE_CONSUMER_WHEELS" in err.value.hint
    assert not any(p.is_dir() for p in tmp_path.iterdir())


@pytest.mark.slow
def test_a_wheel_directory_without_the_wheels_is_a_failure_that_names_it(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with pytest.raises(VerifyError) as err:
        ensure_env(ConsumerSpec(("kernels==0.16.2",)), root=tmp_path / "envs", wheels=(wheels,))
    assert err.value.code == "consumer-env-failed"
    assert str(wheels) in err.value.hint


@pytest.mark.slow
def test_a_made_environment_is_reused_and_sees_the_host_torch(tmp_path):
    """No package to install: the venv's own pip, the .pth to this
    interpreter's site-packages, and the ready marker, for real."""
    spec = ConsumerSpec(("packaging",))
    first = ensure_env(spec, root=tmp_path)
    assert not first.reused and first.versions["torch"]
    again = ensure_env(spec, root=tmp_path)
    assert again.reused and again.path == first.path and again.versions == first.versions
    assert first.python.is_file() and first.path.parent == tmp_path and sys.executable != str(first.python)


def _load(ok=True, trusted=True):
    from pipeline.verify import LoadCheck

    return LoadCheck(ok=ok, variant="v", kernel_id="k", revision="r", seeds=(1,), cases=3, failed=0 if ok else 1,
                     message="3 case(s) match" if ok else "1 of 3 case(s) differ", trusted=trusted)


def test_verify_report_names_the_consumers_proved_and_what_failed():
    from pipeline.verify import ConsumerCheck, VerifyReport, _consumer_problems

    base = VerifyReport(endpoint="http://h", repo_id="org/k", version=1, revision="r", published=("v",),
                        load=_load(), cells=())
    checks = (ConsumerCheck("kernels 0.16.2", ("kernels==0.16.2",), _load()),
              ConsumerCheck("kernels 0.17.2", ("kernels==0.17.2",), _load(ok=False)),
              ConsumerCheck("kernels 0.15.2", ("kernels==0.15.2",), None, error="no index",
                            error_code="consumer-index-unreachable"))
    problems = _consumer_problems(base, checks)
    assert [(p.code, p.severity) for p in problems] == [("consumer-load-failed", "error"),
                                                         ("consumer-index-unreachable", "warning")]
    report = replace(base, consumers=checks, problems=problems)
    assert report.consumers_proved == ("kernels 0.16.2",) and not report.ok and report.trusted is True
    assert report.to_json()["consumers_proved"] == ["kernels 0.16.2"]


def test_an_untrusted_load_anywhere_makes_the_publication_untrusted_with_a_warning():
    from pipeline.verify import ConsumerCheck, VerifyReport, _consumer_problems

    base = VerifyReport(endpoint="http://h", repo_id="org/k", version=1, revision="r", published=("v",),
                        load=_load(trusted=False), cells=())
    checks = (ConsumerCheck("kernels 0.16.2", ("kernels==0.16.2",), _load(trusted=False)),)
    report = replace(base, consumers=checks)
    assert report.trusted is False
    [problem] = _consumer_problems(report, checks)
    assert problem.code == "publisher-untrusted" and problem.severity == "warning"
    assert "trust_remote_code=True" in problem.hint

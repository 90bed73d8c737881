"""verify: resolution of matrix cells through kernels' own selection code, and
a real get_kernel from a fresh embedded Hub in a fresh process."""

from __future__ import annotations

import pytest

from pipeline.workspace import resolve

from pipeline.verify import _family, _report, _resolve_cells, verify_publication
from test_bundle_support import copy_variant_as, host_cpu_variant, make_project, make_variant

PUBLISHED = ["torch213-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux",
             "torch213-cxx11-cpu-x86_64-linux", "torch213-metal-aarch64-darwin"]


def resolve(cells, published=PUBLISHED):
    from kernels.variants import parse_variant

    return {r["cell"]: r for r in _resolve_cells([parse_variant(n) for n in published], cells, "26.0")}


def test_cuda_systems_take_the_newest_compatible_minor():
    r = resolve(["torch213-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu132-x86_64-linux",
                 "torch213-cxx11-cu130-x86_64-linux"])
    assert r["torch213-cxx11-cu126-x86_64-linux"]["chosen"] == "torch213-cxx11-cu126-x86_64-linux"
    assert r["torch213-cxx11-cu130-x86_64-linux"]["chosen"] == "torch213-cxx11-cu130-x86_64-linux"
    # No cu132 build: a CUDA 13.2 system gets the cu130 one (same major, lower minor).
    assert r["torch213-cxx11-cu132-x86_64-linux"]["chosen"] == "torch213-cxx11-cu130-x86_64-linux"


def test_unresolvable_cells_carry_kernels_reasons():
    r = resolve(["torch212-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu124-x86_64-linux",
                 "torch213-cxx11-cpu-aarch64-linux"])
    assert all(item["chosen"] is None for item in r.values())
    reasons = " ".join(r["torch212-cxx11-cpu-x86_64-linux"]["rejected"])
    assert "Torch version (2.13) does not match environment Torch version (2.12)" in reasons
    assert any("CUDA version" in x for x in r["torch213-cxx11-cu124-x86_64-linux"]["rejected"])


def test_darwin_cells_resolve_to_metal_on_a_new_enough_macos():
    assert resolve(["torch213-metal-aarch64-darwin"])["torch213-metal-aarch64-darwin"]["chosen"] == \
        "torch213-metal-aarch64-darwin"


def test_promised_cells():
    data = {"published": ["torch213-cxx11-cu130-x86_64-linux"], "revision": "x" * 40, "load": None,
            "cells": [{"cell": "torch213-cxx11-cu132-x86_64-linux", "chosen": "torch213-cxx11-cu130-x86_64-linux"},
                      {"cell": "torch213-cxx11-cu126-x86_64-linux", "chosen": None, "rejected": ["cu130: newer"]},
                      {"cell": "torch212-cxx11-cu130-x86_64-linux", "chosen": None, "rejected": ["torch"]}]}
    # cu126 is CUDA 12: a family nothing was published for, so it is not promised.
    published = _report("http://h", "o/n", 1, data, "published", None)
    assert published.ok and [c.promised for c in published.cells] == [True, False, False]
    strict = _report("http://h", "o/n", 1, data, "all", None)
    assert not strict.ok and [p.code for p in strict.problems] == ["cell-unresolved", "cell-unresolved"]
    assert _family("torch213-cxx11-cu130-x86_64-linux") == _family("torch213-cxx11-cu132-x86_64-linux")


@pytest.mark.slow
def test_verify_a_publication_with_several_variants(tmp_path):
    from pipeline.hub import EmbeddedHub
    from pipeline.publish import PublishRequest, publish
    from pipeline.target import Target
    from pipeline.workspace import resolve

    project = make_project(tmp_path / "tiny")
    host = make_variant(project / "build")
    for name in ("torch213-cxx11-cu126-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux"):
        copy_variant_as(host, project / "build", name, backend="cuda")
    with EmbeddedHub(tmp_path / "hub", port=0, trusted_namespaces=["org"]) as hub:
        target = Target("--endpoint", hub.endpoint, hub.admin_token)
        publish(PublishRequest(repo_id="org/tiny", kernel=resolve(project), verify=False), target)
        cells = [host_cpu_variant(), "torch213-cxx11-cu130-x86_64-linux", "torch213-cxx11-cu132-x86_64-linux",
                 "torch212-cxx11-cpu-x86_64-linux"]
        report = verify_publication(hub.endpoint, "org/tiny", 1, kernel=resolve(project), cells=cells)
        assert report.ok, report.to_json()
        assert report.load.variant == host_cpu_variant() and report.load.failed == 0 and report.load.cases == 1
        chosen = {c.cell: (c.chosen, c.status) for c in report.cells}
        assert chosen["torch213-cxx11-cu132-x86_64-linux"] == ("torch213-cxx11-cu130-x86_64-linux", "compatible")
        assert chosen["torch212-cxx11-cpu-x86_64-linux"] == (None, "none")
        strict = verify_publication(hub.endpoint, "org/tiny", 1, kernel=resolve(project), cells=cells, require="all",
                                    load_only=True)
        assert [p.code for p in strict.problems] == ["cell-unresolved"]
        missing = verify_publication(hub.endpoint, "org/tiny", 9, kernel=resolve(project), cells=[])
        assert [p.code for p in missing.problems] == ["version-not-published"]

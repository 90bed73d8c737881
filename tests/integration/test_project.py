"""pipeline.project (`validate`): the fixture corpus, the rule table, the CLI.

Each folder under tests/fixtures/projects/ is a small real project, written by
its _generate.py. Most differ from good/ by exactly one defect and name it in
expected.toml (code, file, line); the others list every problem one run must
report (`problems`), with the verdict kernel-builder gives (`kernel-builder`,
`ok`): the false rejects and missed classes of issue 18, projects several
schema errors deep, and the two agent-written projects `migrate` rewrites.
Cases git cannot keep (empty folder, escaping symlink, missing path) are built
here.
"""

from __future__ import annotations

import json
import os
import shutil
import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pipeline import toml
from pipeline.errors import ValidationError
from pipeline.project import (
    KernelProject,
    KernelSpec,
    TorchExt,
    load_project,
    load_rules,
    validate,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "projects"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.toml").is_file())
BROKEN = [c for c in CASES if "code" in toml.loads((FIXTURES / c / "expected.toml").read_text())]
VERDICTS = [c for c in CASES if "problems" in toml.loads((FIXTURES / c / "expected.toml").read_text())]
COMMUNITY = Path("/work/.mirror/huggingface+kernels-community/repo")


def expected(case: str) -> dict:
    return toml.loads((FIXTURES / case / "expected.toml").read_text())


def expected_codes(case: str) -> set[str]:
    want = expected(case)
    return {want["code"]} if "code" in want else {p["code"] for p in want.get("problems", [])}


def relpath(problem_path: str, root: Path) -> str:
    return os.path.relpath(problem_path, root).replace(os.sep, "/")


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pipeline", "validate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


# Synthetic cases: code → a function building the case in tmp_path, returning (path to validate, file, line).
def _missing(tmp: Path):
    return tmp / "no-such-project", None, None


def _file_not_dir(tmp: Path):
    path = tmp / "notes.txt"
    path.write_text("not a project\n")
    return path, None, None


def _empty_dir(tmp: Path):
    path = tmp / "empty"
    path.mkdir()
    return path, "build.toml", None


def _symlink_escape(tmp: Path):
    project = tmp / "proj"
    shutil.copytree(FIXTURES / "good", project)
    outside = tmp / "elsewhere" / "scale_cpu.cpp"
    outside.parent.mkdir()
    shutil.move(project / "scale_cpu" / "scale_cpu.cpp", outside)
    (project / "scale_cpu" / "scale_cpu.cpp").symlink_to(outside)
    return project, "build.toml", 30


SYNTHETIC = {
    "path-missing": _missing,
    "path-not-directory": _file_not_dir,
    "build-toml-missing": _empty_dir,
    "src-outside": _symlink_escape,
}


# ---------------------------------------------------------------- corpus ----

def test_corpus_has_at_least_twenty_kinds_of_defect():
    kinds = {expected(c)["code"] for c in BROKEN}
    assert len(kinds) >= 20, sorted(kinds)


@pytest.mark.parametrize("case", VERDICTS)
def test_fixture_reports_every_problem_and_kernel_builders_verdict(case):
    """One run reports all of a project's problems, each at its file and line."""
    want = expected(case)
    root = FIXTURES / case
    report = validate(root)
    got = sorted((p.code, relpath(p.path, root), p.line) for p in report.problems)
    assert got == sorted((p["code"], p["file"], p.get("line")) for p in want["problems"]), \
        [p.format() for p in report.problems]
    assert report.ok == want["ok"], want["kernel-builder"]
    assert all(p.hint for p in report.problems)


def test_good_project_has_no_problem():
    report = validate(FIXTURES / "good")
    assert report.problems == ()
    assert report.ok and report.project is not None


@pytest.mark.parametrize("case", BROKEN)
def test_fixture_reports_exactly_its_defect(case):
    want = expected(case)
    root = FIXTURES / case
    report = validate(root)
    assert len(report.problems) == 1, [p.format() for p in report.problems]
    problem = report.problems[0]
    assert problem.code == want["code"]
    assert relpath(problem.path, root) == want["file"]
    assert problem.line == want.get("line")
    assert problem.hint, "every problem carries a hint"
    rule = load_rules()[problem.code]
    assert problem.severity == rule.severity
    assert report.ok == (rule.severity == "warning")


@pytest.mark.parametrize("code", sorted(SYNTHETIC))
def test_synthetic_case(code, tmp_path):
    path, file, line = SYNTHETIC[code](tmp_path)
    report = validate(path)
    assert [p.code for p in report.problems] == [code], [p.format() for p in report.problems]
    problem = report.problems[0]
    if file is not None:
        assert relpath(problem.path, path) == file
    assert problem.line == line
    assert not report.ok


def test_symlink_inside_the_project_is_fine(tmp_path):
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "good", project)
    real = project / "scale_cpu" / "impl.cpp"
    shutil.move(project / "scale_cpu" / "scale_cpu.cpp", real)
    (project / "scale_cpu" / "scale_cpu.cpp").symlink_to("impl.cpp")
    assert validate(project).problems == ()


def test_build_toml_path_is_accepted_as_its_project():
    report = validate(FIXTURES / "good" / "build.toml")
    assert report.ok and report.project is not None and report.project.root == FIXTURES / "good"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_build_output_counts_when_git_tracks_it(tmp_path):
    """In git, committed means tracked: an untracked build/ in a checkout without
    .gitignore is not reported; once added it is, ignored or not."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "build-dir-committed", project)
    _git(project, "init", "-q")
    assert validate(project).problems == ()
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "with build/")
    assert [p.code for p in validate(project).problems] == ["build-output-committed"]
    (project / ".gitignore").write_text("build/\n")
    assert [p.code for p in validate(project).problems] == ["build-output-committed"]
    _git(project, "rm", "-r", "-q", "--cached", "build")
    assert validate(project).problems == ()


def test_untracked_stray_binary_in_git_is_not_committed(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "so-committed", project)
    _git(project, "init", "-q")
    assert validate(project).problems == ()
    _git(project, "add", "-A")
    assert [p.code for p in validate(project).problems] == ["build-output-committed"]


def _variant_metadata(name: str, builder: str | None) -> str:
    document = {"name": name, "id": "_fixture_kernel_cpu_abc1234", "version": 1, "license": "apache-2.0",
                "python-depends": [], "backend": {"type": "cpu"}}
    if builder:
        document["provenance"] = {"kernel-builder": {"version": builder}}
    return json.dumps(document)


def test_build_output_outside_git_is_judged_by_what_wrote_it(tmp_path):
    """A tarball or a copy ships what it holds: a build/ counts unless it holds
    only variant directories a build wrote for this project (metadata.json with
    the builder's provenance); result links and __pycache__ are the tools'."""
    project = tmp_path / "proj"
    shutil.copytree(FIXTURES / "build-dir-committed", project)
    meta = project / "build" / "torch213-cxx11-cpu-x86_64-linux" / "metadata.json"
    # the fixture's metadata.json names no builder: nothing a build writes
    assert [p.code for p in validate(project).problems] == ["build-output-committed"]
    meta.write_text(_variant_metadata("fixture-kernel", "kernel-pipeline 0.1.0"))
    assert validate(project).problems == ()
    meta.write_text(_variant_metadata("fixture-kernel", "0.5.0"))  # kernel-builder's, via --backend nix
    assert validate(project).problems == ()
    (project / "build" / ".torch213-cxx11-cpu-x86_64-linux.tmp-abcd").mkdir()  # an interrupted rewrite
    (project / "torch-ext" / "fixture_kernel" / "__pycache__").mkdir()
    (project / "result").symlink_to("/nix/store/0000-fixture-kernel")
    assert validate(project).problems == ()
    meta.write_text(_variant_metadata("another-kernel", "kernel-pipeline 0.1.0"))
    assert [p.code for p in validate(project).problems] == ["build-output-committed"]
    meta.write_text(_variant_metadata("fixture-kernel", "kernel-pipeline 0.1.0"))
    (project / "build" / "CMakeCache.txt").write_text("")  # a CMake tree in build/: not a build's output
    assert [p.code for p in validate(project).problems] == ["build-output-committed"]
    (project / "build" / "CMakeCache.txt").unlink()
    (project / "torch-ext" / "stray.so").write_bytes(b"\x7fELF")
    assert [(p.code, Path(p.path).relative_to(project).as_posix()) for p in validate(project).problems] == [
        ("build-output-committed", "torch-ext/stray.so")]


# ------------------------------------------------------------ rule table ----

def test_rule_table_is_complete_and_every_rule_is_exercised():
    rules = load_rules()
    for code, rule in rules.items():
        assert rule.code == code
        assert rule.severity in ("error", "warning"), code
        assert rule.title and rule.hint and len(rule.hint) > 30, code
    fixture_codes = {code for c in CASES for code in expected_codes(c)}
    exercised = fixture_codes | set(SYNTHETIC)
    assert set(rules) - exercised == set(), "rules without a fixture"
    assert exercised - set(rules) == set(), "fixtures naming codes the table lacks"


def test_every_emitted_code_is_in_the_table(tmp_path):
    rules = load_rules()
    emitted = set()
    for case in CASES:
        emitted |= {p.code for p in validate(FIXTURES / case).problems}
    for code, make in SYNTHETIC.items():
        (tmp_path / code).mkdir()
        path, _f, _l = make(tmp_path / code)
        emitted |= {p.code for p in validate(path).problems}
    assert emitted <= set(rules)
    assert emitted == set(rules)


def test_unknown_code_is_a_bug_not_a_problem():
    from pipeline.project.rules import Sink

    with pytest.raises(KeyError):
        Sink("x").add("no-such-code", "message")


# ------------------------------------------------------------- load_project ----

def test_load_project_reads_build_toml():
    project = load_project(FIXTURES / "good")
    data = toml.loads((FIXTURES / "good" / "build.toml").read_text())
    assert isinstance(project, KernelProject)
    assert project.name == data["general"]["name"]
    assert project.python_name == data["general"]["name"].replace("-", "_")
    assert project.edition == 5 and project.version == data["general"]["version"]
    assert set(project.backends) == set(data["general"]["backends"])
    assert project.hub_repo_id == data["general"]["hub"]["repo-id"]
    assert project.torch_ext == TorchExt(src=tuple(data["torch"]["src"]), pyext=("py", "pyi"), include=())
    assert {k.name for k in project.kernels} == set(data["kernel"])
    cuda = next(k for k in project.kernels if k.backend == "cuda")
    assert isinstance(cuda, KernelSpec)
    assert cuda.cuda_capabilities == tuple(data["kernel"][cuda.name]["cuda-capabilities"])
    assert cuda.src == tuple(data["kernel"][cuda.name]["src"])
    assert project.package_dir == FIXTURES / "good" / "torch-ext" / project.python_name


def test_load_project_accepts_legacy_v4_with_edition_4():
    project = load_project(FIXTURES / "legacy-v4")
    assert project.edition == 4


def test_load_project_raises_with_every_problem():
    with pytest.raises(ValidationError) as info:
        load_project(FIXTURES / "header-unlisted")
    assert [p.code for p in info.value.problems] == ["header-unlisted"]
    assert info.value.code == "header-unlisted"


def test_legacy_notice_does_not_leak_to_stderr(capfd):
    validate(FIXTURES / "legacy-v4")
    assert "legacy" not in capfd.readouterr().err


# ------------------------------------------------------------------- CLI ----

def test_cli_good_project_exits_zero():
    result = run_cli("tests/fixtures/projects/good")
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stdout


def test_cli_prints_path_line_code_and_hint():
    result = run_cli("tests/fixtures/projects/unknown-key")
    assert result.returncode == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith("tests/fixtures/projects/unknown-key/build.toml:20: unknown-key: ")
    assert "hint: did you mean 'cuda-capabilities'?" in result.stderr
    assert "1 error(s)" in result.stdout


def test_cli_warnings_only_exit_zero():
    result = run_cli("tests/fixtures/projects/legacy-v4")
    assert result.returncode == 0
    assert "edition-legacy (warning)" in result.stderr


@pytest.mark.parametrize("case", ["malformed-toml", "binary-build-toml", "no-build-toml"])
def test_cli_bad_input_is_a_clear_error_not_a_traceback(case):
    result = run_cli(f"tests/fixtures/projects/{case}")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert expected(case)["code"] in result.stderr


def test_cli_missing_path_and_file(tmp_path):
    for path, code in ((tmp_path / "nope", "path-missing"), (FIXTURES / "good" / "flake.nix", "path-not-directory")):
        result = run_cli(str(path))
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert code in result.stderr


def test_cli_json_document():
    result = run_cli("tests/fixtures/projects/op-namespace-prefix", "--json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert set(doc) >= {"path", "ok", "errors", "warnings", "problems"}
    assert doc["ok"] is False and doc["errors"] == 1 and doc["warnings"] == 0
    (problem,) = doc["problems"]
    assert problem["code"] == "op-namespace-prefix-missing"
    assert problem["line"] == expected("op-namespace-prefix")["line"]
    assert set(problem) >= {"path", "line", "code", "message", "hint", "severity"}


def test_cli_json_warnings_only():
    result = run_cli("tests/fixtures/projects/legacy-v4", "--json")
    doc = json.loads(result.stdout)
    assert result.returncode == 0 and doc["ok"] is True and doc["warnings"] == 1
    assert result.stderr == ""


def test_cli_workspace_root_validates_every_kernel(tmp_path):
    for name in ("good", "legacy-v4", "header-unlisted"):
        shutil.copytree(FIXTURES / name, tmp_path / "kernels-src" / name)
    (tmp_path / "build.toml").write_text(
        '[workspace]\nkernels = ["kernels-src/*"]\nnamespace = "org"\n'
        '[workspace.matrix]\ntorch = ["2.13"]\ncuda = ["13.0"]\narchs = ["x86_64"]\nbackends = ["cuda"]\n')
    result = run_cli(".", "--json", cwd=tmp_path)
    doc = json.loads(result.stdout)
    assert result.returncode == 1
    assert {k["path"] for k in doc["kernels"]} == {f"kernels-src/{n}" for n in ("good", "legacy-v4", "header-unlisted")}
    assert [p["code"] for p in doc["problems"] if p["severity"] == "error"] == ["header-unlisted"]
    human = run_cli(".", cwd=tmp_path)
    assert "workspace: 3 kernel(s), 1 with errors" in human.stdout


def test_cli_bad_workspace_file_is_a_workspace_error(tmp_path):
    (tmp_path / "build.toml").write_text('[workspace]\nkernels = ["kernels-src/*"]\n')
    result = run_cli(".", cwd=tmp_path)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert "workspace-namespace-invalid" in result.stderr


# ------------------------------------------------------------ real projects ----

@pytest.mark.skipif(not (REPO / "kernels-src" / "rmsnorm" / "build.toml").is_file(),
                    reason="kernels-src/rmsnorm is not written yet")
def test_real_rmsnorm_project_passes():
    report = validate(REPO / "kernels-src" / "rmsnorm")
    assert report.ok, "\n".join(p.format() for p in report.problems)
    assert report.project.name == "rmsnorm"


@pytest.mark.slow
@pytest.mark.skipif(not COMMUNITY.is_dir(), reason="kernels-community mirror not available")
def test_kernels_community_projects_validate_without_crashing(tmp_path):
    archive = subprocess.run(["git", "-C", str(COMMUNITY), "archive", "HEAD"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp_path, filter="data")
    projects = sorted(p.parent for p in tmp_path.glob("*/build.toml"))
    assert len(projects) >= 50
    rules = load_rules()
    accepted = 0
    for project in projects:
        report = validate(project)
        assert report.project is not None, (project.name, [p.format() for p in report.problems])
        assert {p.code for p in report.problems} <= set(rules)
        accepted += report.ok
    print(f"kernels-community: {accepted}/{len(projects)} accepted")
    assert accepted >= len(projects) * 3 // 4


def test_committed_corpus_is_what_the_generator_writes(tmp_path):
    # The fixtures are committed copies of _generate.py's (and _agents.py's) text: prove they have not drifted.
    sys.path.insert(0, str(FIXTURES))
    try:
        import _generate
    finally:
        sys.path.remove(str(FIXTURES))
    _generate.main(tmp_path)

    def tree(root: Path) -> dict:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts}

    committed = {k: v for k, v in tree(FIXTURES).items() if k.split("/")[0] in {p.name for p in tmp_path.iterdir()}}
    written = tree(tmp_path)
    assert sorted(written) == sorted(committed), "files the generator writes and the committed corpus differ"
    assert [k for k in written if written[k] != committed[k]] == [], "regenerate: python tests/fixtures/projects/_generate.py"

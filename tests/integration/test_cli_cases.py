"""A newcomer's first hour (issue 20): every ordinary mistake it measured, run
through the CLI in process (`pipeline.cli.main`), each with its documented exit
code, its `code:` on stderr (or in the `--json` document) and no traceback.

Each case is argv + where it runs (an empty directory outside the repository,
or the repository) + files and environment it sets up first + what it expects.
The fast ones touch no network and compile nothing; the slow ones need a
compiled op, an embedded Hub or a real build.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import socket
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from pipeline import cli
from pipeline.errors import SmokeError
from test_bundle_support import make_project, make_variant

REPO = Path(__file__).resolve().parents[2]
TINY_ADD = REPO / "tests" / "fixtures" / "tiny-add"
ORG = "tiny-org"


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # "{tmp}", "{repo}", "{free_port}", "{hub}" are filled in
    exit: int
    code: str  # expected as `code:` on stderr ("" when the command succeeds)
    cwd: str = "tmp"  # "tmp": an empty directory outside the repository; "repo": the repository root
    setup: Callable[[Path], object] | None = None  # writes files into tmp; may return a cleanup callable
    env: dict = field(default_factory=dict)  # values are formatted like argv
    says: tuple[str, ...] = ()  # more text stderr must hold (the hint's words)
    never: tuple[str, ...] = ()  # text stderr must not hold
    json: bool = False  # stdout is one JSON document carrying the code
    after: Callable[[Path, str, str], None] | None = None  # (tmp, stdout, stderr): what must (not) exist now
    raises: type | None = None  # --traceback: the error propagates instead
    hub: bool = False  # an embedded Hub runs for the case ("{hub}", "{read_token}", "{admin_token}")


# --- setups ------------------------------------------------------------------------

def _readme(tmp: Path) -> None:
    (tmp / "README.md").write_text("# a file where a directory is asked for\n")


def _passwd(tmp: Path) -> None:
    (tmp / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")  # a file, like /etc/passwd


def _tiny_add(tmp: Path) -> None:
    shutil.copytree(TINY_ADD, tmp / "tiny-add", ignore=shutil.ignore_patterns("build", "__pycache__"))


def _workspace_torch_999(tmp: Path) -> None:
    """A workspace whose matrix policy asks for a torch no builder has."""
    (tmp / "build.toml").write_text('[workspace]\nkernels = ["kernels-src/*"]\nnamespace = "my-org"\n\n'
                                    '[workspace.matrix]\ntorch = ["9.99"]\ncuda = ["13.0"]\narchs = ["x86_64", "aarch64"]\n'
                                    'backends = ["cuda", "cpu"]\n')
    shutil.copytree(TINY_ADD, tmp / "kernels-src" / "tiny-add", ignore=shutil.ignore_patterns("build"))


def _fake_nix(tmp: Path) -> str:
    """`nix` as on a machine after CI: installed, its one binary cache not answering."""
    bindir = tmp / "fake-bin"
    bindir.mkdir(exist_ok=True)
    nix = bindir / "nix"
    nix.write_text(f'#!/bin/sh\ncase "$*" in *substituters*) echo "http://127.0.0.1:{_free_port()}";; '
                   '*) echo "fake nix: no builds here" >&2; exit 1;; esac\n')
    nix.chmod(nix.stat().st_mode | stat.S_IXUSR)
    return str(bindir)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _nothing_built(name: str) -> Callable[[Path, str, str], None]:
    def check(tmp: Path, out: str, err: str) -> None:
        assert not (tmp / name / "build").exists(), "the target was checked after building, not before"
        assert "smoke" not in err

    return check


def _not_created(rel: str) -> Callable[[Path, str, str], None]:
    def check(tmp: Path, out: str, err: str) -> None:
        assert not (tmp / rel).exists(), f"{rel} was created"

    return check


NIX_WITHOUT_CACHE = "nix is installed but no binary cache answers"

CASES = [
    Case("publish-repo-id-with-space-json", ("publish", "Org/Bad Name", "--kernel", "kernels-src/rmsnorm",
                                              "--dry-run", "--json"), 9, "repo-id-invalid", cwd="repo", json=True,
         says=("no spaces",)),
    Case("publish-namespace-with-space", ("publish", "my org/rmsnorm"), 9, "repo-id-invalid", cwd="repo",
         never=("   build", "embedded Hub")),
    Case("skill-dest-under-a-file", ("skill", "--dest", "README.md/sub"), 13, "out-path-not-directory",
         setup=_readme, says=("README.md is a file",)),
    Case("skill-dest-is-a-file", ("skill", "--dest", "{tmp}/passwd"), 13, "out-path-not-directory",
         setup=_passwd, says=("this is a file",)),
    Case("init-out-under-a-file", ("init", "my-op", "--template", "elementwise", "--out", "README.md/sub"), 12,
         "out-path-not-directory", setup=_readme, says=("README.md is a file",)),
    Case("build-out-is-a-file", ("build", "{repo}/tests/fixtures/tiny-add", "--out", "README.md"), 5,
         "out-path-not-directory", setup=_readme, never=("backend:",)),
    # The build tree does not exist: the --out mistake is found before anything else is looked at.
    Case("bench-out-under-a-file", ("bench", "{tmp}/not-built", "--out", "README.md/x.json"), 8,
         "out-path-not-directory", setup=_readme),
    Case("bench-plot-is-a-directory", ("bench", "{tmp}/not-built", "--plot", "."), 8, "out-path-not-file"),
    Case("smoke-seeds-0", ("smoke", "{tmp}/not-built", "--seeds", "0"), 2, "usage", says=("--seeds 3",)),
    Case("traceback-after-the-verb", ("smoke", "{tmp}/not-built", "--seeds", "0", "--traceback"), 2, "usage",
         raises=SmokeError),
    Case("verify-noslash-outside-the-repository", ("verify", "noslash", "--version", "1"), 10, "repo-id-invalid"),
    Case("verify-outside-the-repository", ("verify", "kernels-pipeline/rmsnorm", "--version", "1"), 10,
         "kernel-not-found", says=("--kernel PATH", "--load-only"), never=("pipeline smoke", "target")),
    Case("matrix-fits-nothing", ("matrix", "."), 4, "matrix-empty", setup=_workspace_torch_999,
         says=("9.99",)),
    # nix installed, no cache: the default backend is local, and the command says why.
    Case("build-auto-backend-json-matrix-fits-nothing", ("build", ".", "--json"), 4, "matrix-empty",
         setup=_workspace_torch_999, env={"PATH": "{fake_nix}:{PATH}"}, json=True,
         says=(f"backend: local ({NIX_WITHOUT_CACHE}",)),
    Case("publish-endpoint-not-listening", ("publish", f"{ORG}/tiny-add", "--kernel", "{tmp}/tiny-add",
                                            "--endpoint", "http://127.0.0.1:{free_port}"), 9, "hub-unreachable",
         setup=_tiny_add, env={"HF_TOKEN": "hf_anything"}, after=_nothing_built("tiny-add")),
    Case("publish-read-only-token", ("publish", f"{ORG}/tiny-add", "--kernel", "{tmp}/tiny-add",
                                     "--endpoint", "{hub}"), 9, "hub-write-denied",
         setup=_tiny_add, env={"HF_TOKEN": "{read_token}"}, hub=True, after=_nothing_built("tiny-add")),
    Case("hub-token-root-typo", ("hub", "token", "--root", "{tmp}/typo", "--namespace", "my-org"), 11,
         "hub-no-data", after=_not_created("typo")),
]


# --- the runner ----------------------------------------------------------------------

def _fill(text: str, values: dict) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), m.group(0))), text)


@contextlib.contextmanager
def _maybe_hub(case: Case, tmp: Path):
    if not case.hub:
        yield {}
        return
    from pipeline.hub import EmbeddedHub

    with EmbeddedHub(tmp / "hub", host="127.0.0.1", port=0, trusted_namespaces=[ORG]) as hub:
        yield {"hub": hub.endpoint, "read_token": hub.create_token(ORG, "read"), "admin_token": hub.admin_token}


def isolate(monkeypatch, tmp: Path) -> None:
    """No token, endpoint, backend choice or data of the developer's own reaches a case."""
    for var in ("HF_TOKEN", "HF_ENDPOINT", "PIPELINE_BUILD_BACKEND", "PIPELINE_TRACEBACK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp / "data"))
    monkeypatch.setenv("PIPELINE_CACHE_DIR", str(tmp / "cache"))
    monkeypatch.setattr("pipeline.target.get_token", lambda: None)  # a stored `hf auth login` token


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = cli.main(argv)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_cli_case(case: Case, tmp_path, monkeypatch, capsys):
    tmp = tmp_path / "work"
    tmp.mkdir()
    isolate(monkeypatch, tmp_path)
    cleanup = case.setup(tmp) if case.setup else None
    values = {"tmp": tmp, "repo": REPO, "free_port": _free_port(), "PATH": os.environ.get("PATH", "")}
    if any("{fake_nix}" in v for v in case.env.values()):
        values["fake_nix"] = _fake_nix(tmp_path)
    monkeypatch.chdir(REPO if case.cwd == "repo" else tmp)
    try:
        with _maybe_hub(case, tmp_path) as hub_values:
            values.update(hub_values)
            for key, value in case.env.items():
                monkeypatch.setenv(key, _fill(value, values))
            argv = [_fill(a, values) for a in case.argv]
            if case.raises is not None:
                with pytest.raises(case.raises):
                    cli.main(argv)
                return
            rc, out, err = run_cli(argv, capsys)
    finally:
        if callable(cleanup):
            cleanup()
    assert rc == case.exit, f"exit {rc}, expected {case.exit}\nstderr:\n{err}"
    assert "Traceback" not in err and "Traceback" not in out
    if case.code:
        assert re.search(rf"(^|: ){re.escape(case.code)}: ", err, re.MULTILINE), err
        assert "hint: " in err, err
    for text in case.says:
        assert text in err, f"{text!r} not in stderr:\n{err}"
    for text in case.never:
        assert text not in err, f"{text!r} in stderr:\n{err}"
    if case.json:
        document = json.loads(out)
        assert document["code"] == case.code and document["exit_code"] == case.exit
    if case.after:
        case.after(tmp, out, err)


# Every case the issue measured -> the table case or the test function that shows it fixed.
ISSUE_CASES = {
    "publish 'Org/Bad Name' --json: traceback, empty stdout": "publish-repo-id-with-space-json",
    "publish 'my org/rmsnorm': fails after build and check": "publish-namespace-with-space",
    "skill --dest README.md/sub": "skill-dest-under-a-file",
    "skill --dest /etc/passwd": "skill-dest-is-a-file",
    "init --out README.md/sub": "init-out-under-a-file",
    "build --out README.md": "build-out-is-a-file",
    "bench --out README.md/x.json, after the whole run": "bench-out-under-a-file",
    "build with nix and no cache: exit 5, no word of local": "build-auto-backend-json-matrix-fits-nothing",
    "init's next steps fail (build: nix; smoke: pass --kernel)": "test_init_next_steps_work_as_printed",
    "verify outside the repository suggests smoke": "verify-outside-the-repository",
    "verify noslash exits 9": "verify-noslash-outside-the-repository",
    "smoke --seeds 0: FAIL 0/0, exit 7": "smoke-seeds-0",
    "hub token --root /typo creates a hub": "hub-token-root-typo",
    "port 8000 busy: the first line says :8000": "test_embedded_hub_port_busy_first_line_names_the_real_port",
    "--traceback only before the verb": "traceback-after-the-verb",
    "torch = ['9.99']: 0 variants, exit 0": "matrix-fits-nothing",
    "read-only token reported after smoke": "publish-read-only-token",
    "endpoint not listening reported after smoke": "publish-endpoint-not-listening",
    "bench on a CPU: tens of minutes, no warning": "test_bench_cpu_only_refuses_a_long_run_and_warns_on_a_short_one",
    "publish --dry-run predicts README.md (changed)": "test_publish_dry_run_of_an_unchanged_bundle_predicts_nothing",
    "the first command needs the CPU torch installed before it": "test_readme_first_command_is_the_whole_setup",
}


def test_every_case_of_the_issue_has_its_test():
    ids = {c.id if isinstance(c, Case) else c.values[0].id for c in CASES}
    tests = {name for name, value in globals().items() if name.startswith("test_") and callable(value)}
    missing = {what: where for what, where in ISSUE_CASES.items() if where not in ids | tests}
    assert not missing, missing


def test_readme_first_command_is_the_whole_setup():
    """The README's first command installs the package with the CI's pinned CPU torch (named in the
    same pip command, so pip cannot pick another), a torch pyproject.toml accepts, then publishes a
    kernel the workspace has, under its namespace."""
    from packaging.requirements import Requirement

    from pipeline import toml
    from pipeline.workspace import load_workspace

    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Start here"):readme.index("## What is here")]
    first = next(line.strip() for line in section.splitlines() if line.startswith("    pip install"))
    steps = [shlex.split(step) for step in first.split(" && ")]
    pin = next(line for line in (REPO / "ci" / "cpu-torch.txt").read_text().splitlines() if line.startswith("torch=="))
    assert steps[0] == ["pip", "install", "-e", ".", pin], first
    torch_range = next(Requirement(d) for d in toml.loads((REPO / "pyproject.toml").read_text())["project"]
                       ["dependencies"] if d.startswith("torch"))
    assert torch_range.specifier.contains(pin.split("==")[1]), (torch_range, pin)
    assert steps[1][:4] == ["python", "-m", "pipeline", "publish"], first
    namespace, name = steps[1][4].split("/")
    workspace = load_workspace(REPO)
    assert namespace == workspace.namespace and name in workspace.kernel_names


# --- slow: a compiled op, a Hub, a real build ------------------------------------------

_SLEEPY_BENCH = '''import time

import torch

PAUSE_S = {pause}


def bench_cases():
    def setup(kernel, device):
        x = torch.ones(1024)
        return {{"kernel": lambda: (time.sleep(PAUSE_S), x)[1], "eager": lambda: (time.sleep(PAUSE_S), x)[1]}}

    return [{{"name": f"case/{{i}}", "op": "sleep", "group": "g", "shape": "1024", "dtype": "float32",
              "bytes": 4096, "setup": setup, "baselines": ("eager",)}} for i in range({cases})]
'''


def _published_tiny(tmp: Path, *, cases: int = 0, pause: float = 0.0) -> Path:
    root = make_project(tmp / "tiny")
    make_variant(root / "build")
    if cases:
        (root / "benchmarks").mkdir()
        (root / "benchmarks" / "bench_cases.py").write_text(_SLEEPY_BENCH.format(pause=pause, cases=cases))
    return root


@pytest.mark.slow
def test_bench_cpu_only_refuses_a_long_run_and_warns_on_a_short_one(tmp_path, monkeypatch, capsys):
    isolate(monkeypatch, tmp_path)
    root = _published_tiny(tmp_path, cases=30, pause=0.02)
    # 30 cases x 2 callables x 112 calls x 20 ms: over 2 min, refused before any case is timed.
    rc, out, err = run_cli(["bench", str(root / "build")], capsys)
    assert rc == 8 and "bench-cpu-only: " in err and "--allow-cpu" in err, err
    assert re.search(r"would take about [2-9] min", err), err
    assert "[1/30]" not in err and "Traceback" not in err
    rc, out, err = run_cli(["bench", str(root / "build"), "--only", "case/7", "--reps", "2", "--warmup", "0"], capsys)
    assert rc == 0, err
    assert re.search(r"warning: (no CUDA device|a CPU variant): timing 1 case\(s\) x 2 repetition\(s\) on the CPU "
                     r"\(about \d+ s\); the figures test the harness", err), err


@pytest.mark.slow
def test_publish_dry_run_of_an_unchanged_bundle_predicts_nothing(tmp_path, monkeypatch, capsys):
    from pipeline.hub import EmbeddedHub

    isolate(monkeypatch, tmp_path)
    root = _published_tiny(tmp_path)
    with EmbeddedHub(tmp_path / "hub", host="127.0.0.1", port=0, trusted_namespaces=[ORG]) as hub:
        monkeypatch.setenv("HF_TOKEN", hub.admin_token)
        argv = ["publish", f"{ORG}/tiny", "--kernel", str(root), "--endpoint", hub.endpoint, "--no-verify"]
        rc, out, err = run_cli([*argv, "--json"], capsys)
        assert rc == 0, err
        assert [c["branch"] for c in json.loads(out)["commits"]] == ["v1", "main"]
        rc, out, err = run_cli([*argv, "--dry-run", "--json"], capsys)
        assert rc == 0, err
        plan = json.loads(out)["plan"]
        assert plan["empty"], plan  # before: "add README.md (changed)", which the real run then did not do
        rc, out, err = run_cli([*argv, "--json"], capsys)
        assert rc == 0 and json.loads(out)["commits"] == [], err


@pytest.mark.slow
def test_init_next_steps_work_as_printed(tmp_path, monkeypatch, capsys):
    """`init`'s printed next steps, run as printed, on a machine where nix has no binary cache."""
    isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", f"{_fake_nix(tmp_path)}:{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    # A space in the path: the printed line is quoted for the shell, and the build copes.
    rc, out, err = run_cli(["init", "my-op", "--template", "elementwise", "--backends", "cpu", "--dtypes", "fp32",
                            "--out", "new kernels/my-op"], capsys)
    assert rc == 0, err
    line = next(x for x in out.splitlines() if x.startswith("next: "))
    for command in line[len("next: "):].split(" && "):
        words = shlex.split(command)
        assert words[:3] == ["python", "-m", "pipeline"], command
        rc, out, err = run_cli(words[3:], capsys)
        assert rc == 0, f"{command}\n{err}"
        assert "Traceback" not in err
        if words[3] == "build":
            assert f"backend: local ({NIX_WITHOUT_CACHE}" in err, err
        if words[3] == "smoke":
            assert "PASS" in out, out


@pytest.mark.slow
def test_embedded_hub_port_busy_first_line_names_the_real_port(tmp_path, monkeypatch, capsys):
    isolate(monkeypatch, tmp_path)
    root = _published_tiny(tmp_path)
    with contextlib.ExitStack() as stack:
        busy = stack.enter_context(socket.socket())
        with contextlib.suppress(OSError):  # already busy is as good
            busy.bind(("127.0.0.1", 8000))
            busy.listen()
        rc, out, err = run_cli(["publish", f"{ORG}/tiny", "--kernel", str(root), "--no-verify"], capsys)
    assert rc == 0, err
    first = next(x for x in err.splitlines() if "target" in x)
    served = re.search(r"HF_ENDPOINT=(http://127\.0\.0\.1:\d+)", out).group(1)
    assert served in first, (first, served)

"""Real kernel projects through the whole pipeline: one row per project.

    python benchmarks/real_projects.py PATH [PATH ...] [--only NAME ...] [--jobs N]
                                       [--seeds N] [--work DIR] [--json FILE]

PATH is a local checkout (kernels-community, kernel-builder's examples/kernels) or
one project. Every project that has a variant this host can build (its
backends include the host's: cpu here, cuda on a GPU host, or noarch) is copied
to a work directory (made a git repository, so its build id is clean), then run
through the CLI, each stage a process of its own with a time limit:

    validate -> build (local backend, host variant) -> smoke -> publish (to a
    throwaway embedded Hub, one per project) -> verify (publish's last step)

A stage that fails ends the project's row; the table says which stage, the
failing case and its category for a smoke refusal, and the error code
otherwise. Projects run in parallel (`--jobs`, default: one per 8 cores, at
least 1; builds share the cores through MAX_JOBS). No network is needed
(verify's consumer environments are then skipped with a warning).
Nothing is written inside PATH.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from validate_corpus import find_projects  # noqa: E402

from pipeline import toml  # noqa: E402

STAGES = ("validate", "build", "smoke", "publish", "verify")
STAGE_TIMEOUT_S = {"validate": 120, "build": 3600, "smoke": 3600, "publish": 3600}
_COPY_IGNORE = shutil.ignore_patterns(".git", "build", "result", "__pycache__", "*.so", "*.o", ".pytest_cache")


@dataclass
class Row:
    project: str
    stages: dict = field(default_factory=dict)  # stage -> "ok" | "FAIL" | "skip" | "-"
    seconds: dict = field(default_factory=dict)
    code: str = ""  # the error code of the failing stage
    case: str = ""  # smoke's first failing case
    category: str = ""  # its category and failure kind
    message: str = ""
    smoke: dict = field(default_factory=dict)  # counts, tiers, not available, failures by category

    @property
    def verdict(self) -> str:
        failed = [s for s in STAGES if self.stages.get(s) == "FAIL"]
        if failed:
            return f"refused at {failed[0]}"
        if "skip" in self.stages.values():
            return "skipped"
        return "published, verified" if self.stages.get("verify") == "ok" else "incomplete"


def host_backend() -> str:
    import torch

    if torch.version.cuda and torch.cuda.is_available():
        return "cuda"
    return "cpu"


def backends_of(project: Path) -> tuple[set[str], bool]:
    """(backends the project declares, whether it is noarch)."""
    try:
        data = toml.loads(toml.read_text(project / "build.toml"))
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError):
        return set(), False
    general = data.get("general", {})
    found = set(general.get("backends", []) or [])
    for section in data.get("kernel", {}).values():
        if isinstance(section, dict) and section.get("backend"):
            found.add(section["backend"])
    return found, "torch-noarch" in data


def _run(cmd: list[str], cwd: Path, env: dict, timeout_s: float) -> tuple[int | None, dict, str]:
    """(exit code, or None on timeout; the JSON it printed; the tail of its stderr)."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        return None, {}, (exc.stderr or "")[-2000:] if isinstance(exc.stderr, str) else ""
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except ValueError:
        data = {"unparsed": proc.stdout[-2000:]}
    return proc.returncode, data, proc.stderr[-2000:]


_CAPS = re.compile(r"(?m)^[ \t]*cuda-capabilities[ \t]*=[ \t]*\[[^\]]*\][ \t]*\n?")


def narrow_capabilities(text: str, arch: str) -> tuple[str, str]:
    """build.toml's CUDA kernels built for `arch` only (as a device call builds: one card, one
    arch); ("", why) when a kernel asks only for newer architectures than `arch`."""
    data = toml.loads(text)
    cuda = [name for name, k in data.get("kernel", {}).items() if isinstance(k, dict) and k.get("backend") == "cuda"]
    for name in cuda:
        caps = data["kernel"][name].get("cuda-capabilities")
        if caps and all(float(re.sub(r"[a-z]+$", "", c)) > float(arch) for c in caps):
            return "", f"kernel {name} is built for {', '.join(caps)} only, none of which runs on sm_{arch.replace('.', '')}"
    text = _CAPS.sub("", text)
    for name in cuda:
        header = re.compile(rf'(?m)^\[kernel\.(?:"{re.escape(name)}"|{re.escape(name)})\][ \t]*\n')
        text = header.sub(lambda m: m.group(0) + f'cuda-capabilities = ["{arch}"]\n', text, count=1)
    return text, ""


def _prepare(src: Path, work: Path, arch: str | None = None) -> Path:
    dest = work / "src"
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=_COPY_IGNORE, symlinks=True)
    if arch:
        narrowed, why = narrow_capabilities((dest / "build.toml").read_text(encoding="utf-8"), arch)
        if why:
            raise Unbuildable(why)
        (dest / "build.toml").write_text(narrowed, encoding="utf-8")
    git = ["git", "-c", "user.email=corpus@localhost", "-c", "user.name=corpus", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "corpus copy", "--no-verify"], cwd=dest, check=True)
    return dest


class Unbuildable(Exception):
    """The project has no variant this host can build (a kernel for newer GPUs only)."""


def _fail(row: Row, stage: str, rc: int | None, data: dict, stderr: str) -> Row:
    row.stages[stage] = "FAIL"
    if rc is None:
        row.code, row.message = "timeout", f"{stage} did not finish within {STAGE_TIMEOUT_S.get(stage)} s"
    elif rc < 0:
        row.code, row.message = "crash", f"{stage} died with signal {-rc}: {stderr.strip().splitlines()[-1:]}"
    elif "results" in data:  # smoke's own verdict: the first failing case says why (_smoke_details)
        row.code = "smoke-failed"
        if not row.message:
            tests = data.get("project_tests") or {}
            untested = data.get("untested") or []
            if tests.get("failed"):
                first = (tests.get("output") or "").strip().splitlines()[:1]
                why = first[0] if first and not tests.get("ran") else f"{tests.get('failed')} failed"
                row.message = f"the project's own tests ({tests.get('command')}): {why}"
            elif untested and not data.get("results"):
                row.code = "smoke-untested"
                row.message = (f"no contract fits {', '.join(untested)} and no test of the project calls them"
                               + ("" if tests else " (it has no tests)"))
            else:
                row.message = "nothing available or nothing ran"
    else:
        row.code = str(data.get("code") or f"exit {rc}")
        row.message = str(data.get("error") or (stderr.strip().splitlines() or [""])[-1])
        first = next((p for p in data.get("problems") or () if isinstance(p, dict) and p.get("message")), None)
        if first is not None:  # e.g. the compiler's first error line
            row.message += f"; {first.get('path') or ''}:{first.get('line') or ''}: {first['message']}"
        row.message = row.message[:400]
    return row


def _smoke_details(row: Row, data: dict) -> None:
    results = data.get("results", [])
    failures = [r for r in results if not r.get("passed")]
    examples: dict[str, dict] = {}  # the first failing case of each category and kind: the evidence
    for r in failures:
        key = f"{r.get('category') or '-'}/{r.get('kind') or 'wrong'}"
        examples.setdefault(key, {"case": r.get("name"), "seed": r.get("seed"), "message": (r.get("message") or "")[:300]})
    row.smoke = {"counts": data.get("counts"), "tiers": data.get("tiers"), "examples": examples,
                 "not_available": (data.get("not_available") or {}).get("ops", []),
                 "failures_by_category": data.get("failures_by_category"),
                 "project_tests": data.get("project_tests")}
    if failures:
        first = failures[0]
        row.case = first.get("name", "")
        row.category = f"{first.get('category') or '-'}/{first.get('kind') or 'wrong'}"
        row.message = (first.get("message") or "")[:300]


def run_project(src: Path, work: Path, seeds: int, python: str, arch: str | None = None) -> Row:
    name = src.name
    row = Row(project=name)
    work.mkdir(parents=True, exist_ok=True)
    # Each project a Hub of its own and a Xet client cache of its own: hf_xet keeps its dedup
    # shards per CAS URL, and every throwaway Hub is http://127.0.0.1:8000 (a fresh Hub at a
    # URL another served before refuses the shards the cache says it has: a 400).
    env = dict(os.environ, PIPELINE_BUILD_BACKEND="local", XDG_DATA_HOME=str(work / "data"),
               HF_XET_CACHE=str(work / "xet-cache"),
               PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("HF_TOKEN", None)
    env.pop("HF_ENDPOINT", None)  # a throwaway embedded Hub, never a real one
    try:
        project = _prepare(src, work, arch)
    except Unbuildable as why:
        row.stages["build"], row.code, row.message = "skip", "not-for-this-gpu", str(why)
        return row
    cli = [python, "-m", "pipeline"]
    steps = {
        "validate": [*cli, "validate", str(project), "--json"],
        # Built beside the copy, not into it: what the project's own `build/` does is the
        # validate rules' business (tests/integration/test_build*.py), not this table's.
        "build": [*cli, "build", str(project), "--backend", "local", "--out", str(work / "build"), "--json"],
        "smoke": [*cli, "smoke", str(work / "build"), "--kernel", str(project), "--json", "--seeds", str(seeds)],
        "publish": [*cli, "publish", f"corpus/{name}", "--kernel", str(project), "--build-dir",
                    str(work / "build"), "--seeds", str(seeds), "--json"],
    }
    for stage, cmd in steps.items():
        start = time.perf_counter()
        rc, data, stderr = _run(cmd, work, env, STAGE_TIMEOUT_S[stage])
        # Each stage's JSON and stderr beside the copy: the evidence behind the row.
        (work / f"{stage}.json").write_text(json.dumps(data, indent=2) + "\n")
        (work / f"{stage}.log").write_text(stderr)
        row.seconds[stage] = round(time.perf_counter() - start, 1)
        if stage == "smoke" and isinstance(data, dict) and "results" in data:
            _smoke_details(row, data)
        if rc != 0:
            if stage == "publish" and rc == 10:  # uploaded; verify failed
                row.stages["publish"] = "ok"
                row = _fail(row, "verify", rc, data, stderr)
                problems = (data.get("verify") or {}).get("problems") or []
                if problems:
                    first = problems[0]
                    row.code = str(first.get("code") or row.code)
                    row.message = str(first.get("error") or first.get("message") or row.message)[:400]
                return row
            return _fail(row, stage, rc, data, stderr)
        row.stages[stage] = "ok"
    row.stages["verify"] = "ok" if data.get("verify", {}).get("ok", True) else "FAIL"
    return row


def _table(rows: list[Row]) -> str:
    head = "| project | " + " | ".join(STAGES) + " | time (s) | verdict | failing case | category | why |"
    lines = [head, "|" + " --- |" * (len(STAGES) + 6)]
    for r in rows:
        stages = " | ".join(r.stages.get(s, "-") for s in STAGES)
        why = (r.code + ": " if r.code else "") + r.message.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.project} | {stages} | {sum(r.seconds.values()):.0f} | {r.verdict} | "
                     f"{r.case.replace('|', '/')} | {r.category} | {why[:160]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--only", action="append", default=[], help="project names to run (repeatable)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1) // 8))
    parser.add_argument("--seeds", type=int, default=2, help="smoke's seeds per case (default 2)")
    parser.add_argument("--work", type=Path, default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--cuda-arch", default=None, metavar="X.Y",
                        help="build CUDA kernels for this capability only (the copies' build.toml narrowed), "
                             "e.g. 9.0 on an H100 or H200")
    args = parser.parse_args(argv)
    backend = host_backend()
    projects, skipped = [], []
    for root in args.paths:
        for p in ([root] if (root / "build.toml").is_file() else find_projects(root)):
            if args.only and p.name not in args.only:
                continue
            backends, noarch = backends_of(p)
            (projects if backend in backends else skipped).append(p)  # noarch ones list theirs too
    work = args.work or Path(tempfile.mkdtemp(prefix="real-projects-"))
    print(f"{len(projects)} project(s) with a {backend} or noarch variant; {len(skipped)} without one; "
          f"work directory {work}", file=sys.stderr)
    rows: list[Row] = []
    command = " ".join(["python", "benchmarks/real_projects.py", *(argv or sys.argv[1:])])

    def write_json() -> None:  # after every project: a run cut off still leaves what it finished
        if args.json:
            doc = {"command": command, "backend": backend,
                   "rows": [asdict(r) | {"verdict": r.verdict} for r in sorted(rows, key=lambda r: r.project)]}
            tmp = args.json.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc, indent=2) + "\n")
            tmp.replace(args.json)

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_project, p, work / p.name, args.seeds, sys.executable, args.cuda_arch): p
                   for p in projects}
        for future in concurrent.futures.as_completed(futures):
            p = futures[future]
            try:
                row = future.result()
            except Exception as exc:  # this script's own failure on one project: shown, not fatal
                row = Row(project=p.name, code="runner", message=f"{type(exc).__name__}: {exc}")
            rows.append(row)
            write_json()
            print(f"{row.project}: {row.verdict} ({sum(row.seconds.values()):.0f} s) {row.case} {row.category} "
                  f"{row.code}", file=sys.stderr, flush=True)
    rows.sort(key=lambda r: r.project)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

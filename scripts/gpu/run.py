"""The one runner for device calls: a named recipe (scripts/gpu/recipes.toml) planned to a time
budget on the card it finds, run step by step, every record stamped with how it was made.

On a lent H100 or H200, from the repository root (wheels in `.whl/`, carry [".whl"] or
[".whl", ".gpu"] where a recipe reads the staged folder):

    python scripts/gpu/run.py record --kernels rmsnorm --dtypes bfloat16,float16
    python scripts/gpu/run.py smoke --seeds 3
    python scripts/gpu/run.py model
    python scripts/gpu/run.py sweep --sets adaln-more
    python scripts/gpu/run.py sass --against 7a97039
    python scripts/gpu/run.py corpus                  # the projects copied under .gpu/corpus/
    python scripts/gpu/run.py repro                   # a CUDA build reproducible across checkouts

On this machine (no GPU needed):

    python scripts/gpu/run.py list                    # the recipes, their defaults and steps
    python scripts/gpu/run.py record --dry-run --card H100    # the plan and its estimate
    python scripts/gpu/run.py stage --against 7a97039 # .gpu/: this tree's commit, the older tree

Results go under $OUT (default /tmp/out): `run.json` (the plan, each step's command, exit
code and seconds), `log.txt`, `logs/`, and `records/<kernel>-<card>[-<dtype>|-smoke|-model].json`
(with the bench's .md and .png), each carrying a `run` block: the runner's command, the step's
command, the card, the build id, the date and the commit. `python3 scripts/gpu/take_records.py
$OUT/records` files them under kernels-src/<kernel>/benchmarks/results/, and
`python3 scripts/gpu/runs.py` writes RUNS.md from what is filed.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "scripts" / "gpu"
STAGE = REPO / ".gpu"  # written by `run.py stage` on the checkout; carried to the device
BUILD = Path("/tmp")  # /tmp/build-<kernel>: the path every committed bench command names
WORK = Path("/tmp/gpu-run")  # tuning copies, the older tree, corpus builds
# nvcc's per-file id in mangled names (_GLOBAL__N__<hash>_<n>_<file>_cu_<hash>, _INTERNAL_...):
# it changes with the file's text, so two builds of the same code differ there and only there.
FILE_ID = re.compile(r"(?:_GLOBAL__N__|_INTERNAL_)[0-9a-f]{8}_\d+_\w+?_cu_[0-9a-f]{8}")

sys.path.insert(0, str(GPU))
from recipes import CARDS, TUNE, Recipe, Task, cost, load, plan, problems, resolve  # noqa: E402


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def gpu_name() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.splitlines()[0].strip() if out.strip() else ""


def card_of(name: str) -> str | None:
    return next((c for c in CARDS if c in name), None)


def tree_commit() -> str:
    """This tree's commit: `run.py stage` writes it into .gpu/HEAD; else git, where there is one."""
    staged = STAGE / "HEAD"
    if staged.is_file():
        return staged.read_text().strip()
    try:
        proc = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
                              capture_output=True, text=True, timeout=30)
        return proc.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


class Runner:
    def __init__(self, recipe: Recipe, card: str, device: str, out: Path, argv: list[str]):
        self.recipe, self.card, self.device, self.out = recipe, card, device, out
        self.command = "python scripts/gpu/run.py " + " ".join(shlex.quote(a) for a in argv)
        self.start = time.monotonic()
        self.records = out / "records"
        self.logs = out / "logs"
        for d in (out, self.records, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ, PYTHONUNBUFFERED="1", TORCH_CUDA_ARCH_LIST="9.0",
                        MAX_JOBS=os.environ.get("MAX_JOBS", str(os.cpu_count() or 8)))
        self.done: list[dict] = []
        self.build_ids: dict[str, str] = {}
        self.narrowed_files: dict[Path, str] = {}  # build.toml -> its text before, put back at the end
        self.commit = tree_commit()

    # -- helpers
    def left(self) -> int:
        return int(self.recipe.budget - (time.monotonic() - self.start))

    def log(self, msg: str) -> None:
        line = f"[{int(time.monotonic() - self.start):4d} s] {msg}"
        print(line, flush=True)
        with open(self.out / "log.txt", "a") as f:
            f.write(line + "\n")

    def sh(self, cmd: list[str], name: str, *, stdout: Path | None = None, cwd: Path = REPO,
           env: dict | None = None, timeout: int | None = None) -> int:
        """Run `cmd` (stderr, and stdout unless `stdout` is given, to logs/<name>.log), cut off at the budget."""
        limit = max(1, min(timeout or self.left(), self.left()))
        t0 = time.monotonic()
        with open(self.logs / f"{name}.log", "w") as err:
            out = open(stdout, "w") if stdout else err
            try:
                rc = subprocess.run(cmd, cwd=cwd, env=env or self.env, stdout=out,
                                    stderr=err if stdout else subprocess.STDOUT, timeout=limit).returncode
            except subprocess.TimeoutExpired:
                rc = 124
            finally:
                if stdout:
                    out.close()
        self.done.append({"name": name, "command": " ".join(shlex.quote(c) for c in cmd), "rc": rc,
                          "seconds": round(time.monotonic() - t0, 1)})
        self.log(f"{name}: rc={rc} ({time.monotonic() - t0:.0f} s)")
        return rc

    def stamp(self, path: Path, step: str, kernel: str | None) -> None:
        """Add the `run` block to a record: how it was made, by whom, on what."""
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            return
        if not isinstance(doc, dict):
            return
        doc["run"] = {"recipe": self.recipe.name, "command": self.command, "step": step, "card": self.card,
                      "device": self.device, "build_id": doc.get("kernel_id") or self.build_ids.get(kernel or "", ""),
                      "date": now(), "commit": self.commit}
        path.write_text(json.dumps(doc, indent=2) + "\n")

    def record_name(self, kernel: str, tag: str = "") -> Path:
        return self.records / f"{kernel}-{self.card.lower()}{tag}.json"

    # -- setup
    def setup(self) -> None:
        wheels = sorted((REPO / ".whl").glob("*.whl"))
        site = Path("/tmp/site")
        if wheels and not (site / ".installed").exists():
            self.sh([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                     "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)], "setup-wheels")
            (site / ".installed").touch()
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(REPO), os.environ.get("PYTHONPATH")) if p)
        self.log(f"{self.device or 'no GPU'} ({self.card}); commit {self.commit}; MAX_JOBS={self.env['MAX_JOBS']}")

    def narrowed(self, project: Path) -> None:
        """The project's CUDA capabilities narrowed to 9.0 (the card's only), as every device call did."""
        toml = project / "build.toml"
        text = toml.read_text()
        new = re.sub(r"(?m)^cuda-capabilities = .*$", 'cuda-capabilities = ["9.0"]', text)
        if new != text:
            self.narrowed_files.setdefault(toml, text)
            toml.write_text(new)

    def build(self, project: Path, out: Path, name: str, timeout: int | None = None) -> int:
        self.narrowed(project)
        shutil.rmtree(out, ignore_errors=True)
        rc = self.sh([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "local", "--out", str(out),
                      "--json"], name, stdout=self.logs / f"{name}.json", timeout=timeout)
        try:
            doc = json.loads((self.logs / f"{name}.json").read_text())
            ids = [v["kernel_id"] for k in doc["kernels"] for v in k["variants"]]
            self.build_ids[name.removeprefix("build-")] = ",".join(ids)
        except (OSError, ValueError, KeyError):
            pass
        return rc

    # -- steps
    def step_build(self, task: Task) -> None:
        with ThreadPoolExecutor(len(task.kernels)) as pool:
            list(pool.map(lambda k: self.build(REPO / "kernels-src" / k, BUILD / f"build-{k}", f"build-{k}"),
                          task.kernels))

    def step_check(self, task: Task) -> None:
        for k in task.kernels:
            self.sh([sys.executable, "-m", "pipeline", "check", str(BUILD / f"build-{k}"), "--no-matrix", "--json"],
                    f"check-{k}", stdout=self.logs / f"check-{k}.json")

    def step_smoke(self, task: Task) -> None:
        def one(k: str) -> None:
            path = self.record_name(k, "-smoke")
            cmd = [sys.executable, "-m", "pipeline", "smoke", str(BUILD / f"build-{k}"), "--kernel", f"kernels-src/{k}",
                   "--seeds", str(self.recipe.seeds), "--json"]
            self.sh(cmd, f"smoke-{k}", stdout=path)
            self.stamp(path, "python -m pipeline " + " ".join(cmd[3:]), k)
            try:
                doc = json.loads(path.read_text())
                self.log(f"smoke {k}: passed={doc.get('passed')} {doc.get('counts')}")
            except (OSError, ValueError):
                self.log(f"smoke {k}: no report")

        with ThreadPoolExecutor(len(task.kernels)) as pool:
            list(pool.map(one, task.kernels))

    def step_bench(self, task: Task) -> None:
        (k,), dtype = task.kernels, task.detail
        tag = "" if dtype == "bfloat16" else f"-{dtype}"
        path = self.record_name(k, tag)
        cmd = [sys.executable, "-m", "pipeline", "bench", str(BUILD / f"build-{k}"), "--kernel", f"kernels-src/{k}",
               "--reps", str(self.recipe.reps), "--samples", str(self.recipe.samples),
               *(["--dtype", dtype] if tag else []), "--out", str(path), "--markdown", str(path.with_suffix(".md")),
               "--plot", str(path.with_suffix(".png"))]
        self.sh(cmd, f"bench-{k}{tag}")
        self.stamp(path, "python -m pipeline " + " ".join(cmd[3:]), k)

    def step_model(self, task: Task) -> None:
        (k,), model = task.kernels, task.detail
        wheels = [str(REPO / d) for d in (".whl/consumers", ".whl") if (REPO / d).is_dir()]
        env = {e: v for e, v in self.env.items() if e not in ("HF_ENDPOINT", "HF_TOKEN")}
        env.update(XDG_DATA_HOME=str(WORK / "model-hub"), PIPELINE_CONSUMER_WHEELS=os.pathsep.join(wheels),
                   PIPELINE_CONSUMER_NO_DEPS="1", PIPELINE_CONSUMER_CACHE=str(WORK / "consumers"))
        published = self.logs / f"publish-{k}.json"
        rc = self.sh([sys.executable, "-m", "pipeline", "publish", f"kernels-pipeline/{k}", "--kernel",
                      f"kernels-src/{k}", "--build-dir", str(BUILD / f"build-{k}"), "--no-verify", "--json"],
                     f"publish-{k}", stdout=published, env=env)
        if rc != 0:
            return
        version = str(json.loads(published.read_text())["version"])
        path = self.record_name(k, "-model")
        cmd = [sys.executable, "-m", "pipeline", "verify", f"kernels-pipeline/{k}", "--version", version, "--kernel",
               f"kernels-src/{k}", "--load-only", "--consumers", "none", "--model", model, "--model-consumers",
               self.recipe.consumers, *self.recipe.model_args, "--device", "cuda", "--json"]
        self.sh(cmd, f"model-{k}", stdout=path, env=env)
        step = "python -m pipeline " + " ".join(cmd[3:])
        self.stamp(path, step, k)
        try:  # the card shows `command` (card.model_table), as bench records carry theirs
            doc = json.loads(path.read_text())
            doc["command"] = step
            path.write_text(json.dumps(doc, indent=2) + "\n")
        except (OSError, ValueError):
            pass

    def step_shapes(self, task: Task) -> None:
        (k,) = task.kernels
        out = self.out / f"shapes-{k}-{self.card.lower()}.json"
        self.sh([sys.executable, str(GPU / "more_shapes.py"), k, str(BUILD / f"build-{k}"), "--reps",
                 str(self.recipe.reps), "--out", str(out)], f"shapes-{k}")
        self.stamp(out, "more_shapes.py", k)

    def tuning_copy(self, kernel: str) -> Path:
        """kernels-src/<kernel> copied with its tuning patch applied (git apply, else patch)."""
        root = WORK / f"tune-{kernel}"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(REPO / "kernels-src" / kernel, root / "kernels-src" / kernel,
                        ignore=shutil.ignore_patterns("build", "__pycache__"))
        patch = TUNE / f"{kernel}.patch"
        if self.sh(["git", "apply", "-p1", str(patch)], f"patch-{kernel}", cwd=root) != 0:
            self.sh(["patch", "-p1", "-i", str(patch)], f"patch-{kernel}-gnu", cwd=root)
        return root / "kernels-src" / kernel

    def step_sweep(self, task: Task) -> None:
        (k,), name = task.kernels, task.detail
        build = BUILD / f"build-tune-{k}"
        if not build.is_dir():
            if self.build(self.tuning_copy(k), build, f"build-tune-{k}") != 0:
                return
        out = self.out / f"sweep-{name}-{self.card.lower()}.json"
        self.sh([sys.executable, str(GPU / "sweep.py"), name, str(build), "--reps", str(self.recipe.reps),
                 "--json", str(out)], f"sweep-{name}")
        self.stamp(out, f"sweep.py {name}", f"tune-{k}")

    def step_corpus(self, task: Task) -> None:
        """Every staged project through benchmarks/real_projects.py (validate, build, smoke,
        publish to a throwaway embedded Hub, verify), --jobs at a time, sm_90 only."""
        root = REPO / self.recipe.corpus
        out = self.records / f"corpus-{self.card.lower()}.json"
        cores = int(self.env["MAX_JOBS"])
        env = dict(self.env, MAX_JOBS=str(max(1, cores // max(1, self.recipe.jobs))))
        cmd = [sys.executable, str(REPO / "benchmarks" / "real_projects.py"), str(root), "--jobs", str(self.recipe.jobs),
               "--seeds", str(self.recipe.seeds), "--cuda-arch", "9.0", "--work", str(WORK / "corpus"),
               "--json", str(out)]
        self.sh(cmd, "corpus", stdout=self.out / f"corpus-{self.card.lower()}.md", env=env)
        self.stamp(out, " ".join(["python", *cmd[1:]]), None)

    def step_harness(self, task: Task) -> None:
        """The planted kernel (noarch: nothing to compile) smoked with one flaw on this GPU."""
        project = WORK / "planted"
        build = WORK / "planted-build"
        if not build.is_dir():
            shutil.rmtree(project, ignore_errors=True)
            shutil.copytree(REPO / "tests" / "fixtures" / "planted", project)
            git = ["git", "-c", "user.email=run@localhost", "-c", "user.name=run"]
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "planted"]):
                self.sh([*git, *args], f"planted-git-{args[0]}", cwd=project)
            self.sh([sys.executable, "-m", "pipeline", "build", str(project), "--backend", "local", "--out",
                     str(build)], "planted-build")
        path = self.records / f"harness-{task.detail}-{self.card.lower()}.json"
        cmd = [sys.executable, "-m", "pipeline", "smoke", str(build), "--kernel", str(project), "--seeds",
               str(self.recipe.seeds), "--only", "relu:relu/fp32/*", "--timeout", "20", "--no-op-checks", "--json"]
        self.sh(cmd, f"harness-{task.detail}", stdout=path, env=dict(self.env, PLANTED_FLAW=task.detail))
        self.stamp(path, f"PLANTED_FLAW={task.detail} python -m pipeline " + " ".join(cmd[3:]), None)
        try:
            doc = json.loads(path.read_text())
            self.log(f"harness {task.detail}: passed={doc.get('passed')} {doc.get('counts')} "
                     f"{doc.get('failures_by_category')} workers={doc.get('workers')}")
        except (OSError, ValueError):
            self.log(f"harness {task.detail}: no report")

    def against_tree(self, commit: str) -> Path | None:
        """The older tree's kernels-src: staged by `run.py stage --against`, else git archive (where git has it)."""
        staged = STAGE / "against" / commit / "kernels-src"
        if staged.is_dir():
            return staged
        dest = WORK / "against" / commit
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "kernels-src"], capture_output=True)
        if archive.returncode != 0:
            return None
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        return dest / "kernels-src"

    def step_sass(self, task: Task) -> None:
        commit = task.detail
        if not commit:
            self.log("sass: --against COMMIT is needed")
            return
        old = self.against_tree(commit)
        if old is None:
            self.log(f"sass: no tree for {commit}: run `python scripts/gpu/run.py stage --against {commit}` on the "
                     "checkout and carry .gpu")
            return
        # Both trees' projects built side by side, by this tree's pipeline (so only the sources differ).
        sides = {}
        for k in task.kernels:
            for side, root in (("new", REPO / "kernels-src"), ("old", old)):
                copy = WORK / "sass" / side / k
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(root / k, copy, ignore=shutil.ignore_patterns("build", "__pycache__", "benchmarks"))
                sides[(k, side)] = copy
        parallel = min(len(sides), int(self.env["MAX_JOBS"]))
        env = dict(self.env, MAX_JOBS=str(max(1, int(self.env["MAX_JOBS"]) // parallel)))

        def build(key):
            k, side = key
            self.narrowed(sides[key])
            out = WORK / "sass" / f"build-{side}-{k}"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [sys.executable, "-m", "pipeline", "build", str(sides[key]), "--backend", "local", "--out", str(out),
                   "--json"]
            return key, self.sh(cmd, f"sass-build-{side}-{k}", env=env, stdout=self.logs / f"sass-build-{side}-{k}.json")

        with ThreadPoolExecutor(parallel) as pool:
            rcs = dict(pool.map(build, sides))
        cuda_bin = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin"
        cuobjdump = shutil.which("cuobjdump") or str(cuda_bin / "cuobjdump")
        summary = {"against": commit, "commit": self.commit, "card": self.card, "date": now(), "command": self.command,
                   "masked": FILE_ID.pattern, "kernels": {}}
        sass_dir = self.out / "sass"
        sass_dir.mkdir(exist_ok=True)
        for k in task.kernels:
            texts, errors = {}, {}
            for side in ("new", "old"):
                libs = sorted((WORK / "sass" / f"build-{side}-{k}").rglob("*.so"))
                try:
                    dump = subprocess.run([cuobjdump, "-sass", *map(str, libs)], capture_output=True, text=True) \
                        if libs and rcs[(k, side)] == 0 else None
                except OSError as exc:  # no cuobjdump
                    dump, errors[side] = None, str(exc)
                if dump is not None and dump.returncode != 0:
                    errors[side] = dump.stderr.strip()[-500:]
                texts[side] = FILE_ID.sub("<file-id>", dump.stdout) if dump and dump.returncode == 0 else None
                if texts[side] is not None:  # the dumps stay on the machine (MBs each); the diff comes back
                    (WORK / "sass" / f"{k}-{side}.sass").write_text(texts[side])
            if not texts["new"] or not texts["old"]:
                summary["kernels"][k] = {"verdict": "not compared", "errors": errors,
                                         "build_rc": {s: rcs[(k, s)] for s in ("new", "old")}}
                self.log(f"sass {k}: not compared (build rc {rcs[(k, 'new')]}, {rcs[(k, 'old')]}; or no SASS)")
                continue
            old_sass, new_sass = WORK / "sass" / f"{k}-old.sass", WORK / "sass" / f"{k}-new.sass"
            diff = subprocess.run(["diff", "-u", str(old_sass), str(new_sass)], capture_output=True, text=True).stdout
            if diff:
                (sass_dir / f"{k}.diff").write_text(diff[:4_000_000])
            functions = texts["new"].count("Function : ")
            summary["kernels"][k] = {"verdict": "same" if not diff else "different", "functions": functions,
                                     "sass_lines": texts["new"].count("\n"), "diff_lines": diff.count("\n"),
                                     "sha256": hashlib.sha256(texts["new"].encode()).hexdigest()}
            self.log(f"sass {k}: {summary['kernels'][k]['verdict']} ({functions} functions)")
        (sass_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    def step_repro(self, task: Task) -> None:
        self.sh(["bash", str(GPU / "repro_build.sh")], "repro", env=dict(self.env, RES=str(self.out)))

    def run(self, tasks: list[Task]) -> None:
        try:
            self._run(tasks)
        finally:
            for toml, text in self.narrowed_files.items():
                toml.write_text(text)

    def _run(self, tasks: list[Task]) -> None:
        for task in tasks:
            if task.step != "setup" and self.left() < 15:
                self.log(f"budget spent: {task.step} {' '.join(task.kernels)} {task.detail} left out")
                continue
            self.log(f"== {task.step} {' '.join(task.kernels)} {task.detail} "
                     f"(estimate {task.seconds} s, {self.left()} s left)")
            if task.step == "setup":
                self.setup()
            else:
                getattr(self, f"step_{task.step}")(task)
            (self.out / "run.json").write_text(json.dumps(
                {"recipe": self.recipe.name, "command": self.command, "card": self.card, "device": self.device,
                 "commit": self.commit, "budget": self.recipe.budget, "steps": self.done}, indent=2) + "\n")
        self.log(f"done in {int(time.monotonic() - self.start)} s")


# ---------------------------------------------------------------------------------------------


def stage(against: str | None) -> int:
    """On the checkout: .gpu/HEAD (this tree's commit) and, with --against, .gpu/against/<commit>/kernels-src."""
    STAGE.mkdir(exist_ok=True)
    head = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (STAGE / "HEAD").write_text(head + "\n")
    print(f"{STAGE / 'HEAD'}: {head}")
    if against:
        dest = STAGE / "against" / against
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", against, "kernels-src"], capture_output=True)
        if archive.returncode != 0:
            print(f"git archive {against}: {archive.stderr.decode().strip()}", file=sys.stderr)
            return 1
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
        shutil.rmtree(dest / "kernels-src" / "softmax-triton", ignore_errors=True)
        for results in (dest / "kernels-src").glob("*/benchmarks"):
            shutil.rmtree(results)  # records and notes: not what is compiled
        size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
        print(f"{dest}: kernels-src of {against} ({size // 1024} KiB); carry [\".whl\", \".gpu\"]")
    return 0


def list_recipes(data: dict) -> None:
    for name, raw in data["recipe"].items():
        print(f"{name:8} {raw['about']}")
        print(f"{'':8} steps {', '.join(raw['steps'])}; kernels {', '.join(raw['kernels']) or '-'}; "
              f"budget {raw['budget']} s")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    data = load()
    ap = argparse.ArgumentParser(prog="run.py", description=__doc__.splitlines()[0])
    ap.add_argument("recipe", help=f"one of {', '.join(data['recipe'])}, or `list`, or `stage`")
    ap.add_argument("--kernels", help="comma-separated (default: the recipe's)")
    ap.add_argument("--dtypes", help="comma-separated bench dtypes, e.g. bfloat16,float16,float32")
    ap.add_argument("--samples", type=int)
    ap.add_argument("--seeds", type=int)
    ap.add_argument("--reps", type=int)
    ap.add_argument("--sets", help="comma-separated sweep sets (scripts/gpu/sweep.py)")
    ap.add_argument("--corpus", help="folder of kernel projects, relative to the repository root")
    ap.add_argument("--against", help="sass: the older commit (stage: the commit to export)")
    ap.add_argument("--budget", type=int, help="seconds (default: the recipe's)")
    ap.add_argument("--jobs", type=int, help="corpus: projects at once (default: the recipe's)")
    ap.add_argument("--flaws", help="harness: comma-separated planted flaws (default: the recipe's)")
    ap.add_argument("--card", choices=CARDS, help="plan for (and name records by) this card; default: the GPU's")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/out")))
    ap.add_argument("--dry-run", action="store_true", help="print the plan and its estimate; run nothing")
    args = ap.parse_args(argv)
    if args.recipe == "list":
        list_recipes(data)
        return 0
    if args.recipe == "stage":
        return stage(args.against)
    device = "" if args.dry_run and args.card else gpu_name()
    card = args.card or card_of(device)
    if card is None:
        print(f"run.py: no H100 or H200 here ({device or 'no nvidia-smi'}); --card H100|H200 with --dry-run plans "
              "for one", file=sys.stderr)
        return 2
    split = lambda v: tuple(x for x in v.split(",") if x) if v else None  # noqa: E731
    recipe = resolve(args.recipe, card, {"kernels": split(args.kernels), "dtypes": split(args.dtypes),
                                         "samples": args.samples, "seeds": args.seeds, "reps": args.reps,
                                         "sets": split(args.sets), "corpus": args.corpus, "against": args.against,
                                         "budget": args.budget, "jobs": args.jobs, "flaws": split(args.flaws)}, data)
    found = problems(recipe)
    if found:
        for p in found:
            print(f"scripts/gpu/recipes.toml: recipe {recipe.name}: {p}", file=sys.stderr)
        return 2
    tasks, left = plan(recipe, card, data)
    print(f"{recipe.name} on {card} ({device or 'planned'}), budget {recipe.budget} s:")
    for t in tasks:
        print(f"  {t.seconds:4d} s  {t.step} {' '.join(t.kernels)} {t.detail}".rstrip())
    for t in left:
        print(f"  left out (past the budget): {t.step} {' '.join(t.kernels)} {t.detail}".rstrip())
    if args.dry_run:
        return 0
    Runner(recipe, card, device, args.out, argv).run(tasks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

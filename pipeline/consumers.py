"""Consumer environments: the `kernels` (and `huggingface_hub`, `transformers`)
versions that users of a published kernel really have, each in its own venv.

`verify` loads the publication in each of them, as a user would; the model
check runs a small transformers model in one. A venv is made once per set of
requirements and kept under `~/.cache/kernel-pipeline/consumers/<key>`
(`PIPELINE_CONSUMER_CACHE` moves the root). It installs only the packages of its
spec; everything else, torch first, is this interpreter's (its site-packages
are added after the venv's own, so the venv's versions win). Packages come
from the package index, or only from the wheel directories in
`PIPELINE_CONSUMER_WHEELS` (os.pathsep-separated) when that is set: offline.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import site
import subprocess
import sys
import venv
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterator

from pipeline.errors import VerifyError
from pipeline.events import Event, Reporter, quiet

WHEELS_ENV = "PIPELINE_CONSUMER_WHEELS"
CONSUMERS_ENV = "PIPELINE_CONSUMERS"
CACHE_ENV = "PIPELINE_CONSUMER_CACHE"
NO_DEPS_ENV = "PIPELINE_CONSUMER_NO_DEPS"
INSTALL_TIMEOUT_S = 600
READY = "consumer.json"

# What pip prints when it cannot reach the index (as opposed to a version that is not there).
_UNREACHABLE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
                          r"resolution|Network is unreachable|Connection refused|ConnectTimeout|ProxyError|"
                          r"Could not fetch URL|No route to host")


@dataclass(frozen=True)
class ConsumerSpec:
    """One consumer environment: exact requirements, pip syntax."""

    requirements: tuple[str, ...]

    @property
    def pins(self) -> dict[str, str]:
        return dict(r.split("==", 1) for r in self.requirements if "==" in r)

    @property
    def kernels(self) -> str:
        return self.pins.get("kernels", "?")

    @property
    def label(self) -> str:
        return " + ".join(f"{n} {v}" for n, v in self.pins.items())

    def key(self) -> str:
        """Directory name: the requirements and the interpreter (venvs are not portable)."""
        text = "\n".join([*sorted(self.requirements), sys.version, sys.executable, _torch_version(), *_host_sites(),
                          str(no_deps())])
        slug = "-".join(f"{n.replace('_', '-')}{v}" for n, v in self.pins.items())
        return f"{slug}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


# The newest release of each kernels series users have, with the huggingface_hub
# their stack pins: transformers 5.17 accepts only kernels>=0.16,<0.17 and
# huggingface_hub<2; transformers 5.19-5.21 accept kernels>=0.17,<0.18.
CONSUMERS: tuple[ConsumerSpec, ...] = (
    ConsumerSpec(("kernels==0.16.2", "huggingface_hub==1.33.0")),
    ConsumerSpec(("kernels==0.17.2", "huggingface_hub==2.4.0")),
)
# diffusers for the LTX-Video block (0.42.1 needs huggingface_hub>=1.32,<3).
MODEL_CONSUMERS: tuple[ConsumerSpec, ...] = (
    ConsumerSpec(("kernels==0.16.2", "huggingface_hub==1.33.0", "transformers==5.17.0", "diffusers==0.42.1")),
    ConsumerSpec(("kernels==0.17.2", "huggingface_hub==2.4.0", "transformers==5.21.1", "diffusers==0.42.1")),
)


@dataclass(frozen=True)
class ConsumerEnv:
    spec: ConsumerSpec
    path: Path
    versions: dict  # distribution -> version, as installed (read back from the venv)
    reused: bool = False

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def to_json(self) -> dict:
        return {"requirements": list(self.spec.requirements), "path": str(self.path), "versions": self.versions,
                "reused": self.reused}


def default_consumers(env: dict | None = None) -> tuple[ConsumerSpec, ...]:
    """CONSUMERS, or what `PIPELINE_CONSUMERS` names ("none", or specs as for `parse_specs`)."""
    env = os.environ if env is None else env
    text = (env.get(CONSUMERS_ENV) or "").strip()
    if not text:
        return CONSUMERS
    return () if text == "none" else parse_specs(text)


def cache_root(env: dict | None = None) -> Path:
    """`PIPELINE_CONSUMER_CACHE`, else ~/.cache/kernel-pipeline/consumers. Not under
    PIPELINE_CACHE_DIR: a fresh build cache need not mean fresh venvs."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV])
    return Path.home() / ".cache" / "kernel-pipeline" / "consumers"


def no_deps(env: dict | None = None) -> bool:
    """`PIPELINE_CONSUMER_NO_DEPS=1`: install only the pinned packages (their
    dependencies must be this interpreter's already): for a small offline wheel directory."""
    env = os.environ if env is None else env
    return env.get(NO_DEPS_ENV, "") not in ("", "0")


def wheel_dirs(env: dict | None = None) -> tuple[Path, ...]:
    env = os.environ if env is None else env
    return tuple(Path(p) for p in (env.get(WHEELS_ENV) or "").split(os.pathsep) if p)


def parse_specs(text: str) -> tuple[ConsumerSpec, ...]:
    """`kernels==0.16.2,huggingface_hub==1.33.0;kernels==0.17.2` -> specs (for --consumers)."""
    specs = []
    for group in filter(None, (g.strip() for g in text.split(";"))):
        reqs = tuple(r.strip() for r in group.split(",") if r.strip())
        if not any(r.startswith("kernels==") for r in reqs):
            raise VerifyError(f"consumer {group!r} does not pin kernels", code="usage",
                              hint="write each consumer as kernels==X[,huggingface_hub==Y...]; separate them with ';'")
        specs.append(ConsumerSpec(reqs))
    return tuple(specs)


def _torch_version() -> str:
    try:
        return version("torch")
    except PackageNotFoundError:  # no torch: the key still differs from a torch host's
        return "none"


def _host_sites() -> list[str]:
    """Where this interpreter finds its packages (torch): its site-packages and
    PYTHONPATH (a `pip install --target` directory, as on the H200 image), for
    the venv's .pth, after the venv's own packages."""
    paths = [p for p in (os.environ.get("PYTHONPATH") or "").split(os.pathsep) if p]
    paths += list(site.getsitepackages())
    user = site.getusersitepackages()
    if isinstance(user, str):
        paths.append(user)
    return list(dict.fromkeys(os.path.abspath(p) for p in paths if os.path.isdir(p)))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One process makes a given venv; others wait and reuse it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def child_env(base: dict | None = None) -> dict:
    """The environment a consumer process runs in: `base` (default: ours)
    without its import path (PYTHONPATH could hold another kernels)."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def ensure_env(spec: ConsumerSpec, *, root: Path | None = None, wheels: tuple[Path, ...] | None = None,
               report: Reporter = quiet) -> ConsumerEnv:
    """The venv for `spec`, made (and cached) if needed."""
    root = cache_root() if root is None else root
    wheels = wheel_dirs() if wheels is None else wheels
    path = root / spec.key()
    with _locked(root / f".{spec.key()}.lock"):
        ready = path / READY
        if ready.is_file():
            return ConsumerEnv(spec, path, json.loads(ready.read_text())["versions"], reused=True)
        report(Event("step", f"making the consumer environment {spec.label} ({path})", stage="verify"))
        tmp = root / f".{spec.key()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _create(tmp, spec, wheels)
            versions = _installed(tmp / "bin" / "python", spec)
            (tmp / READY).write_text(json.dumps({"requirements": list(spec.requirements), "versions": versions}))
            shutil.rmtree(path, ignore_errors=True)
            tmp.rename(path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return ConsumerEnv(spec, path, versions)


def _create(path: Path, spec: ConsumerSpec, wheels: tuple[Path, ...]) -> None:
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(path)
    python = str(path / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # After the venv's own site-packages: the host's torch (and the rest) without copying it.
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in _host_sites())
    Path(purelib, "zz-host-site.pth").write_text(lines)
    # The host's pip, run by the venv's interpreter, installs into the venv; ensurepip only without one.
    if subprocess.run([python, "-c", "import pip"], capture_output=True, env=child_env()).returncode != 0:
        subprocess.run([python, "-m", "ensurepip", "--default-pip"], capture_output=True, check=True, env=child_env())
    source = ["--no-index", *[f"--find-links={w}" for w in wheels]] if wheels else ["--prefer-binary"]
    if no_deps():
        source.append("--no-deps")
    # -vv: only then does pip say "Could not fetch URL ... connection error" when the index is down.
    cmd = [str(path / "bin" / "python"), "-m", "pip", "install", "-vv", "--disable-pip-version-check", "--no-input",
           *source, *spec.requirements]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, env=child_env())
    except subprocess.TimeoutExpired:
        raise VerifyError(f"installing {spec.label} took more than {INSTALL_TIMEOUT_S} s",
                          code="consumer-index-unreachable", hint=offline_hint()) from None
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        tail = "; ".join(line.strip() for line in text.strip().splitlines() if line.startswith("ERROR:"))[-600:]
        if _UNREACHABLE.search(text) and not wheels:
            raise VerifyError(f"cannot reach the package index to install {spec.label}",
                              code="consumer-index-unreachable", hint=offline_hint())
        raise VerifyError(f"cannot install the consumer environment {spec.label}: {tail}",
                          code="consumer-env-failed",
                          hint=f"the wheels must be in {', '.join(map(str, wheels))}" if wheels else offline_hint())


def offline_hint() -> str:
    return (f"offline, put the wheels in a directory and set {WHEELS_ENV}=DIR (pip download -d DIR "
            f"kernels==X huggingface_hub==Y on a machine that reaches the index)")


def _installed(python: Path, spec: ConsumerSpec) -> dict:
    """The versions the venv really imports (its own, not the host's)."""
    names = [*spec.pins, "torch"]
    code = ("import json, importlib.metadata as m, sys\n"
            "out = {}\n"
            f"for n in {names!r}:\n"
            "    try: out[n] = m.version(n)\n"
            "    except m.PackageNotFoundError: out[n] = None\n"
            "import kernels  # its imports resolve here (--no-deps installs)\n"
            "print(json.dumps(out))")
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=child_env(), timeout=120)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise VerifyError(f"the consumer environment {spec.label} cannot import its packages: {last}",
                          code="consumer-env-failed", hint=f"add the missing wheel to {WHEELS_ENV}, or unset "
                          f"{NO_DEPS_ENV}; then rm -r {python.parent.parent}")
    versions = json.loads(proc.stdout)
    wrong = {n: versions.get(n) for n, v in spec.pins.items() if versions.get(n) != v}
    if wrong:
        raise VerifyError(f"the consumer environment {spec.label} imports {wrong}",
                          code="consumer-env-failed", hint="delete it and try again: "
                          f"rm -r {python.parent.parent}")
    if not versions.get("torch"):
        raise VerifyError(f"torch is not importable in the consumer environment {spec.label}",
                          code="consumer-env-failed", hint="install torch for this interpreter; the consumer "
                          "environments reuse it")
    return versions


def run_child(env: ConsumerEnv, module: str, request: dict, *, base_env: dict, timeout: int) -> dict:
    """Run `module._child_main()` in the consumer venv with `request` on stdin; its JSON result.
    `base_env` is the whole environment (Hub, caches); only this package is put on its import path."""
    package_parent = str(Path(__file__).resolve().parents[1])
    result = Path(base_env["KERNELS_CACHE"]).parent / f"result-{env.spec.key()}.json"
    request = {**request, "result": str(result)}
    proc_env = {**child_env(base_env), "PYTHONPATH": package_parent, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run([str(env.python), "-c", f"from {module} import _child_main; _child_main()"],
                              input=json.dumps(request), capture_output=True, text=True, env=proc_env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise VerifyError(f"the {env.spec.label} process did not finish in {timeout} s",
                          code="verify-process-failed") from None
    if not result.is_file():
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise VerifyError(f"the {env.spec.label} process failed (exit {proc.returncode})",
                          code="verify-process-failed", hint=tail or "no output")
    data = json.loads(result.read_text())
    result.unlink()
    return data

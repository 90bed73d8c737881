"""`verify ORG/NAME --version N`: does `kernels` get what we published?

Two questions, both answered by `kernels`' own code, in a fresh Python
process pointed at the Hub (`HF_ENDPOINT`) with an empty `KERNELS_CACHE`, so
nothing from this process or an earlier download can stand in:

1. Load: `kernels.get_kernel(ORG/NAME, version=N)` picks this host's variant,
   downloads and imports it; its ops are then run on fresh random inputs
   against the kernel's float64 references (the smoke cases of
   `tests/smoke_cases.py`, through `pipeline.smoke.run_cases`).
2. Resolution: for every cell of the build matrix, the variant that
   `kernels`' selection function (`kernels.variants._resolve_variant_for_system`,
   the function `get_kernel` itself calls, given explicit system parameters)
   would choose from the published variants, or nothing with its reasons.

3. Consumers: the same load in each consumer environment (`pipeline.consumers`:
   the newest kernels 0.16.x with huggingface_hub 1.x, the newest 0.17.x
   with 2.x, each in its own cached venv), with `get_kernel` called exactly
   as the card tells users to call it: without `trust_remote_code`, unless
   the namespace is not a trusted publisher; then verify says so, and loads
   it with `trust_remote_code=True` as such a user has to.

A cell is *promised* when the publication covers its torch version, backend
(CUDA major) and platform, i.e. some published variant was built for that
family, or holds the noarch `torch-<backend>` variant of its backend (a
noarch variant's cells are the builds it stands for); with `require="all"`
every matrix cell is promised. A promised cell
that resolves to nothing fails verification.
"""

from __future__ import annotations

import json
import os
from importlib import metadata
import random
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pipeline.consumers import ConsumerEnv, ConsumerSpec, default_consumers, ensure_env, offline_hint, run_child
from pipeline.errors import Problem, VerifyError
from pipeline.events import Event, Reporter, quiet

if TYPE_CHECKING:  # pragma: no cover
    from pipeline.workspace import Kernel

# macOS release assumed for darwin cells: kernels only loads Metal builds on
# macOS 26+, and that is what a published Metal variant targets.
DARWIN_SYSTEM_MACOS = "26.0"
CHILD_TIMEOUT_S = 900
Require = Literal["published", "all"]


@dataclass(frozen=True)
class LoadCheck:
    ok: bool
    variant: str | None
    kernel_id: str | None
    revision: str | None
    seeds: tuple[int, ...]
    cases: int
    failed: int
    message: str = ""
    failures: tuple[str, ...] = ()
    trusted: bool | None = None  # get_kernel loaded it without trust_remote_code
    versions: dict | None = None  # kernels, huggingface_hub, torch in the loading process
    signature: str | None = None  # the downloaded variant's signature: status and who signed it

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "LoadCheck":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**known, "seeds": tuple(known.get("seeds") or ()),
                      "failures": tuple(known.get("failures") or ())})


@dataclass(frozen=True)
class ConsumerCheck:
    """The load in one consumer environment."""

    label: str  # "kernels 0.16.2 + huggingface_hub 1.33.0"
    requirements: tuple[str, ...]
    load: LoadCheck | None
    error: str = ""  # the environment could not be made or run
    error_code: str = ""

    @property
    def ok(self) -> bool:
        return self.load is not None and self.load.ok and not self.error

    def to_json(self) -> dict:
        return {"label": self.label, "requirements": list(self.requirements), "ok": self.ok,
                "load": self.load.to_json() if self.load else None, "error": self.error,
                "error_code": self.error_code}


@dataclass(frozen=True)
class CellResolution:
    cell: str  # the matrix cell (a variant name) whose system was resolved
    chosen: str | None
    promised: bool
    rejected: tuple[str, ...] = ()  # "variant: reason", when nothing was chosen

    @property
    def status(self) -> str:
        if self.chosen is None:
            return "none"
        return "exact" if self.chosen == self.cell else "compatible"

    def to_json(self) -> dict:
        return {**asdict(self), "status": self.status}


@dataclass(frozen=True)
class VerifyReport:
    endpoint: str
    repo_id: str
    version: int
    revision: str | None
    published: tuple[str, ...]
    load: LoadCheck | None
    cells: tuple[CellResolution, ...]
    require: str = "published"
    problems: tuple[Problem, ...] = ()
    consumers: tuple[ConsumerCheck, ...] = ()

    @property
    def trusted(self) -> bool | None:
        """Whether a plain get_kernel (no trust_remote_code) loads it; None: not tried."""
        answers = [c.load.trusted for c in self.consumers if c.load and c.load.trusted is not None]
        if self.load is not None and self.load.trusted is not None:
            answers.append(self.load.trusted)
        return all(answers) if answers else None

    @property
    def consumers_proved(self) -> tuple[str, ...]:
        return tuple(c.label for c in self.consumers if c.ok)

    @property
    def ok(self) -> bool:
        return not any(p.is_error for p in self.problems)

    def raise_for_errors(self) -> None:
        if not self.ok:
            raise VerifyError(f"{self.repo_id} v{self.version} failed verification at {self.endpoint}",
                              code="verify-failed", problems=self.problems,
                              hint="see the problems above; nothing was changed on the Hub by verify")

    def to_json(self) -> dict:
        return {
            "ok": self.ok, "endpoint": self.endpoint, "repo_id": self.repo_id, "version": self.version,
            "revision": self.revision, "published": list(self.published), "require": self.require,
            "load": self.load.to_json() if self.load else None,
            "cells": [c.to_json() for c in self.cells],
            "trusted": self.trusted, "consumers": [c.to_json() for c in self.consumers],
            "consumers_proved": list(self.consumers_proved),
            "problems": [p.to_json() for p in self.problems],
        }


def matrix_cells(kernel: "Kernel | None") -> list[str]:
    """The kernel's full build matrix, as arch variant names (a noarch variant
    stands for every build it replaces); [] without a kernel."""
    return [cell for v in kernel.variants for cell in v.cells] if kernel is not None else []


def _child_env(endpoint: str, token: str | None, cache: Path) -> dict:
    env = dict(os.environ)
    # HF_HUB_DISABLE_TELEMETRY is dropped too: with it, kernels 0.17.2 sends a
    # User-Agent ending in "; " that httpx refuses ("Illegal header value").
    for key in ("HF_HUB_OFFLINE", "LOCAL_KERNELS", "HF_TOKEN", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
                "HF_HUB_DISABLE_TELEMETRY"):
        env.pop(key, None)
    env.update({
        "HF_ENDPOINT": endpoint,
        "KERNELS_CACHE": str(cache / "kernels"),
        "HF_HOME": str(cache / "hf-home"),  # no stored token, no shared cache
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    if token:
        env["HF_TOKEN"] = token
    # The child imports this package from wherever this process did.
    package_parent = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_parent, *filter(None, [env.get("PYTHONPATH")])])
    return env


def verify_publication(endpoint: str, repo_id: str, version: int, *, kernel: "Kernel | None" = None,
                       token: str | None = None, cells: list[str] | None = None, require: Require = "published",
                       load_only: bool = False, consumers: tuple[ConsumerSpec, ...] | None = None,
                       report: Reporter = quiet) -> VerifyReport:
    """Verify a publication; returns the report (callers raise on errors).
    `consumers`: the consumer environments to load it in (default: `default_consumers()`; () for none)."""
    if cells is None:
        cells = matrix_cells(kernel)
    project_root = kernel.root if kernel is not None else None
    report(Event("step", f"get_kernel({repo_id!r}, version={version}) in a fresh process", stage="verify"))
    seeds = (random.SystemRandom().randrange(1, 2**31),)
    request = {
        "repo_id": repo_id, "version": version, "cells": cells, "seeds": list(seeds),
        "cases_file": str(kernel.smoke_cases) if kernel is not None and kernel.smoke_cases else None,
        "load_only": load_only,
        "darwin_macos": DARWIN_SYSTEM_MACOS,
    }
    with tempfile.TemporaryDirectory(prefix="pipeline-verify-") as tmp:
        data = _run_host_child(request, _child_env(endpoint, token, _fresh(Path(tmp) / "host")))
        specs = default_consumers() if consumers is None else consumers
        checks = () if data.get("error") else tuple(
            _consumer_check(spec, {**request, "consumer": True, "cells": []},
                            _child_env(endpoint, token, _fresh(Path(tmp) / f"c{i}")), report)
            for i, spec in enumerate(specs))
    verified = _report(endpoint, repo_id, version, data, require, project_root)
    return replace(verified, consumers=checks, problems=verified.problems + _consumer_problems(verified, checks))


def _fresh(path: Path) -> Path:
    """An empty cache directory for one loading process."""
    (path / "kernels").mkdir(parents=True)
    return path


def _run_host_child(request: dict, env: dict) -> dict:
    result_path = Path(env["KERNELS_CACHE"]).parent / "result.json"
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "from pipeline.verify import _child_main; _child_main()"],
            input=json.dumps({**request, "result": str(result_path)}), capture_output=True, text=True,
            env=env, timeout=CHILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise VerifyError(f"the verification process did not finish in {CHILD_TIMEOUT_S} s", code="verify-process-failed") from None
    if not result_path.is_file():
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-15:])
        raise VerifyError(f"the verification process failed (exit {proc.returncode})", code="verify-process-failed",
                          hint=tail or "no output")
    return json.loads(result_path.read_text())


def _consumer_check(spec: ConsumerSpec, request: dict, env: dict, report: Reporter) -> ConsumerCheck:
    """get_kernel in one consumer environment; a failure to make the environment is reported, not raised."""
    try:
        consumer: ConsumerEnv = ensure_env(spec, report=report)
        report(Event("step", f"get_kernel in a consumer environment: {spec.label}", stage="verify"))
        data = run_child(consumer, "pipeline.verify", request, base_env=env, timeout=CHILD_TIMEOUT_S)
    except VerifyError as exc:
        return ConsumerCheck(spec.label, spec.requirements, None, error=exc.message, error_code=exc.code or "")
    load = data.get("load")
    return ConsumerCheck(spec.label, spec.requirements, LoadCheck.from_json(load) if load else None,
                         error=data.get("error") or "")


def _consumer_problems(verified: VerifyReport, checks: tuple[ConsumerCheck, ...]) -> tuple[Problem, ...]:
    where = f"{verified.repo_id}@v{verified.version}"
    problems = []
    for check in checks:
        if check.error_code == "consumer-index-unreachable":  # not proved either way: say so, do not fail
            problems.append(Problem(where, None, check.error_code, f"{check.label} not checked: {check.error}",
                                    severity="warning", hint=offline_hint()))
        elif not check.ok:
            why = check.error or (check.load.message if check.load else "no result")
            problems.append(Problem(where, None, "consumer-load-failed", f"with {check.label}: {why}",
                                    hint="a user with these versions cannot use this publication; run "
                                         "`python -m pipeline verify ... --json` for the whole report"))
    if verified.trusted is False:
        problems.append(Problem(
            where, None, "publisher-untrusted",
            f"get_kernel({verified.repo_id!r}) without trust_remote_code refuses it: {verified.repo_id.split('/')[0]!r} "
            "is not a trusted publisher on this Hub", severity="warning",
            hint="users must pass trust_remote_code=True (the card says so); on the embedded Hub: "
                 "python -m pipeline hub trust NAMESPACE"))
    return tuple(problems)


def _report(endpoint: str, repo_id: str, version: int, data: dict, require: Require,
            project_root: Path | None) -> VerifyReport:
    problems: list[Problem] = []
    where = f"{repo_id}@v{version}"
    if data.get("error"):
        problems.append(Problem(where, None, "version-not-published", data["error"],
                                hint="is the version published? `python -m pipeline publish` prints what it made"))
    published = tuple(data.get("published") or ())
    load = None
    if data.get("load") is not None:
        load = LoadCheck.from_json(data["load"])
        if not load.ok:
            problems.append(Problem(where, None, "load-failed",
                                    f"get_kernel(version={version}) on this host: {load.message}",
                                    hint="run `python -m pipeline smoke` on the build for the full report"))
        if load.signature and load.signature.split(":")[0] in ("rejected", "bundle-invalid", "metadata-missing"):
            problems.append(Problem(where, None, "signature-invalid", f"the downloaded variant's {load.signature}",
                                    hint="re-sign the variant in the release job (ci/sign.py) and publish again"))
    families = {_family(name) for name in published}
    cells = []
    for item in data.get("cells") or ():
        promised = require == "all" or not families.isdisjoint(_families_serving(item["cell"]))
        cell = CellResolution(cell=item["cell"], chosen=item.get("chosen"), promised=promised,
                              rejected=tuple(item.get("rejected") or ()))
        cells.append(cell)
        if promised and cell.chosen is None:
            problems.append(Problem(where, None, "cell-unresolved",
                                    f"a system of cell {cell.cell} resolves to no published variant",
                                    hint="; ".join(cell.rejected[:3]) or "publish a variant for it"))
    if not data.get("cells") and project_root is None:
        problems.append(Problem(where, None, "no-matrix", "no build matrix to resolve (no kernel project given)",
                                hint="pass --kernel PATH to resolve the matrix cells", severity="warning"))
    return VerifyReport(endpoint=endpoint, repo_id=repo_id, version=version, revision=data.get("revision"),
                        published=published, load=load, cells=tuple(cells), require=require,
                        problems=tuple(problems))


def _family(variant_name: str) -> tuple:
    """(framework, backend kind + major version, platform): what a publication
    that contains this variant promises to serve (parsed by kernels)."""
    from kernels.variants import ArchVariant, parse_variant

    try:
        v = parse_variant(variant_name)
    except ValueError:
        return ("?", variant_name)
    if isinstance(v, ArchVariant):
        backend = v.arch.backend
        version = getattr(backend, "version", None)
        return (v.framework.variant_str, backend.name, version.major if version is not None else None,
                v.arch.platform, v.arch.os)
    return ("noarch", v.arch.backend_name)


def _families_serving(cell: str) -> set[tuple]:
    """The families whose publication promises `cell`: its own, and the noarch variant of its backend."""
    family = _family(cell)
    return {family, ("noarch", family[1])} if len(family) > 2 else {family}


# --- the child process ------------------------------------------------------------

def _system_of(cell: str, darwin_macos: str) -> dict:
    """Explicit system parameters for a cell, read from its name by kernels' parser."""
    from packaging.version import Version

    from kernels.variants import ArchVariant, parse_variant

    v = parse_variant(cell)
    if not isinstance(v, ArchVariant):
        raise ValueError(f"{cell} is not an arch variant: it names no system")
    framework = v.framework
    is_linux = v.arch.os == "linux"
    return {
        "selected_backend": v.arch.backend,
        "cpu": v.arch.platform,
        "os": v.arch.os,
        "torch_version": getattr(framework, "version", None),
        "torch_cxx11_abi": (framework.cxx11_abi if framework.cxx11_abi is not None else True) if is_linux and
        hasattr(framework, "cxx11_abi") else None,
        "tvm_ffi_version": None,
        "macos_version": Version(darwin_macos) if v.arch.os == "darwin" else None,
    }


def _resolve_cells(variants: list, cells: list[str], darwin_macos: str) -> list[dict]:
    from kernels.variants import VariantRejected, _resolve_variant_for_system

    out = []
    for cell in cells:
        try:
            system = _system_of(cell, darwin_macos)
        except ValueError as exc:
            out.append({"cell": cell, "chosen": None, "rejected": [str(exc)]})
            continue
        applicable, trace = _resolve_variant_for_system(variants=variants, **system)
        chosen = applicable[0].variant_str if applicable else None
        rejected = [f"{d.variant.variant_str}: {d.reason}" for d in trace if isinstance(d, VariantRejected)]
        out.append({"cell": cell, "chosen": chosen, "rejected": [] if chosen else rejected})
    return out


def _load_and_run(repo_id: str, version: int, cases_file: str | None, seeds: list[int],
                  load_only: bool) -> dict:
    import kernels
    import torch

    module, trusted = get_kernel_as_user(kernels, repo_id, version)
    # Not resolved: the cache links each file to a content blob; the directory is the variant.
    variant_dir = Path(module.__file__).parent
    loaded = next((k for k in kernels.get_loaded_kernels() if k.module is module), None)
    result = {
        "ok": True, "variant": variant_dir.name, "kernel_id": loaded.metadata.id if loaded else None,
        "revision": loaded.repo_info.revision if loaded and loaded.repo_info else None,
        "seeds": seeds, "cases": 0, "failed": 0, "message": "", "failures": [],
        "trusted": trusted, "versions": _versions(), "signature": _signature(variant_dir),
    }
    if load_only:
        result["message"] = "loaded (outputs not checked: --load-only)"
        return result
    from pipeline.smoke import check_module

    device = torch.device("cuda") if (loaded and str(loaded.metadata.backend.backend_type).lower() == "cuda") \
        else torch.device("cpu")
    # The ops' contracts (inferred from name and schema) plus the project's cases, if any.
    cases = Path(cases_file) if cases_file is not None and Path(cases_file).is_file() else None
    runs = check_module(module, device, seeds=tuple(seeds), cases_file=cases)
    if not runs:
        # Nothing here can judge its outputs (no op fits a contract, no case file): smoke's gate
        # already held it to the project's own tests. Resolving and loading is what is verified.
        result.update(ok=True, message="loaded; no contract fits its ops and no case file checks its outputs "
                                       "(publish's smoke tested it with the project's own tests)")
        return result
    failures = [f"{r.name} (seed {r.seed}): {r.message}" for r in runs if not r.passed]
    result.update(ok=bool(runs) and not failures, cases=len(runs), failed=len(failures), failures=failures[:10],
                  message=(f"{len(runs)} case(s) match the float64 reference" if not failures
                           else f"{len(failures)} of {len(runs)} case(s) differ from the reference"))
    return result


def _signature(variant_dir: Path) -> str:
    """`status: card line` of the variant kernels downloaded (checked against this GitHub
    workflow run's identity inside one, else only read)."""
    if not (variant_dir / "metadata.json.sigstore").is_file():
        return "unsigned"
    from pipeline import signing  # sigstore: only for signed variants

    report = signing.check_variant(variant_dir)
    return f"{report.status}: {report.card_line()}"


UNTRUSTED_MARKS = ("not from a trusted publisher", "could not verify publisher trust")


def get_kernel_as_user(kernels, repo_id: str, version: int):
    """`get_kernel(repo_id, version=N)` exactly as the card tells users to call
    it; only when kernels refuses the publisher, again with
    `trust_remote_code=True`, as such a user must. -> (module, trusted)."""
    try:
        return kernels.get_kernel(repo_id, version=version), True
    except ValueError as exc:
        if not any(mark in str(exc) for mark in UNTRUSTED_MARKS):
            raise
    return kernels.get_kernel(repo_id, version=version, trust_remote_code=True), False


def _versions() -> dict:
    out = {}
    for name in ("kernels", "huggingface_hub", "torch"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _publication(request: dict, out: dict) -> None:
    """What the host reads with kernels' own functions: revision, variants, matrix cells."""
    from kernels._versions import select_revision_or_version
    from kernels.hf_hub import _get_hf_api
    from kernels.variants import get_variants

    repo_id, version = request["repo_id"], request["version"]
    revision = select_revision_or_version(repo_id, revision=None, version=version, local_files_only=False)
    out["revision"] = revision
    variants = get_variants(_get_hf_api(), repo_id=repo_id, revision=revision)
    out["published"] = sorted(v.variant_str for v in variants)
    out["cells"] = _resolve_cells(variants, list(request["cells"]), request["darwin_macos"])


def _child_main() -> None:
    """Runs in the fresh process: everything through kernels, nothing cached.
    A consumer process (another kernels version) only loads and runs the kernel."""
    request = json.loads(sys.stdin.read())
    out: dict = {"published": [], "cells": [], "load": None, "revision": None}
    repo_id, version, revision = request["repo_id"], request["version"], None
    try:
        if not request.get("consumer"):
            _publication(request, out)
            revision = out["revision"]
        try:
            out["load"] = _load_and_run(repo_id, version, request.get("cases_file"), request["seeds"],
                                        bool(request.get("load_only")))
        except Exception as exc:  # whatever get_kernel raises is the finding we report
            out["load"] = {"ok": False, "variant": None, "kernel_id": None, "revision": revision,
                           "seeds": request["seeds"], "cases": 0, "failed": 0,
                           "message": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                           "failures": [], "versions": _versions()}
    except Exception as exc:  # e.g. the version does not exist: reported, not a traceback
        out["error"] = f"{type(exc).__name__}: {exc}"
    Path(request["result"]).write_text(json.dumps(out))

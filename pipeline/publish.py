"""`publish ORG/NAME`: target -> build -> check -> smoke -> plan -> commit -> verify.

A short orchestration over modules with one job each: `target` (where it goes,
starting the embedded Hub), `hubclient` (HfApi, reading the Hub, one table of
Hub failures), `bundle_source` (which build tree), `gate` (check and smoke
verdicts), `card` (the kernel card), `upload.plan` (the exact operations) and
`upload.commit` (one commit per branch, against the planned head), `verify`.
What can fail cheaply (the Hub answers, the token may write to the namespace)
is checked before what is slow (build, smoke).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

from pipeline.bundle_source import BundleSource, obtain_bundle
from pipeline.card import card_inputs, card_maker
from pipeline.errors import Problem, PublishError
from pipeline.events import Event, Reporter, quiet
from pipeline.gate import GateResult, run_gate
from pipeline.hubclient import RemoteState, check_write_access, guarded, make_api, read_remote
from pipeline.target import Target, started_target
from pipeline.upload.commit import CommitResult, execute_plan
from pipeline.upload.plan import UploadPlan, plan_upload
from pipeline.verify import VerifyReport, verify_publication
from pipeline.workspace import Kernel


@dataclass(frozen=True)
class PublishRequest:
    repo_id: str  # checked by target.split_repo_id
    kernel: Kernel | None  # the resolved project (validate/build/smoke/card); None with only a bundle
    build_dir: Path | None = None  # an existing build tree or Nix result (otherwise found or built)
    version: int | None = None
    dry_run: bool = False
    force: bool = False
    rebuild: bool = False
    verify: bool = True
    smoke: bool = True
    card_description: str | None = None
    contracts: tuple[tuple[str, str], ...] = ()  # --contract OP=FAMILY, over the workspace's bindings
    allow_untested: bool = False  # publish ops nothing tested; the card marks them
    require_contracts: bool = False  # refuse ops that only the project's own tests call
    seed: int | None = None  # smoke's seed (--seed replays a run)
    seeds: int = 3  # smoke's random trials per case

    @property
    def namespace(self) -> str:
        return self.repo_id.split("/")[0]

    @property
    def name(self) -> str:
        return self.repo_id.split("/")[1]


@dataclass(frozen=True)
class Publication:
    target: Target  # with the endpoint it was published to
    repo_id: str
    version: int
    plan: UploadPlan
    gate: GateResult
    source: BundleSource
    commits: tuple[CommitResult, ...] = ()
    dry_run: bool = False
    verify: VerifyReport | None = None

    @property
    def endpoint(self) -> str:
        return self.target.endpoint or ""

    @property
    def branch(self) -> str:
        return f"v{self.version}"

    @property
    def variants(self) -> tuple[str, ...]:
        return self.gate.bundle.variant_names

    @property
    def forced(self) -> tuple[str, ...]:
        return self.gate.forced

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self.gate.check.problems

    @property
    def changed(self) -> bool:
        return bool(self.commits)

    @property
    def commit(self) -> str | None:
        return next((c.commit for c in self.commits if c.branch == self.branch), None)

    def to_json(self) -> dict:
        return {
            "endpoint": self.endpoint, "target": self.target.to_json(), "repo_id": self.repo_id,
            "branch": self.branch, "version": self.version, "variants": list(self.variants),
            "bundle": {"path": str(self.source.path), "source": self.source.how},
            "dry_run": self.dry_run, "changed": self.changed,
            "commits": [{"branch": c.branch, "commit": c.commit, "operations": c.operations} for c in self.commits],
            "plan": self.plan.to_json(), "forced": list(self.forced), "checks": list(self.gate.checks),
            "verify": self.verify.to_json() if self.verify is not None else None,
            "problems": [p.to_json() for p in self.problems],
        }


def publish_version(request: PublishRequest, gate: GateResult) -> int:
    """The version to publish: --version, else the bundle's, which must agree."""
    bundle = gate.bundle
    version = request.version if request.version is not None else bundle.version
    if version is None and request.kernel is not None:
        version = request.kernel.version
    if version is None:
        raise PublishError("the bundle does not say which version it is", code="version-mismatch",
                           hint="set general.version in the kernel's build.toml and rebuild, or pass --version N")
    if bundle.version is not None and version != bundle.version:
        raise PublishError(
            f"--version {version} but the bundle was built as version {bundle.version}", code="version-mismatch",
            hint="kernels reads the version from metadata.json: change general.version in build.toml and rebuild")
    return version


@contextlib.contextmanager
def _live(request: PublishRequest, target: Target, report: Reporter) -> Iterator[tuple[Target, RemoteState]]:
    """The started target and what the repository holds now. A dry run against
    an embedded Hub that has never held data plans against an empty Hub
    instead of creating one."""
    if request.dry_run and target.embedded and not Path(target.hub_root).exists():
        yield replace(target, endpoint=f"http://127.0.0.1:{target.hub_port}"), RemoteState(False, {})
        return
    with started_target(target, trusted_namespaces=(request.namespace,)) as live:
        if live.embedded:
            report(Event("step", f"embedded Hub started at {live.endpoint} (data in {live.hub_root})", stage="hub"))
        api = make_api(live)
        remote = guarded(f"cannot read {request.repo_id}", request.repo_id,
                         lambda: read_remote(api, request.repo_id), live.endpoint)
        check_write_access(api, request.repo_id, live.endpoint)
        yield live, remote


def publish(request: PublishRequest, target: Target, *, report: Reporter = quiet) -> Publication:
    """Run the stages the bundle still needs, then upload and verify."""
    with _live(request, target, report) as (live, remote):
        source = obtain_bundle(request.kernel, request.name, build_dir=request.build_dir,
                               rebuild=request.rebuild, report=report)
        report(Event("step", f"using {source.path} ({source.how})", stage="build"))
        gate = run_gate(source, request.kernel, force=request.force, smoke=request.smoke, report=report,
                        contracts=request.contracts, allow_untested=request.allow_untested, seed=request.seed, trials=request.seeds,
                        require_contracts=request.require_contracts)
        version = publish_version(request, gate)
        if gate.bundle.name is not None and gate.bundle.name != request.name:
            report(Event("step", f"note: the kernel is named {gate.bundle.name!r}, the repository "
                                 f"{request.repo_id!r}", stage="check"))
        inputs = card_inputs(gate.bundle, request.kernel, version, checks=gate.checks, forced=gate.forced,
                             description=request.card_description, smoke=gate.smoke, untested=gate.untested,
                             signatures=gate.check.signatures)
        card_for = card_maker(inputs, request.repo_id, newer_published=any(v > version for v in remote.versions()),
                              trusted=remote.trusted)
        api = make_api(live)
        plan = guarded(f"cannot read {request.repo_id}", request.repo_id,
                       lambda: plan_upload(api, request.repo_id, gate.bundle, version, card_for, remote=remote),
                       live.endpoint)
        publication = Publication(target=live, repo_id=request.repo_id, version=version, plan=plan, gate=gate,
                                  source=source, dry_run=request.dry_run)
        if request.dry_run:
            return publication
        return _upload_and_verify(api, publication, request, report)


def _upload_and_verify(api, publication: Publication, request: PublishRequest, report: Reporter) -> Publication:
    plan = publication.plan
    for line in plan.lines():
        report(Event("step", line, stage="plan"))
    commits: tuple[CommitResult, ...] = ()
    if plan.empty:
        report(Event("step", f"nothing changed: {plan.repo_id} v{publication.version} already holds this bundle "
                             "and its card; no commit made, nothing uploaded", stage="upload"))
    else:
        commits = execute_plan(api, plan, report=report)
    verified = None
    if request.verify:
        kernel = request.kernel
        # The cells are the kernel's matrix (verify.matrix_cells: a noarch variant's are the builds it serves).
        verified = verify_publication(publication.endpoint, plan.repo_id, publication.version, kernel=kernel,
                                      token=publication.target.token, report=report)
    return replace(publication, commits=commits, verify=verified)

"""Resolve once: a path or a kernel NAME -> the `Kernel` value every stage takes.

This is the only module that finds and loads a kernel's files: the project
(validated), the workspace around it, the matrix policy that applies and the
variants the project must be built for. Later stages (build, check, smoke,
bench, publish, verify, card) take the `Kernel`, never a path to re-read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.contracts import Binding
from pipeline.errors import MatrixError, PublishError, WorkspaceError
from pipeline.matrix import (MatrixEntry, Variant, compute_matrix, full_table_policy, load_table, reduced_policy,
                             version_key)
from pipeline.policy import MatrixPolicy
from pipeline.project import KernelProject, load_project
from pipeline.workspace_file import (WORKSPACE_FILE, Workspace, find_workspace, is_workspace_file,
                                     load_workspace)

SMOKE_CASES = Path("tests") / "smoke_cases.py"
BENCH_CASES = Path("benchmarks") / "bench_cases.py"


@dataclass(frozen=True)
class Kernel:
    """One kernel project, resolved: what it is, where it lives, what it must be built for."""

    project: KernelProject
    workspace: Workspace | None
    policy: MatrixPolicy  # the full matrix policy that applies (the workspace's, or the builder's whole table)
    ci_policy: MatrixPolicy  # the pull-request policy
    variants: tuple[Variant, ...]  # the full build matrix
    ci_variants: tuple[Variant, ...]
    shown: str  # the project's path as printed (relative to the workspace root when there is one)
    # ((op, pipeline.contracts.Binding), ...) bound by the workspace file (smoke adds --contract on top)
    contracts: tuple[tuple[str, Binding], ...] = ()

    @property
    def root(self) -> Path:
        return self.project.root

    @property
    def name(self) -> str:
        return self.project.name

    @property
    def version(self) -> int | None:
        return self.project.version

    @property
    def namespace(self) -> str | None:
        """The workspace's default Hub namespace."""
        return self.workspace.namespace if self.workspace is not None else None

    @property
    def smoke_cases(self) -> Path | None:
        path = self.root / SMOKE_CASES
        return path if path.is_file() else None

    @property
    def bench_cases(self) -> Path | None:
        path = self.root / BENCH_CASES
        return path if path.is_file() else None

    @property
    def benchmarks_dir(self) -> Path | None:
        path = self.root / "benchmarks"
        return path if path.is_dir() else None

    def expected(self, *, ci: bool = False) -> tuple[Variant, ...]:
        return self.ci_variants if ci else self.variants

    def require_variants(self, *, ci: bool = False) -> tuple[Variant, ...]:
        """The matrix, or a MatrixError when nothing can be built (bounds above every build)."""
        variants = self.expected(ci=ci)
        if not variants:
            raise MatrixError(f"{self.shown}: no variant of the build matrix fits this project", path=self.shown,
                              code="matrix-empty", hint=_empty_hint(self, ci))
        return variants

    def entries(self, *, ci: bool = False) -> list[MatrixEntry]:
        return [MatrixEntry(kernel=self.name, path=self.shown, variant=v) for v in self.expected(ci=ci)]


def _empty_hint(kernel: Kernel, ci: bool) -> str:
    """Say which bound excluded everything: the project's or the policy's."""
    p = kernel.project
    table = load_table()
    torches = sorted({v.torch for v in table.variants}, key=version_key)
    policy = kernel.ci_policy if ci else kernel.policy
    parts = []
    if p.torch_minver or p.torch_maxver:
        parts.append(f"[torch] minver/maxver = {p.torch_minver or '-'}/{p.torch_maxver or '-'}")
    if p.cuda_minver or p.cuda_maxver:
        parts.append(f"[general.cuda] minver/maxver = {p.cuda_minver or '-'}/{p.cuda_maxver or '-'}")
    parts.append(f"policy torch = {list(policy.torch)}, cuda = {list(policy.cuda)}, "
                 f"backends = {list(policy.backends)}")
    return ("the builder's table has torch " + ", ".join(torches) + "; this project asks for "
            + "; ".join(parts) + ". Lower the bounds in build.toml, or widen [workspace.matrix] in the "
            + "workspace build.toml")


def _shown(path: Path, workspace: Workspace | None) -> str:
    if workspace is not None:
        try:
            return Path(path).resolve().relative_to(workspace.root).as_posix()
        except ValueError:
            pass
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def _kernel(project: KernelProject, workspace: Workspace | None) -> Kernel:
    if workspace is not None:
        policy, ci_policy = workspace.matrix, workspace.ci_matrix
    else:
        policy = full_table_policy()
        ci_policy = reduced_policy(policy)
    contracts = workspace.contracts_for(Path(project.root).name) if workspace is not None else ()
    return Kernel(project=project, workspace=workspace, policy=policy, ci_policy=ci_policy,
                  variants=tuple(compute_matrix(project, policy)), ci_variants=tuple(compute_matrix(project, ci_policy)),
                  shown=_shown(project.root, workspace), contracts=contracts)


def _workspace_around(project_root: Path) -> Workspace | None:
    # The project's own build.toml is not a workspace file: look from its parent.
    root = find_workspace(Path(project_root).resolve().parent)
    return load_workspace(root) if root is not None else None


def resolve(spec: Path | str, *, cwd: Path | None = None) -> Kernel:
    """A kernel project's path, or the NAME of a kernel of the workspace around `cwd`."""
    path = Path(spec)
    if path.exists():
        if is_workspace_file(path):
            raise WorkspaceError(f"{spec} is the workspace, not one kernel project", path=str(path),
                                 code="workspace-not-kernel",
                                 hint="name one kernel (e.g. kernels-src/rmsnorm), or use a verb that takes "
                                      "the workspace root (validate, matrix, build)")
        project = load_project(path)  # ValidationError with every problem
        return _kernel(project, _workspace_around(project.root))
    root = find_workspace(cwd or Path.cwd())
    if root is None or os.sep in str(spec) or "/" in str(spec):
        raise WorkspaceError(f"{spec} does not exist", path=str(spec), code="kernel-not-found",
                             hint="pass the path of a kernel project (a directory with build.toml), or run in a "
                                  "workspace and name one of its kernels")
    workspace = load_workspace(root)
    project = load_project(workspace.kernel(str(spec)))  # raises with "did you mean" and the known kernels
    return _kernel(project, workspace)


def resolve_all(path: Path) -> tuple[Kernel, ...]:
    """Every kernel of a workspace root, or the one kernel at `path`."""
    path = Path(path)
    if is_workspace_file(path):
        workspace = load_workspace(path.resolve() if path.is_dir() else path.resolve().parent)
        return tuple(_kernel(load_project(p), workspace) for p in workspace.kernel_paths)
    return (resolve(path),)


def resolve_for_build(build_dir: Path, kernel_name: str | None, *, cwd: Path | None = None) -> Kernel | None:
    """The kernel project a build tree belongs to: `<project>/build`, or the
    workspace kernel (around the tree, then `cwd`) whose name or directory is
    `kernel_name` (a Nix `result/<kernel>`). None when there is none."""
    build_dir = Path(build_dir).resolve()
    parent = build_dir.parent
    if (parent / WORKSPACE_FILE).is_file() and not is_workspace_file(parent):
        return resolve(parent)
    for start in (build_dir, cwd or Path.cwd()):
        root = find_workspace(start)
        if root is None:
            continue
        workspace = load_workspace(root)
        for path in workspace.kernel_paths:
            project = load_project(path)
            if kernel_name in (project.name, path.name) or build_dir.name in (project.name, path.name):
                return _kernel(project, workspace)
    return None


@dataclass(frozen=True)
class PublishSource:
    """What `publish ORG/NAME` and `verify ORG/NAME` work from."""

    kernel: Kernel | None  # None: only a build tree (or only the Hub, for verify)
    namespace: str | None  # the workspace's default namespace


def resolve_for_repo(name: str, kernel_path: Path | None, *, build_dir: Path | None = None,
                     required: bool = True, cwd: Path | None = None) -> PublishSource:
    """The kernel for a repository NAME: `--kernel PATH`, else the workspace
    kernel named NAME. Without either: None when a build tree is given or
    `required` is False, else an error naming what to pass."""
    if kernel_path is not None:
        kernel = resolve(kernel_path)
        return PublishSource(kernel, kernel.namespace)
    root = find_workspace(cwd or Path.cwd())
    workspace = load_workspace(root) if root is not None else None
    namespace = workspace.namespace if workspace is not None else None
    if workspace is not None and name in workspace.kernel_names:
        return PublishSource(_kernel(load_project(workspace.kernel(name)), workspace), namespace)
    if build_dir is not None or not required:
        return PublishSource(None, namespace)
    if workspace is not None:
        workspace.kernel(name)  # raises with "did you mean" and the known kernels
    raise PublishError(f"no kernel project for {name!r}", code="kernel-not-found",
                       hint="run inside the kernel-pipeline repository, or pass --kernel PATH (or --build-dir PATH)")


__all__ = ["Kernel", "PublishSource", "Workspace", "find_workspace", "is_workspace_file", "load_workspace",
           "resolve", "resolve_all", "resolve_for_build", "resolve_for_repo"]

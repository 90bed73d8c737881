"""Turn `python -m pipeline matrix` into the workflow's job outputs.

    python ci/plan.py --mode pr|release [--root .] [--variants-file plan/variants.json]

`pipeline matrix` is the only source of the build matrix: this script calls it
(grouped by job for the build fan-out, and per variant for the GPU rows and
the completeness check of the gathered bundle) and passes its rows on
unchanged. It never adds, drops or renames a variant; it only picks, per
kernel, which already-planned variant the GPU and verify jobs load.

Outputs (appended to $GITHUB_OUTPUT, or printed when that is unset):
  mode        pr | release
  matrix      the `--group job` document: one row per kernel x backend x arch
  has_builds  "true" when it has at least one row
  smoke       {"include": [...]}: per kernel, the CUDA variant the GPU runner loads
  has_smoke   "true" when the GPU job runs (rows, a runner label, not a fork)
  gpu_notice  why the GPU job does not run, when it does not
  verify      {"include": [...]}: per kernel, where `pipeline verify` loads it
  has_verify  "true" when that has rows
  kernels     JSON list of the kernel names
  publish     {"include": [{"kernel", "path"}, ...]}: the publish job's matrix
Environment: GPU_RUNNER_LABEL (empty: no GPU runner), GPU_RUNNER_ARCH
(default x86_64), GPU_RUNNER_CUDA (the CUDA version of the variant the GPU
runner loads; default: the lowest minor of the newest major), FORK_PR ("true"
for a pull request from a fork).
A Markdown account of the plan goes to $GITHUB_STEP_SUMMARY.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path


def pipeline_matrix(root: Path, *, ci: bool, group_job: bool) -> dict:
    """Run the real CLI: the workflow must consume exactly what it prints."""
    # Run from the root so `-m pipeline` is the checkout's own package, installed or not.
    cmd = [sys.executable, "-m", "pipeline", "matrix", ".", "--json"]
    if ci:
        cmd.append("--ci")
    if group_job:
        cmd += ["--group", "job"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"ci/plan.py: `{' '.join(cmd[1:])}` failed with exit status {proc.returncode}")
    document = json.loads(proc.stdout)
    if not isinstance(document, dict) or not isinstance(document.get("include"), list):
        raise SystemExit(f"ci/plan.py: `{' '.join(cmd[1:])}` did not print {{\"include\": [...]}}")
    return document


def _version_key(text: str | None) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text or ""))


def pick_per_kernel(variants: list[dict], *, backend: str, arch: str, cuda: str = "") -> dict[str, dict]:
    """Per kernel, the `backend`/`arch` Linux variant a GPU or CPU runner loads.

    The newest torch; then, for CUDA, the version `cuda` names when given,
    else the lowest minor of the newest major: PyTorch publishes wheels for
    the first minor of a CUDA major long before later ones, and a build for
    13.0 loads on every 13.x driver (kernels accepts a build minor <= the
    system's). A noarch row (torch-cuda) serves every CUDA version, so `cuda`
    does not filter it; its torch and CUDA are those it is tested with."""
    best: dict[str, tuple[tuple, dict]] = {}
    for row in variants:
        if row.get("backend") != backend or row.get("arch") != arch or row.get("os") != "linux":
            continue
        version = _version_key(row.get("backend_version"))
        if cuda and version != _version_key(cuda) and not row.get("noarch"):
            continue
        # Newest torch, then newest major, then lowest minor.
        key = (_version_key(row.get("torch")), version[:1], tuple(-v for v in version[1:]))
        current = best.get(row["kernel"])
        if current is None or key > current[0]:
            best[row["kernel"]] = (key, row)
    return {kernel: row for kernel, (_, row) in best.items()}


def gpu_plan(variants: list[dict], *, label: str, arch: str, cuda: str, fork_pr: bool) -> tuple[list[dict], str]:
    rows = [row for _, row in sorted(pick_per_kernel(variants, backend="cuda", arch=arch, cuda=cuda).items())]
    if not rows:
        return [], ""  # nothing CUDA to test: no notice needed
    if not label:
        return [], ("No GPU runner is registered for this repository (the repository variable GPU_RUNNER_LABEL "
                    "is not set), so the CUDA variants were built and checked but not smoke-tested on a GPU.")
    if fork_pr:
        return [], ("This pull request comes from a fork: its code does not run on the self-hosted GPU runner. "
                    "A maintainer can run the workflow on a branch of this repository to smoke-test it.")
    return rows, ""


def verify_plan(variants: list[dict], kernels: list[str], *, label: str, arch: str,
                cuda: str) -> tuple[list[dict], list[str]]:
    """Where each published kernel can be loaded: the GPU runner for a CUDA
    variant; otherwise a hosted runner with CPU torch for a CPU variant."""
    on_gpu = pick_per_kernel(variants, backend="cuda", arch=arch, cuda=cuda) if label else {}
    cpu = pick_per_kernel(variants, backend="cpu", arch="x86_64")
    rows, unverifiable = [], []
    for kernel in kernels:
        if kernel in on_gpu:
            rows.append({**on_gpu[kernel], "runner": label})
        elif kernel in cpu:
            rows.append(cpu[kernel])
        else:
            unverifiable.append(kernel)
    return rows, unverifiable


def summary_markdown(mode: str, jobs: list[dict], variant_count: int, smoke: list[dict], notice: str,
                     verify: list[dict], unverifiable: list[str]) -> str:
    lines = [
        f"### Build plan: {'pull request, reduced matrix' if mode == 'pr' else 'release, full matrix'}",
        "",
        f"{len(jobs)} build job(s) for {variant_count} variant(s), from "
        f"`python -m pipeline matrix . --json{' --ci' if mode == 'pr' else ''}`.",
        "",
        "| kernel | backend | arch | runner | variants |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in jobs:
        names = " ".join(f"`{v}`" for v in str(row.get("variants", "")).split())
        lines.append(f"| {row.get('kernel')} | {row.get('backend')} | {row.get('arch')} | {row.get('runner')} | {names} |")
    lines.append("")
    if smoke:
        lines.append("GPU smoke test: " + ", ".join(f"{r['kernel']} on `{r['variant']}`" for r in smoke) + ".")
    elif notice:
        lines.append(f"GPU smoke test: skipped. {notice}")
    if mode == "release":
        lines.append("Verify after publishing: " + (", ".join(f"{r['kernel']} on `{r['variant']}` ({r['runner']})"
                                                             for r in verify) or "nothing") + ".")
        if unverifiable:
            lines.append(f"Not verifiable on any configured runner: {', '.join(unverifiable)}.")
    return "\n".join(lines) + "\n"


def _compact(document) -> str:
    return json.dumps(document, separators=(",", ":"))


def write_outputs(outputs: dict[str, str]) -> None:
    text = "".join(f"{key}={value}\n" for key, value in outputs.items())  # every value is one line
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("pr", "release"), required=True)
    parser.add_argument("--root", type=Path, default=Path("."))
    parser.add_argument("--variants-file", type=Path, help="also write the per-variant matrix here (for gathering)")
    args = parser.parse_args(argv)
    label = os.environ.get("GPU_RUNNER_LABEL", "").strip()
    arch = os.environ.get("GPU_RUNNER_ARCH", "").strip() or "x86_64"
    cuda = os.environ.get("GPU_RUNNER_CUDA", "").strip()
    fork_pr = os.environ.get("FORK_PR", "") == "true"

    ci = args.mode == "pr"
    jobs = pipeline_matrix(args.root, ci=ci, group_job=True)
    variants = pipeline_matrix(args.root, ci=ci, group_job=False)
    rows = variants["include"]
    kernels = sorted({row["kernel"] for row in rows})
    smoke, notice = gpu_plan(rows, label=label, arch=arch, cuda=cuda, fork_pr=fork_pr)
    verify, unverifiable = verify_plan(rows, kernels, label=label, arch=arch, cuda=cuda)

    if args.variants_file:
        args.variants_file.parent.mkdir(parents=True, exist_ok=True)
        args.variants_file.write_text(json.dumps(variants, indent=2) + "\n", encoding="utf-8")
    write_outputs({
        "mode": args.mode,
        "matrix": _compact(jobs),
        "has_builds": "true" if jobs["include"] else "false",
        "smoke": _compact({"include": smoke}),
        "has_smoke": "true" if smoke else "false",
        "gpu_notice": notice,
        "verify": _compact({"include": verify}),
        "has_verify": "true" if verify else "false",
        "kernels": _compact(kernels),
        "publish": _compact({"include": [{"kernel": k, "path": p}
                                         for k, p in sorted({(r["kernel"], r["path"]) for r in rows})]}),
    })
    summary = summary_markdown(args.mode, jobs["include"], len(rows), smoke, notice, verify, unverifiable)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as handle:
            handle.write(summary)
    sys.stderr.write(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())

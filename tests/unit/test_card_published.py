"""Every kernel's card as publish renders it for its full build matrix, signed, with the
recorded GPU smoke run as the gate's report and a machine's paths in what the gate says:
at most CARD_MAX_BYTES, every image and link resolving to a file the upload puts on main,
no absolute path. And the card of a project `init` just made (no records at all): short,
and saying what is missing."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest
from kernels.variants import parse_variant

from pipeline.bundle import Bundle, VariantBundle, describe_variant
from pipeline.card import CARD_MAX_BYTES, card_inputs, card_maker
from pipeline.card_bench import PAGE
from pipeline.errors import Problem
from pipeline.init import render as init_project
from pipeline.portable_paths import absolute_paths
from pipeline.signing import SignatureReport, SignerIdentity
from pipeline.smoke.report import CaseResult, OpCoverage, SmokeReport
from pipeline.upload.plan import card_files
from pipeline.workspace import resolve

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted(p.parent for p in (REPO / "kernels-src").glob("*/CARD.md"))
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
SIGNER = SignerIdentity(build_signer_uri="https://github.com/kernels-pipeline/kernels/.github/workflows/"
                                         "kernels.yml@refs/tags/v1")


@pytest.fixture(autouse=True)
def _no_git(monkeypatch):
    # resolve() asks git whether the project's sources are committed: a verdict the card does
    # not read, and a process unit tests may not start.
    monkeypatch.setattr("pipeline.project.layout._inside_git_work_tree", lambda root: False)


def _bundle(kernel, root: Path) -> Bundle:
    """The kernel's full build matrix as a CI bundle holds it (the project's Python package in
    each variant, so the card lists its functions and layers)."""
    config = tomllib.loads((kernel.root / "build.toml").read_text(encoding="utf-8"))
    archs = sorted({a for k in config.get("kernel", {}).values() for a in k.get("cuda-capabilities", ())},
                   key=lambda a: tuple(int(x) for x in a.split(".")))
    package = next(p for p in (kernel.root / "torch-ext").iterdir() if (p / "__init__.py").is_file())
    variants = []
    for v in kernel.expected():
        path = root / v.name
        shutil.copytree(package, path)
        framework, target, platform = describe_variant(parse_variant(str(v)))
        backend = "cuda" if (target or "").upper().startswith("CUDA") else "cpu"
        variants.append(VariantBundle(
            name=str(v), path=path, kernel_name=kernel.name, kernel_id=f"_{package.name}_{backend}_0123abc", version=1,
            license="Apache-2.0", backend=backend, archs=tuple(archs) if backend == "cuda" else (),
            framework=framework, target=target, platform=platform, python_depends=(),
            provenance={"kernel_commit": "0123456789abcdef0123456789abcdef01234567",
                        "kernel_builder": "kernel-pipeline 0.1.0"},
            files=tuple(sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()))))
    return Bundle(root=root, variants=tuple(variants))


def _gate_smoke(kernel, bundle: Bundle) -> SmokeReport | None:
    """The project's recorded GPU smoke run, as the gate's report, with a warning naming a
    path of this machine (smoke's warnings name the files they are about)."""
    record = kernel.root / "benchmarks" / "results" / "h200-smoke.json"
    if not record.is_file():
        return None
    doc = json.loads(record.read_text(encoding="utf-8"))
    machine = Problem(str(bundle.root / "x"), None, "weak-case-constant-input",
                      f"1 case in {kernel.root / 'tests' / 'smoke_cases.py'} passes a constant input",
                      severity="warning")
    return SmokeReport(
        kernel=doc["kernel"], kernel_id=doc["kernel_id"], variant=doc["variant"], device=doc["device"],
        project=str(kernel.root), results=tuple(CaseResult(**r) for r in doc["results"]), seed=doc["seed"],
        seeds=tuple(doc["seeds"]), coverage=tuple(OpCoverage(**{k: tuple(v) if isinstance(v, list) else v
                                                                 for k, v in c.items()}) for c in doc["coverage"]),
        warnings=tuple(Problem(**w) for w in doc["warnings"]) + (machine,))


def _published(kernel_root: Path, tmp_path: Path):
    kernel = resolve(kernel_root)
    bundle = _bundle(kernel, tmp_path / "build")
    smoke = _gate_smoke(kernel, bundle)
    forced = (f"check: {bundle.root / bundle.variants[0].name / '_ops.py'}:1: stray-file: not built by the build",)
    inputs = card_inputs(bundle, kernel, 1, checks=(f"check passed for {len(bundle.variants)} variant(s)",),
                         forced=forced, smoke=smoke,
                         signatures=tuple(SignatureReport(v.name, "verified", identity=SIGNER, log_index=9_000_000 + i)
                                          for i, v in enumerate(bundle.variants)))
    card_for = card_maker(inputs, f"kernels-pipeline/{kernel.name}", newer_published=False, trusted=False)
    return kernel, card_for(list(bundle.variant_names), {})


def _targets(text: str, pattern: re.Pattern) -> list[str]:
    return [t for t in pattern.findall(text) if not re.match(r"[a-z]+://|#", t)]


@pytest.mark.parametrize("kernel_root", KERNELS, ids=[p.name for p in KERNELS])
def test_every_kernels_card_is_short_resolves_its_images_and_names_no_machine_path(kernel_root, tmp_path):
    kernel, page = _published(kernel_root, tmp_path)
    text = page.readme
    wanted = card_files(page)
    assert len(text.encode("utf-8")) <= CARD_MAX_BYTES, f"{kernel.name}: card of {len(text.encode())} bytes"
    # What it is, how to call it, is it fast, can it be trusted: in that order.
    order = [text.index(s) for s in ("get_kernel(", "## Performance", "## Verification", "## Build variants",
                                     "## Provenance")]
    assert order == sorted(order)
    for name, body in (("README.md", text), (PAGE, wanted.get(PAGE, (None, b""))[1].decode("utf-8"))):
        assert absolute_paths(body) == [], f"{name} of {kernel.name}"
        assert str(tmp_path) not in body and str(REPO) not in body
        for target in _targets(body, IMAGE) + _targets(body, LINK):
            assert not target.startswith("/") and ".." not in target.split("/"), target
            assert target in wanted, f"{name} of {kernel.name} shows {target}, which the upload does not put on main"
    images = _targets(text, IMAGE)
    plots = sorted((kernel.root / "benchmarks" / "results").glob("*.png"))
    assert bool(images) == bool(plots)
    for target in images:
        local, content = wanted[target]
        assert local.read_bytes()[:4] == b"\x89PNG"
    if plots:
        assert f"[{PAGE}]({PAGE})" in text and PAGE in wanted
    # The machine's paths in what the gate said are the repository's: the bundle is build/.
    assert f"check: build/{sorted(kernel.expected(), key=str)[0]}" in text or "check: build/" in text
    assert "all " in text and "variants: signed by https://github.com/kernels-pipeline/" in text


@pytest.mark.parametrize("template", ["rowwise", "elementwise"])
def test_a_card_from_a_new_project_is_short_and_says_what_is_missing(template, tmp_path):
    project = init_project("my-op", template, tmp_path / "my-op")
    kernel, page = _published(project.root, tmp_path / "publish")
    text = page.readme
    assert len(text.encode("utf-8")) <= 4 * 1024
    assert 'get_kernel("kernels-pipeline/my-op", version=1, trust_remote_code=True)' in text
    assert "No benchmark results recorded yet" in text and "Not smoke-tested before upload" in text
    assert page.files == () and IMAGE.findall(text) == [] and absolute_paths(text) == []


def test_main_gets_the_cards_files_and_loses_those_a_new_card_no_longer_shows(tmp_path):
    from pipeline.card import CardPage
    from pipeline.fsutil import git_blob_sha1_bytes
    from pipeline.hubclient import RemoteFile
    from pipeline.upload.plan import CARD_FILE_PREFIXES, diff

    png = tmp_path / "h200.png"
    png.write_bytes(b"\x89PNG plot")
    page = CardPage("# card\n", ((PAGE, b"# tables\n"), ("media/benchmark-h200.png", png)))
    wanted = card_files(page)
    assert wanted == {"README.md": (None, b"# card\n"), PAGE: (None, b"# tables\n"),
                      "media/benchmark-h200.png": (png, None)}
    same = b"# tables\n"
    remote = {PAGE: RemoteFile(PAGE, len(same), git_blob_sha1_bytes(same)),
              "media/benchmark-h100.png": RemoteFile("media/benchmark-h100.png", 3, "0" * 40),
              "media/logo.png": RemoteFile("media/logo.png", 3, "0" * 40)}
    ops, unchanged = diff(wanted, remote, CARD_FILE_PREFIXES)
    assert unchanged == 1
    assert [op.describe().split(" (")[0] for op in ops] == [
        "add    README.md", "add    media/benchmark-h200.png", "delete media/benchmark-h100.png"]

"""The geglu, rope and adaln kernels (kernels-src/), end to end on the CPU:
validate → build the CPU variant (once per kernel per session) → smoke → the
Python API through kernels.get_local_kernel → publish to an embedded Hub and
load back with kernels.get_kernel (pipeline.verify, in a fresh process).

The CUDA variants are built, smoke-tested and benchmarked on a lent H100 or H200 by
`python scripts/gpu/run.py record` (results in kernels-src/<k>/benchmarks/results/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.workspace import resolve

from shared_builds import shared_build
from values import bundle_of

from pipeline.project import load_project, validate

REPO = Path(__file__).resolve().parents[2]
KERNELS = ("geglu", "rope", "adaln")
ORG = "kernels-pipeline-test"


@pytest.mark.parametrize("name", KERNELS)
def test_project_validates_clean(name):
    report = validate(REPO / "kernels-src" / name)
    assert report.problems == (), [p.format() for p in report.problems]
    project = load_project(REPO / "kernels-src" / name)
    assert project.edition == 5 and set(project.backends) == {"cuda", "cpu"}
    assert {k.backend for k in project.kernels} == {"cuda", "cpu"}
    root = REPO / "kernels-src" / name
    for rel in ("CARD.md", "flake.nix", "tests/smoke_cases.py", "benchmarks/bench_cases.py"):
        assert (root / rel).is_file(), rel


@pytest.fixture(scope="session")
def built():
    """Each kernel's CPU variant, built once per test run (tests/shared_builds.py)."""
    dirs = {name: shared_build(REPO / "kernels-src" / name) for name in KERNELS}
    for name, build in dirs.items():
        variants = [p.name for p in build.iterdir() if p.is_dir()]
        assert len(variants) == 1 and "-cpu-" in variants[0], (name, variants)
    return dirs


@pytest.fixture(scope="session")
def modules(built):
    import kernels

    return {name: kernels.get_local_kernel(path) for name, path in built.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_smoke_cases_pass_on_cpu(built, name):
    from pipeline.smoke import run_smoke

    report = run_smoke(bundle_of(built[name]), resolve(REPO / "kernels-src" / name), seeds=(0,))
    assert report.passed, [f"{r.name} {r.check}: {r.message}" for r in report.failures][:10]
    assert {r.check for r in report.results} == {"values", "opcheck", "compile"}
    assert report.kernel == name and report.device == "cpu"


# --- the Python API, beyond what the op-level smoke cases reach ------------------


@pytest.mark.slow
def test_geglu_api(modules):
    import torch
    import torch.nn.functional as F

    geglu = modules["geglu"]
    x = torch.randn(4, 6, 256)
    value, gate = x.chunk(2, dim=-1)
    for approximate in ("none", "tanh"):
        torch.testing.assert_close(geglu.geglu(x, approximate), value * F.gelu(gate, approximate=approximate))
        torch.testing.assert_close(geglu.geglu(x, approximate, gate_first=True),
                                   gate * F.gelu(value, approximate=approximate))
    strided = torch.randn(4, 512)[:, ::2]  # not contiguous: the wrapper copies
    torch.testing.assert_close(geglu.geglu(strided), strided[:, :128] * F.gelu(strided[:, 128:]))
    with pytest.raises(ValueError):
        geglu.geglu(torch.randn(3, 5))
    with pytest.raises(ValueError):
        geglu.geglu(x, "fast")
    layer = geglu.layers.GEGLU()
    layer.proj = torch.nn.Linear(8, 16)
    h = torch.randn(2, 8)
    p = layer.proj(h)
    torch.testing.assert_close(layer(h), p[:, :8] * F.gelu(p[:, 8:]))


def _rotate_reference(x, cos, sin, interleaved):
    """diffusers' apply_rotary_emb (interleaved) / transformers' rotate_half, in float64."""
    import torch

    x, cos, sin = x.double(), cos.double(), sin.double()
    if interleaved:
        real, imag = x.unflatten(-1, (-1, 2)).unbind(-1)
        rotated = torch.stack([-imag, real], dim=-1).flatten(-2)
    else:
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


@pytest.mark.slow
def test_rope_layouts_and_in_place(modules):
    import torch

    rope = modules["rope"]
    # LTX-Video: x [B, F*H*W, C], full-width float32 tables [B, F*H*W, C].
    cos, sin = rope.ltx_video_rotary_freqs(2, 3, 4, 5, 100, rope_interpolation_scale=(8 / 25, 32, 32))
    assert cos.shape == (2, 60, 100) and cos.dtype == torch.float32
    assert torch.all(cos[..., :4] == 1) and torch.all(sin[..., :4] == 0)  # 100 % 6 = 4 padding channels
    torch.testing.assert_close(cos.pow(2) + sin.pow(2), torch.ones_like(cos))
    x = torch.randn(2, 60, 100, dtype=torch.bfloat16)
    out = rope.apply_rotary_emb(x, cos, sin)
    ref = _rotate_reference(x, cos, sin, True)
    assert (out.double() - ref).norm() / ref.norm() < 8e-3
    inplace = x.clone()
    assert rope.apply_rotary_emb_(inplace, cos, sin) is inplace
    assert torch.equal(inplace, out)
    # transformers: q [B, H, S, D], tables [B, 1, S, D] (per-sample positions), rotate_half.
    positions = torch.arange(7).repeat(2, 1) + torch.tensor([[0], [3]])
    c1, s1 = rope.rotary_freqs_1d(positions, 64, interleaved=False)
    q = torch.randn(2, 4, 7, 64)
    torch.testing.assert_close(rope.apply_rotary_emb(q, c1[:, None], s1[:, None], interleaved=False),
                               _rotate_reference(q, c1[:, None], s1[:, None], False).float())
    # A non-contiguous x rotated in place.
    c2, s2 = rope.rotary_freqs_1d(7, 64)
    view = torch.randn(2, 7, 4, 64).transpose(1, 2)
    expected = _rotate_reference(view, c2, s2, True).float()
    rope.apply_rotary_emb_(view, c2, s2)
    torch.testing.assert_close(view, expected)
    # A broadcast the kernel cannot map directly is materialised, not refused.
    ct, st = torch.rand(4, 1, 64), torch.rand(4, 1, 64)
    torch.testing.assert_close(rope.apply_rotary_emb(q, ct, st), _rotate_reference(q, ct, st, True).float())
    with pytest.raises(ValueError):
        rope.apply_rotary_emb(q, torch.rand(7, 6), torch.rand(7, 6))  # width 6 does not divide 64


@pytest.mark.slow
def test_adaln_modulation_shapes(modules):
    import torch
    import torch.nn.functional as F

    adaln = modules["adaln"]
    x = torch.randn(2, 5, 64) * 3 + 1
    for shape, view in (((2, 64), lambda t: t[:, None]), ((2, 1, 64), lambda t: t), ((2, 5, 64), lambda t: t),
                        ((64,), lambda t: t), ((1, 5, 64), lambda t: t)):
        scale, shift = torch.randn(shape) * 0.3, torch.randn(shape)
        ref = F.layer_norm(x, (64,), eps=1e-6) * (1 + view(scale)) + view(shift)
        torch.testing.assert_close(adaln.adaln(x, scale, shift), ref, rtol=1e-4, atol=1e-4)
        rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        torch.testing.assert_close(adaln.adaln(x, scale, shift, norm="rms"), rms * (1 + view(scale)) + view(shift),
                                   rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError):
        adaln.adaln(x, torch.randn(3, 64), torch.randn(3, 64))
    with pytest.raises(ValueError):
        adaln.adaln(x, torch.randn(2, 64), torch.randn(2, 64), norm="group")
    layer = adaln.layers.AdaLayerNormModulate()
    scale, shift = torch.randn(2, 1, 64), torch.randn(2, 1, 64)
    torch.testing.assert_close(layer(x, scale, shift), adaln.adaln(x, scale, shift))


# --- publish to an embedded Hub and load back with kernels.get_kernel -------------


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from pipeline.hub import EmbeddedHub

    with EmbeddedHub(tmp_path_factory.mktemp("hub"), host="127.0.0.1", port=0, trusted_namespaces=[ORG]) as h:
        yield h


@pytest.mark.slow
@pytest.mark.parametrize("name", KERNELS)
def test_publish_to_embedded_hub_and_get_kernel(built, hub, name):
    from pipeline.publish import PublishRequest, publish
    from pipeline.target import Target

    repo_id = f"{ORG}/{name}"
    request = PublishRequest(repo_id=repo_id, kernel=resolve(REPO / "kernels-src" / name), build_dir=built[name],
                             smoke=False, verify=True)  # smoke ran above; verify re-runs the cases after get_kernel
    result = publish(request, Target("--endpoint", hub.endpoint, hub.admin_token))
    assert result.repo_id == repo_id and result.branch == "v1" and result.changed
    assert len(result.variants) == 1 and "-cpu-" in result.variants[0]
    assert result.verify is not None and result.verify.ok, [p.format() for p in result.verify.problems]
    assert result.verify.load is not None
    # Publishing the same build again changes nothing.
    again = publish(PublishRequest(repo_id=repo_id, kernel=resolve(REPO / "kernels-src" / name), build_dir=built[name],
                                   smoke=False, verify=False), Target("--endpoint", hub.endpoint, hub.admin_token))
    assert not again.changed

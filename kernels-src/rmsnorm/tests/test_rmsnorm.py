import pytest
import torch
import torch.nn as nn

from .smoke_cases import smoke_cases

BOUND = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}


def _ref(x, w, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double()


def _rel(a, b):
    a, b = a.double().cpu(), b.double().cpu()
    assert torch.isfinite(a).all()
    return ((a - b).norm() / b.norm()).item()


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(7,), (3, 4096), (2, 3, 5120), (2, 2, 2, 33)])
def test_rms_norm(rmsnorm, device, dtype, shape):
    g = torch.Generator().manual_seed(hash((shape, str(dtype))) % 2**31)
    x = torch.randn(shape, generator=g).to(device, dtype) * 3
    w = torch.randn(shape[-1], generator=g).to(device, dtype)
    out = rmsnorm.rms_norm(x, w, 1e-5)
    assert out.shape == x.shape and out.dtype == dtype and out.is_contiguous()
    assert _rel(out, _ref(x, w, 1e-5)) <= BOUND[dtype]


@pytest.mark.kernels_ci
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fused_add_rms_norm(rmsnorm, device, dtype):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 9, 2048, generator=g).to(device, dtype)
    r = torch.randn(4, 9, 2048, generator=g).to(device, dtype)
    w = torch.randn(2048, generator=g).to(device, dtype)
    out, res = rmsnorm.fused_add_rms_norm(x, r, w, 1e-6)
    s = x.double() + r.double()
    assert _rel(res, s) <= BOUND[dtype]
    assert _rel(out, _ref(s.to(dtype), w, 1e-6)) <= BOUND[dtype]
    # Two new tensors: the inputs are left alone.
    assert res.data_ptr() not in (x.data_ptr(), r.data_ptr())


@pytest.mark.kernels_ci
def test_out_argument_is_filled(rmsnorm, device):
    x = torch.randn(5, 4096, device=device, dtype=torch.bfloat16)
    w = torch.randn(4096, device=device, dtype=torch.bfloat16)
    out = torch.full_like(x, float("nan"))
    got = rmsnorm.rms_norm(x, w, 1e-6, out=out)
    assert got.data_ptr() == out.data_ptr()
    assert _rel(out, _ref(x, w, 1e-6)) <= BOUND[torch.bfloat16]


@pytest.mark.kernels_ci
def test_bad_arguments_raise(rmsnorm, device):
    x = torch.randn(3, 64, device=device)
    with pytest.raises(RuntimeError, match="weight"):
        rmsnorm.rms_norm(x, torch.randn(63, device=device))
    with pytest.raises(RuntimeError, match="dtype"):
        rmsnorm.rms_norm(x, torch.randn(64, device=device, dtype=torch.float16))
    with pytest.raises(RuntimeError, match="unsupported dtype|expected scalar type|not implemented"):
        rmsnorm.rms_norm(x.double(), torch.randn(64, device=device, dtype=torch.float64))


@pytest.mark.kernels_ci
def test_torch_compile_fullgraph(rmsnorm, device):
    x = torch.randn(8, 1024, device=device, dtype=torch.float32)
    w = torch.randn(1024, device=device, dtype=torch.float32)
    r = torch.randn_like(x)

    def f(x, r, w):
        a = rmsnorm.rms_norm(x, w, 1e-6)
        b, s = rmsnorm.fused_add_rms_norm(a, r, w, 1e-6)
        return b, s

    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True)(x, r, w)
    want = f(x, r, w)
    for g_, w_ in zip(got, want):
        torch.testing.assert_close(g_, w_)


@pytest.mark.kernels_ci
def test_opcheck(rmsnorm, device):
    x = torch.randn(4, 3, 256, device=device, dtype=torch.bfloat16)
    w = torch.randn(256, device=device, dtype=torch.bfloat16)
    torch.library.opcheck(rmsnorm.ops.rms_norm.default, (torch.empty_like(x), x, w, 1e-6))
    torch.library.opcheck(rmsnorm.ops.fused_add_rms_norm.default,
                          (torch.empty_like(x), torch.empty_like(x), x, torch.randn_like(x), w, 1e-6))


@pytest.mark.kernels_ci
def test_layer_with_kernelize(rmsnorm, build_dir, device):
    kernels = pytest.importorskip("kernels")

    @kernels.use_kernel_forward_from_hub("RMSNorm")
    class RMSNorm(nn.Module):
        def __init__(self, hidden, eps=1e-6):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(hidden))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            h = hidden_states.float()
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
            return self.weight * h.to(hidden_states.dtype)

    model = nn.Sequential(nn.Linear(512, 512), RMSNorm(512)).to(device)
    x = torch.randn(6, 512, device=device)
    with torch.no_grad():
        want = model(x)
    repo = kernels.LocalLayerRepository(repo_path=build_dir, layer_name="RMSNorm")
    mapping = {"RMSNorm": {device.type: repo}}
    with kernels.use_kernel_mapping(mapping, inherit_mapping=False):
        kernels.kernelize(model, mode=kernels.Mode.INFERENCE, device=device.type)
    with torch.no_grad():
        got = model(x)
    # kernelize swapped in the kernel's forward.
    assert getattr(model[1].forward, "__func__", model[1].forward) is not RMSNorm.forward
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_smoke_cases_follow_the_contract():
    cases = smoke_cases()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names))
    assert {c["op"] for c in cases} == {"rms_norm", "fused_add_rms_norm"}
    assert any("compile" in c["checks"] for c in cases)

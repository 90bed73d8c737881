"""`kernels benchmark` entry (upstream convention): times rms_norm and
fused_add_rms_norm at one Qwen3-8B shape and verifies them against the eager
composite. The pipeline's fuller benchmark is bench_cases.py (`pipeline bench`)."""

import torch

from kernels.benchmark import Benchmark


def _eager(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


class RmsNormBenchmark(Benchmark):
    def setup(self):
        dtype = torch.bfloat16 if self.device != "cpu" else torch.float32
        self.x = torch.randn(8192, 4096, device=self.device, dtype=dtype)
        self.r = torch.randn_like(self.x)
        self.w = torch.randn(4096, device=self.device, dtype=dtype)
        self.out = torch.empty_like(self.x)
        self.res_out = torch.empty_like(self.x)

    def benchmark_rms_norm(self):
        self.kernel.rms_norm(self.x, self.w, 1e-6, out=self.out)

    def verify_rms_norm(self) -> torch.Tensor:
        return _eager(self.x, self.w, 1e-6)

    def benchmark_fused_add_rms_norm(self):
        self.kernel.fused_add_rms_norm(self.x, self.r, self.w, 1e-6, out=self.out, residual_out=self.res_out)

    def verify_fused_add_rms_norm(self) -> torch.Tensor:
        return _eager(self.x + self.r, self.w, 1e-6)

"""Shared by test_smoke.py and test_bench.py (no tests here): CPU builds of
rmsnorm, each made once per test run (tests/shared_builds.py), and patched copies with planted bugs."""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
from pathlib import Path

from shared_builds import shared_build, shared_source

REPO = Path(__file__).resolve().parents[1]
RMSNORM = REPO / "kernels-src" / "rmsnorm"

# Bugs an agent-written kernel typically has, planted in the CPU source:
# name -> [(pattern, replacement), ...] applied to rmsnorm_cpu/rmsnorm_cpu.cpp.
_RMS_NORM_ENTRY = r"(void rms_norm\([^\n]*\n  check_common\(out, input, weight\);\n  if \(input\.numel\(\) == 0\) return;\n)"
_RMS_NORM_EXIT = r'("rms_norm_cpu", \[&\] \{\n(?:.*\n)*?  \}\);\n)\}'
PLANTS = {
    # scale_row's masked tail: the last partial vector keeps un-normalised x.
    "skip-tail": [(r"  if \(d < n\) \{\n    const int64_t rest = n - d;", "  if (false) {\n    const int64_t rest = n - d;")],
    # the weight never multiplies (main loop and tail).
    "ignore-weight": [(r" \* vinv \* fVec::loadu\(w \+ d(, rest)?\)", " * vinv")],
    # correct only when the output arrives NaN-filled: it recognises the harness's poison.
    "nan-only": [(_RMS_NORM_ENTRY, r"\1  if (!std::isnan(out.reshape(-1)[0].item<float>())) return;  // planted\n")],
    # answers from a cache keyed by the input's address: stale when new data arrives there.
    "stale-address": [
        (r"#include <cmath>\n", "#include <cmath>\n#include <map>\n"),
        (r"\}  // namespace\n", "std::map<const void*, at::Tensor>& stale_cache() {\n"
                                "  static std::map<const void*, at::Tensor> cache;\n  return cache;\n}\n\n}  // namespace\n"),
        (_RMS_NORM_ENTRY, r"\1  auto hit = stale_cache().find(input.data_ptr());  // planted\n"
                          r"  if (hit != stale_cache().end() && hit->second.sizes() == out.sizes()) {\n"
                          r"    out.copy_(hit->second);\n    return;\n  }\n"),
        (_RMS_NORM_EXIT, r"\1  stale_cache()[input.data_ptr()] = out.clone();  // planted\n}"),
    ],
    # scales its input in place after using it (to save a buffer, say).
    "mutates-input": [(_RMS_NORM_EXIT, r"\1  x.mul_(0.5);  // planted\n}")],
    # inputs of at least 4M elements are copied through unnormalised.
    "shortcut-large": [(_RMS_NORM_ENTRY, r"\1  if (input.numel() >= 4 * 1024 * 1024) {  // planted\n"
                                         r"    out.copy_(input);\n    return;\n  }\n")],
    # correct, but PyTorch does the work.
    "delegates": [(_RMS_NORM_ENTRY, r"\1  out.copy_(at::rms_norm(input, {input.size(-1)}, weight, eps));  // planted\n"
                                    r"  return;\n")],
}

# A project case file as the blog's agent wrote it: one bf16 shape, a weight of ones.
WEAK_CASES = """\"\"\"One case, a weight of ones.\"\"\"
import torch


def smoke_cases():
    def make(device, gen):
        x = torch.randn(2, 1024, 4096, generator=gen).to(device, torch.bfloat16)
        w = torch.ones(4096, device=device, dtype=torch.bfloat16)
        return torch.empty_like(x), x, w, 1e-6

    def reference(out, x, w, eps):
        x = x.double()
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w.double(),)

    return [{"name": "rms_norm/bf16/2x1024x4096", "op": "rms_norm", "make": make, "outputs": (0,),
             "reference": reference}]
"""

_TMP = Path(tempfile.mkdtemp(prefix="pipeline-rmsnorm-plants-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)


def good_build() -> Path:
    return shared_build(RMSNORM)


@functools.lru_cache(maxsize=None)
def planted_root(name: str, cases: str | None = None) -> Path:
    """A copy of rmsnorm with plant `name` in its CPU source (and `cases` as its case file),
    the shared copy that planted_build builds (tests/shared_builds.py)."""
    root = _TMP / (name + ("-weak" if cases else "")) / "rmsnorm"
    shutil.copytree(RMSNORM, root, ignore=shutil.ignore_patterns("build", "__pycache__", "results"))
    src = root / "rmsnorm_cpu" / "rmsnorm_cpu.cpp"
    text = src.read_text()
    for pattern, replacement in PLANTS[name]:
        text, n = re.subn(pattern, replacement, text)
        if n < 1:
            raise AssertionError(f"planting {name}: pattern {pattern!r} not found in {src.name}; update PLANTS")
    src.write_text(text)
    if cases is not None:
        (root / "tests" / "smoke_cases.py").write_text(cases)
    return shared_source(root)


def planted_build(name: str, cases: str | None = None) -> Path:
    return shared_build(planted_root(name, cases))


def kernel_build(name: str) -> Path:
    """The CPU build of one of our kernels (kernels-src/<name>), once per test run."""
    return shared_build(REPO / "kernels-src" / name)

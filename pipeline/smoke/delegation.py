"""Does the op do its own work, or hand it to PyTorch? One call under torch.profiler.

On the CPU the profiler sees every ATen operator the op calls (not its own
loops); on CUDA it also sees the device kernels launched. Operators that only
allocate, view or copy are left out. An op that calls compute operators (and,
on CUDA, launches no kernel of its own) delegates: not wrong, but not a custom
kernel, and the report and the card say so.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from pipeline.smoke.report import Delegation

# ATen operators that allocate, reshape, view or move data: any kernel may call these.
LAYOUT_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided new_zeros zeros zeros_like ones_like full full_like
view view_as _reshape_alias reshape _unsafe_view as_strided contiguous clone copy_ _to_copy to detach alias
expand expand_as t transpose permute unsqueeze squeeze select slice narrow unflatten flatten unbind split chunk
resize_ set_ lift_fresh fill_ zero_ resolve_conj resolve_neg item _local_scalar_dense is_nonzero record_stream
_has_compatible_shallow_copy_type result_type size stride numel dim is_contiguous
""".split())

# Device kernels that are PyTorch's own (CUDA names as the profiler reports them).
_TORCH_KERNEL_MARKS = ("at::native", "at::cuda", "at_cuda_detail", "c10::", "cunn_", "Memcpy", "Memset")


@contextlib.contextmanager
def _quiet_fd2():
    """Kineto prints start/stop lines on fd 2 for every profile: keep them off the user's terminal."""
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _descendants(event) -> list:
    out, stack = [], list(event.cpu_children)
    while stack:
        e = stack.pop()
        out.append(e)
        stack.extend(e.cpu_children)
    return out


def profile_call(op_name: str, qualified: str, fn, device) -> Delegation:
    """Run `fn()` (one call of the op) under the profiler and classify what ran."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    try:
        with _quiet_fd2(), profile(activities=activities) as prof:
            fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
        events = list(prof.events())
    except Exception as exc:  # a profiler that cannot run here: say so, do not guess
        return Delegation(op_name, (), (), False, note=f"not profiled: {type(exc).__name__}: {exc}"[:300])
    tops = [e for e in events if e.name == qualified and e.cpu_parent is None] or \
        [e for e in events if e.name == qualified]
    called = sorted({e.name for top in tops for e in _descendants(top) if e.name.startswith("aten::")})
    compute = tuple(n for n in called if n.removeprefix("aten::") not in LAYOUT_OPS)
    kernels = tuple(sorted({e.name for e in events
                            if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA}))
    own = [k for k in kernels if not any(mark in k for mark in _TORCH_KERNEL_MARKS)]
    delegates = bool(compute) and (device.type != "cuda" or not own)
    return Delegation(op_name, compute, kernels, delegates)

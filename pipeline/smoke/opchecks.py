"""The checks a project case may ask for: torch.library.opcheck, and the op
under torch.compile(fullgraph=True) against eager on the same inputs."""

from __future__ import annotations

from pipeline.smoke.cases import Call, Case
from pipeline.smoke.compare import compare


def run_opcheck(op, call: Call) -> str:
    import torch

    overload = op.default if hasattr(op, "default") else op
    result = torch.library.opcheck(overload, tuple(call.args), raise_exception=False)
    failed = {k: v for k, v in result.items() if v != "SUCCESS"}
    return "; ".join(f"{k}: {v}" for k, v in failed.items())


def run_compile(op, case: Case, call: Call, device) -> tuple[float, float, str]:
    """(worst error, its bound, problems)."""
    import torch

    eager = [a.clone() if isinstance(a, torch.Tensor) else a for a in call.args]
    compiled = [a.clone() if isinstance(a, torch.Tensor) else a for a in call.args]
    for i in call.poison:
        eager[i].fill_(float("nan"))
        compiled[i].fill_(float("nan"))
    returned = op(*eager)

    def fn(*a):
        return op(*a)

    torch._dynamo.reset()  # each case compiles afresh: no silent fallback after recompiles
    compiled_returned = torch.compile(fn, fullgraph=True)(*compiled)
    if device.type == "cuda":
        torch.cuda.synchronize()
    want = call.read(eager, returned)
    got = call.read(compiled, compiled_returned)
    worst, worst_bound, messages = 0.0, 0.0, []
    for key, value in want.items():
        bound = case.bound(value.dtype)
        err, msg = compare(got.get(key), value.to(torch.float64), bound)
        if msg:
            messages.append(f"output {key}: compiled differs from eager: {msg}")
        worst, worst_bound = max(worst, err), bound
    return worst, worst_bound, "; ".join(messages)

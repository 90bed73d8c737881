"""Running one case: three calls per seed, every one checked.

Per seed, two draws of inputs, d1 and d2 (two generators). Call 1 runs on d1.
Call 2 copies d2 into the same tensors and reuses the same output buffers:
new data at the same addresses (a kernel that caches by address serves d1's
answer and fails). Call 3 puts d1 back at those addresses and must reproduce
call 1 bit for bit. Before each call the outputs are poisoned at random
(`poison.py`); after it: no exception (on call 1 a contract input that a
correct kernel may refuse is recorded as declined), guard bands intact, every
output of the reference's shape (and, for contracts, dtype), finite, within
the bound in relative norm and element by element, and every input bit for
bit what it was before the call.
"""

from __future__ import annotations

import contextlib
import random
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from pipeline.smoke import poison as poisons
from pipeline.smoke.cases import Call, Case
from pipeline.smoke.compare import changed_elements, compare, same_bits
from pipeline.smoke.report import CaseResult

MAX_MESSAGES = 3


@dataclass
class RunState:
    """Shared by every case of a run: the last output (the next "previous" poison),
    and the intra-op thread count the op runs with."""

    previous: Any = None
    threads: int = 0


@contextlib.contextmanager
def bookkeeping(state: RunState) -> Iterator[None]:
    """The harness's own tensor work single-threaded (on a busy machine two
    threads spin against each other: 100x slower on small tensors); the op
    itself runs with the threads it was given (`_threads_for_op`)."""
    import torch

    state.threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(state.threads)


@contextlib.contextmanager
def _threads_for_op(state: RunState) -> Iterator[None]:
    import torch

    if not state.threads:
        yield
        return
    torch.set_num_threads(state.threads)
    try:
        yield
    finally:
        torch.set_num_threads(1)


@dataclass(frozen=True)
class CaseStats:
    """What a case's inputs look like (the weak-case warnings read these)."""

    name: str
    op: str
    contract: str | None
    shapes: tuple[tuple[int, ...], ...]  # floating input tensors
    dtypes: tuple[str, ...]
    constant: tuple[int, ...]  # positions of floating inputs whose elements are all equal
    fixed: bool  # two different generators drew the same inputs


@dataclass
class Outcome:
    worst: float = 0.0
    bound: float = 0.0
    messages: list = field(default_factory=list)
    declined: str = ""
    refused: bool = False  # raised on the first call: a refusal, not a wrong answer
    kind: str = ""  # the worst failure kind so far: cuda-error > raised > wrong

    def failed_as(self, kind: str) -> None:
        order = ("", "wrong", "raised", "case-error", "cuda-error")
        if order.index(kind) > order.index(self.kind):
            self.kind = kind

    def note(self, err: float, bound: float) -> None:
        if err / max(bound, 1e-300) >= self.worst / max(self.bound, 1e-300):
            self.worst, self.bound = err, bound


def generators(seed: int, name: str):
    """Two generators per (seed, case), reproducible from the run's seed."""
    import torch

    base = (seed * 1_000_003) ^ zlib.crc32(name.encode())
    return torch.Generator().manual_seed(base % 2**62), torch.Generator().manual_seed((base * 7919 + 1) % 2**62)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__


def is_cuda_error(exc: BaseException) -> bool:
    """An error of the CUDA runtime or driver (not a deliberate refusal such as TORCH_CHECK)."""
    import torch

    accelerator = getattr(torch, "AcceleratorError", None)
    if accelerator is not None and isinstance(exc, accelerator):
        return True
    text = str(exc)
    return "CUDA error" in text or "CUDA driver error" in text or "cudaError" in text


def settle(device) -> None:
    """Wait for the op's work and surface its CUDA errors here, inside the case that
    caused them: synchronize, then launch one tiny kernel, whose launch check picks up
    an error a kernel launch left behind unchecked (an empty grid: invalid argument)."""
    if device.type != "cuda":
        return
    import torch

    torch.cuda.synchronize(device)
    torch.empty(1, device=device).fill_(1.0)
    torch.cuda.synchronize(device)


def healthy(device) -> bool:
    """Whether the device still computes after a CUDA error (illegal address and launch
    failures are sticky: every later call fails, so the worker must be replaced)."""
    if device.type != "cuda":
        return True
    import torch

    try:
        torch.cuda.synchronize(device)
        return float(torch.ones(8, device=device).sum()) == 8.0
    except Exception:  # any error here means the context is gone
        return False


def _tensor_positions(call: Call) -> list[int]:
    import torch

    return [i for i, a in enumerate(call.args) if isinstance(a, torch.Tensor)]


def _storage(t) -> int:
    return t.untyped_storage().data_ptr()


def input_positions(call: Call) -> list[int]:
    """Tensor arguments the op must not change: not written, sharing no storage with a written one."""
    written = {_storage(call.args[i]) for i in call.written if hasattr(call.args[i], "untyped_storage")}
    return [i for i in _tensor_positions(call) if i not in call.written and _storage(call.args[i]) not in written]


def snapshot(call: Call) -> dict:
    """Copies of every argument but the out-of-place outputs: the data to restore or compare with."""
    import torch

    return {i: (a.clone() if isinstance(a, torch.Tensor) else a) for i, a in enumerate(call.args)
            if i not in call.poison}


def transplant(values: dict, call: Call) -> None:
    """Write `values` into the call's own tensors (same addresses); scalars are replaced."""
    import torch

    for i, v in values.items():
        if isinstance(v, torch.Tensor):
            call.args[i].copy_(v)
        else:
            call.args[i] = v


def same_layout(a: Call, b: Call) -> bool:
    import torch

    if len(a.args) != len(b.args):
        return False
    for x, y in zip(a.args, b.args):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor) and (x.shape != y.shape or x.stride() != y.stride() or x.dtype != y.dtype):
            return False
    return True


def case_stats(case: Case, a: Call, b: Call) -> CaseStats:
    import torch

    shapes, dtypes, constant, fixed, drawn = [], [], [], True, False
    for i in input_positions(a):
        t = a.args[i]
        if not t.is_floating_point():
            continue
        shapes.append(tuple(t.shape))
        dtypes.append(str(t.dtype).removeprefix("torch."))
        if t.numel() > 1 and bool((t == t.reshape(-1)[0]).all()):
            constant.append(i)
        if t.numel() == 0:  # an empty input is the same whatever the seed
            continue
        drawn = True
        other = b.args[i] if i < len(b.args) else None
        if not (isinstance(other, torch.Tensor) and same_bits(t, other)):
            fixed = False
    return CaseStats(case.name, case.op, case.contract, tuple(shapes), tuple(dtypes), tuple(constant),
                     fixed and drawn)


def _keys_at(call: Call) -> dict:
    """Which output key each poisoned position holds (by identity), for the other-reference poison."""
    try:
        outs = call.read(call.args, None)
    except Exception:
        return {}
    ids = {id(v): k for k, v in outs.items() if v is not None}
    return {pos: ids[id(call.args[pos])] for pos in call.poison if id(call.args[pos]) in ids}


def _check_outputs(call: Call, case: Case, outs: dict, ref: dict, outcome: Outcome) -> list[str]:
    problems = []
    for key, r in ref.items():
        o = outs.get(key)
        if o is None:
            problems.append(f"output {key}: missing")
            continue
        if call.dtype is not None and getattr(o, "dtype", None) != call.dtype:
            problems.append(f"output {key}: dtype {getattr(o, 'dtype', type(o).__name__)}, expected {call.dtype}")
            continue
        bound = case.bound(o.dtype)
        err, msg = compare(o, r, bound, case.floor)
        outcome.note(err, bound)
        if msg:
            problems.append(f"output {key}: {msg}")
    return problems


def _check_inputs(call: Call, pristine: dict) -> list[str]:
    problems = []
    for i in input_positions(call):
        before = pristine.get(i)
        if before is not None and not same_bits(call.args[i], before):
            n = changed_elements(call.args[i], before) if call.args[i].shape == before.shape else -1
            problems.append(f"input {i} was changed by the call ({n} of {before.numel()} elements)")
    return problems


def one_call(op, call: Call, case: Case, device, ref: dict, other: dict, pristine: dict, mode: str,
             rng: random.Random, state: RunState, outcome: Outcome) -> tuple[dict | None, list[str], bool]:
    """Poison, call, check. Returns (copies of the outputs, problems, whether the op raised)."""
    import torch

    poisons.prepare(call)
    keys = _keys_at(call)
    poisons.poison(call, mode, rng, {pos: other.get(k) for pos, k in keys.items()}, state.previous)
    try:
        with _threads_for_op(state):
            returned = op(*call.args)
            settle(device)
        outs = call.read(call.args, returned)
    except Exception as exc:  # the op's own error: the finding
        outcome.failed_as("cuda-error" if is_cuda_error(exc) else "raised")
        return None, [_short(exc)], True
    problems = poisons.guards_intact(call) + _check_outputs(call, case, outs, ref, outcome)
    problems += _check_inputs(call, pristine)
    if problems:
        outcome.failed_as("wrong")
    copies = {k: v.detach().clone() for k, v in outs.items() if isinstance(v, torch.Tensor)}
    first = next(iter(copies.values()), None)
    if first is not None and first.numel() > 0:
        state.previous = first
    return copies, problems, False


_CALLS = ("first draw", "new data at the same addresses", "first draw again at the same addresses")


def schedule_for(case: Case, seed: int) -> poisons.Schedule:
    """The poison of every call of a case, drawn from the run's first seed (replayable)."""
    return poisons.Schedule(random.Random(zlib.crc32(f"poison:{seed}:{case.name}".encode())))


def run_seed(op, case: Case, device, seed: int, state: RunState,
             schedule: poisons.Schedule | None = None) -> tuple[CaseResult, CaseStats | None]:
    """One seed of one case: the three calls. `schedule` spans the case's seeds
    (every poison once before any repeats); by default one per seed. An error after
    the op returned (a CUDA error surfacing in a check) fails the case too."""
    try:
        return _run_seed(op, case, device, seed, state, schedule)
    except Exception as exc:  # raised by the checks after the op: the op's doing as far as we can tell
        outcome = Outcome(messages=[f"the checks after the call failed: {_short(exc)}"])
        outcome.failed_as("cuda-error" if is_cuda_error(exc) else "raised")
        return _result(case, seed, outcome), None


def _run_seed(op, case: Case, device, seed: int, state: RunState,
              schedule: poisons.Schedule | None) -> tuple[CaseResult, CaseStats | None]:
    g1, g2 = generators(seed, case.name)
    rng = random.Random(zlib.crc32(f"{seed}:{case.name}".encode()))
    schedule = schedule or schedule_for(case, seed)
    try:
        first, second = case.make(device, g1), case.make(device, g2)
        refs = (first.reference(), second.reference())
    except Exception as exc:  # the case (project-owned) or the op's input checks while making
        outcome = Outcome(messages=[f"making the inputs failed: {_short(exc)}"])
        outcome.failed_as("cuda-error" if is_cuda_error(exc) else "case-error")
        return _result(case, seed, outcome), None
    stats = case_stats(case, first, second)
    outcome = Outcome()
    data1 = snapshot(first)
    same = same_layout(first, second)
    if same:
        data2 = {i: second.args[i] for i in data1}
    else:  # the case draws different layouts per generator: no address reuse to test
        data2 = snapshot(second)
    plan = ((first, refs[0], refs[1], data1, None), (first if same else second, refs[1], refs[0], data2, data2),
            (first, refs[0], refs[1], data1, data1))
    outputs = []
    for n, (call, ref, other, pristine, load) in enumerate(plan):
        if load is not None and (call is first):
            transplant(load, first)
        mode = schedule.next()
        outs, problems, raised = one_call(op, call, case, device, ref, other, pristine, mode, rng, state, outcome)
        if raised and n == 0 and case.refusable and outcome.kind != "cuda-error":
            outcome.declined = problems[0]  # a deliberate refusal; a CUDA error is no refusal
            break
        outcome.refused = outcome.refused or (raised and n == 0 and outcome.kind != "cuda-error")
        outcome.messages += [f"call {n + 1} ({_CALLS[n]}; poison: {mode}): {p}" for p in problems]
        if raised or outs is None:
            break
        outputs.append(outs)
    if len(outputs) == 3 and not outcome.messages:
        for key, value in outputs[0].items():
            if key in outputs[2] and not same_bits(value, outputs[2][key]):
                outcome.messages.append(f"call 3 repeats call 1's inputs but output {key} differs in "
                                        f"{changed_elements(value, outputs[2][key])} element(s): not deterministic")
                outcome.failed_as("wrong")
    return _result(case, seed, outcome), stats


def _result(case: Case, seed: int, outcome: Outcome) -> CaseResult:
    if outcome.declined:
        return CaseResult(case.name, case.op, seed, "values", True, message=f"declined: {outcome.declined}",
                          contract=case.contract, declined=True, category=case.category)
    messages = outcome.messages
    text = "; ".join(messages[:MAX_MESSAGES]) + (f"; and {len(messages) - MAX_MESSAGES} more"
                                                 if len(messages) > MAX_MESSAGES else "")
    error = outcome.worst if outcome.bound else None
    return CaseResult(case.name, case.op, seed, "values", not messages, error, outcome.bound or None, text,
                      contract=case.contract, refused=outcome.refused,
                      kind=(outcome.kind or "wrong") if messages else "", category=case.category)

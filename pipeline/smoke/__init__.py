"""Smoke test: is the host's variant of a built kernel correct on this device?

`run_smoke(bundle, kernel)` has a worker process it supervises (`supervisor.py`,
`worker.py`, `session.py`) load the host's variant of a checked bundle with
`kernels.get_local_kernel` and run, on the device the variant targets (CUDA
for a cuda variant, else CPU), one case at a time; a crash, a hang past the
timeout or a sticky CUDA error fails that case and a fresh worker goes on:

1. the op contracts (`pipeline/contracts/`): every op the build registers is
   bound to a contract (`--contract OP=FAMILY`, the workspace's
   `[workspace.contracts.<kernel>]`) or matched to one by name and schema;
   the contract's inputs, reference and tolerances are the pipeline's, not
   the project's. An op no contract covers is reported;
2. the project's own cases, `tests/smoke_cases.py` (below): they add to the
   contracts, never replace them;
3. without a case file, the project's own `kernels_ci` pytest tests.

The case contract (what `kernels-src/<name>/tests/smoke_cases.py` defines)
---------------------------------------------------------------------------
One function, importable without the kernel being built::

    def smoke_cases() -> list[dict]

Each dict is one case, called with fresh random inputs per seed:

    name       str, unique: "rms_norm/bf16/2x5x4096"
    op         str: the op's name in the kernel's `ops` namespace
               (torch.ops.<kernel id>.<op>); it is called as op(*args)
    make       make(device, generator) -> tuple: the op's positional arguments,
               drawn from `generator` (a seeded torch.Generator on the CPU; move
               tensors to `device` yourself). Output arguments can hold anything.
    outputs    tuple[int, ...]: positions in args that the op writes
    reference  reference(*args) -> tuple[Tensor, ...]: one float64 tensor per
               output (then per returned tensor), computed from the inputs only
               (the outputs are NaN when it is called)
    returns    optional int: how many tensors the op returns that are outputs too
    inplace    optional tuple[int, ...]: outputs that are also inputs (not poisoned)
    checks     optional, subset of {"opcheck", "compile"}: also run
               torch.library.opcheck on this case, and compare the op under
               torch.compile(fullgraph=True) with eager (first seed only; these
               are slow, so mark a few cases per op)
    tolerance  optional float: a tighter bound than the dtype's default
    devices    optional, subset of {"cuda", "cpu", ...}: the device types the
               case is for (default: all). For large cases that only matter
               where a kernel switches code paths by size; the report counts
               the cases left out

What the harness does with every case (contract or project) and seed
(`harness.py`): draws two sets of inputs; calls the op three times: on the
first set, on the second copied into the same tensors (new data at the same
addresses), and on the first again, which must reproduce the first call's
bits. Before each call every output is poisoned at random (NaN, random finite
values, the previous call's output, or the reference for a different input)
inside a guard band of random values. After each: no exception, guard bands
unchanged (no write out of bounds), every output finite, within the bound for
its dtype in relative norm error ‖out - ref‖ / ‖ref‖ against float64
(`TOLERANCE` for project cases, the contract's own otherwise) and element by
element, and every input bit for bit unchanged. A case that raises fails with
the exception's message, except a contract input a correct kernel may refuse
(non-contiguous, misaligned, empty), which is reported as declined. The seed
changes between runs; the report records it and `--seed` replays a run.

Warnings (codes in the report and on the card): weak project cases
(`weak-case-*`: an input whose elements are all equal, last dimensions that
are all multiples of 8, one shape, one dtype, inputs that ignore the seed), an
op that only calls PyTorch (`op-delegates-to-pytorch`, from torch.profiler),
ops no contract covers (`op-not-covered`, `contract-ambiguous`) and declined
contract inputs (`contract-case-declined`).
"""

from pipeline.smoke.cases import CASES_FILE, TOLERANCE, for_device, load_cases, project_bound
from pipeline.smoke.report import CaseResult, Delegation, OpCoverage, ProjectTests, SmokeReport, untested_hint
from pipeline.smoke.run import (DEFAULT_SEEDS, DEFAULT_TIMEOUT_S, DEFAULT_TRIALS, LoadedVariant, check_module,
                                load_variant, new_seed, run_cases, run_smoke, seeds_from)

__all__ = ["CASES_FILE", "DEFAULT_SEEDS", "DEFAULT_TIMEOUT_S", "DEFAULT_TRIALS", "TOLERANCE", "CaseResult", "Delegation", "LoadedVariant",
           "OpCoverage", "ProjectTests", "SmokeReport", "check_module", "for_device", "load_cases", "load_variant",
           "new_seed", "project_bound", "run_cases", "run_smoke", "seeds_from", "untested_hint"]

"""rmsnorm's launch rule, as compiled: which kernel `choose_config` picks for each shape.

The rule is host code in a torch-free header (rmsnorm_kernels.cuh), so it is compiled with nvcc
into a small host program that prints the choice for a table of shapes, with the H200's occupancy
(132 multiprocessors of 2048 threads; rows_one's 25-30 registers never limit it) standing in for
the device query. The shapes are those the H200 sweeps decided (benchmarks/NOTES.md, "Version 8":
rows_one wherever its one-row blocks fit in one wave) and their neighbours, so an edit that moves a
launch the records were measured with fails here, on a CPU-only machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nvcc_support import NVCC, host_rule

REPO = Path(__file__).resolve().parents[2]
HEADER_DIR = REPO / "kernels-src" / "rmsnorm" / "rmsnorm_cuda"

PROGRAM = r"""
#include "rmsnorm_kernels.cuh"
#include <cstdio>
int main() {
  auto resident = [](int, int, int threads) {
    int per_sm = 2048 / threads;
    return (int64_t)132 * (per_sm > 32 ? 32 : per_sm);
  };
  long rows; int hidden, elem, fused;
  while (std::scanf("%ld %d %d %d", &rows, &hidden, &elem, &fused) == 4) {
    auto c = rmsnorm::choose_config(rows, hidden, elem, true, resident, 0, 0, 0, 0, fused != 0, -1, 0, 0, true);
    std::printf("%d %d %d %ld\n", c.kind, c.vpt, c.tx, (long)c.grid);
  }
}
"""
ROWS_ONE = 8

pytestmark = [pytest.mark.slow, pytest.mark.skipif(NVCC is None, reason="needs nvcc ($CUDA_HOME/bin/nvcc)")]


@pytest.fixture(scope="module")
def choose(tmp_path_factory):
    return host_rule(tmp_path_factory.mktemp("rule"), PROGRAM, HEADER_DIR)


# (rows, hidden, bytes per element, fused) -> rows_one or not, at the H200's occupancy.
DECIDED = {
    # decode and small batches of 4096, both ops: sweep rmsnorm-one, call 2
    **{(r, 4096, 2, f): True for r in (1, 8, 32, 64, 128, 512) for f in (False, True)},
    (1024, 4096, 2, True): False,   # two waves: level with rows_reg, left to it
    (1024, 4096, 2, False): False,
    (1024, 2048, 2, False): True,   # 1024 of 1056 resident one-row blocks
    (2048, 2048, 2, False): False,
    (1024, 3072, 2, False): False,  # 1.5 waves: 7.71 against 7.36 us
    (64, 3072, 2, False): True,
    (64, 7168, 2, False): True, (1, 8192, 2, False): True, (64, 8192, 2, False): True,
    (264, 8192, 2, False): True, (265, 8192, 2, False): False,  # 132 x 2 blocks of 1024 threads
    (64, 16384, 2, False): False,   # past 1024 vectors
    (2048, 128, 2, False): False,   # rows_small
    (8192, 4096, 2, False): False,  # streaming batches keep rows_reg / rows_async
    # float32 was never swept with rows_one
    **{(r, 4096, 4, f): False for r in (1, 64, 512) for f in (False, True)},
}


def test_rows_one_exactly_where_the_sweep_put_it(choose):
    shapes = list(DECIDED)
    got = choose(shapes)
    assert len(got) == len(shapes)
    picked = {s: c[0] == ROWS_ONE for s, c in zip(shapes, got)}
    assert picked == DECIDED


def test_rows_one_launch_shape(choose):
    # One row per block (grid = rows), one 16-byte vector per thread, whole warps.
    for (rows, hidden, elem, fused), (kind, vpt, tx, grid) in zip(
            [(1, 4096, 2, False), (7, 2056, 2, True), (128, 3072, 2, False)],
            choose([(1, 4096, 2, False), (7, 2056, 2, True), (128, 3072, 2, False)])):
        nvec = hidden * elem // 16
        assert (kind, vpt, grid) == (ROWS_ONE, 1, rows)
        assert tx % 32 == 0 and nvec <= tx < nvec + 32


def test_knob_off_restores_rows_reg(tmp_path):
    # RMSNORM_DECODE_ONE=0 is the launch of the records before it (rows_reg at two vectors per thread).
    run = host_rule(tmp_path, PROGRAM, HEADER_DIR, "-DRMSNORM_DECODE_ONE=0")
    assert [c[:3] for c in run([(64, 4096, 2, 1), (1, 8192, 2, 0)])] == [(0, 2, 256), (0, 2, 512)]

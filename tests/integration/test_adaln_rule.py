"""adaln's launch rule, as compiled: the shape `choose_config` picks for each batch.

The rule is host code in a torch-free header (adaln_kernels.cuh), compiled with nvcc into a small
host program that prints the choice for a table of shapes, with the H200's occupancy (132
multiprocessors of 2048 threads, 64 warps and 32 blocks each; adaln_rows' one- and two-pack forms
never limit it by registers) standing in for the device query. The one-wave launch (one row per
block, one pack per thread, two in float32) is where sweep adaln-one put it (benchmarks/NOTES.md,
"One pack per thread"): rows of 1024-2048 elements whose blocks fit on the device at once; an edit
that moves a launch the records were measured with fails here, on a CPU-only machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from nvcc_support import NVCC, host_rule

REPO = Path(__file__).resolve().parents[2]
HEADER_DIR = REPO / "kernels-src" / "adaln" / "adaln_cuda"

PROGRAM = r"""
#include "adaln_kernels.cuh"
#include <cstdio>
int main() {
  auto resident = [](int, int threads) {
    int per_sm = 64 / ((threads + 31) / 32);
    return (int64_t)132 * (per_sm > 32 ? 32 : per_sm);
  };
  long rows, D; int elem;
  while (std::scanf("%ld %ld %d", &rows, &D, &elem) == 3) {
    auto c = adaln_cuda::choose_config(rows, D, elem, true, resident);
    std::printf("%d %d %d %d %ld\n", c.kind, c.vpt, c.tx, c.ty, (long)c.grid);
  }
}
"""

pytestmark = [pytest.mark.slow, pytest.mark.skipif(NVCC is None, reason="needs nvcc ($CUDA_HOME/bin/nvcc)")]


@pytest.fixture(scope="module")
def choose(tmp_path_factory):
    return host_rule(tmp_path_factory.mktemp("rule"), PROGRAM, HEADER_DIR)


# (rows, D, bytes per element) -> (kind, packs per thread, threads per row, rows per block).
DECIDED = {
    (384, 2048, 2): (0, 1, 256, 1),   # rms 1x384x2048: sweep adaln-one
    (512, 1152, 2): (0, 1, 160, 1),   # layer 2x256x1152: 144 packs on 5 warps
    (384, 2048, 4): (0, 2, 256, 1),   # float32: two packs per thread
    (512, 1152, 4): (0, 2, 160, 1),
    (1056, 2048, 2): (0, 1, 256, 1),  # 132 x 8 blocks of 256: still one wave
    (1057, 2048, 2): (0, 4, 64, 2),   # past it: the group rule (64 lanes of 4 packs)
    (2048, 1152, 2): (0, 6, 32, 4),   # layer 8x256x1152: 2048 > 1584 resident blocks of 160
    (6144, 2048, 2): (0, 4, 64, 2),   # streaming batches keep the group rule
    (6144, 2048, 4): (0, 4, 128, 1),  # float32 past 256 packs: 4 per lane (RMS 1x6144x2048 27.02 -> 25.66 us)
    (64, 3072, 2): (0, 6, 64, 2),     # past 2048 elements: never swept, not taken
    (64, 512, 2): (0, 4, 16, 8),      # under 1024: the group rule
    (1, 1024, 4): (0, 1, 256, 1),
}


def test_one_wave_launch_exactly_where_the_sweep_put_it(choose):
    shapes = list(DECIDED)
    got = choose(shapes)
    assert len(got) == len(shapes)
    assert {s: c[:4] for s, c in zip(shapes, got)} == DECIDED


def test_one_wave_grid_is_one_block_per_row(choose):
    for (rows, _, _), c in zip([(7, 1160, 2), (33, 1160, 4)], choose([(7, 1160, 2), (33, 1160, 4)])):
        kind, vpt, tx, ty, grid = c
        assert (kind, ty, grid) == (0, 1, rows)
        assert tx % 32 == 0 and tx * vpt >= 145 * (2 if vpt == 2 else 1)

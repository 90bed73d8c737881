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
    std::printf("%d %d %d %ld %d %d\n", c.kind, c.vpt, c.tx, (long)c.grid, c.rpt, c.tx * c.ty);
  }
}
"""
ROWS_ONE = 8
ROWS_SMALL, ROWS_HEAD = 6, 9

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
    # rows of 65-255 vectors too (sweep rmsnorm-more, 2026-12-07, an H100);
    # graph replay 1x896 1.76 -> 1.48 us, 1x1536 1.86 -> 1.50, 64x1536 1.97 -> 1.70
    **{(r, h, 2, False): True for r in (1, 64) for h in (896, 1536)},
    (2048, 896, 2, False): True,    # 2048 of 2112 resident blocks of 128 threads
    (2048, 1536, 2, False): False,  # past one wave (1320 blocks of 192 threads)
    (1, 1024, 2, True): True,
    (16384, 896, 2, False): False,  # past one wave: rows_reg
    (64, 512, 2, False): False,     # 64 vectors: rows_small
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
    for (rows, hidden, elem, fused), (kind, vpt, tx, grid, *_) in zip(
            [(1, 4096, 2, False), (7, 2056, 2, True), (128, 3072, 2, False)],
            choose([(1, 4096, 2, False), (7, 2056, 2, True), (128, 3072, 2, False)])):
        nvec = hidden * elem // 16
        assert (kind, vpt, grid) == (ROWS_ONE, 1, rows)
        assert tx % 32 == 0 and nvec <= tx < nvec + 32


# Per-head rows (sweeps rmsnorm-head and rmsnorm-head32, 2026-12-02 fourth session, calls 1 and 3):
# (rows, hidden, bytes per element, fused) -> (kind, vectors per lane, rows per group, threads).
DEEP, WIDE_GRID, SMALL = (ROWS_HEAD, 2, 4, 64), (ROWS_HEAD, 1, 2, 128), (ROWS_SMALL, 1, 2, 0)
HEAD_DECIDED = {
    (65536, 128, 2, False): DEEP,        # 16 MiB of 16-vector rows: 11.90 -> 11.36 us
    (70000, 128, 2, False): DEEP,
    (131072, 128, 2, False): DEEP,       # 32 MiB: 18.69 against 18.78
    (163840, 128, 2, False): DEEP,       # exactly 40 MiB
    (163841, 128, 2, False): WIDE_GRID,
    (262144, 128, 2, False): WIDE_GRID,  # 64 MiB: the deep shape level at best (33.79 against 33.76)
    (65535, 128, 2, False): WIDE_GRID,   # below 65536 rows the deep shape lost (32768x128: 8.11 against 7.87)
    (32768, 128, 2, False): WIDE_GRID,
    (16384, 128, 2, False): WIDE_GRID,   # the lower bound: 6.56 -> 6.34
    (16383, 128, 2, False): SMALL,       # below it rows_small as before (2048x128: kind 9 level or slower)
    (2048, 128, 2, False): SMALL,
    (262144, 64, 2, False): WIDE_GRID,   # 8-vector rows never take the deep shape (65536x64: 8.21 against 8.00)
    (65536, 64, 2, False): WIDE_GRID,
    (65536, 128, 4, False): DEEP,        # float32, 32 vectors: 18.69 -> 18.37
    (70000, 128, 4, False): DEEP,        # 35.8 MB
    (81920, 128, 4, False): DEEP,        # exactly 40 MiB
    (81921, 128, 4, False): WIDE_GRID,
    (131072, 128, 4, False): WIDE_GRID,  # 64 MiB: 33.50 against the deep shape's 33.47
    (262144, 128, 4, False): WIDE_GRID,  # 128 MiB: deep 65.92, this 64.62
    (16384, 128, 4, False): WIDE_GRID,   # 8.16 -> 7.81
    (65536, 64, 4, False): DEEP,
    (262144, 64, 4, False): WIDE_GRID,
    (65536, 128, 2, True): SMALL,        # the fused op was not swept: unchanged
    (65536, 256, 2, False): (ROWS_SMALL, 1, 2, 0),  # 32 vectors of 16-bit rows: hidden 256 not swept
}


def test_rows_head_exactly_where_the_sweep_put_it(choose):
    shapes = list(HEAD_DECIDED)
    got = {s: (c[0], c[1], c[4], c[5] if c[0] == ROWS_HEAD else 0) for s, c in zip(shapes, choose(shapes))}
    assert got == HEAD_DECIDED


def test_rows_head_grid_covers_every_row(choose):
    # 16 lanes x 4 rows on 64 threads: 32 rows of 16 vectors per block; 8 lanes of 128: 32 rows of 8.
    shapes = [(70000, 128, 2, False), (262144, 64, 2, False), (70000, 128, 4, False)]
    for (rows, hidden, elem, _), (kind, vpt, tx, grid, rpt, threads) in zip(shapes, choose(shapes)):
        nvec = hidden * elem // 16
        per_block = threads // tx * rpt
        assert kind == ROWS_HEAD and tx * vpt == nvec
        assert grid == -(-rows // per_block)


# Streaming batches (sweeps rmsnorm-big, rmsnorm-big16 and rmsnorm-big2, 2026-12-03 seventh session,
# calls 2 and 4): (rows, hidden, bytes per element, fused) -> (kind, vectors per thread).
ROWS_REG, ROWS_ASYNC = 0, 3
STREAM_DECIDED = {
    (4096, 4096, 2, True): (ROWS_REG, 4),     # 36.61 -> 33.98 us
    (8192, 4096, 2, True): (ROWS_REG, 4),     # 68.42 -> 67.01
    (32768, 4096, 2, True): (ROWS_REG, 4),
    (1024, 4096, 2, False): (ROWS_REG, 4),    # 8.67 -> 8.16 (past one wave of rows_one)
    (2048, 4096, 2, False): (ROWS_REG, 4),    # 12.16 -> 11.87
    (4096, 4096, 2, False): (ROWS_REG, 4),    # 19.52 -> 18.85
    (4096, 2048, 2, False): (ROWS_REG, 4),    # 12.26 -> 11.84
    (8192, 2048, 2, False): (ROWS_REG, 4),    # 19.66 -> 18.90
    (4096, 3072, 2, False): (ROWS_REG, 4),    # 17.04 -> 15.33
    (8192, 3072, 2, False): (ROWS_REG, 4),    # 26.58 -> 25.89
    (16384, 3072, 2, False): (ROWS_REG, 4),   # level
    (2048, 4096, 2, True): (ROWS_REG, 4),     # the fused op below 2^21 vectors, as before
    (8192, 1024, 2, False): (ROWS_REG, 4),    # 128 vectors: the narrow rows' rule (as 896 below)
    # sweep rmsnorm-more (2026-12-07, an H100): 16-bit rows of 65-255 vectors past one wave in
    # registers (16384x896 20.70 -> 19.54 us), rows of 1025-1536 at four vectors (2048x12288
    # 33.78 -> 32.32); 2048 vectors keep eight (2048x16384, sweep rmsnorm-opq)
    (16384, 896, 2, False): (ROWS_REG, 4),
    (16384, 1536, 2, False): (ROWS_REG, 4),
    (2048, 12288, 2, False): (ROWS_REG, 4),
    (16384, 12288, 2, False): (ROWS_REG, 4),
    (2048, 16384, 2, False): (ROWS_REG, 8),
    (8192, 4096, 4, False): (ROWS_REG, 4),    # float32 kept rows_reg from 512 vectors already
    (8192, 1024, 4, False): (ROWS_ASYNC, 4),  # float32 below 512 vectors: unchanged
}


def test_streaming_rows_keep_rows_reg_where_the_sweep_put_them(choose):
    shapes = list(STREAM_DECIDED)
    got = {s: (c[0], c[1]) for s, c in zip(shapes, choose(shapes))}
    assert got == STREAM_DECIDED

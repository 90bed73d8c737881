"""Launch-shape sweep on the H200: one tuning build of a kernel, every candidate
configuration of the shapes that decide its rules, in one process.

A tuning build is the kernel project built with -D<KERNEL>_TUNE_ENV (see
run_all_h200.sh's TUNE): its glue then reads the configuration to launch from
an environment variable on every call (RMSNORM_CONFIG, ADALN_CONFIG,
GEGLU_CONFIG; the formats are in each kernel's .cu). The shipped build has no
such override. Each candidate is timed like `pipeline bench` times (the same
Timer: L2 read-flush before each repetition, CUDA events, median; graph replay
for cases of at most 8 MiB) and its output is compared with the rule's
default, so a configuration that computes something else is flagged, not timed.

    python3 scripts/gpu/sweep.py rmsnorm /tmp/build-tune-rmsnorm [--reps 100] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # more_shapes, when imported from elsewhere

from pipeline import bench, bench_report  # noqa: E402
from pipeline.smoke import load_variant  # noqa: E402

import more_shapes  # noqa: E402  (scripts/gpu, beside this file)

SMALL = [f"6,{v},0,0,{r},0" for v, r in ((1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1))] + ["3,4,0,0,0,0", "0,0,0,0,0,0"]
DECODE = ["0,0,0,0,0,0", "7,0,0,0,0,2", "7,0,0,0,0,4", "7,0,0,0,0,8"]
WIDE = ["0,4,0,0,0,0", "0,8,0,0,0,0", "3,8,0,0,0,0", "3,16,0,0,0,0"]
HEAD = [f"9,{v},0,0,{r},{t}" for v, r, t in ((1, 2, 256), (1, 4, 256), (1, 8, 256), (1, 2, 128), (1, 4, 128),
                                                  (1, 8, 128), (1, 2, 64), (1, 4, 64), (1, 8, 64), (2, 2, 128),
                                                  (2, 4, 64), (2, 1, 256))]

# kernel -> (environment variable, {case name: [configurations]}); "" is the rule's choice.
SWEEPS = {
    # 2026-12-07 (thirteenth session), prepared for the next call (v46_h200.sh): adaln's LayerNorm rows
    # of 384 (48 packs), 10-15 % behind torch.compile in more_shapes.py on an H100 (7.84 | 3.71 against
    # 7.09 | 3.21 us, results/archive/v41-h100-more-shapes.*). The rule gives 8 lanes of 6 packs, 16 rows
    # per 128-thread block; fields vpt, lanes per row, rows per block.
    "adaln-more": ("ADALN_CONFIG", {
        "adaln/layer/16x256x384": ["6,8,16", "6,8,32", "6,8,8", "4,16,8", "4,16,16", "2,32,4", "2,32,8",
                                   "1,64,2", "1,64,4"],
    }),
    # 2026-12-07 (thirteenth session), from more_shapes.py on an H100 (results/archive/v41-h100-more-shapes.*):
    # the shapes outside the benchmark where torch.compile is ahead. Hidden 896 (112 vectors, Qwen2-0.5B)
    # is 10 % behind at 16384 rows (rows_async, 28 of 32 lanes) and 0.16-0.27 us under graph replay at 1
    # and 64 rows (rows_reg<4>: 4 rows of 28 busy lanes per block); 1536 (192 vectors) at 1 and 64 rows;
    # 12288 (1536 vectors) 1-3 % from 2048 rows; per-head rows of 96 and 256 by 1-2 %. Every launch
    # kind that can take the row, against the rule, torch.compile in the same process.
    "rmsnorm-more": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["0,4,0,0,0,0", "0,2,0,0,0,0", "0,1,0,0,0,0", "8,1,0,0,0,0", "3,4,0,0,0,0",
                             "3,4,0,1,0,0", "6,4,0,0,1,0", "0,4,0,8,0,0"]
           for s in ("16384x896", "64x896", "1x896", "2048x896")},
        **{f"rms_norm/{s}": ["0,4,0,0,0,0", "0,2,0,0,0,0", "0,1,0,0,0,0", "8,1,0,0,0,0"]
           for s in ("64x1536", "1x1536")},
        **{f"rms_norm/{s}": ["0,8,0,0,0,0", "0,4,0,0,0,0", "3,16,0,0,0,0", "7,0,0,0,0,2", "1,0,512,0,0,0"]
           for s in ("2048x12288", "16384x12288")},
        "rms_norm/65536x96": ["6,1,0,0,1,0", "6,1,0,0,4,0", "6,2,0,0,2,0", "6,4,0,0,1,0", "6,4,0,0,2,0"],
        "rms_norm/65536x256": ["6,1,0,0,1,0", "6,1,0,0,4,0", "6,2,0,0,2,0", "6,2,0,0,4,0", "6,4,0,0,2,0"],
    }),
    "rmsnorm": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": SMALL for s in ("262144x128", "70000x128", "65536x128", "262144x64", "65536x64",
                                             "2048x128")},
        **{f"rms_norm/{s}": DECODE for s in ("1x4096", "8x4096", "64x4096", "1x8192", "64x8192", "1x16384",
                                             "64x16384", "64x7168")},
        **{f"fused_add_rms_norm/{s}": DECODE for s in ("1x4096", "64x4096")},
        **{f"rms_norm/{s}": WIDE for s in ("8192x7168", "2048x7168", "8192x5120", "4096x8192", "2048x16384")},
        "rms_norm/512x4096": ["0,2,0,0,0,0", "0,4,0,0,0,0", "0,1,0,0,0,0", "3,4,0,0,0,0"],
    }),
    # Call 2 of issue 19's session: persistent grids for rows_small, the two-pass
    # rows_loop and clusters for wide rows, threads per row at decode.
    "rmsnorm2": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["6,1,0,1,2,0", "6,1,0,2,2,0", "6,1,0,4,2,0", "6,2,0,2,1,0", "6,1,0,8,1,0"]
           for s in ("262144x128", "65536x128", "262144x64")},
        **{f"rms_norm/{s}": ["1,0,256,0,0,0", "1,0,512,0,0,0", "1,0,1024,0,0,0", "7,0,0,0,0,2", "7,0,0,0,0,4",
                             "0,8,0,0,0,0", "0,4,0,0,0,0"]
           for s in ("2048x16384", "4096x8192", "8192x7168", "2048x7168")},
        **{f"rms_norm/{s}": ["0,1,0,0,0,0", "0,2,0,0,0,0", "0,4,0,0,0,0", "0,8,0,0,0,0"]
           for s in ("1x4096", "64x4096", "1x8192", "64x8192")},
        "rms_norm/2048x128": ["6,1,0,0,1,0", "6,2,0,0,1,0", "6,4,0,0,1,0"],
        "fused_add_rms_norm/1x4096": ["0,1,0,0,0,0", "0,2,0,0,0,0", "0,4,0,0,0,0"],
    }),
    # Prepared for the next device call (rmsnorm_v5_h200.sh; NOTES.md "Version 5 plan"): per-head rows
    # with more rows in flight per lane group, up to 8 vectors per lane (2 x 4: 8 lanes of 2 vectors on
    # 4 rows for hidden 128; 4 x 2: 4 lanes of 4 vectors on 2 rows).
    "rmsnorm3": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["6,1,0,0,2,0", "6,2,0,0,4,0", "6,4,0,0,2,0", "6,2,0,0,2,0", "6,1,0,0,4,0"]
           for s in ("262144x128", "70000x128", "65536x128", "262144x64", "65536x64", "2048x128")},
    }),
    # rmsnorm in float32 (dtypes_h200.sh: 6-15 % behind torch.compile from 4096 rows of 4096 and at
    # 16384 wide): rows_reg and rows_async at every vector count, rows_loop and clusters for wide rows.
    "rmsnorm-fp32": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["0,4,0,0,0,0", "0,8,0,0,0,0", "0,2,0,0,0,0", "3,8,0,0,0,0", "3,16,0,0,0,0",
                             "3,8,0,2,0,0"]
           for s in ("4096x4096", "32768x4096", "8192x3072", "8192x2048")},
        **{f"rms_norm/{s}": ["0,8,0,0,0,0", "0,4,0,0,0,0", "1,0,1024,0,0,0", "1,0,512,0,0,0", "7,0,0,0,0,2",
                             "7,0,0,0,0,4"]
           for s in ("2048x16384", "8192x7168", "2048x7168")},
        **{f"fused_add_rms_norm/{s}": ["0,4,0,0,0,0", "0,8,0,0,0,0", "0,2,0,0,0,0", "3,8,0,0,0,0", "3,16,0,0,0,0"]
           for s in ("8192x4096", "512x4096")},
        **{f"rms_norm/{s}": SMALL for s in ("262144x64", "65536x64", "2048x128")},
    }),
    # adaln in float32 (dtypes_h200.sh: the RMS variant 4-5 % behind torch.compile at rows of 2048, 512
    # packs, which the rule gives 64 lanes of 8): fields vpt, lanes per row, rows per block.
    # bf16, rows the earlier sets never tried at two vectors per thread (torch.compile's shape for these:
    # one program of 512 threads per row, 32 bytes each): wide rows, and the fused batches of 512-2048
    # rows that are 5-10 % behind torch.compile.
    "rmsnorm-wide2": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["0,2,0,0,0,0", "0,4,0,0,0,0", "3,8,0,0,0,0"]
           for s in ("8192x7168", "2048x7168", "4096x8192", "8192x5120", "64x7168", "1x8192", "64x8192")},
        **{f"fused_add_rms_norm/{s}": ["0,1,0,0,0,0", "0,2,0,0,0,0", "0,4,0,0,0,0", "3,4,0,0,0,0", "3,8,0,0,0,0"]
           for s in ("512x4096", "1024x4096", "2048x4096")},
    }),
    # bf16 with RMSNORM_OPAQUE_ROW (tuning build with TUNE_FLAGS, v6_explore_h200.sh): rows_reg in the
    # one-step form without its spill against rows_async, where the rule takes rows_async for rows of
    # 640-1024 vectors from 4096 rows (the wide rows 6-11 % behind torch.compile); and rows_loop at
    # 256-512 threads, the two-pass shape (the second pass from L2) of a looped Triton reduction
    "rmsnorm-opq": ("RMSNORM_CONFIG", {
        f"rms_norm/{s}": ["0,2,0,0,0,0", "0,4,0,0,0,0", "3,8,0,0,0,0", "3,16,0,0,0,0", "1,0,256,0,0,0",
                          "1,0,512,0,0,0"]
        for s in ("8192x7168", "2048x7168", "4096x8192", "8192x5120", "2048x16384", "1024x3072")
    }),
    # rows_one (RMSNORM_DECODE_ONE, 2026-12-02 third session): one vector per thread, one row per
    # block, against rows_reg at one and two vectors, at the decode batches the rule gives it and
    # at the shapes next to them it does not take (512-1024 rows, rows of 7168-8192 and 2048-3072).
    "rmsnorm-one": ("RMSNORM_CONFIG", {
        **{f"{op}/{r}x4096": ["8,1,0,0,0,0", "0,1,0,0,0,0", "0,2,0,0,0,0"]
           for op in ("rms_norm", "fused_add_rms_norm") for r in (1, 8, 32, 64, 128)},
        **{f"{op}/{r}x4096": ["8,1,0,0,0,0", "0,2,0,0,0,0"]
           for op, r in (("rms_norm", 512), ("fused_add_rms_norm", 512), ("fused_add_rms_norm", 1024))},
        **{f"rms_norm/{s}": ["8,1,0,0,0,0", "0,2,0,0,0,0"] for s in ("64x7168", "1x8192", "64x8192")},
        **{f"rms_norm/{s}": ["8,1,0,0,0,0", "0,2,0,0,0,0", "0,4,0,0,0,0"] for s in ("1024x2048", "1024x3072")},
    }),
    # Prepared in 2026-12-02's third session (scripts/gpu/v10_explore_h200.sh, not run): adaln's two
    # small-batch misses at one pack per thread and 128-256 threads per row, the launch shape of
    # rmsnorm's rows_one and of torch.compile's kernel there (adaln NOTES.md), against the rule's.
    "adaln-one": ("ADALN_CONFIG", {
        "adaln/rms/1x384x2048": ["1,256,1", "2,128,1", "2,128,2", "4,64,2"],
        "adaln/layer/2x256x1152": ["1,160,1", "2,96,1", "2,96,2", "6,32,4"],
    }),
    # 2026-12-03, call 2: the one-wave launch (ADALN_ONE_WAVE, "rule" in these runs) beside its
    # neighbours in float32 (two packs per thread: at 256 threads as the fifth session's adaln-fp32
    # sweep timed it, at 160 as the rule gives rows of 1152) and in float16.
    "adaln-one32": ("ADALN_CONFIG", {
        "adaln/rms/1x384x2048": ["4,128,1", "2,256,1", "8,64,1"],
        "adaln/layer/2x256x1152": ["6,64,1", "2,256,1", "2,160,1", "4,96,1"],
    }),
    "adaln-one16h": ("ADALN_CONFIG", {
        "adaln/rms/1x384x2048": ["4,64,2", "1,256,1", "2,128,1"],
        "adaln/layer/2x256x1152": ["6,32,4", "1,160,1", "2,96,1"],
    }),
    # rows_one in float32 (never swept there; rmsnorm's rule keeps it to 16-bit rows): one 16-byte
    # vector (4 floats) per thread, 1024 threads for a row of 4096, against the rule's rows_reg.
    "rmsnorm-one32": ("RMSNORM_CONFIG", {
        **{f"{op}/{r}x4096": ["8,1,0,0,0,0", "0,1,0,0,0,0", "0,2,0,0,0,0"]
           for op in ("rms_norm", "fused_add_rms_norm") for r in (1, 8, 32, 64, 128)},
        **{f"{op}/{r}x4096": ["8,1,0,0,0,0", "0,2,0,0,0,0"]
           for op, r in (("rms_norm", 512), ("fused_add_rms_norm", 512))},
        **{f"rms_norm/{s}": ["8,1,0,0,0,0", "0,2,0,0,0,0", "0,4,0,0,0,0"] for s in ("1024x2048", "1024x3072")},
    }),
    # 2026-12-03, call 3: float32 rows at one pack per thread on up to 512 threads (a tuning build
    # with -DADALN_ONE_512=1, whose "rule" is that launch) against call 2's two packs on 256 / 160.
    "adaln-512": ("ADALN_CONFIG", {
        "adaln/rms/1x384x2048": ["2,256,1", "4,128,1"],
        "adaln/layer/2x256x1152": ["2,160,1", "2,256,1"],
    }),
    # float32's streaming rows (2026-12-03, call 3): rows_loop, the two-pass shape of torch.compile's
    # looped reduction there (512 threads, 28 registers, the row back from L1/L2), at 256-1024 threads,
    # against the rule's rows_reg; run in two tuning builds, with and without RMSNORM_LOOP_POLICY.
    "rmsnorm-loop32": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["1,0,256,0,0,0", "1,0,512,0,0,0", "1,0,1024,0,0,0"]
           for s in ("4096x4096", "32768x4096", "8192x2048", "16384x2048", "16384x3072", "8192x5120", "4096x8192",
                     "2048x16384")},
        "fused_add_rms_norm/8192x4096": ["1,0,512,0,0,0", "1,0,1024,0,0,0"],
    }),
    # rows_one past one wave (2026-12-03, seventh session, call 1): one 16-byte vector per thread, one
    # row per block, at the streaming batches where the rule takes rows_reg or rows_async and
    # torch.compile's looped reduction (one vector per thread on 512 threads, 100 % occupancy) is
    # level or ahead; each case also times torch.compile in the same process (SWEEPS_WITH_BASELINE).
    **{name: ("RMSNORM_CONFIG", {
        **{f"rms_norm/{r}x4096": ["8,1,0,0,0,0", "0,4,0,0,0,0", "0,2,0,0,0,0", "3,4,0,0,0,0"]
           for r in (4096, 8192, 32768)},
        **{f"rms_norm/{s}": ["8,1,0,0,0,0", "0,4,0,0,0,0", "3,4,0,0,0,0"]
           for s in ("8192x2048", "16384x2048", "8192x3072", "16384x3072")},
        **{f"rms_norm/{s}": ["8,1,0,0,0,0", "0,4,0,0,0,0", "0,8,0,0,0,0"]
           for s in ("8192x5120", "2048x7168", "8192x7168", "4096x8192")},
        **{f"fused_add_rms_norm/{r}x4096": ["8,1,0,0,0,0", "0,2,0,0,0,0", "0,4,0,0,0,0", "3,4,0,0,0,0"]
           for r in (1024, 2048, 4096, 8192, 32768)},
    }) for name in ("rmsnorm-big", "rmsnorm-big16")},
    # Call 2 (with RMSNORM_REG_STREAM16 shipped): the batches below 2^21 vectors where the rule still
    # takes rows_async, against rows_reg<4>; the fused op at 1024 rows against rows_one.
    "rmsnorm-big2": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["0,4,0,0,0,0", "3,4,0,0,0,0"]
           for s in ("1024x4096", "2048x4096", "16384x4096", "4096x2048", "16384x2048", "4096x3072")},
        "fused_add_rms_norm/1024x4096": ["8,1,0,0,0,0", "0,4,0,0,0,0"],
    }),
    "rmsnorm-big32": ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["8,1,0,0,0,0", "0,4,0,0,0,0", "0,8,0,0,0,0"]
           for s in ("4096x4096", "8192x4096", "32768x4096", "8192x2048", "16384x2048", "8192x3072",
                     "16384x3072")},
        **{f"fused_add_rms_norm/{r}x4096": ["8,1,0,0,0,0", "0,4,0,0,0,0"] for r in (512, 1024, 8192)},
    }),
    # The wide rows after 2026-12-03's eighth session (rmsnorm NOTES "Version 11": at the GPU's own
    # clock torch.compile's 512-thread kernel runs 15.5 waves where ours runs 12.4 of 224 threads):
    # rows_reg<4> with two and four rows per block (448/512 threads, fields kind,vpt,tx,ty) beside the
    # rule's one row; torch.compile in the same process.
    "rmsnorm-wide-ty": ("RMSNORM_CONFIG", {
        f"rms_norm/{s}": ["0,4,0,1,0,0", "0,4,0,2,0,0"] + (["0,4,0,4,0,0"] if s.endswith("x3072") else [])
        for s in ("8192x7168", "2048x7168", "4096x8192", "8192x5120", "8192x3072")
    }),
    # Per-head rows (2026-12-02 fourth session, call 1; call 3 with the cases at the rule's bounds):
    # rows_head (kind 9: rows_small with the row's vectors and the block's threads compile-time, up
    # to 8 rows per row group; torch.compile's per-head shape is 16 lanes x 8 rows on 64 threads)
    # against rows_small's runtime form (kind 6) of its default shape and the rule; fields: 9,
    # vectors per lane, -, -, rows per group, threads.
    **{name: ("RMSNORM_CONFIG", {
        f"rms_norm/{s}": ["6,1,0,0,2,0", *HEAD] for s in ("262144x128", "70000x128", "65536x128", "262144x64",
                                                          "65536x64", "2048x128", "16384x128", "32768x128",
                                                          "131072x128")})
       for name in ("rmsnorm-head", "rmsnorm-head32")},
    "adaln-fp32": ("ADALN_CONFIG", {
        **{f"adaln/rms/{s}": ["8,64,1", "8,64,2", "8,64,4", "4,128,1", "4,128,2", "2,256,1"]
           for s in ("1x6144x2048", "2x16384x2048", "1x384x2048")},
        "adaln/layer/2x256x1152": ["6,64,1", "6,64,2", "4,128,1", "4,128,2", "2,256,1"],
    }),
    "adaln": ("ADALN_CONFIG", {
        **{f"adaln/rms/{s}": ["8,32,4", "8,32,8", "4,64,2", "4,64,4", "2,128,1", "8,32,2"]
           for s in ("1x6144x2048", "2x16384x2048")},
        **{f"adaln/layer/{s}": ["6,32,4", "6,32,8", "4,64,2", "2,128,1", "8,32,4", "6,32,2"]
           for s in ("2x4096x1152", "8x4096x1152")},
    }),
    "geglu": ("GEGLU_CONFIG", {
        **{f"geglu/{s}": ["1,128,0", "1,256,0", "2,128,0", "2,256,0", "4,128,0", "4,256,0", "0,0,1"]
           for s in ("none/4096x16384", "none/16384x16384", "tanh/4096x16384", "tanh/gate-first/2048x28672")},
        **{f"geglu/{s}": ["1,128,0", "1,64,0", "2,128,0", "2,256,0", "0,0,1"]
           for s in ("tanh/gate-first/1x28672", "tanh/gate-first/64x28672")},
    }),
    # The 16-bit rule that RMSNORM_OPAQUE_ROW allows (reg_wide16, shipped with v6_record_h200.sh): at the
    # shapes whose launch it moved, the new choice ("rule") against the old one and the neighbours, in
    # bf16 and in float16 (the sweeps behind it were bf16's only).
    **{name: ("RMSNORM_CONFIG", {
        **{f"rms_norm/{s}": ["3,8,0,0,0,0", "0,4,0,0,0,0", "0,8,0,0,0,0", "1,0,256,0,0,0"]
           for s in ("8192x5120", "8192x7168", "4096x8192", "2048x7168")},
        "rms_norm/2048x16384": ["0,4,0,0,0,0", "0,8,0,0,0,0", "7,0,0,0,0,2"],
        **{f"rms_norm/{s}": ["0,2,0,0,0,0", "0,4,0,0,0,0"] for s in ("64x7168", "1x8192", "64x8192")},
    }) for name in ("rmsnorm-w16", "rmsnorm-w16h")},
}


# Sweep sets timed in another dtype than the cases' default (bfloat16).
SWEEP_DTYPES = {"rmsnorm-fp32": "float32", "adaln-fp32": "float32", "rmsnorm-w16h": "float16",
                "adaln-one32": "float32", "adaln-one16h": "float16", "rmsnorm-one32": "float32",
                "adaln-512": "float32", "rmsnorm-loop32": "float32",
                "rmsnorm-head32": "float32", "rmsnorm-big16": "float16", "rmsnorm-big32": "float32"}

# Sweep sets whose cases also time SWEEP_BASELINE in the same process (a row "torch.compile"), so
# that each configuration is read against a figure of the same call.
SWEEP_BASELINE = "torch.compile"
SWEEPS_WITH_BASELINE = {"rmsnorm-big", "rmsnorm-big16", "rmsnorm-big2", "rmsnorm-big32", "rmsnorm-wide-ty",
                        "rmsnorm-more", "adaln-more"}


def project_of(sweep_set: str) -> str:
    """The kernel project a sweep set times: its name up to a digit or a dash (rmsnorm3, adaln-fp32)."""
    name = sweep_set.split("-")[0]
    return name.rstrip("0123456789")


def sweep_cases(sweep_set: str) -> dict[str, dict]:
    """The cases a sweep set may name, by name: its project's bench cases, then those of
    more_shapes.py (the shapes outside the benchmark), in the set's dtype."""
    project, dtype = project_of(sweep_set), SWEEP_DTYPES.get(sweep_set)
    cases = {c["name"]: c for c in bench.load_cases(REPO / "kernels-src" / project, dtype)}
    for c in more_shapes.CASES[project](dtype or bench_report.PRIMARY_DTYPE):
        cases.setdefault(c["name"], c)
    return cases


def _print_row(row: dict) -> None:
    print(f"{row['case']:<40} {row['config']:<16} " + (f"{row['us']:8.2f} us" if "us" in row else row["error"])
          + (f"  graph {row['graph_us']:6.2f} us" if "graph_us" in row else ""), flush=True)


def sweep(kernel: str, build: Path, reps: int) -> list[dict]:
    import torch

    var, plan = SWEEPS[kernel]
    loaded = load_variant(build)
    cases = sweep_cases(kernel)
    device = torch.device("cuda")
    timer = bench.Timer(device, reps=reps, warmup=5)
    rows = []
    for name, configs in plan.items():
        case = cases.get(name)
        if case is None:
            print(f"{name}: not a bench case", flush=True)
            continue
        os.environ.pop(var, None)
        with_baseline = kernel in SWEEPS_WITH_BASELINE
        if with_baseline:
            torch._dynamo.reset()  # a fresh torch.compile per case, as bench makes (recompile limit)
        fns = case["setup"](loaded.module, device)
        ref = bench._first(fns["kernel"]()).clone()
        graph = bench.wants_graph(case, device)

        def timed(row: dict, fn) -> None:
            row["us"] = timer(fn).median_us
            if graph:
                row["graph_us"] = timer.graph(fn).median_us

        for cfg in ["", *configs]:
            os.environ[var] = cfg
            out = bench._first(fns["kernel"]())
            diff = bench._rel(out, ref)
            row = {"case": name, "config": cfg or "rule", "bytes": case["bytes"], "rel_diff": diff}
            if diff > 1e-2 or diff != diff:
                row["error"] = "output differs from the rule's"
            else:
                timed(row, fns["kernel"])
            rows.append(row)
            _print_row(row)
        os.environ.pop(var, None)
        if with_baseline and SWEEP_BASELINE in fns:
            row = {"case": name, "config": SWEEP_BASELINE, "bytes": case["bytes"]}
            timed(row, fns[SWEEP_BASELINE])
            rows.append(row)
            _print_row(row)
        fns = None
        torch.cuda.empty_cache()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernel", choices=sorted(SWEEPS))
    ap.add_argument("build", type=Path)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    with bench.fresh_compiles():  # torch.compile baselines generated and autotuned here, as bench does
        rows = sweep(args.kernel, args.build, args.reps)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Timing for `pipeline bench`: the median-of-repetitions timer (CUDA events with an
L2 flush, CUDA-graph replay, or a host clock), the combination of several samples,
and the device's copy bandwidth that the fractions are measured against."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

COPY_BYTES = 1 << 30
GRAPH_CALLS = 20  # calls captured back to back in one graph


@dataclass(frozen=True)
class Timing:
    median_us: float
    min_us: float
    p90_us: float
    reps: int
    samples_us: tuple[float, ...] = ()  # each sample's median, when timed in several (`--samples`)

    @property
    def spread_us(self) -> tuple[float, float] | None:
        return (min(self.samples_us), max(self.samples_us)) if len(self.samples_us) > 1 else None


def combine_samples(samples: list[Timing]) -> Timing:
    """One Timing from several samples of the same callable: the median of their medians
    (each sample's own median kept), the smallest time seen, the median of their p90s."""
    if len(samples) == 1:
        return samples[0]
    medians = tuple(t.median_us for t in samples)
    return Timing(median_us=statistics.median(medians), min_us=min(t.min_us for t in samples),
                  p90_us=statistics.median(t.p90_us for t in samples), reps=sum(t.reps for t in samples),
                  samples_us=medians)


class Timer:
    """Median-of-reps timing: CUDA events with an L2 flush, or a host clock on CPU."""

    def __init__(self, device, *, reps: int, warmup: int):
        import torch

        self.device = device
        self.reps = reps
        self.warmup = warmup
        self.flush = None
        if device.type == "cuda":
            l2 = torch.cuda.get_device_properties(device).L2_cache_size
            # Several times the L2, and long enough (~0.1 ms of reads on an
            # H200) that the host has queued the timed call before it ends.
            n = max(8 * l2, 512 << 20)
            self.flush = torch.ones(n // 4, dtype=torch.int32, device=device)
            self._flush_sink = torch.empty((), dtype=torch.int64, device=device)

    def __call__(self, fn) -> Timing:
        import torch

        for _ in range(self.warmup):
            fn()
        times: list[float] = []
        if self.device.type == "cuda":
            torch.cuda.synchronize()
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
            for i in range(self.reps):
                # Flush by *reading*: the L2 is left holding clean lines. A
                # writing flush (zero_) leaves up to a whole L2 of dirty lines
                # that the timed call must write back first — ~50 MB of extra
                # traffic charged to a 134 MB kernel, but only ~5 % to the 1 GiB
                # copy that sets the ceiling, which skews every fraction.
                torch.sum(self.flush, dim=0, out=self._flush_sink)
                starts[i].record()
                fn()
                ends[i].record()
            torch.cuda.synchronize()
            times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)]
        else:
            for _ in range(self.reps):
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e6)
        return _timing(times)

    def graph(self, fn, calls: int = GRAPH_CALLS) -> Timing:
        """Per-call time of `fn` captured `calls` times in one CUDA graph, replayed `reps` times."""
        import torch

        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph asks
            for _ in range(3):
                fn()
        torch.cuda.current_stream(self.device).wait_stream(side)
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        for _ in range(3):
            graph.replay()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.reps)]
        for i in range(self.reps):
            starts[i].record()
            graph.replay()
            ends[i].record()
        torch.cuda.synchronize(self.device)
        times = [s.elapsed_time(e) * 1e3 / calls for s, e in zip(starts, ends)]
        del graph
        return _timing(times)


def _timing(times: list[float]) -> Timing:
    times = sorted(times)
    return Timing(median_us=statistics.median(times), min_us=times[0],
                  p90_us=times[min(len(times) - 1, int(0.9 * len(times)))], reps=len(times))


def copy_bandwidth(timer: Timer, device, nbytes: int = COPY_BYTES) -> float:
    """Device copy bandwidth in GB/s, counting bytes read plus bytes written."""
    return 2 * nbytes / (copy_timing(timer, device, 2 * nbytes).median_us * 1e3)


def copy_timing(timer: Timer, device, moved_bytes: int) -> Timing:
    """The time of a device copy that moves `moved_bytes` in all (half read, half written),
    timed as the cases are (the same timer: flushed L2, median)."""
    import torch

    src = torch.empty(max(1, moved_bytes // 2), dtype=torch.uint8, device=device).random_(0, 255)
    dst = torch.empty_like(src)
    t = timer(lambda: dst.copy_(src))
    del src, dst
    return t

"""The worker process: where untrusted kernel code runs (`python -m pipeline.smoke.worker FD`).

It answers requests from `supervisor.Worker` over the socket FD. Requests are
`(verb, payload)` tuples; answers are tuples too, and a request may get several
(one per seed of a case). The worker never writes to its stdout for the
pipeline: a kernel may print there.

Verbs:
    smoke.load  SmokeSpec -> ("loaded", Loaded) | ("failed", Failure)
    smoke.case  index -> ("begin", seed, phase)*, ("result", CaseResult)*, ("stats", CaseStats)?,
                ("end", healthy, reason); an unhealthy worker (a sticky CUDA error) exits after "end"
    smoke.profile  [op, case index]... -> ("delegation", [Delegation, ...])
    bench.load  BenchSpec -> ("loaded", BenchLoaded) | ("failed", Failure)
    bench.case  index -> ("bench", CaseBench) | ("failed", Failure), then ("end", healthy, reason)
    stop
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Callable

from pipeline.smoke.supervisor import Failure


@dataclass
class WorkerState:
    """What one worker keeps between requests: the loaded kernel and its runnable cases."""

    session: Any = None
    handlers: dict[str, Callable] = field(default_factory=dict)


def _handlers() -> dict[str, Callable]:
    from pipeline.smoke import session as smoke_session

    handlers = dict(smoke_session.HANDLERS)
    try:
        from pipeline import bench_worker
    except ImportError:  # pragma: no cover - bench is part of the package
        return handlers
    handlers.update(bench_worker.HANDLERS)
    return handlers


def serve(conn: Connection) -> int:
    state = WorkerState(handlers=_handlers())
    while True:
        try:
            verb, payload = conn.recv()
        except (EOFError, OSError):
            return 0
        if verb == "stop":
            return 0
        handler = state.handlers.get(verb)
        if handler is None:
            conn.send(("failed", Failure(f"the worker knows no request {verb!r}")))
            continue
        try:
            keep_going = handler(state, payload, conn.send)
        except Exception as exc:  # a bug of ours or a kernel's exception outside a case: reported, not fatal
            conn.send(("failed", Failure.of(exc)))
            keep_going = True
        if keep_going is False:  # the device is unusable now: a fresh worker must take over
            return 3


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m pipeline.smoke.worker FD (started by pipeline.smoke.supervisor)", file=sys.stderr)
        return 2
    conn = Connection(int(argv[1]))
    try:
        return serve(conn)
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Where enrichment runs: executors that map a function over jobs, in order, a bounded few at a time.

An executor runs ``fn(arg, *args)`` for each job ``(keep, arg)`` of a stream and
yields ``(keep, result)`` in the order of the jobs. ``keep`` stays in this
process (the articles and passages waiting for their findings); only ``arg``
(a chunk of article texts) travels to the worker, and only ``fn``'s result (the
entities and quotations found) travels back. At most ``max_in_flight`` jobs are
taken from the stream and not yet yielded, so memory stays bounded however long
the stream, while the workers always have queued work when the consumer is away
writing a commit.

- ``InProcess``: runs each job here, one at a time (``--processes 1``).
- ``LocalPool``: worker processes forked from this one (the default).
- ``search.enrich.cluster.DaskExecutor``: the workers of a Dask cluster
  (``newsquarry index --cluster``), in its own module because ``distributed``
  is an optional dependency.

``preload`` is run once per worker before its first job (loading the spaCy
pipeline): in the parent before forking for the pool, so the workers share its
pages; through a worker plugin on a cluster. A job that is lost for good (a
cluster's workers kept dying while running it) comes back as
``(keep, EnrichmentFailed)``, for the consumer to report.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

Job = tuple[Any, Any]  # (kept here, sent to the worker)


class Executor(Protocol):
    """Runs ``fn(arg, *args)`` for each ``(keep, arg)`` job, yielding ``(keep, result)`` in order."""

    @property
    def max_in_flight(self) -> int:
        """Most jobs taken from the input but not yet yielded."""
        ...

    def map(self, fn: Callable[..., Any], jobs: Iterable[Job], *args: Any) -> Iterator[Job]: ...


class InProcess:
    """Every job in this process, one after the other."""

    def __init__(self, preload: Callable[[], Any] | None = None) -> None:
        self.preload = preload

    @property
    def max_in_flight(self) -> int:
        return 1

    def map(self, fn: Callable[..., Any], jobs: Iterable[Job], *args: Any) -> Iterator[Job]:
        if self.preload:
            self.preload()
        for keep, arg in jobs:
            yield keep, fn(arg, *args)


def _ignore_sigint() -> None:
    """Pool worker initializer: Ctrl-C is the parent's to handle.

    A terminal sends SIGINT to the whole process group; the parent stops the
    pool itself, so workers need not die printing tracebacks. SIGTERM gets its
    default back: the parent may stop on it cleanly (``newsquarry index``), a handler
    a forked worker inherits, and the pool ends its workers with SIGTERM.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


class LocalPool:
    """A pool of ``n_process`` worker processes on this machine, ``prefetch`` jobs queued each.

    Forked where the platform allows, after ``preload`` ran here, so the workers
    start with the model already in memory (pages shared with the parent).
    """

    def __init__(
        self, n_process: int, prefetch: int = 32, preload: Callable[[], Any] | None = None
    ) -> None:
        if n_process < 1 or prefetch < 1:
            raise ValueError("n_process and prefetch must be >= 1")
        self.n_process = n_process
        self.prefetch = prefetch
        self.preload = preload

    @property
    def max_in_flight(self) -> int:
        return self.prefetch * self.n_process

    def map(self, fn: Callable[..., Any], jobs: Iterable[Job], *args: Any) -> Iterator[Job]:
        if self.preload:
            self.preload()  # once in the parent: forked workers inherit it
        methods = mp.get_all_start_methods()
        ctx = mp.get_context("fork" if "fork" in methods else "spawn")
        iterator = iter(jobs)
        pending: deque = deque()
        with ctx.Pool(self.n_process, initializer=_ignore_sigint) as pool:
            while True:
                while len(pending) < self.max_in_flight:
                    job = next(iterator, None)
                    if job is None:
                        break
                    keep, arg = job
                    pending.append((keep, pool.apply_async(fn, (arg, *args))))
                if not pending:
                    break
                keep, result = pending.popleft()
                yield keep, result.get()

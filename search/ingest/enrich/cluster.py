"""Enrichment on the workers of an existing Dask cluster (``newsquarry index --cluster``).

An executor (see ``executors.py``) whose workers are those of a Dask
``distributed`` scheduler this process connects to as a client. Each worker
loads the spaCy pipeline once, through a worker plugin registered at the start
(workers that join later load it when the plugin reaches them); jobs carry only
a chunk of article texts and return only what was found, so this process stays
the single writer and commits in input order, as with the local pool.

Bounded: at most ``prefetch`` jobs per worker thread are submitted and not yet
yielded (counted again as workers join or leave), so memory stays flat on both
sides however long the input.

Worker loss: the scheduler re-runs a lost worker's jobs on the others (a job
whose workers died ``distributed.scheduler.allowed-failures`` times, 3 by
default, is reported as failed for its articles, which the next run retries);
a job's result is yielded once, in order, so no article is lost or written
twice. If no worker is left for ``worker_wait`` seconds, or the scheduler is
gone, ``ClusterError`` stops the run: committed work stays, and the same
command resumes once workers are back.

Same code everywhere: a job checks, once per worker process, that the worker's
enrichment fingerprint (our enrichment code, spaCy's version, the model's
version) equals this process's, so a machine with another version cannot
silently produce different entities or quotes.

``distributed`` is an optional dependency (``pip install 'newsquarry[cluster]'``):
this module is imported only when a cluster is asked for.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import hashlib
import importlib
import json
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from newsquarry.search.core.errors import ClusterError, EnrichmentFailed

try:
    from distributed import Client, KilledWorker, WorkerPlugin
    from distributed import TimeoutError as DaskTimeoutError
    from distributed.client import FutureCancelledError
except ImportError as exc:
    raise ImportError(
        "enrichment on a cluster needs the Dask distributed package: "
        "pip install 'newsquarry[cluster]'"
    ) from exc

PLUGIN_NAME = "newsquarry-preload"


def enrichment_fingerprint() -> str:
    """What decides the enrichment's output in this process: our code, spaCy's and the model's version."""
    import spacy  # lazy: start-up time

    from newsquarry.search.ingest.enrich.nlp import model_path  # lazy: start-up time (spaCy)

    h = hashlib.sha256()
    for f in sorted(Path(__file__).parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    meta = Path(model_path()) / "meta.json"
    version = json.loads(meta.read_text()).get("version", "?") if meta.exists() else "?"
    return f"spacy {spacy.__version__}, model {version}, code {h.hexdigest()[:12]}"


_fingerprints: dict[Callable[[], str], str] = {}  # per worker process


def _local_fingerprint(fingerprint: Callable[[], str]) -> str:
    if fingerprint not in _fingerprints:
        _fingerprints[fingerprint] = fingerprint()
    return _fingerprints[fingerprint]


class WorkerMismatch(RuntimeError):
    """A worker runs other enrichment code or another model than the client."""


def _check(fingerprint: Callable[[], str] | None, expected: str | None) -> None:
    if fingerprint is None or expected is None:
        return
    here = _local_fingerprint(fingerprint)
    if here != expected:
        raise WorkerMismatch(f"worker has {here}, the indexing process has {expected}")


class Ref:
    """A module-level function named by module and qualified name, imported where it is called.

    Dask's scheduler unpickles every task it is given; a function pickled as
    itself makes it import the function's module (for the enrichment: spaCy and
    our rules, about a second of CPU in the scheduler, and a scheduler machine
    that needs the model). A ``Ref`` unpickles as two strings, and the worker
    imports the function on the first call.
    """

    __slots__ = ("module", "name", "_fn")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name
        self._fn: Callable[..., Any] | None = None

    def __getstate__(self) -> tuple[str, str]:
        return self.module, self.name

    def __setstate__(self, state: tuple[str, str]) -> None:
        self.module, self.name = state
        self._fn = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ref) and (other.module, other.name) == (self.module, self.name)

    def __hash__(self) -> int:
        return hash((self.module, self.name))

    def __call__(self, *args: Any) -> Any:
        if self._fn is None:
            target: Any = importlib.import_module(self.module)
            for part in self.name.split("."):
                target = getattr(target, part)
            self._fn = target
        return self._fn(*args)


def by_name(fn: Any) -> Any:
    """``fn`` as a ``Ref`` when it is a module-level function; anything else unchanged."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if fn is None or isinstance(fn, Ref) or not module or not name or "<" in name:
        return fn
    return Ref(module, name)


def _run_checked(
    arg: Any,
    fn: Callable[..., Any],
    fingerprint: Callable[[], str] | None,
    expected: str | None,
    *args: Any,
) -> Any:
    """The job as a worker runs it: check the fingerprint (cached), then ``fn(arg, *args)``."""
    _check(fingerprint, expected)
    return fn(arg, *args)


# glibc's malloc on a parse worker: big blocks kept in the heap and not handed back at
# once. Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which also freezes
# the mmap threshold at 128 KB: every larger array spaCy allocates is then a fresh mmap,
# paid in page faults (250,000 for 150 Reuters articles against 1,600) and 5-25% more CPU
# per article. The heap may keep up to TRIM_THRESHOLD of freed memory (glibc's own dynamic
# thresholds settle at similar values): a few tens of MB per worker, beside a 200 MB model.
MMAP_THRESHOLD = 32 << 20  # glibc's maximum on 64-bit
TRIM_THRESHOLD = 64 << 20


def tune_malloc_for_parsing() -> bool:
    """Set this process's malloc thresholds for parsing (see above); False where not glibc."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD)) and bool(
        mallopt(m_trim_threshold, TRIM_THRESHOLD)
    )


class Preload(WorkerPlugin):
    """Runs ``preload`` once on each worker (loading the model), after checking its fingerprint.

    Also tunes the worker's malloc for parsing (``tune_malloc_for_parsing``).
    """

    idempotent = False  # a new run replaces the plugin (setup again is quick: the model is cached)

    def __init__(
        self,
        preload: Callable[[], Any] | None,
        fingerprint: Callable[[], str] | None,
        expected: str | None,
    ) -> None:
        self.preload = preload
        self.fingerprint = fingerprint
        self.expected = expected

    async def setup(self, worker: Any) -> None:
        # in a thread: loading the model takes seconds, which would stall the
        # worker's event loop (and its heartbeats to the scheduler)
        await asyncio.get_running_loop().run_in_executor(None, self._setup)

    def _setup(self) -> None:
        _check(self.fingerprint, self.expected)
        tune_malloc_for_parsing()
        if self.preload:
            self.preload()


def _quiet_abandoned_gathers(client: Any) -> None:
    """Drop asyncio's "Task exception was never retrieved ... AllExit" from the client's loop.

    When the worker holding a finished job dies before its result is fetched,
    ``Future.result(timeout=...)`` times out while the client re-runs the job,
    and the abandoned fetch ends with ``AllExit`` once its future is cancelled:
    a traceback on stderr about nothing that went wrong. Other errors still
    reach the loop's default handler.
    """
    from distributed.client import AllExit  # lazy: the cluster extra may be missing

    loop = client.loop.asyncio_loop
    previous = loop.get_exception_handler()

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), AllExit):
            return
        if previous is not None:
            previous(lp, context)
        else:
            lp.default_exception_handler(context)

    loop.set_exception_handler(handler)


class DaskExecutor:
    """Jobs on the workers of the Dask scheduler at ``address`` (``tcp://host:8786``).

    ``start()`` connects and loads the model on the workers (``map`` calls it
    if needed); ``close()`` disconnects, leaving the cluster running.
    ``on_event`` receives one-line messages about workers leaving and joining.
    """

    def __init__(
        self,
        address: str,
        *,
        prefetch: int = 32,
        preload: Callable[[], Any] | None = None,
        fingerprint: Callable[[], str] | None = None,
        worker_wait: float = 30.0,
        retries: int = 2,
        poll: float = 1.0,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        if prefetch < 1:
            raise ValueError("prefetch must be >= 1")
        self.address = address
        self.prefetch = prefetch
        self.preload = preload
        self.fingerprint = fingerprint
        self.worker_wait = worker_wait
        self.retries = retries
        self.poll = poll
        self.on_event = on_event
        self.client: Any = None
        self.expected: str | None = None
        self._workers: dict[str, int] = {}  # address -> threads
        self._none_since: float | None = None
        self._checked = 0.0

    # --- connection ------------------------------------------------------------------

    def start(self) -> None:
        """Connect, wait for at least one worker, and load the model on every worker."""
        if self.client is not None:
            return
        try:
            # the connect timeout is Dask's (distributed.comm.timeouts.connect, 30 s)
            self.client = Client(self.address, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {self.address}: {exc}".rstrip(": ")
            ) from None
        _quiet_abandoned_gathers(self.client)
        try:
            self._refresh_workers()
            if not self._workers:
                self._wait_for_workers()
            self.expected = self.fingerprint() if self.fingerprint else None
            try:
                self.client.register_plugin(
                    Preload(by_name(self.preload), by_name(self.fingerprint), self.expected),
                    name=PLUGIN_NAME,
                )
            except WorkerMismatch as exc:
                raise ClusterError(f"a worker of the Dask cluster cannot be used: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - whatever the worker raised loading the model
                raise ClusterError(
                    f"the workers of the Dask cluster at {self.address} cannot load the "
                    f"enrichment (is newsquarry with its model installed on every worker?): "
                    f"{type(exc).__name__}: {exc}"
                ) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Disconnect from the scheduler (the cluster keeps running)."""
        if self.client is not None:
            client, self.client = self.client, None
            try:
                client.close(timeout=5)
            except Exception:  # noqa: BLE001 - closing a client whose scheduler is gone
                pass

    def __enter__(self) -> DaskExecutor:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def threads(self) -> int:
        """Worker threads of the cluster as last seen."""
        return sum(self._workers.values())

    @property
    def max_in_flight(self) -> int:
        return self.prefetch * max(1, self.threads)

    def describe(self) -> str:
        n = len(self._workers)
        return (
            f"the Dask cluster at {self.address} ({n} worker{'s' if n != 1 else ''}, "
            f"{self.threads} thread{'s' if self.threads != 1 else ''})"
        )

    # --- workers coming and going ------------------------------------------------------

    def _refresh_workers(self) -> None:
        try:
            # asked of the scheduler each time (scheduler_info() may answer from a
            # cache that holds totals only)
            now = {addr: int(n) for addr, n in self.client.nthreads().items()}
        except Exception as exc:  # noqa: BLE001 - comm errors of every kind
            raise ClusterError(f"lost the Dask scheduler at {self.address}: {exc}") from None
        if self.on_event and self._workers:
            for addr in self._workers.keys() - now.keys():
                self.on_event(
                    f"cluster: worker {addr} left; its work is re-run on the others "
                    f"({len(now)} left)"
                )
            for addr in now.keys() - self._workers.keys():
                self.on_event(f"cluster: worker {addr} joined ({len(now)} workers)")
        self._workers = now
        self._checked = time.monotonic()
        if now:
            self._none_since = None
        elif self._none_since is None:
            self._none_since = time.monotonic()

    def _wait_for_workers(self) -> None:
        """Wait up to ``worker_wait`` seconds for a worker; ClusterError if none comes."""
        while not self._workers:
            if time.monotonic() - (self._none_since or time.monotonic()) >= self.worker_wait:
                raise ClusterError(
                    f"the Dask cluster at {self.address} has no worker "
                    f"(waited {self.worker_wait:g} s for one)"
                )
            time.sleep(min(self.poll, 0.5))
            self._refresh_workers()

    def _result(self, fut: Any) -> Any:
        """The job's result, watching the cluster while waiting; lost jobs become EnrichmentFailed."""
        done: threading.Event | None = None
        while True:
            if time.monotonic() - self._checked >= self.poll:
                self._refresh_workers()
                if self._none_since is not None and (
                    time.monotonic() - self._none_since >= self.worker_wait
                ):
                    raise ClusterError(
                        f"every worker of the Dask cluster at {self.address} has gone "
                        f"(waited {self.worker_wait:g} s for one to join)"
                    )
            if not fut.done():
                # waited on for its state only, up to the next check of the workers:
                # result(timeout=...) would leave a gathering task behind at each
                # timeout, and polling done() wakes this process 20 times a second
                if done is None or done.is_set():  # set, yet not done: re-run after a loss
                    done = threading.Event()
                    fut.add_done_callback(lambda _fut, event=done: event.set())
                done.wait(max(0.05, self.poll - (time.monotonic() - self._checked)))
                continue
            try:
                return fut.result(timeout=self.poll)
            except DaskTimeoutError:  # its worker died before we fetched it: re-run
                continue
            except KilledWorker as exc:
                return EnrichmentFailed(
                    f"enrichment failed: the Dask workers running this batch died ({exc})"
                )
            except FutureCancelledError:
                raise ClusterError(
                    f"lost the Dask scheduler at {self.address} (the job was cancelled)"
                ) from None
            except WorkerMismatch as exc:
                raise ClusterError(f"a worker of the Dask cluster cannot be used: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - the job raised on a worker, after retries
                raise ClusterError(
                    f"a worker of the Dask cluster failed to run the enrichment: "
                    f"{type(exc).__name__}: {exc}"
                ) from None

    # --- the jobs ----------------------------------------------------------------------

    def map(self, fn: Callable[..., Any], jobs: Iterable[Any], *args: Any) -> Iterator[Any]:
        """Yield ``(keep, fn(arg, *args))`` for each ``(keep, arg)``, in order, run on the workers."""
        self.start()
        prefix = f"newsquarry-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        iterator = iter(jobs)
        pending: deque = deque()
        n = 0
        try:
            while True:
                while len(pending) < self.max_in_flight:
                    job = next(iterator, None)
                    if job is None:
                        break
                    keep, arg = job
                    fut = self.client.submit(
                        _run_checked, arg, by_name(fn), by_name(self.fingerprint), self.expected,
                        *args,
                        key=f"{prefix}-{n}", pure=False, retries=self.retries,
                    )  # fmt: skip
                    pending.append((keep, fut))
                    n += 1
                if not pending:
                    break
                keep, fut = pending[0]
                result = self._result(fut)
                pending.popleft()
                fut.release()
                yield keep, result
        finally:
            if pending and self.client is not None:
                try:
                    self.client.cancel([fut for _, fut in pending])
                except Exception:  # noqa: BLE001 - the scheduler may be gone already
                    pass

"""An enricher that runs in a process of its own: the NLP of a server's writes off its serving threads.

Issue 33: under a read load, one API ``PUT`` a second cut reads from 242 to 34 requests a
second, because spaCy ran in the serving worker and held its interpreter lock (the
threads answering searches waited for it). ``EnrichmentProcess`` wraps any enricher (an
object with ``enrich(items)``, see ``ingest.enrich.Enricher``; or a function returning
one) and runs it in a child process started once (``spawn``: a clean interpreter, the
model loaded there once, not in the server), at niceness +10 so the server's own work gets
the cores first. ``enrich`` has the enricher's interface: articles and their passages go to
the child a chunk at a time, the same articles come back with entities and quotations, in
order; the write itself (the index lock, the commit) stays with the caller, so a write
answers only once committed, as before.

- **Bounded**: one chunk of ``CHUNK`` articles in flight per process; callers (threads)
  take turns, so what waits is at most one chunk per waiting thread.
- **A crash is an error, not a hang**: the reply is awaited together with the child's exit
  (``multiprocessing.connection.wait`` on both), so a child that dies (killed, out of
  memory, a crash in native code) makes ``enrich`` raise ``EnrichmentUnavailable`` (503
  in the API) at once, and nothing of that write is committed. The next call starts a new
  child: the process restarts by itself.
- **An error inside the enricher** (a bug on an odd text) is per article, as in the
  enricher itself: ``(article, EnrichmentFailed)`` comes back and the write reports it.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import threading
from collections.abc import Iterable, Iterator
from itertools import islice
from multiprocessing.connection import Connection, wait
from typing import Any

from newsquarry.search.core.errors import EnrichmentUnavailable
from newsquarry.search.core.models import Article, Passage

log = logging.getLogger(__name__)

CHUNK = 16  # articles per message: the enricher's own batch size (Enricher.batch_size)
NICENESS = 10  # the server's workers get the cores first (as merges: engine.merging)


def _child(conn: Connection, source: Any, niceness: int) -> None:
    """The child's loop: build the enricher once, then enrich each chunk it is sent."""
    try:
        _serve(conn, source, niceness)
    except (EOFError, OSError, KeyboardInterrupt):  # the parent went away: nothing to answer
        pass


def _serve(conn: Connection, source: Any, niceness: int) -> None:
    try:
        os.nice(niceness)
    except OSError:  # not allowed here: run at the parent's priority
        pass
    enricher = source() if callable(source) and not hasattr(source, "enrich") else source
    preload = getattr(enricher, "preload", None)
    if callable(preload):
        preload()  # the model now, not in the first write
    conn.send(("ready", os.getpid()))
    while (chunk := conn.recv()) is not None:
        try:
            found = ("ok", list(enricher.enrich(chunk)))
        except Exception as exc:  # noqa: BLE001 - reported to the caller, the child goes on
            found = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(found)


class EnrichmentProcess:
    """``source``'s enrichment in a child process, restarted when it dies (see the module docstring).

    ``source`` is an enricher or a function that makes one (``ingest.indexer.default_enricher``),
    and must be picklable: the child is a new interpreter.
    """

    def __init__(self, source: Any, *, niceness: int = NICENESS) -> None:
        self.source = source
        self.niceness = niceness
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Connection | None = None
        self.starts = 0  # children started so far (1 + restarts)

    @property
    def pid(self) -> int | None:
        """The child's process id, while one runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.is_alive() else None

    def start(self) -> None:
        """Start the child now (it loads the model meanwhile), unless one runs."""
        with self._lock:
            self._ensure(wait_ready=False)

    def _ensure(self, wait_ready: bool = True) -> Connection:
        if self._proc is None or not self._proc.is_alive():
            self._discard()
            ctx = mp.get_context("spawn")
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=_child,
                args=(child, self.source, self.niceness),
                name="newsquarry-enrich",
                daemon=True,
            )
            proc.start()
            child.close()
            self._proc, self._conn = proc, parent
            self._ready = False
            self.starts += 1
        assert self._conn is not None
        if wait_ready and not self._ready:
            self._receive()  # ("ready", pid): the enricher is built and loaded
            self._ready = True
        return self._conn

    def _receive(self) -> Any:
        """The child's next message; EnrichmentUnavailable if it dies first."""
        conn, proc = self._conn, self._proc
        assert conn is not None and proc is not None
        wait([conn, proc.sentinel])  # whichever first: a reply or the child's end
        try:
            if conn.poll():
                kind, value = conn.recv()
                if kind == "error":
                    raise EnrichmentUnavailable(f"the enrichment process failed: {value}")
                return value
        except (EOFError, OSError):
            pass
        proc.join(5)
        code = proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        self._discard()
        log.warning("the enrichment process stopped (%s); the next write starts another", how)
        raise EnrichmentUnavailable(
            f"the enrichment process stopped ({how}) while analysing this write's articles; "
            "nothing of the write was committed and the next write starts it again"
        )

    def _discard(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
        if self._proc is not None:
            self._proc.join(5)
        self._proc = self._conn = None

    def enrich(
        self, items: Iterable[tuple[Article, list[Passage]]]
    ) -> Iterator[tuple[Article, Any]]:
        """Yield each (article, passages) with entities and quotes filled, in input order."""
        iterator = iter(items)
        while chunk := list(islice(iterator, CHUNK)):
            with self._lock:  # one chunk at a time per child: callers take turns
                conn = self._ensure()
                try:
                    conn.send(chunk)
                except (OSError, ValueError):  # the pipe broke: the child is gone
                    pass
                results = self._receive()
            yield from results

    def close(self) -> None:
        """Stop the child (it also stops by itself when this process ends)."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.send(None)
                except (OSError, ValueError):
                    pass
            self._discard()

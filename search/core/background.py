"""Background work asked for by commits, run in a thread, coalesced.

Merges (``merging.Merger``) and the alias table's learning (``aliases.AliasLearner``)
follow commits the same way: ``request()`` returns at once; a daemon thread does the
work, and requests made while it runs make one more run, not one each; ``wait()``
waits until nothing runs or is asked for.
"""

from __future__ import annotations

import os
import threading
import time

BACKGROUND_NICE = 10  # the niceness of background processes (merges, alias learning)


def background_priority() -> None:
    """Lower this process's CPU priority: a background process (a segment merge, the alias
    learner) then takes the cores only when searches and writes leave them free. On an idle
    machine it runs as fast as before; on a busy one the server's workers come first."""
    try:
        os.nice(BACKGROUND_NICE)
    except OSError:  # not permitted here: run at the inherited priority
        pass


class Coalescing:
    """A job run in a daemon thread when requested; subclasses define ``run_once``."""

    thread_name = "newsquarry-background"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wanted = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Run the job soon (after a commit); returns at once."""
        with self._lock:
            self._wanted = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=self.thread_name, daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._wanted:
                    self._thread = None
                    return
            self.before_run()  # requests made while it waits are served by this run
            with self._lock:
                self._wanted = False
            self.run_once()

    def before_run(self) -> None:
        """Called before each run, once one is wanted (a throttle may wait here)."""

    def run_once(self) -> None:
        """One run of the job (errors are the subclass's to record)."""
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no run is going or asked for; False if ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                t = self._thread
            if t is None:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            t.join(left)


class Foreground:
    """Counts the searches running in this process, so that work done ahead of need (a
    new state's quotation links) can wait for a quiet moment instead of taking the GIL
    from a search: a search right after a commit took 2.8x its warm time while the
    commit's linking ran beside it, 1.5x without (docs/benchmarks.md, "First search")."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._last = 0.0

    def __enter__(self) -> Foreground:
        with self._lock:
            self._active += 1
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1
            self._last = time.monotonic()

    def wait_quiet(self, quiet: float = 0.05, longest: float = 2.0) -> None:
        """Return once no search has run for ``quiet`` seconds since this call (a search
        often follows a write at once: read after write), or after ``longest`` (under
        steady load the work must still be done)."""
        start = time.monotonic()
        deadline = start + longest
        while True:
            now = time.monotonic()
            with self._lock:
                busy = self._active > 0 or now - max(self._last, start) < quiet
            if not busy or now >= deadline:
                return
            time.sleep(min(quiet, 0.01))


FOREGROUND = Foreground()  # every search of the process (``searching.run_search``)


def exit_with_parent(parent: int, every: float = 0.5) -> None:
    """Stop this merge process when the process that started it has gone (a server
    stopped or killed mid-merge): a merge cut short loses nothing, its leftovers are
    removed by the next one, and no merge outlives the index's user."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(3)

    threading.Thread(target=watch, name="newsquarry-merge-parent", daemon=True).start()

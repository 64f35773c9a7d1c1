"""Background work asked for by commits, run in a thread, coalesced.

Merges (``merging.Merger``) and the alias table's learning (``aliases.AliasLearner``)
follow commits the same way: ``request()`` returns at once; a daemon thread does the
work, and requests made while it runs make one more run, not one each; ``wait()``
waits until nothing runs or is asked for.
"""

from __future__ import annotations

import threading
import time


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
                self._wanted = False
            self.run_once()

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

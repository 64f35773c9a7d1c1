"""Stop a writer in another process right after its first commit, by state, not by timing.

The Ctrl-C tests interrupt an ``index`` run "after its first commit". Sending the signal when
the first commit's progress line is read raced the run itself: on a busy machine the rest of
the run (enriched ahead by the worker processes) had committed before the signal arrived.

``FirstCommitGate`` holds the index's write lock from before the writer starts. Writers take
the lock in turn (``engine.locking``: a waiting writer holds the turnstile while it waits), so:
once the writer waits at the turnstile, the gate lets the lock go and queues for it again at
once; the writer commits once, and the gate holds the lock before the writer can take it for
a second commit. The writer then waits for the lock (up to its ``lock_timeout``: give it a
long one) with exactly one commit done, however fast or slow the machine is, until the test
has sent its signal and the gate is closed.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from newsquarry.search.engine.integrity import toc_generations
from newsquarry.search.engine.locking import TURNSTILE, WriteLock, _try_flock
from newsquarry.search.engine.store import WhooshStore

WAIT = 300.0  # seconds: a bound on a state that should come, not a timing assumption


def generation(folder: Path) -> int:
    return max(toc_generations(folder), default=-1)


class FirstCommitGate:
    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        WhooshStore(self.folder).close()  # created now: creating it takes the lock too
        self.lock = WriteLock(self.folder, "test: first commit gate")

    def __enter__(self) -> FirstCommitGate:
        self.lock.acquire(WAIT)
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release()

    def _writer_waits(self) -> bool:
        """Another writer is waiting for the lock (it holds the turnstile meanwhile)."""
        fd = os.open(self.folder / TURNSTILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            return not _try_flock(fd)
        finally:
            os.close(fd)  # drops the turnstile if we took it

    def let_one_commit_through(self, proc: subprocess.Popen) -> None:
        """Wait until ``proc`` waits for the lock, let it commit once, hold the lock again."""
        deadline = time.monotonic() + WAIT
        while not self._writer_waits():
            assert proc.poll() is None, f"the writer exited ({proc.returncode}) before committing"
            assert time.monotonic() < deadline, "the writer never asked for the write lock"
            time.sleep(0.05)  # polling a state, not waiting for one to be likely
        before = generation(self.folder)
        self.lock.release()
        # the turnstile is the writer's until it has the lock; then ours, so the lock comes
        # back to us when its commit is done, before it can ask for a second one
        self.lock.acquire(WAIT)
        assert generation(self.folder) == before + 1, "the writer did not commit exactly once"

"""The index's write lock, taken in turn: a waiting writer gets it within one commit.

Whoosh's lock is a kernel ``flock`` on ``newsquarry_WRITELOCK`` that writers
poll: a writer that commits in a loop re-takes it within microseconds of
releasing it, and another writer polling every 50 ms nearly never catches it
free (two ``index --commit-every 50`` runs: one gave up after 30 s in two runs
of two).

Here a second lock file, ``newsquarry_TURNSTILE``, sits in front of it (the
turnstile of the classic "no-starve mutex"): a writer first takes the
turnstile, then the write lock, then lets go of the turnstile. A waiting
writer thus holds the turnstile while it waits, and the current holder, once
it releases the write lock, cannot take it again without passing the
turnstile: it waits, and the waiting writer goes first. Both are ``flock``
locks, so the kernel frees them when a process dies, even by ``kill -9``.

Whoever holds the write lock writes its pid, start time and command into the
lock file: a writer that gives up names the holder (for the command line and
the logs; ``IndexBusy.public_message`` leaves it out for API clients).
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from newsquarry.search.core.errors import IndexBusy

WRITELOCK = "newsquarry_WRITELOCK"  # Whoosh's own lock file name for index "newsquarry"
TURNSTILE = "newsquarry_TURNSTILE"
POLL_SECONDS = 0.01


def _try_flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def holder_note(folder: str | os.PathLike) -> str:
    """ "pid N since T: command" from the lock file, or "" if unknown."""
    try:
        with open(Path(folder) / WRITELOCK, encoding="utf-8") as fh:
            note = fh.read(300).strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return note if note.startswith("pid ") else ""


class WriteLock:
    """The write lock of the index in ``folder``; ``acquire`` waits at most ``timeout`` s."""

    def __init__(self, folder: str | os.PathLike, command: str | None = None) -> None:
        self.folder = Path(folder)
        self.command = command if command is not None else " ".join(sys.argv)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float) -> None:
        """Take the lock in turn, or raise ``IndexBusy`` saying how long and why."""
        started = time.monotonic()
        deadline = started + max(timeout, 0.0)
        gate = os.open(self.folder / TURNSTILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fd = os.open(self.folder / WRITELOCK, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if not self._wait(gate, deadline) or not self._wait(fd, deadline):
                    raise self._busy(time.monotonic() - started)
            except BaseException:
                os.close(fd)  # closing the file drops any flock taken on it
                raise
        finally:
            os.close(gate)  # lets the next writer in (we hold the write lock, or gave up)
        self._fd = fd
        self._note()

    @staticmethod
    def _wait(fd: int, deadline: float) -> bool:
        while not _try_flock(fd):
            if time.monotonic() >= deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def _busy(self, waited: float) -> IndexBusy:
        note = holder_note(self.folder)
        why = f"held by {note}" if note else "held by another process"
        return IndexBusy(
            f"another process is writing to the index at {self.folder}; gave up after "
            f"waiting {waited:.1f} s for the write lock ({why}); the wait limit is the "
            "lock_timeout setting (NEWSQUARRY_LOCK_TIMEOUT)",
            public_message=(
                f"another writer holds the index; gave up after waiting {waited:.1f} s: retry later"
            ),
        )

    def _note(self) -> None:
        """Write who holds the lock into the lock file (information only: the lock is the flock)."""
        note = "pid {} since {}: {}\n".format(
            os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S"), self.command[:200]
        )
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, note.encode("utf-8", "replace"), 0)
        except OSError:
            pass

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # no stale holder named after we are gone
        except OSError:
            pass
        os.close(fd)

    def __enter__(self) -> WriteLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

"""Background work done ahead of need waits for a quiet moment (``search.background``)."""

from __future__ import annotations

import threading
import time

from newsquarry.search.core.background import Foreground


def test_work_ahead_waits_until_searches_end_and_a_quiet_moment_passes():
    fg = Foreground()
    entered, ended = threading.Event(), []

    def search() -> None:
        with fg:
            entered.set()
            time.sleep(0.3)
            ended.append(time.monotonic())

    t = threading.Thread(target=search)
    t.start()
    entered.wait(5)
    fg.wait_quiet(quiet=0.05, longest=30)
    returned = time.monotonic()
    t.join()
    assert ended and returned >= ended[0] + 0.05


def test_a_write_is_followed_by_a_quiet_moment_even_with_no_search():
    fg = Foreground()  # no search ever ran: still waits ``quiet`` (a read often follows)
    t0 = time.monotonic()
    fg.wait_quiet(quiet=0.2, longest=30)
    assert time.monotonic() - t0 >= 0.2


def test_under_steady_load_the_work_is_done_after_the_longest_wait():
    fg = Foreground()
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            with fg:
                time.sleep(0.01)

    t = threading.Thread(target=load)
    t.start()
    try:
        t0 = time.monotonic()
        fg.wait_quiet(quiet=0.05, longest=0.5)
        waited = time.monotonic() - t0
    finally:
        stop.set()
        t.join()
    assert 0.5 <= waited < 10  # it gave up waiting (the load never stopped)

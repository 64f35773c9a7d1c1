"""Ctrl-C for a child process whatever the test run inherited.

A test run started as a background job of a non-interactive shell (``cmd &`` in a script,
``nohup``) has SIGINT ignored, and a child keeps an ignored signal across ``exec``: Python
then installs no KeyboardInterrupt handler, and a test's SIGINT does nothing (a Ctrl-C test
then waits out its timeout). The tests that send SIGINT start their child while this process
has a handler for it: ``exec`` resets a handled signal to its default, as a terminal's
foreground command has it. (Not ``preexec_fn``: Python code between fork and exec in a
process with threads can deadlock the child.)
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def default_sigint() -> Iterator[None]:
    """Children started inside get SIGINT at its default (run in the main thread)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)

"""Ctrl-C for a child process whatever the test run inherited.

A test run started as a background job of a non-interactive shell (``cmd &`` in a script,
``nohup``) has SIGINT ignored, and a child keeps an ignored signal across ``exec``: Python
then installs no KeyboardInterrupt handler, and a test's SIGINT does nothing (a Ctrl-C test
then waits out its timeout). The tests that send SIGINT start their child with the default
disposition, as a terminal's foreground command has it.
"""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """``preexec_fn`` of a child a test interrupts: SIGINT back to its default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

"""One read at a time per worker: threads wait for I/O, not for each other's CPU.

A search is CPU-bound Python (2-3 ms on a 100,000-passage index). When a
worker's threads run several at once they take turns on the interpreter lock
every few milliseconds, each turn a thread hand-off that also evicts the
other searches' data from the core's caches, so every request costs more CPU
than it would alone. ``ReadGate`` lets ``read_concurrency`` read requests
(GET, HEAD) run the app at a time; the other threads still read requests
from slow clients, send finished responses and run writes (which wait on the
index lock, not on this gate). Health checks (``/health/*``, ``/v1/health``)
and the API description (``/openapi.json``, ``/docs``) skip the gate, so a long
search never makes a worker look dead. Measured in docs/benchmarks.md ("HTTP API").
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# cheap answers that must never wait behind a long search: health checks (a load
# balancer would take the worker out), the API description and its docs page
UNGATED_PREFIXES = ("/health/",)
UNGATED_PATHS = frozenset({"/v1/health", "/openapi.json", "/docs"})


class ReadGate:
    """WSGI middleware running at most ``limit`` GET/HEAD requests of ``app`` at once.

    The gate covers building the response; a streamed body (exports) is sent
    after the gate is left, so a slow download never holds it.
    """

    def __init__(self, app: WSGIApp, limit: int) -> None:
        if limit < 1:
            raise ValueError("a read gate needs a limit of at least 1")
        self.app = app
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if (
            environ.get("REQUEST_METHOD") not in ("GET", "HEAD")
            or path in UNGATED_PATHS
            or path.startswith(UNGATED_PREFIXES)
        ):
            return self.app(environ, start_response)
        with self._slots:
            return self.app(environ, start_response)


def gate_reads(app: Flask, limit: int) -> None:
    """Put ``app``'s reads behind a ``ReadGate`` of ``limit`` (0 or less: no gate)."""
    if limit > 0:
        app.wsgi_app = ReadGate(app.wsgi_app, limit)  # type: ignore[method-assign]

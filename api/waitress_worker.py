"""A gunicorn worker that serves with waitress: whole requests are read before a thread is taken.

gunicorn's threaded worker hands a connection to a thread as soon as its first bytes
arrive, and the thread then reads the rest of the request itself: a client that sends
a partial request and drips a header line every few seconds holds that thread, and 8
such clients held every thread of a 2 x 4 server, ``/health/live`` included (issue 33).
Here each worker process runs waitress's event loop on gunicorn's listening sockets:
the loop (one thread) reads every connection without blocking and buffers each request
whole, its body too (to a temporary file past 512 KB), and only a complete request goes
to the worker's thread pool. A slow client costs a file descriptor and a buffer, never
a thread.

What this module adds to waitress (``Settings`` below, documented in docs/api.md):

- **a header and a body time limit**: a request whose headers have not all arrived
  ``header_timeout`` seconds after its first byte, or whose body has not arrived
  ``body_timeout`` seconds after its headers, is dropped (waitress alone closes only
  connections that stay *silent*; one that drips a byte every few seconds it keeps);
- **limits per connection and per worker**: the header block (``max_header_bytes``), the
  body (``max_body_bytes``, the app's own limit), one request at a time per connection
  (no pipelining look-ahead), at most ``max_connections`` open connections per worker
  (past it the worker stops accepting until some close); the file descriptor limit is
  raised to fit;
- **answers as problem+json**: the errors waitress answers itself (400, 413, 431)
  carry the API's media type;
- **gunicorn's supervision**: the heartbeat (a worker whose loop stops is replaced after
  ``timeout``), graceful stop on SIGTERM (no new connections, running requests finish
  and their answers are sent, up to ``graceful_timeout``), the access log in gunicorn's
  format, SO_REUSEPORT sockets per worker as before.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import resource
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from types import SimpleNamespace
from typing import Any

from gunicorn.workers.base import Worker
from waitress import wasyncore
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.server import TcpWSGIServer, UnixWSGIServer
from waitress.task import ErrorTask, ThreadedTaskDispatcher

from newsquarry.search.core.config import load_settings

from .errors import PROBLEM_MIMETYPE, TYPE_PREFIX, slug_of

MAINTENANCE_SECONDS = 1.0  # how often open connections are checked against the time limits
SPARE_FDS = 256  # descriptors beyond the connections: index files, logs, pipes


class Settings:
    """The limits of one worker, from the settings table (``NEWSQUARRY_*``; search.core.config)."""

    def __init__(self) -> None:
        values = load_settings()
        for name in ("header_timeout", "body_timeout", "idle_timeout", "max_connections",
                     "max_header_bytes", "max_body_bytes"):  # fmt: skip
            if not float(values[name]) > 0:
                raise SystemExit(f"NEWSQUARRY_{name.upper()} must be above 0, got {values[name]}")
        self.header_timeout = float(values["header_timeout"])
        self.body_timeout = float(values["body_timeout"])
        self.idle_timeout = float(values["idle_timeout"])
        self.max_connections = int(values["max_connections"])
        self.max_header_bytes = int(values["max_header_bytes"])
        # the app's own body limit, so that both agree on what is too large
        self.max_body_bytes = int(values["max_body_bytes"])


class ProblemErrorTask(ErrorTask):
    """waitress's own error answers (bad request, too large) as problem+json."""

    def execute(self) -> None:
        error = self.request.error
        body = json.dumps(
            {
                "type": TYPE_PREFIX + slug_of(error.reason),
                "title": error.reason,
                "status": error.code,
                "detail": str(error.body),
            }
        ).encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", PROBLEM_MIMETYPE))
        self.response_headers.append(("Cache-Control", "no-store"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class Channel(HTTPChannel):
    """A connection that remembers when its request in progress began and when its headers ended."""

    error_task_class = ProblemErrorTask
    started: float | None = None  # first byte of the request being read
    headers_done: float | None = None  # its headers complete, the body still coming

    def received(self, data: bytes) -> bool:
        if data and self.request is None and self.started is None:
            self.started = time.monotonic()
        result = super().received(data)
        if self.request is None:  # complete (handed to a thread) or nothing begun
            self.started = self.headers_done = None
        elif self.request.headers_finished and self.headers_done is None:
            self.headers_done = time.monotonic()
        return result

    def too_slow(self, now: float, limits: Settings) -> bool:
        """Whether the request being read has run past the header or the body time limit."""
        if self.started is None or self.requests:
            return False
        if self.headers_done is None:
            return now - self.started > limits.header_timeout
        return now - self.headers_done > limits.body_timeout


class _Limits:
    """The time limits, applied by the server's periodic maintenance."""

    channel_class = Channel
    limits: Settings

    def maintenance(self, now: float) -> None:  # waitress: closes silent connections
        super().maintenance(now)  # type: ignore[misc]
        mono = time.monotonic()
        for channel in list(self.active_channels.values()):  # type: ignore[attr-defined]
            if isinstance(channel, Channel) and channel.too_slow(mono, self.limits):
                channel.will_close = True  # closed by the loop, its request dropped


class TcpServer(_Limits, TcpWSGIServer):
    """waitress's TCP server with the header and body time limits."""


class UnixServer(_Limits, UnixWSGIServer):
    """waitress's Unix-socket server with the header and body time limits."""


class AccessLog:
    """WSGI middleware writing gunicorn's access log line for each answer (status, bytes, time)."""

    def __init__(self, app: Callable[..., Any], log: Any) -> None:
        self.app = app
        self.log = log

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        started = datetime.datetime.now()
        resp = SimpleNamespace(status="500", headers=[], sent=0)

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            resp.status, resp.headers = status, headers
            return start_response(status, headers, exc_info)

        return _Logged(self.app(environ, start), environ, resp, started, self.log)


class _Logged:
    """A response body that writes the access log line when the server closes it."""

    def __init__(self, body: Iterable[bytes], environ: dict[str, Any], resp: Any,
                 started: datetime.datetime, log: Any) -> None:  # fmt: skip
        self.body, self.environ, self.resp, self.started, self.log = (
            body,
            environ,
            resp,
            started,
            log,
        )

    def __iter__(self) -> Iterator[bytes]:
        length = dict((k.lower(), v) for k, v in self.resp.headers).get("content-length")
        if length is not None and length.isdigit():  # known: no need to count chunk by chunk
            self.resp.sent = int(length)
            return iter(self.body)
        return self._counted()

    def _counted(self) -> Iterator[bytes]:
        for chunk in self.body:
            self.resp.sent += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            environ = self.environ
            environ.setdefault("RAW_URI", environ.get("REQUEST_URI", environ.get("PATH_INFO")))
            headers = [(k[5:].replace("_", "-"), v) for k, v in environ.items()
                       if k.startswith("HTTP_")]  # fmt: skip
            self.log.access(self.resp, headers, environ, datetime.datetime.now() - self.started)


def _raise_fd_limit(wanted: int) -> None:
    """Raise this process's open-file limit to ``wanted`` (at most the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))


class WaitressWorker(Worker):
    """gunicorn worker process serving its sockets with waitress (see the module's docstring)."""

    def run(self) -> None:
        # "Task queue depth is N": requests waiting for a thread are the design here (the
        # read gate lets one search run at a time), not news; one line each cost CPU
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)
        limits = Settings()
        _raise_fd_limit(limits.max_connections + SPARE_FDS)
        adj = Adjustments(
            threads=max(1, int(self.cfg.threads)),
            connection_limit=limits.max_connections,
            channel_timeout=max(1, round(limits.idle_timeout)),
            cleanup_interval=MAINTENANCE_SECONDS,
            max_request_header_size=limits.max_header_bytes,
            max_request_body_size=limits.max_body_bytes + 1,  # waitress refuses at >=
            asyncore_use_poll=True,  # select() stops at descriptor 1024
            clear_untrusted_proxy_headers=False,  # headers reach the app as sent
            channel_request_lookahead=0,  # one request at a time per connection
            ident="newsquarry",
            expose_tracebacks=False,
        )
        socket_map: dict[int, Any] = {}
        dispatcher = ThreadedTaskDispatcher()
        dispatcher.set_thread_count(adj.threads)
        app = AccessLog(self.wsgi, self.log)
        servers = []
        for listener in self.sockets:
            sock = getattr(listener, "sock", listener)  # gunicorn's wrapper around the socket
            sock.setblocking(False)
            kind = UnixServer if sock.family == getattr(socket, "AF_UNIX", None) else TcpServer
            name = sock.getsockname()
            server = kind(app, socket_map, _sock=sock, dispatcher=dispatcher, adj=adj,
                          bind_socket=False,
                          sockinfo=(sock.family, sock.type, sock.proto, name))  # fmt: skip
            server.limits = limits
            servers.append(server)
        try:
            self._loop(socket_map, servers)
        finally:
            dispatcher.shutdown(cancel_pending=True, timeout=1)
            wasyncore.close_all(socket_map)

    def _loop(self, socket_map: dict[int, Any], servers: list[Any]) -> None:
        """waitress's loop, a pass at a time, with gunicorn's heartbeat and graceful stop."""
        beat = 0.0
        while self.alive:
            now = time.monotonic()
            if now >= beat:  # once a second, not at every event: two syscalls
                beat = now + 1.0
                self.notify()
                if self.ppid != os.getppid():
                    self.log.info("Parent changed, shutting down: %s", self)
                    return
            wasyncore.loop(timeout=1.0, map=socket_map, use_poll=True, count=1)
        # graceful: accept nothing new, finish what is running and send its answers
        for server in servers:
            server.accepting = False
            server.del_channel()
            server.socket.close()
        deadline = time.monotonic() + float(self.cfg.graceful_timeout)
        while time.monotonic() < deadline:
            busy = [c for c in socket_map.values()
                    if isinstance(c, Channel) and (c.requests or c.total_outbufs_len)]  # fmt: skip
            if not busy:
                return
            self.notify()
            wasyncore.loop(timeout=0.2, map=socket_map, use_poll=True, count=1)

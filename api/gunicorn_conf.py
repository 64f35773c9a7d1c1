"""gunicorn settings for ``newsquarry serve`` (``gunicorn -c python:newsquarry.api.gunicorn_conf newsquarry.api.wsgi:app``).

Defaults suit a small machine (2 cores): 2 worker processes x 4 threads.
Searches are CPU-bound Python, so processes give the parallelism and threads
cover waiting (the write lock, health checks beside a long search); the app runs one
read at a time per worker (``read_concurrency``). Each worker serves with waitress
(``api/waitress_worker.py``): requests are read whole by an event loop before a thread
takes them, so slow clients hold no thread (issue 33). ``NEWSQUARRY_WORKER_CLASS=sync``
gives gunicorn's own workers (gthread, or sync for ``--threads 1``), for serving behind
a reverse proxy that buffers clients; docs/benchmarks.md measures both. Command-line flags
(``--workers``, ``--threads``, ``--bind``) override these; so do
``NEWSQUARRY_WORKERS`` / ``NEWSQUARRY_THREADS`` / ``NEWSQUARRY_BIND``.
The access log carries the request id of every response (``X-Request-Id``).

``NEWSQUARRY_FOLLOW`` (URLs of feeds, sitemaps or sites) makes the arbiter run
``newsquarry follow`` beside the workers (``when_ready``), restart it if it dies and stop
it with the server (``on_exit``); it writes through the index's write lock like any
writer, and the workers see its commits as they see every commit (docs/follow.md).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from typing import Any

from gunicorn import glogging

from newsquarry.search.core.config import load_settings

bind = os.environ.get("NEWSQUARRY_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("NEWSQUARRY_WORKERS", "2"))
threads = int(os.environ.get("NEWSQUARRY_THREADS", "4"))
# waitress in each worker process (api/waitress_worker.py): requests are read whole by an
# event loop before a thread is taken, so slow clients cannot hold the threads (issue 33).
# NEWSQUARRY_WORKER_CLASS=sync: gunicorn's own (gthread for threads > 1, sync for 1).
worker_class = (
    os.environ.get("NEWSQUARRY_WORKER_CLASS") or "newsquarry.api.waitress_worker.WaitressWorker"
)
# Each worker listens on its own socket (SO_REUSEPORT) and the kernel spreads new
# connections over them. With one shared socket, whichever worker wakes first accepts a
# burst of connections; kept alive (a proxy's pool, a load generator), they stay there and
# one worker can end up with all of them while the other idles (measured: 8 connections
# split 0/8 or 1/7 in about half of the benchmark's runs, halving throughput at 0/8).
# The kernel lets a second server of the same user share such a port silently, so
# ``newsquarry serve`` checks that the port is free first. NEWSQUARRY_REUSE_PORT=0: one socket.
# Only for TCP addresses: see ``on_starting``.
reuse_port = os.environ.get("NEWSQUARRY_REUSE_PORT", "1") != "0"


def on_starting(server: Any) -> None:
    """Turn SO_REUSEPORT off unless every address is TCP and gunicorn opens the sockets.

    With a socket per worker, a Unix socket path would be replaced by each worker in turn
    (only the last one would get connections), and sockets handed over by systemd
    (``LISTEN_FDS``) or as ``fd://N`` would be ignored. Runs before gunicorn opens any
    socket, with the final settings (command-line ``--bind`` included).
    """
    # gunicorn's parsed addresses: (host, port) for TCP, a path for Unix, an int for fd://
    tcp_only = all(isinstance(address, tuple) for address in server.cfg.address)
    if not tcp_only or os.environ.get("LISTEN_FDS"):
        server.cfg.set("reuse_port", False)


class Logger(glogging.Logger):
    """gunicorn's logger, with the address in its "Listening at:" line.

    With SO_REUSEPORT each worker opens its own socket and the arbiter holds
    none, so gunicorn would log ``Listening at:  (pid)`` with no address.
    """

    def info(self, msg: str, *args: Any, **kwargs: Any) -> None:
        if msg.startswith("Listening at:") and args and not args[0]:
            args = (", ".join(_urls(self.cfg.address)), *args[1:])
        super().info(msg, *args, **kwargs)


def _urls(addresses: list[Any]) -> list[str]:
    """gunicorn's parsed addresses as URLs (TCP: (host, port); Unix: a path)."""
    urls = []
    for address in addresses:
        if isinstance(address, tuple):
            host, port = address[0], address[1]
            urls.append(f"http://{f'[{host}]' if ':' in host else host}:{port}")
        else:
            urls.append(f"unix:{address}")
    return urls


logger_class = Logger
# gunicorn 25+ opens a control socket for `gunicornc` at one fixed path per user
# ($XDG_RUNTIME_DIR/gunicorn.ctl or ~/.gunicorn/gunicorn.ctl): a second server would take
# it over from the first. Off unless NEWSQUARRY_CONTROL_SOCKET names a path for this server.
control_socket = os.environ.get("NEWSQUARRY_CONTROL_SOCKET") or "gunicorn.ctl"
control_socket_disable = not os.environ.get("NEWSQUARRY_CONTROL_SOCKET")
timeout = 120  # a worker whose event loop (its heartbeat) stops this long is replaced
graceful_timeout = 30
keepalive = 5
preload_app = False  # every worker opens its own index reader after the fork
accesslog = os.environ.get("NEWSQUARRY_ACCESS_LOG", "-")  # "-" = stdout
errorlog = "-"
loglevel = os.environ.get("NEWSQUARRY_LOG_LEVEL", "info")
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s %(M)sms rid=%({x-request-id}o)s "%(a)s"'
# 0 = gunicorn's own cap of about 1 MB instead of 8190 bytes: a valid search may hold 50
# filter values of up to 200 characters, and gunicorn's 414 page is HTML, not problem+json.
# The app answers request lines over 256 KiB with a 414 problem itself.
limit_request_line = 0
# gunicorn answers a header field over 8190 bytes with an HTML 431 page; up to 64 KiB it
# passes it on and the app answers 431 problem+json itself (``api.app``: MAX_HEADER_BYTES)
limit_request_field_size = 65536


class FollowerProcess:
    """``newsquarry follow`` as a child of the arbiter, restarted when it exits."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None

    def argv(self) -> list[str] | None:
        settings = load_settings()
        urls = [u for u in re.split(r"[\s,]+", str(settings.get("follow") or "")) if u]
        if not urls:
            return None
        return [
            sys.executable, "-m", "newsquarry.search.cli", "follow",
            "--index", str(settings["index"]),
            "--every", f"{float(settings['follow_interval'])}s",
            "--rate", str(float(settings["follow_rate"])),
            *urls,
        ]  # fmt: skip

    def start(self, log: Any) -> None:
        argv = self.argv()
        if argv is None:
            return
        self.thread = threading.Thread(target=self._supervise, args=(argv, log), daemon=True,
                                       name="newsquarry-follower")  # fmt: skip
        self.thread.start()

    def _supervise(self, argv: list[str], log: Any) -> None:
        failures = 0
        env = dict(os.environ, NEWSQUARRY_FOLLOW_PARENT=str(os.getpid()))
        while not self.stopping.is_set():
            log.info("Following: %s", " ".join(argv[argv.index("--rate") + 2 :]))
            self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
            try:
                code = self.proc.wait()
            except ChildProcessError:  # the arbiter reaped it (its SIGCHLD handler)
                code = None
            if self.stopping.is_set():
                return
            if code == 2:  # a usage error (a URL that is not http(s)...): it would recur
                log.error("The follower cannot run (exit 2, its message is above): "
                          "not restarted; fix NEWSQUARRY_FOLLOW")  # fmt: skip
                return
            failures += 1
            wait = min(300.0, 2.0**failures)
            log.warning("The follower exited (code %s): restarting in %.0f s", code, wait)
            self.stopping.wait(wait)

    def stop(self) -> None:
        self.stopping.set()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # it stops cleanly: commits kept
            try:
                proc.wait(timeout=graceful_timeout)
            except (subprocess.TimeoutExpired, ChildProcessError):
                if proc.poll() is None:
                    proc.kill()


_follower = FollowerProcess()


def when_ready(server: Any) -> None:
    """The arbiter is up: start the follower when ``NEWSQUARRY_FOLLOW`` names sources."""
    _follower.start(server.log)


def on_exit(server: Any) -> None:
    """The server stops: so does its follower (SIGTERM, a clean stop)."""
    _follower.stop()

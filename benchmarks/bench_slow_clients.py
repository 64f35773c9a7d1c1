"""Slow clients against ``newsquarry serve``: normal searches and ``/health/live`` with and without them.

Usage::

    python -m benchmarks.bench_slow_clients --index /tmp/nq-slow --slow 1000
    NEWSQUARRY_WORKER_CLASS=sync python -m benchmarks.bench_slow_clients ...   # gunicorn's gthread

Builds the index if the folder is empty: the first ``--articles`` Reuters-21578 articles of
``/work/shared/corpora`` (or ``--source FILE``), enriched with spaCy by ``newsquarry index``.
Then starts ``newsquarry serve`` (2 workers x 4 threads by default) on a free loopback port and:

1. **quiet**: ``--probes`` normal searches (the ten newswire queries of ``bench_search``, one
   after another on 4 client threads) and as many ``GET /health/live``: latency per request;
2. **slow**: opens ``--slow`` connections, each sending a partial request (request line and
   one header) and then one more header line every ``--drip`` seconds, never finishing; a
   connection the server closes is opened again, so the pressure stays at ``--slow``. Once
   all are open and have sent their first line, the same probes run again.

Every probe has a client time limit (``--client-timeout``, 30 s): one that gets no answer
counts as failed (and as the limit in the percentiles). The slow phase probes in rounds for at
least ``--hold`` seconds (30), past the server's header time limit (10 s). Prints p50/p99 per kind and phase, failures, and how many slow
connections the server closed (its header time limit, ``NEWSQUARRY_HEADER_TIMEOUT``).
The load generator runs on the same cores as the server.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
REUTERS = Path("/work/shared/corpora/reuters21578.jsonl")
QUERIES = ["oil prices", "interest rates", "trade deficit", "bank", "coffee",
           "wheat exports", "profit", "dollar", "stock market", "gold"]  # fmt: skip
CLIENT = {"timeout": 30.0}  # seconds a probe waits for its answer (--client-timeout)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_index(index: Path, source: Path, articles: int) -> None:
    """The first ``articles`` lines of ``source``, indexed by the real command (spaCy)."""
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.jsonl"
        with source.open(encoding="utf-8") as src, part.open("w", encoding="utf-8") as out:
            for i, line in enumerate(src):
                if i >= articles:
                    break
                out.write(line)
        subprocess.run([sys.executable, "-m", "newsquarry.search.cli", "--index", str(index),
                        "index", str(part)], check=True, cwd=ROOT)  # fmt: skip


class Server:
    """``newsquarry serve`` in a subprocess."""

    def __init__(self, index: Path, workers: int, threads: int, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "newsquarry.search.cli", "--index", str(index), "serve",
             "--port", str(self.port), "--workers", str(workers), "--threads", str(threads)],
            cwd=ROOT, env={**os.environ, "NEWSQUARRY_ACCESS_LOG": "/dev/null", **env},
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/health/ready", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise SystemExit("the server did not start:\n" + self.output())

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class SlowClients:
    """``n`` connections dripping one header line each every ``drip`` seconds, reopened when closed."""

    def __init__(self, port: int, n: int, drip: float) -> None:
        self.port, self.n, self.drip = port, n, drip
        self.sel = selectors.DefaultSelector()
        self.socks: set[socket.socket] = set()
        self.closed_by_server = 0
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _open(self) -> None:
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        s.sendall(b"GET /v1/search?q=oil HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ)
        self.socks.add(s)

    def _drop(self, s: socket.socket) -> None:
        self.sel.unregister(s)
        self.socks.discard(s)
        s.close()

    def _run(self) -> None:
        while len(self.socks) < self.n:
            self._open()
        self.ready.set()
        line = 0
        while not self.stopping.is_set():
            next_drip = time.monotonic() + self.drip
            while (left := next_drip - time.monotonic()) > 0 and not self.stopping.is_set():
                for key, _ in self.sel.select(timeout=min(left, 0.5)):
                    s = key.fileobj
                    try:
                        data = s.recv(65536)  # type: ignore[union-attr]
                    except OSError:
                        data = b""
                    if not data:  # the server closed it (a time limit): open another
                        self.closed_by_server += 1
                        self._drop(s)  # type: ignore[arg-type]
                while len(self.socks) < self.n and not self.stopping.is_set():
                    self._open()  # at once: the pressure stays at n
            line += 1
            for s in list(self.socks):
                try:
                    s.send(f"X-Drip-{line}: {'a' * 20}\r\n".encode())
                except OSError:
                    self.closed_by_server += 1
                    self._drop(s)
            while len(self.socks) < self.n and not self.stopping.is_set():
                self._open()

    def start(self) -> None:
        self.thread.start()
        self.ready.wait()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        for s in list(self.socks):
            self._drop(s)


def probe(url: str, n: int, hold: float = 0.0) -> dict[str, list[float | None]]:
    """``n`` searches and ``n`` liveness checks from 4 threads, in rounds until ``hold`` seconds
    have passed: seconds each (None: no answer within the client time limit)."""
    out: dict[str, list[float | None]] = {"search": [], "live": []}
    until = time.monotonic() + hold
    while True:
        for kind, times in _probe_round(url, n).items():
            out[kind] += times
        if time.monotonic() >= until:
            return out


def _probe_round(url: str, n: int) -> dict[str, list[float | None]]:
    def one(path: str) -> float | None:
        started = time.perf_counter()
        try:
            resp = requests.get(url + path, timeout=CLIENT["timeout"])
        except requests.RequestException:
            return None
        return time.perf_counter() - started if resp.status_code == 200 else None

    jobs = [("search", f"/v1/search?q={QUERIES[i % 10].replace(' ', '+')}&facet=person")
            for i in range(n)] + [("live", "/health/live") for _ in range(n)]  # fmt: skip
    out: dict[str, list[float | None]] = {"search": [], "live": []}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for (kind, _), took in zip(jobs, pool.map(lambda j: one(j[1]), jobs), strict=True):
            out[kind].append(took)
    return out


def report(phase: str, results: dict[str, list[float | None]]) -> None:
    for kind, times in results.items():
        answered = [t for t in times if t is not None]
        filled = [CLIENT["timeout"] if t is None else t for t in times]
        print(f"{phase:6s} {kind:6s} n={len(times)} failed={len(times) - len(answered)} "
              f"p50={pct(filled, 50) * 1000:.1f} ms p99={pct(filled, 99) * 1000:.1f} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, default=Path("/tmp/nq-slow"))
    ap.add_argument("--source", type=Path, default=REUTERS)
    ap.add_argument("--articles", type=int, default=1000)
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--drip", type=float, default=5.0)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument(
        "--hold",
        type=float,
        default=30.0,
        help="seconds the slow phase lasts at least (probing in rounds)",
    )
    ap.add_argument("--client-timeout", type=float, default=CLIENT["timeout"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    CLIENT["timeout"] = args.client_timeout
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * args.slow + 512)), hard))
    if not args.index.exists() or not any(args.index.iterdir()):
        build_index(args.index, args.source, args.articles)
    print("load before:", os.getloadavg())
    print("worker class:", os.environ.get("NEWSQUARRY_WORKER_CLASS") or "waitress (default)")
    server = Server(args.index, args.workers, args.threads, {})
    try:
        probe(server.url, 20)  # warm both workers
        report("quiet", probe(server.url, args.probes))
        slow = SlowClients(server.port, args.slow, args.drip)
        slow.start()
        print(f"{args.slow} slow connections open, dripping every {args.drip} s")
        report("slow", probe(server.url, args.probes, args.hold))
        print(f"slow connections closed by the server meanwhile (and opened again at once): "
              f"{slow.closed_by_server}; open now: {len(slow.socks)}")  # fmt: skip
        slow.stop()
        report("after", probe(server.url, args.probes))
    finally:
        server.stop()
        print("load after:", os.getloadavg())
        tail = [ln for ln in server.output().splitlines() if "Traceback" in ln or "ERROR" in ln]
        if tail:
            print("server log errors:", *tail[:5], sep="\n  ")


if __name__ == "__main__":
    main()

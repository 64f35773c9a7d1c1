"""Reads under load with and without one PUT a second, enrichment in its own process or inline.

Usage::

    python -m benchmarks.bench_write_load --index /tmp/nq-slow --duration 20 --rounds 3

Needs ``wrk`` (Debian package ``wrk``) and an index (built like ``bench_slow_clients``'s when the
folder is empty: the first 1,000 Reuters-21578 articles, enriched with spaCy). For each
``enrich_process`` setting (``true``: API writes enriched by a child process of each worker at
niceness +10, the default; ``false``: in the serving thread, as before issue 33) a server
(``newsquarry serve``, 2 workers x 4 threads, response cache off so every read searches) is
started, both workers' writes are warmed (the spaCy model loaded), and then, in each round:

1. **reads**: ``wrk -t2 -c8`` for ``--duration`` seconds over the ten newswire queries of
   ``bench_search`` (``/v1/search?q=...&facet=person``): requests per second, p50/p99;
2. **reads + writes**: the same, while one ``PUT /v1/articles/<id>`` a second sends a new
   Reuters article (the ones after the index's; at most 4 in flight, so a slow PUT does not
   delay the next one's start): read requests per second, p50/p99, PUT p50/p99 and statuses.

The ratio (2)/(1) is taken per round (adjacent slices share the machine's conditions) and
its median reported. wrk and the writer run on the same cores as the server.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

from benchmarks.bench_slow_clients import QUERIES, REUTERS, build_index, free_port, pct

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-write-token"


def wrk_script(folder: Path) -> Path:
    paths = [f"/v1/search?q={q.replace(' ', '+')}&facet=person" for q in QUERIES]
    script = folder / "queries.lua"
    script.write_text(
        "local paths = {" + ", ".join(f'"{p}"' for p in paths) + "}\n"
        "local i = 0\n"
        "request = function()\n  i = i + 1\n"
        "  return wrk.format('GET', paths[(i % #paths) + 1])\nend\n"
    )
    return script


def run_wrk(url: str, script: Path, duration: float) -> dict[str, float]:
    out = subprocess.run(["wrk", "-t2", "-c8", f"-d{duration:.0f}s", "--latency", "-s",
                          str(script), url], capture_output=True, text=True, check=True).stdout  # fmt: skip
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))  # type: ignore[union-attr]

    def ms(label: str) -> float:
        m = re.search(rf"^\s+{label}%\s+([0-9.]+)(us|ms|s)\s*$", out, re.M)
        if not m:
            return float("nan")
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
        return float(m.group(1)) * scale

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": rps,
        "p50": ms("50"),
        "p99": ms("99"),
        "non2xx": float(errors.group(1)) if errors else 0,
    }


class Writer:
    """One PUT a second of a new article, at most 4 in flight, until stopped."""

    def __init__(self, url: str, articles: list[dict], tag: str, start: int = 0) -> None:
        self.url, self.articles, self.next, self.tag = url, articles, start, tag
        self.took: list[float] = []
        self.statuses: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def put(self) -> None:
        article = dict(self.articles[self.next % len(self.articles)])
        ident = f"bench-{self.tag}-{self.next}"  # new ids: every PUT adds and enriches
        self.next += 1
        article.pop("id", None)
        started = time.perf_counter()
        try:
            resp = requests.put(f"{self.url}/v1/articles/{ident}", json=article, timeout=120,
                                headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
            status = resp.status_code
        except requests.RequestException:
            status = 0
        self.took.append(time.perf_counter() - started)
        self.statuses.append(status)

    def _run(self) -> None:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            tick = time.monotonic()
            while not self.stop.is_set():
                pool.submit(self.put)
                tick += 1.0
                self.stop.wait(max(0.0, tick - time.monotonic()))

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def start_server(index: Path, enrich_process: bool) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="nq-bench-write-", suffix=".log")[1])
    env = {**os.environ, "NEWSQUARRY_WRITE_TOKEN": TOKEN, "NEWSQUARRY_RESPONSE_CACHE_SIZE": "0",
           "NEWSQUARRY_ACCESS_LOG": "/dev/null",
           "NEWSQUARRY_ENRICH_PROCESS": "true" if enrich_process else "false"}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "newsquarry.search.cli", "--index", str(index),
                             "serve", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(url + "/health/ready", timeout=5).status_code == 200:
                return proc, url, log
        except requests.RequestException:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not start:\n" + log.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, default=Path("/tmp/nq-slow"))
    ap.add_argument("--source", type=Path, default=REUTERS)
    ap.add_argument("--articles", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="process,inline")
    args = ap.parse_args()
    if not args.index.exists() or not any(args.index.iterdir()):
        build_index(args.index, args.source, args.articles)
    with args.source.open(encoding="utf-8") as src:
        lines = [line for i, line in enumerate(src) if args.articles <= i < args.articles + 2000]
    fresh = [{k: v for k, v in json.loads(line).items() if k in ("title", "text", "date", "source")}
             for line in lines]  # fmt: skip
    script = wrk_script(Path(tempfile.mkdtemp()))
    print("load before:", os.getloadavg())
    summary = {}
    for mode in args.modes.split(","):
        proc, url, log = start_server(args.index, mode == "process")
        try:
            for q in QUERIES:  # warm both workers' searches
                for _ in range(4):
                    requests.get(f"{url}/v1/search?q={q}&facet=person", timeout=60)
            tag = f"{mode}-{os.getpid()}-{time.time_ns()}"
            warm = Writer(url, fresh, tag + "w", start=len(fresh) - 8)
            for _ in range(8):  # both workers' first writes: the model loaded
                warm.put()
            assert set(warm.statuses) == {200}, warm.statuses
            writer_start = 0
            ratios, rows = [], []
            for r in range(args.rounds):
                reads = run_wrk(url, script, args.duration)
                with Writer(url, fresh, tag, start=writer_start) as writer:
                    mixed = run_wrk(url, script, args.duration)
                writer_start = writer.next
                ratios.append(mixed["rps"] / reads["rps"])
                rows.append((reads, mixed, writer))
                print(f"[{mode}] round {r + 1}: reads {reads['rps']:.1f} req/s "
                      f"(p50 {reads['p50']:.1f} ms, p99 {reads['p99']:.1f} ms); with a PUT a second "
                      f"{mixed['rps']:.1f} req/s (p50 {mixed['p50']:.1f}, p99 {mixed['p99']:.1f} ms) "
                      f"= {ratios[-1]:.2f}; PUTs {len(writer.took)} p50 "
                      f"{pct(writer.took, 50) * 1000:.0f} ms p99 {pct(writer.took, 99) * 1000:.0f} ms "
                      f"statuses {sorted(set(writer.statuses))}; load {os.getloadavg()[0]:.1f}",
                      flush=True)  # fmt: skip
            summary[mode] = statistics.median(ratios)
        finally:
            proc.terminate()
            proc.wait(60)
            errors = [ln for ln in log.read_text().splitlines() if "Traceback" in ln]
            if errors:
                print(f"[{mode}] server log has {len(errors)} tracebacks: {log}")
    for mode, ratio in summary.items():
        print(f"{mode}: reads with a PUT a second / reads alone, median of rounds: {ratio:.2f}")
    print("load after:", os.getloadavg())


if __name__ == "__main__":
    main()

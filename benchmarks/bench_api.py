"""HTTP API load benchmark: gunicorn + the app vs the library alone, same queries, same run.

Usage::

    python -m benchmarks.bench_api --index /tmp/nq-bench --duration 20

Needs ``wrk`` (Debian package ``wrk``) and an index: by default the
100,000-passage Reuters index of ``benchmarks.bench_search`` (build it with
``python -m benchmarks.bench_search --index /tmp/nq-bench --min-passages 100000``).

The case is the *faceted search* of ``bench_search`` (``facets4``): the ten
newswire queries, top 10 hits with exact totals, highlights, and four facets
(person, org, place, date by month), as ``GET /v1/search?q=...&facet=...``.

Steps, all in one run on the same machine:
1. library: ``run_search`` in this process on a warm index (each query run
   once first), ``rounds`` x 10 calls; wall time per call (p50, p99, mean) and
   CPU time per call (``time.process_time``);
2. HTTP, one connection (``wrk -c1``): latency per request with nothing
   queued, compared with the library's wall time: the HTTP layer's overhead
   (Flask, marshmallow argument parsing, JSON, gunicorn, loopback TCP);
3. HTTP under load (``wrk -c N``, 2 threads): requests per second and
   p50/p99, compared with the ceiling the library's CPU time allows on the
   machine's cores (cores / library CPU seconds per query);
4. the same load with the response cache on (``response_cache_size``):
   repeated queries served from the per-worker cache keyed by generation;
5. library again, to see whether the machine drifted during the run;
6. ``--interleave`` rounds (default 5): the library on all cores, the API under
   load and floor + search under load, one after the other in each round, with
   the targets' ratios taken per round and reported as medians. The machine's
   speed drifts within minutes; adjacent slices share its conditions.

The server runs with the response cache off for steps 2-3 (every request
searches). wrk runs on the same cores as the server, so throughput figures
include the load generator's own CPU use.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

import requests

from benchmarks.memwatch import tree_anon, tree_cpu, tree_pids
from newsquarry.search.core.config import load_settings
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query.searching import run_search

ROOT = Path(__file__).resolve().parent.parent
try:  # the search benchmark's queries, so the two benchmarks measure the same thing
    from benchmarks.bench_search import FACETS4, QUERIES
except ImportError:  # pragma: no cover - kept in step with bench_search by hand
    QUERIES = ["oil prices", "interest rates", "trade deficit", "bank", "coffee",
               "wheat exports", "profit", "dollar", "stock market", "gold"]
    FACETS4 = ["person", "org", "place", "date"]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def faceted_requests(settings: dict) -> list[SearchRequest]:
    """The benchmark's case: the ten queries with the four facets, as library requests."""
    return [SearchRequest(q=q, facets=list(FACETS4),
                          time_limit=float(settings["search_time_limit"])) for q in QUERIES]


def library_times(store: WhooshStore, rounds: int) -> dict[str, float]:
    """Warm library latency of the faceted search, in milliseconds."""
    settings = load_settings()
    reqs = faceted_requests(settings)
    for r in reqs:  # warm: doc values, searcher, caches
        run_search(store, r, settings)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(rounds):
        for r in reqs:
            t0, c0 = time.perf_counter(), time.process_time()
            run_search(store, r, settings)
            wall.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    return {
        "p50": pct(wall, 50), "p99": pct(wall, 99), "mean": statistics.mean(wall),
        "cpu_mean": statistics.mean(cpu), "n": len(wall),
    }


def _library_worker(index: str, duration: float, start: object, out: object) -> None:
    """One process of ``library_parallel``: warm, wait for the others, search for ``duration``."""
    settings = load_settings()
    store = WhooshStore(index, create=False)
    reqs = faceted_requests(settings)
    for r in reqs:
        run_search(store, r, settings)
    start.wait()  # type: ignore[attr-defined]
    n, c0, t0 = 0, time.process_time(), time.perf_counter()
    while time.perf_counter() - t0 < duration:
        run_search(store, reqs[n % len(reqs)], settings)
        n += 1
    out.put((n, time.process_time() - c0, time.perf_counter() - t0))  # type: ignore[attr-defined]


def library_parallel(index: str, procs: int, duration: float) -> dict[str, float]:
    """The library alone on every core: ``procs`` processes searching at once, no HTTP.

    What the library itself achieves when all cores are busy (caches, memory
    bandwidth and the host's scheduling shared), i.e. the measured form of the
    ``cores / library CPU`` ceiling.
    """
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(procs), ctx.Queue()
    children = [ctx.Process(target=_library_worker, args=(index, duration, start, out))
                for _ in range(procs)]
    for child in children:
        child.start()
    got = [out.get(timeout=duration + 300) for _ in children]
    for child in children:
        child.join()
    queries = sum(n for n, _, _ in got)
    cpu = sum(c for _, c, _ in got)
    wall = max(w for _, _, w in got)
    return {"qps": queries / wall, "cpu_mean": cpu / queries * 1000, "queries": queries}


def paired_times(store: WhooshStore, url: str, rounds: int) -> dict[str, float]:
    """Library call and HTTP request for the same query, alternated, in milliseconds.

    On a shared machine, load comes and goes; alternating the two keeps them
    under the same conditions. The HTTP time includes the Python client's own
    cost (requests, keep-alive), so the overhead it shows is an upper bound.
    """
    settings = load_settings()
    session = requests.Session()
    pairs = [
        (req, url + path)
        for req, path in zip(faceted_requests(settings), search_paths(), strict=True)
    ]
    lib: list[float] = []
    http: list[float] = []
    for _ in range(rounds):
        for req, full in pairs:
            t0 = time.perf_counter()
            run_search(store, req, settings)
            t1 = time.perf_counter()
            resp = session.get(full)
            t2 = time.perf_counter()
            if resp.status_code != 200:
                raise RuntimeError(f"{full}: HTTP {resp.status_code}")
            lib.append((t1 - t0) * 1000)
            http.append((t2 - t1) * 1000)
    return {
        "lib_p50": pct(lib, 50), "http_p50": pct(http, 50),
        "lib_mean": statistics.mean(lib), "http_mean": statistics.mean(http),
        "overhead_p50": (pct(http, 50) - pct(lib, 50)) / pct(lib, 50) * 100,
        "overhead_mean": (statistics.mean(http) - statistics.mean(lib))
        / statistics.mean(lib) * 100,
    }


def search_paths() -> list[str]:
    return [
        "/v1/search?" + urlencode([("q", q)] + [("facet", f) for f in FACETS4]) for q in QUERIES
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``gunicorn -c api/gunicorn_conf.py api.wsgi:app`` on a free loopback port.

    ``app`` and ``env`` serve another WSGI app under the same settings (the floor).
    """

    def __init__(self, index: str, workers: int, threads: int, cache_size: int,
                 app: str = "newsquarry.api.wsgi:app", env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="nq-bench-api-", suffix=".log")
        env = dict(os.environ, NEWSQUARRY_INDEX=index, PYTHONPATH=str(ROOT),
                   NEWSQUARRY_RESPONSE_CACHE_SIZE=str(cache_size),
                   NEWSQUARRY_ACCESS_LOG=self.log.name + ".access", **(env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "api" / "gunicorn_conf.py"),
             "--bind", f"127.0.0.1:{self.port}", "--workers", str(workers),
             "--threads", str(threads), app],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if requests.get(self.url + "/health/ready", timeout=5).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("the server did not become ready")

    def warm(self, paths: list[str], per_worker: int = 3) -> None:
        """Hit every path often enough that each worker has opened its searcher and caches."""
        from concurrent.futures import ThreadPoolExecutor

        urls = [self.url + p for p in paths] * per_worker * 2
        with ThreadPoolExecutor(4) as pool:
            codes = list(pool.map(lambda u: requests.get(u, timeout=120).status_code, urls))
        if set(codes) != {200}:
            raise RuntimeError(f"warm-up got statuses {sorted(set(codes))}")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by the master and its worker processes."""
        return tree_cpu(self.proc.pid)

    def anon_mb(self) -> float:
        """``Anonymous`` memory (MB) of the master and its workers (mapped index files excluded)."""
        return tree_anon(self.proc.pid, "Anonymous") / 2**20

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        access = Path(self.log.name + ".access")
        if access.exists():
            access.unlink()


LUA = """
local paths = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i %% #paths) + 1])
end
"""
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s)$", text.strip())
    if not m:
        raise ValueError(f"cannot read wrk latency {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def run_wrk(server: Server, paths: list[str], connections: int, threads: int,
            duration: int) -> dict[str, float]:
    """Run wrk against the paths (cycled): requests/s, latency percentiles (ms), and the
    server's CPU milliseconds per request."""
    url = server.url
    cpu0 = server.cpu_seconds()
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as fh:
        fh.write(LUA % ", ".join(f'"{p}"' for p in paths))
        script = fh.name
    try:
        proc = subprocess.Popen(
            ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s",
             "--timeout", "30s", "--latency", "-s", script, url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(duration / 2)
        split = connections_per_worker(server)
        out, err = proc.communicate()
        if proc.returncode:
            raise RuntimeError(f"wrk failed: {err}")
    finally:
        os.unlink(script)
    lat = dict(re.findall(r"^\s*(50|75|90|99)%\s+(\S+)\s*$", out, re.M))
    if len(lat) < 4:
        raise RuntimeError("cannot read wrk's latency distribution:\n" + out)
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    avg = re.search(r"Latency\s+(\S+)", out).group(1)
    errors = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    count = int(re.search(r"(\d+) requests in", out).group(1))
    cpu_ms = (server.cpu_seconds() - cpu0) * 1000 / max(count, 1)
    return {
        "requests": count, "cpu_ms": cpu_ms,
        "rps": rps, "mean": _ms(avg), "p50": _ms(lat["50"]), "p90": _ms(lat["90"]),
        "p99": _ms(lat["99"]), "errors": int(errors.group(1)) if errors else 0,
        "split": split,
    }


def connections_per_worker(server: Server) -> list[int]:
    """Open connections to the server's port per worker process, fewest first (``ss``).

    Kept-alive connections stay with the worker that accepted them, so a skewed
    split (0/8) halves what two workers can do whatever the code.
    """
    try:
        out = subprocess.run(
            ["ss", "-tnpH", "state", "established", f"( sport = :{server.port} )"],
            capture_output=True, text=True, timeout=10,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    counts = {pid: 0 for pid in tree_pids(server.proc.pid) if pid != server.proc.pid}
    for pid in re.findall(r"pid=(\d+)", out):
        if int(pid) in counts:
            counts[int(pid)] += 1
    return sorted(counts.values())


def measure(
    args: argparse.Namespace, paths: list[str], label: str, warm: bool = True,
    single: bool = False, **server_kw: object,
) -> tuple[dict[str, float] | None, dict[str, float]]:
    """Start a server, (warm it,) run wrk at 1 connection if ``single``, then under load."""
    server = Server(args.index, args.workers, args.threads, **server_kw)  # type: ignore[arg-type]
    try:
        if warm:
            server.warm(paths)
        one = run_wrk(server, paths, 1, 1, args.duration) if single else None
        if one is not None:
            print(f"{label} c=1: {one}", file=sys.stderr)
        many = run_wrk(server, paths, args.connections, 2, args.duration)
        print(f"{label} c={args.connections}: {many}", file=sys.stderr)
        return one, many
    finally:
        server.stop()


def interleaved(args: argparse.Namespace, paths: list[str], body: str,
                rounds: int) -> list[dict[str, float]]:
    """``rounds`` x (library on all cores, the API, floor + search), each for ``duration``.

    The machine's speed drifts by tens of percent within minutes (other jobs on
    the host), so the API and the bare stack are compared with the library in
    adjacent slices of the same minute, and the ratios are taken per round.
    Both servers are started once and idle while the others run.
    """
    cores = os.cpu_count() or 1
    api = Server(args.index, args.workers, args.threads, cache_size=0)
    bare = Server(args.index, args.workers, args.threads, cache_size=0,
                  app="benchmarks.floor_app:app",
                  env={"NQ_FLOOR_BODY": body, "NQ_FLOOR_SEARCH": "1"})
    rows = []
    try:
        api.warm(paths)
        bare.warm(paths)
        for k in range(rounds):
            lib = library_parallel(args.index, cores, args.duration)
            got = run_wrk(api, paths, args.connections, 2, args.duration)
            fs = run_wrk(bare, paths, args.connections, 2, args.duration)
            row = {
                "lib_qps": lib["qps"], "lib_cpu": lib["cpu_mean"],
                "api_rps": got["rps"], "api_cpu": got["cpu_ms"],
                "p99_p50": got["p99"] / got["p50"], "api_errors": got["errors"],
                "bare_rps": fs["rps"], "bare_cpu": fs["cpu_ms"],
                "throughput": got["rps"] / lib["qps"], "overhead": got["cpu_ms"] / lib["cpu_mean"] - 1,
                "bare_throughput": fs["rps"] / lib["qps"], "bare_overhead": fs["cpu_ms"] / lib["cpu_mean"] - 1,
                "ours_ms": got["cpu_ms"] - fs["cpu_ms"],
                "api_split": got["split"], "bare_split": fs["split"],
            }
            print(f"interleaved round {k + 1}: {row}", file=sys.stderr)
            rows.append(row)
    finally:
        api.stop()
        bare.stop()
    return rows


def interleaved_table(rows: list[dict[str, float]], args: argparse.Namespace) -> str:
    """Medians (and ranges) of the per-round ratios of ``interleaved``."""
    def cell(key: str, fmt: str) -> str:
        vals = [r[key] for r in rows]
        med = statistics.median(vals)
        return f"{fmt.format(med)} ({fmt.format(min(vals))} to {fmt.format(max(vals))})"

    return f"""
Interleaved: {len(rows)} rounds of {args.duration} s each (library on all cores, then the API,
then floor + search); median (range) of the per-round figures:

| Measure | Median (range) |
|---|---|
| Library alone on all cores: queries/s | {cell("lib_qps", "{:.0f}")} |
| Library alone on all cores: CPU per query | {cell("lib_cpu", "{:.2f}")} ms |
| API ({args.workers} x {args.threads}), {args.connections} connections: requests/s | {cell("api_rps", "{:.0f}")} |
| API: server CPU per request | {cell("api_cpu", "{:.2f}")} ms |
| **API throughput / library queries/s (target 85%)** | {cell("throughput", "{:.0%}")} |
| **API CPU over the library's CPU (target under +15%)** | {cell("overhead", "{:+.0%}")} |
| **API p99 / p50 (target under 4)** | {cell("p99_p50", "{:.1f}")}x |
| Floor + search (gunicorn + Flask + the library, no code of ours): requests/s | {cell("bare_rps", "{:.0f}")} |
| Floor + search: throughput / library; CPU over the library | {cell("bare_throughput", "{:.0%}")}; {cell("bare_overhead", "{:+.0%}")} |
| Our layer: API CPU - floor + search CPU per request | {cell("ours_ms", "{:.2f}")} ms |
| Non-2xx responses | {sum(r["api_errors"] for r in rows)} |
| Connections per worker in each round: API; floor + search | {" ".join("/".join(map(str, r["api_split"])) for r in rows)}; {" ".join("/".join(map(str, r["bare_split"])) for r in rows)} |
"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default="/tmp/nq-bench")
    ap.add_argument("--duration", type=int, default=20, help="Seconds per wrk run")
    ap.add_argument("--connections", type=int, default=8, help="Connections under load")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=10, help="Library rounds of ten queries")
    ap.add_argument("--interleave", type=int, default=5,
                    help="Rounds of library / API / floor + search, adjacent in time (0: none)")
    args = ap.parse_args(argv)

    cores = os.cpu_count() or 1
    store = WhooshStore(args.index, create=False)
    stats = store.stats()
    print(f"index: {stats['passages']} passages, {stats['articles']} articles; "
          f"{cores} cores; {args.workers} workers x {args.threads} threads", file=sys.stderr)

    lib = library_times(store, args.rounds)
    print(f"library: {lib}", file=sys.stderr)
    lib_all = library_parallel(args.index, cores, args.duration)
    print(f"library on {cores} cores: {lib_all}", file=sys.stderr)
    paths = search_paths()

    server = Server(args.index, args.workers, args.threads, cache_size=0)
    try:
        server.warm(paths)
        body_file = tempfile.NamedTemporaryFile(prefix="nq-floor-", suffix=".json")
        recorded = requests.get(server.url + paths[0], timeout=60).content
        body_file.write(recorded)
        body_file.flush()
        paired = paired_times(store, server.url, args.rounds)
        print(f"paired: {paired}", file=sys.stderr)
        single = run_wrk(server, paths, 1, 1, args.duration)
        print(f"http c=1: {single}", file=sys.stderr)
        loaded = run_wrk(server, paths, args.connections, 2, args.duration)
        print(f"http c={args.connections}: {loaded}", file=sys.stderr)
        server_anon = server.anon_mb()
    finally:
        server.stop()

    _, cached = measure(args, paths, "http cached", cache_size=512)
    # the floor: gunicorn + Flask answering a recorded answer of the same size, no work of ours
    floor_env = {"NQ_FLOOR_BODY": body_file.name}
    floor_single, floor = measure(
        args, paths, "floor", warm=False, single=True, cache_size=0,
        app="benchmarks.floor_app:app", env=floor_env,
    )  # fmt: skip
    # the floor plus the library's search on each request (q and facets as given, no
    # validation, the recorded answer sent): what the stack costs with the search in it
    _, bare = measure(
        args, paths, "floor + search", cache_size=0,
        app="benchmarks.floor_app:app", env={**floor_env, "NQ_FLOOR_SEARCH": "1"},
    )  # fmt: skip
    rounds = interleaved(args, paths, body_file.name, args.interleave) if args.interleave else []
    body_file.close()

    lib_after = library_times(store, args.rounds)
    print(f"library after: {lib_after}", file=sys.stderr)

    ceiling = cores / (lib["cpu_mean"] / 1000)
    overhead_mean = (single["mean"] - lib["mean"]) / lib["mean"] * 100
    overhead_p50 = (single["p50"] - lib["p50"]) / lib["p50"] * 100
    load = os.getloadavg()
    print(f"""
Load average during the run (other jobs on the machine): {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}

| Measure (faceted search, {stats['passages']:,} passages) | Value |
|---|---|
| Library wall per query: p50 / p99 / mean (before) | {lib['p50']:.1f} / {lib['p99']:.1f} / {lib['mean']:.1f} ms |
| Library wall per query: p50 / p99 / mean (after) | {lib_after['p50']:.1f} / {lib_after['p99']:.1f} / {lib_after['mean']:.1f} ms |
| Library CPU per query (mean) | {lib['cpu_mean']:.1f} ms |
| HTTP, 1 connection: p50 / p99 / mean | {single['p50']:.1f} / {single['p99']:.1f} / {single['mean']:.1f} ms |
| HTTP overhead over the library, wrk c=1 vs library runs (p50 / mean) | {overhead_p50:+.1f}% / {overhead_mean:+.1f}% |
| Paired, alternating library call and HTTP request: library / HTTP p50 | {paired['lib_p50']:.1f} / {paired['http_p50']:.1f} ms |
| Paired HTTP overhead (p50 / mean) | {paired['overhead_p50']:+.1f}% / {paired['overhead_mean']:+.1f}% |
| HTTP, {args.connections} connections: requests/s (connections per worker) | {loaded['rps']:.1f} ({"/".join(map(str, loaded["split"]))}) |
| HTTP, {args.connections} connections: p50 / p99 (p99/p50) | {loaded['p50']:.1f} / {loaded['p99']:.1f} ms ({loaded['p99'] / loaded['p50']:.2f}x) |
| Ceiling from library CPU ({cores} cores / CPU per query) | {ceiling:.1f} requests/s |
| Measured throughput / ceiling (machine shared with other jobs) | {loaded['rps'] / ceiling * 100:.0f}% |
| Server CPU per request under load (gunicorn master + workers) | {loaded['cpu_ms']:.1f} ms |
| CPU-bound throughput: {cores} cores / server CPU per request | {cores / (loaded['cpu_ms'] / 1000):.1f} requests/s |
| CPU-bound throughput / ceiling (library CPU / server CPU per request) | {lib['cpu_mean'] / loaded['cpu_ms'] * 100:.0f}% |
| Server CPU per request, 1 connection | {single['cpu_ms']:.1f} ms |
| Cached, {args.connections} connections: requests/s | {cached['rps']:.1f} |
| Cached, {args.connections} connections: p50 / p99 | {cached['p50']:.2f} / {cached['p99']:.2f} ms |
| Cached: server CPU per request | {cached['cpu_ms']:.2f} ms |
| Server anonymous memory after the load (master + {args.workers} workers x {args.threads} threads) | {server_anon:.0f} MB |
| Non-2xx responses (single / load / cached) | {single['errors']} / {loaded['errors']} / {cached['errors']} |
| Floor (gunicorn + Flask sending a recorded {len(recorded):,}-byte answer): server CPU per request, 1 / {args.connections} connections | {floor_single['cpu_ms']:.2f} / {floor['cpu_ms']:.2f} ms |
| Floor: requests/s at {args.connections} connections; p50 | {floor['rps']:.0f}; {floor['p50']:.2f} ms |
| Floor as a share of the library's CPU per query | {floor['cpu_ms'] / lib['cpu_mean'] * 100:.0f}% |
| Our layer (server CPU - library CPU - floor), {args.connections} connections | {loaded['cpu_ms'] - lib['cpu_mean'] - floor['cpu_ms']:.2f} ms ({(loaded['cpu_ms'] - lib['cpu_mean'] - floor['cpu_ms']) / lib['cpu_mean'] * 100:+.0f}% of the library) |
| Floor + library search (no validation, no body building), 8 connections: CPU per request; requests/s | {bare["cpu_ms"]:.2f} ms; {bare["rps"]:.0f} |
| The library inside a server worker (floor + search - floor) vs in this process | {bare["cpu_ms"] - floor["cpu_ms"]:.2f} vs {lib["cpu_mean"]:.2f} ms |
| Our layer measured directly (server CPU - floor + search CPU), 8 connections | {loaded["cpu_ms"] - bare["cpu_ms"]:.2f} ms ({(loaded["cpu_ms"] - bare["cpu_ms"]) / lib["cpu_mean"] * 100:+.0f}% of the library) |
| Library alone on all {cores} cores ({cores} processes searching at once): queries/s; CPU per query | {lib_all["qps"]:.0f}; {lib_all["cpu_mean"]:.2f} ms |
| Measured ceiling: HTTP requests/s / library queries/s, both on all cores | {loaded['rps'] / lib_all['qps'] * 100:.0f}% |
| HTTP overhead against the library under the same all-core load (server CPU per request / library CPU per query) | {(loaded['cpu_ms'] / lib_all['cpu_mean'] - 1) * 100:+.0f}% |
| Floor + search against the same (no code of ours) | {bare['rps'] / lib_all['qps'] * 100:.0f}% of the queries/s; {(bare['cpu_ms'] / lib_all['cpu_mean'] - 1) * 100:+.0f}% CPU |
| Best throughput any app on this stack reaches: 2 cores / (library + floor CPU) vs ceiling | {lib['cpu_mean'] / (lib['cpu_mean'] + floor['cpu_ms']) * 100:.0f}% |
""")
    if rounds:
        print(interleaved_table(rounds, args))


if __name__ == "__main__":
    main()

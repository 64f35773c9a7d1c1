"""Indexing benchmark: full pipeline vs spaCy's own ``nlp.pipe``, same texts, same run.

Each measurement runs in a fresh subprocess (so memory peaks and CPU times do
not leak between runs), and runs are interleaved (nlp, index, nlp, index, ...)
so that the noise of a shared machine hits both alike; medians are reported.

Modes:
- ``nlp``: ``nlp.pipe(texts, n_process=P, batch_size=B)`` over the article
  texts, docs consumed and dropped: the NLP-only floor for the same pipeline.
- ``enrich``: ``Enricher(P, B).enrich`` (NLP + entity/quote rules), no writing.
- ``index``: ``index_articles`` into a new index (read, hash check, split,
  enrich, write, commit), as ``newsquarry index`` runs it.
- ``search``: ``store.search`` latency over the index kept in
  ``--index-dir`` (fixed queries, plain and with 3 facets), and again after
  merging it into one segment with ``--optimize``.
- ``reindex``: the same corpus again over the index left by ``index
  --index-dir DIR``: everything is unchanged, so this measures how fast a
  resumed run skips committed articles (read, hash, look-up), and the cost
  of one content-hash look-up.
- ``clusterN`` (``--cluster`` runs ``index,cluster1,cluster2``; ``clusterNq``
  starts the cluster with Dask's profiler off and its timers slowed, ``QUIET_DASK``): ``index``
  with enrichment on a Dask cluster started for the run on this machine (a
  ``dask scheduler`` and N ``dask worker --nthreads 1`` processes, each with
  its nanny, on loopback; the model loaded on the workers before the clock
  starts, as the local pool's parent loads it before forking). CPU counts
  every process of the cluster too.

For ``index`` and ``clusterN`` runs the writer's share is recorded: wall and
CPU seconds spent inside ``store.writer()`` (writing and committing), so the
single writer's ceiling (articles/s it could absorb with enrichment free)
reads off as 1000 / writer CPU ms per article.

Per run: wall time, CPU seconds (the process and all its reaped workers,
less the CPU of the memory sampler's own /proc reads, ``instrument_cpu_s``),
articles/s and words/s, peak memory of the whole process tree (sum of PSS and
of RSS, sampled from /proc every 0.5 s), the largest single process
(``ru_maxrss``), and for ``index`` the index size and segment count.

Usage::

    python -m benchmarks.bench_index ../shared/corpora/reuters21578.jsonl \\
        --processes 2 --modes nlp,index --repeat 1 --out bench.jsonl
    python -m benchmarks.bench_index ../shared/corpora/reuters21578.jsonl \\
        --limit 1000 --cluster --repeat 3 --out cluster.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from benchmarks.memwatch import TreeMemory, tree_anon, tree_cpu, tree_memory
from newsquarry.search.core.config import SETTINGS_BY_NAME

DEFAULT_COMMIT_EVERY = SETTINGS_BY_NAME["commit_every"].default
DEFAULT_PREFETCH = 32  # ``Enricher``'s default (not imported here: that loads spaCy)

QUERIES = ["cocoa", "oil prices", "interest rates", "bank", "trade deficit", "wheat export",
           "profit", "\"central bank\"", "opec output", "dollar yen"]  # fmt: skip


def query_ms(index_dir: str, rounds: int = 5) -> float:
    """Median milliseconds of a top-10 Whoosh query on the passage text (fixed query set)."""
    from whoosh.qparser import QueryParser

    from newsquarry.search.engine.store import WhooshStore

    store = WhooshStore(index_dir, create=False)
    s = store.ix.searcher()
    parser = QueryParser("text", store.ix.schema)
    times = []
    for _ in range(rounds):
        for q in QUERIES:
            t0 = time.perf_counter()
            s.search(parser.parse(q), limit=10)
            times.append((time.perf_counter() - t0) * 1000)
    s.close()
    return round(statistics.median(times), 2)


class Counter:
    """Counts articles and words flowing through an article stream."""

    def __init__(self) -> None:
        self.articles = 0
        self.words = 0

    def wrap(self, items: Iterator[Any]) -> Iterator[Any]:
        for item in items:
            text = getattr(item, "text", None)
            if text is not None:
                self.articles += 1
                self.words += len(text.split())
            yield item


class _NoEnricher:
    """Fails loudly if a ``reindex`` run finds anything to enrich."""

    def enrich(self, items: Any) -> Iterator[Any]:
        for article, _ in items:
            raise RuntimeError(f"{article.id} was not in the index unchanged")
        yield from ()


def _articles(corpus: str, limit: int | None) -> Iterator[Any]:
    from newsquarry.search.ingest.readers import read_paths

    if not Path(corpus).exists():  # a wrong path would otherwise "index" 0 articles quietly
        raise SystemExit(f"bench_index: no such corpus: {corpus}")
    items = read_paths([corpus])
    return islice(items, limit) if limit else items


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its reaped children."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def search_ms(index_dir: str, rounds: int = 3) -> dict[str, float]:
    """Median ms of ``store.search`` over the fixed queries, plain and with 3 facets."""
    from newsquarry.search.core.requests import SearchRequest
    from newsquarry.search.engine.store import WhooshStore

    store = WhooshStore(index_dir, create=False)
    out: dict[str, float] = {"segments": store.stats()["segments"]}
    kinds = {
        "search_ms": lambda q: SearchRequest(q=q),
        "facets_ms": lambda q: SearchRequest(q=q, facets=["person", "org", "place"]),
    }
    for name, make in kinds.items():
        store.search(make("warmup"))  # opens the searcher and its per-segment tables
        times = []
        for _ in range(rounds):
            for q in QUERIES:
                t0 = time.perf_counter()
                store.search(make(q))
                times.append((time.perf_counter() - t0) * 1000)
        out[name] = round(statistics.median(times), 1)
    store.close()
    return out


def _dir_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file())


def _self_cpu() -> float:
    """CPU seconds of this process alone (counted by ``tree_cpu`` too)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime


# Dask's periodic work cut down (``clusterNq`` modes, docs/scaling.md): the worker's
# statistical profiler (a stack sample of the running task every 10 ms), the event
# loop health check (every 20 ms in every process) and the memory and system monitors
QUIET_DASK = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
}


class LocalDaskCluster:
    """A scheduler and ``n`` single-threaded workers on loopback, children of this process."""

    def __init__(self, n: int, tmp: str, env: dict[str, str] | None = None) -> None:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{port}"
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []
        root = str(Path(__file__).resolve().parent.parent)
        self.env = {**os.environ, "PYTHONPATH": root, "PYTHONWARNINGS": "ignore", **(env or {})}
        self._spawn("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                    "--no-dashboard")  # fmt: skip
        for i in range(n):
            self._spawn(f"worker{i}", "worker", self.address, "--nthreads", "1",
                        "--no-dashboard", "--local-directory", f"{tmp}/w{i}")  # fmt: skip

    def _spawn(self, name: str, *args: str) -> None:
        log = Path(self.tmp, f"{name}.log").open("w")
        self.procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                                           stderr=subprocess.STDOUT, env=self.env))  # fmt: skip

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of the scheduler and of the workers (with their nannies)."""
        return {
            "scheduler": tree_cpu(self.procs[0].pid),
            "workers": sum(tree_cpu(p.pid) for p in self.procs[1:]),
        }

    def stop(self) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)
        shutil.rmtree(self.tmp, ignore_errors=True)  # the processes' logs and spill folders


def _timed_store(index_dir: str) -> Any:
    """A ``WhooshStore`` that adds up the wall and CPU time spent in ``writer()`` (write + commit)."""
    from contextlib import contextmanager

    from newsquarry.search.engine.store import WhooshStore

    class TimedStore(WhooshStore):
        write_wall = 0.0
        write_cpu = 0.0

        @contextmanager
        def writer(self, timeout: float | None = None) -> Iterator[Any]:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                with super().writer(timeout) as session:
                    yield session
            finally:
                self.write_wall += time.perf_counter() - t0
                self.write_cpu += time.thread_time() - c0

    return TimedStore(index_dir)


def run_one(args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in this process (called in a subprocess by ``main``)."""
    from newsquarry.search.ingest.enrich.nlp import load_nlp

    spec = args.worker[7:] if args.worker.startswith("cluster") else ""
    workers, quiet = int(spec.rstrip("q") or 0), spec.endswith("q")
    # loading (~2.5 s) is excluded from every mode alike (cluster: on the workers, below)
    nlp = None if workers else load_nlp()
    executor = cluster = None
    if workers:
        from newsquarry.search.ingest.enrich.cluster import DaskExecutor, enrichment_fingerprint

        cluster = LocalDaskCluster(workers, tempfile.mkdtemp(prefix="bench-dask-"),
                                   env=QUIET_DASK if quiet else None)  # fmt: skip
        executor = DaskExecutor(cluster.address, preload=load_nlp, prefetch=args.prefetch,
                                fingerprint=enrichment_fingerprint)  # fmt: skip
        deadline = time.monotonic() + 300
        while True:  # connect once the scheduler listens, then wait for every worker
            try:
                executor.start()
                break
            except Exception:  # noqa: BLE001 - not listening yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        while len(executor.client.nthreads()) < workers:
            time.sleep(0.2)
        executor.close()
        executor.start()  # the plugin loads the model on every worker before the clock starts
    count = Counter()
    stream = count.wrap(_articles(args.corpus, args.limit))
    result: dict[str, Any] = {
        "mode": args.worker,
        "processes": args.processes,
        "batch_size": args.batch_size,
        "prefetch": args.prefetch,
        "backend": args.backend,
        "commit_every": args.commit_every,
    }
    index_dir = None
    # reaped children (the pool's workers) + live descendants (a cluster's processes)
    cpu0, self0 = _cpu() + tree_cpu() - _self_cpu(), _self_cpu()
    probe_cpu = [0.0]  # CPU of the timeline's /proc reads at commits (the instrument, not the work)
    cluster_cpu0 = cluster.cpu() if cluster else {}
    with TreeMemory() as mem:
        t0 = time.perf_counter()
        if args.worker == "nlp":
            texts = (a.text for a in stream if hasattr(a, "text"))
            for _ in nlp.pipe(texts, n_process=args.processes, batch_size=args.batch_size):
                pass
        elif args.worker == "enrich":
            from newsquarry.search.ingest.enrich import Enricher
            from newsquarry.search.ingest.passages import split_passages

            enricher = Enricher(
                n_process=args.processes,
                batch_size=args.batch_size,
                prefetch=args.prefetch,
                backend=args.backend,
            )
            pairs = ((a, split_passages(a)) for a in stream if hasattr(a, "text"))
            for _ in enricher.enrich(pairs):
                pass
        elif args.worker == "search":
            # query latency over a kept index, and again after optimize if asked
            result["before"] = search_ms(args.index_dir)
            if args.optimize:
                from newsquarry.search.engine.store import WhooshStore
                from newsquarry.search.ingest.indexer import optimize

                result["optimize"] = optimize(WhooshStore(args.index_dir, create=False))
                result["after"] = search_ms(args.index_dir)
        elif args.worker == "reindex":
            # the same corpus again over the index kept by an ``index`` run: all
            # unchanged, so this is the cost of resuming past committed articles
            from newsquarry.search.engine.store import WhooshStore
            from newsquarry.search.ingest.indexer import index_articles

            store = WhooshStore(args.index_dir, create=False)
            result["segments"] = store.stats()["segments"]
            report = index_articles(store, stream, enricher=_NoEnricher())
            result["unchanged"] = len(report.unchanged)
            ids = report.unchanged[:5000]
            t1 = time.perf_counter()
            for article_id in ids:
                store.content_hash(article_id)
            result["hash_lookup_ms"] = round((time.perf_counter() - t1) * 1000 / len(ids), 3)
        else:
            from newsquarry.search.ingest.enrich import Enricher
            from newsquarry.search.ingest.indexer import index_articles

            index_dir = args.index_dir or tempfile.mkdtemp(prefix="bench-index-")
            store = _timed_store(index_dir)
            timeline: list[dict[str, Any]] = []
            cpu_base = _cpu()

            def at_commit(progress: Any, report: Any) -> None:
                c0 = time.thread_time()
                _at_commit(progress)
                probe_cpu[0] += time.thread_time() - c0

            def _at_commit(progress: Any) -> None:
                if progress.commits > len(timeline):
                    rss, pss = tree_memory()
                    timeline.append({
                        "articles": progress.done,
                        "words": progress.words,
                        "wall_s": round(time.perf_counter() - t0, 2),
                        "cpu_s": round(tree_cpu() + _cpu() - cpu_base - _self_cpu(), 2),
                        "pss_mb": round(pss / 2**20),
                        "anon_mb": round(tree_anon() / 2**20),
                        "rss_mb": round(rss / 2**20),
                        "index_mb": round(_dir_bytes(index_dir) / 2**20, 1),
                    })  # fmt: skip

            enricher = Enricher(
                n_process=args.processes,
                batch_size=args.batch_size,
                prefetch=args.prefetch,
                backend=args.backend,
                executor=executor,
            )
            report = index_articles(store, stream, enricher=enricher,
                                    commit_every=args.commit_every,
                                    on_progress=at_commit)  # fmt: skip
            result["passages"] = report.passages
            result["timeline"] = timeline
            result["write_wall_s"] = round(store.write_wall, 2)
            result["write_cpu_s"] = round(store.write_cpu, 2)
        wall = time.perf_counter() - t0
    # the memory sampler and the commit probes run in this process: their CPU
    # (reading /proc/PID/smaps_rollup of every process, more of them and for
    # longer in a cluster run) is the instrument's, not the indexing's
    instrument = mem.cpu_s + probe_cpu[0]
    cpu = _cpu() + tree_cpu() - _self_cpu() - cpu0 - instrument
    if workers:
        result["workers"] = workers
        result["dask_timers"] = "quiet" if quiet else "default"
        result["cluster_cpu_s"] = {
            k: round(v - cluster_cpu0[k], 2) for k, v in cluster.cpu().items()
        }
        executor.close()
        cluster.stop()
    result["cpu_parent_s"] = round(_self_cpu() - self0 - instrument, 2)
    result["instrument_cpu_s"] = round(instrument, 2)
    result.update(
        wall_s=round(wall, 2),
        cpu_s=round(cpu, 2),
        articles=count.articles,
        words=count.words,
        articles_per_s=round(count.articles / wall, 1),
        words_per_s=round(count.words / wall),
        peak_pss_mb=round(mem.peak_pss / 2**20),
        peak_rss_mb=round(mem.peak_rss / 2**20),
        maxrss_self_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        maxrss_child_mb=round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    )
    if index_dir and (args.worker == "index" or workers):
        from newsquarry.search.engine.store import WhooshStore

        stats = WhooshStore(index_dir, create=False).stats()
        result.update(index_mb=round(stats["size_bytes"] / 2**20, 1),
                      segments=stats["segments"])  # fmt: skip
        result["query_ms"] = query_ms(index_dir)
        if args.optimize:
            from newsquarry.search.ingest.indexer import optimize

            t0 = time.perf_counter()
            optimize(WhooshStore(index_dir, create=False))
            result["optimize_s"] = round(time.perf_counter() - t0, 1)
            stats = WhooshStore(index_dir, create=False).stats()
            result["optimized_index_mb"] = round(stats["size_bytes"] / 2**20, 1)
            result["optimized_query_ms"] = query_ms(index_dir)
        if not args.index_dir:
            shutil.rmtree(index_dir, ignore_errors=True)
    return result


def _label(row: dict[str, Any]) -> str:
    """The mode, plus the settings that differ from the defaults."""
    label = row["mode"]
    if row["mode"] in ("index", "enrich"):
        if row.get("backend", "pool") != "pool":
            label += f" backend={row['backend']}"
        prefetch = row.get("prefetch", 8)  # rows saved before these were recorded
        if prefetch != DEFAULT_PREFETCH:
            label += f" prefetch={prefetch}"
        commit_every = row.get("commit_every", 500)
        if row["mode"] == "index" and commit_every != DEFAULT_COMMIT_EVERY:
            label += f" commit_every={commit_every}"
    return label


def summarize(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of medians per mode, with ratios to ``nlp``."""
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_mode.setdefault(_label(r), []).append(r)
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "cpu_s")}
           for m, rs in by_mode.items()}  # fmt: skip
    base = med.get("nlp")
    lines = [
        (
            "| mode | runs | wall s (median) | CPU s | wall / nlp | CPU / nlp | articles/s "
            "| words/s | peak PSS MB | peak RSS MB | index MB | segments |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, rs in by_mode.items():
        m = med[mode]
        ratio_w = f"{m['wall_s'] / base['wall_s']:.2f}" if base else "-"
        ratio_c = f"{m['cpu_s'] / base['cpu_s']:.2f}" if base else "-"
        last = rs[-1]
        aps = statistics.median(r["articles_per_s"] for r in rs)
        wps = statistics.median(r["words_per_s"] for r in rs)
        pss = max(r["peak_pss_mb"] for r in rs)
        rss = max(r["peak_rss_mb"] for r in rs)
        lines.append(
            f"| {mode} | {len(rs)} | {m['wall_s']:.1f} | {m['cpu_s']:.1f} | {ratio_w} | "
            f"{ratio_c} | {aps:.1f} | {wps:.0f} | {pss} | {rss} | "
            f"{last.get('index_mb', '-')} | {last.get('segments', '-')} |"
        )
    return "\n".join(lines)


def cluster_table(rows: list[dict[str, Any]]) -> str:
    """Index runs on the local pool and on Dask clusters: medians, ratios to the pool, the writer.

    CPU ms per article is the load-independent comparison (the cluster's
    scheduler, nannies and workers included); the writer's share is its wall
    time inside ``store.writer()`` over the run's wall time, and its ceiling
    the articles per second it could write with enrichment free.
    """
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["mode"] == "index":
            by_mode.setdefault(f"local pool, {r['processes']} processes", []).append(r)
        elif r["mode"].startswith("cluster"):
            n = r["workers"]
            quiet = ", profiler off, slow timers" if r.get("dask_timers") == "quiet" else ""
            by_mode.setdefault(f"Dask, {n} worker{'s' if n > 1 else ''}{quiet}", []).append(r)

    def med(rs: list[dict[str, Any]], key: Any) -> float:
        return statistics.median(key(r) for r in rs)

    base = next((rs for mode, rs in by_mode.items() if mode.startswith("local")), None)
    base_cpu = med(base, lambda r: r["cpu_s"] / r["articles"]) if base else None
    base_wall = med(base, lambda r: r["wall_s"]) if base else None
    lines = [
        "| mode | runs | wall s | CPU s | CPU ms/article | CPU / pool | wall / pool | writer share "
        "of wall | writer CPU ms/article | writer ceiling articles/s | CPU s: this process "
        "/ scheduler / workers | peak PSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode, rs in by_mode.items():
        cpu_ms = med(rs, lambda r: 1000 * r["cpu_s"] / r["articles"])
        wall = med(rs, lambda r: r["wall_s"])
        share = med(rs, lambda r: r.get("write_wall_s", 0) / r["wall_s"])
        w_ms = med(rs, lambda r: 1000 * r.get("write_cpu_s", 0) / r["articles"])
        ratio_c = f"{cpu_ms / 1000 / base_cpu:.3f}" if base_cpu else "-"
        ratio_w = f"{wall / base_wall:.2f}" if base_wall else "-"
        ceiling = f"{1000 / w_ms:.0f}" if w_ms else "-"
        parent = med(rs, lambda r: r["cpu_parent_s"])
        sched = med(rs, lambda r: r.get("cluster_cpu_s", {}).get("scheduler", 0.0))
        work = med(
            rs,
            lambda r: (
                r["cpu_s"] - r["cpu_parent_s"] - r.get("cluster_cpu_s", {}).get("scheduler", 0.0)
            ),
        )
        lines.append(
            f"| {mode} | {len(rs)} | {wall:.1f} | {med(rs, lambda r: r['cpu_s']):.1f} | "
            f"{cpu_ms:.1f} | {ratio_c} | {ratio_w} | {100 * share:.0f}% | {w_ms:.2f} | "
            f"{ceiling} | {parent:.1f} / {sched:.1f} / {work:.1f} | "
            f"{max(r['peak_pss_mb'] for r in rs)} |"
        )
    return "\n".join(lines)


def growth_table(
    row: dict[str, Any],
    marks: tuple[int, ...] = (1000, 2000, 4000, 8000, 16000, 32000, 48000, 64000, 128000),
) -> str:
    """From one ``index`` run's per-commit timeline: memory and throughput as the index grows.

    One line per mark (articles committed): the tree's PSS then, the index
    size, and the throughput over the stretch since the previous mark (wall
    articles/s, and CPU milliseconds per article, which noise on a shared
    machine disturbs much less).
    """
    tl = row["timeline"]
    lines = [
        "| articles | PSS MB | of which anonymous MB | RSS MB | index MB | stretch "
        "| articles/s (wall) | CPU ms/article |",
        "|---|---|---|---|---|---|---|---|",
    ]
    prev = {"articles": 0, "wall_s": 0.0, "cpu_s": 0.0}
    for mark in marks:
        point = next((p for p in tl if p["articles"] >= mark), None)
        if point is None:
            break
        if point["articles"] <= prev["articles"]:  # two marks met by the same point
            continue
        n = point["articles"] - prev["articles"]
        wall = point["wall_s"] - prev["wall_s"]
        cpu = point["cpu_s"] - prev["cpu_s"]
        lines.append(
            f"| {point['articles']} | {point['pss_mb']} | {point.get('anon_mb', '-')} | "
            f"{point['rss_mb']} | "
            f"{point.get('index_mb', '-')} | {prev['articles']}-{point['articles']} | "
            f"{n / wall:.1f} | {1000 * cpu / n:.0f} |"
        )
        prev = point
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", help="a .jsonl file (or any path newsquarry can index)")
    ap.add_argument("--limit", type=int, help="only the first N articles")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--commit-every", type=int, default=DEFAULT_COMMIT_EVERY)
    ap.add_argument(
        "--prefetch", type=int, default=DEFAULT_PREFETCH, help="Enricher chunks queued per worker"
    )
    ap.add_argument("--backend", default="pool", help="Enricher backend: pool or spacy")
    ap.add_argument(
        "--modes",
        default=None,
        help="comma-separated: nlp,enrich,index,search,reindex,clusterN "
        "[default: nlp,index; with --cluster: index,cluster1,cluster2]",
    )
    ap.add_argument(
        "--cluster",
        action="store_true",
        help="compare the local pool with 1 and 2 Dask workers (see clusterN)",
    )
    ap.add_argument("--repeat", type=int, default=1, help="interleaved rounds")
    ap.add_argument("--optimize", action="store_true", help="time an optimize after index")
    ap.add_argument("--index-dir", help="keep the index here (default: a temp dir, removed)")
    ap.add_argument("--out", help="append each run as a JSON line to this file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument(
        "--tables",
        action="store_true",
        help="print the tables of the runs saved in CORPUS (a --out file) and exit",
    )
    args = ap.parse_args(argv)
    if args.modes is None:
        args.modes = "index,cluster1,cluster2" if args.cluster else "nlp,index"
    if args.tables:
        rows = [json.loads(line) for line in Path(args.corpus).read_text().splitlines() if line]
        print(summarize(rows))
        if any(r["mode"].startswith("cluster") for r in rows):
            print("\n" + cluster_table(rows))
        for row in rows:
            if row.get("timeline") and row["timeline"][-1]["articles"] >= 2000:
                print(f"\n{row['articles']} articles, growth:\n{growth_table(row)}")
        return
    if args.worker:
        print(json.dumps(run_one(args)), flush=True)
        return
    rows = []
    base = [sys.executable, "-m", "benchmarks.bench_index", *(argv or sys.argv[1:])]
    for round_ in range(args.repeat):
        for mode in args.modes.split(","):
            out = subprocess.run([*base, "--worker", mode], capture_output=True, text=True, check=False,
                                 env={**os.environ, "PYTHONWARNINGS": "ignore"})  # fmt: skip
            if out.returncode != 0:
                sys.exit(f"{mode} failed:\n{out.stderr[-3000:]}")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["round"] = round_ + 1
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.out:
                with Path(args.out).open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    print(summarize(rows))
    if any(r["mode"].startswith("cluster") for r in rows):
        print("\n" + cluster_table(rows))


if __name__ == "__main__":
    main()

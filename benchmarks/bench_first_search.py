"""First faceted search of a fresh process, and after a commit that adds a segment.

Usage::

    python -m benchmarks.bench_first_search --index /tmp/reuters-16 --copy-to /tmp/nq-first

The index is copied first (the commit step writes to the copy). In one new
process: open the store, run ``warm_up`` as an API worker does when it opens
the index (``--no-warm-up`` skips it), time the first search (two filters, four facets),
then ``--warm`` more searches cycling ten newswire words (warm p50); then
commit one new article (a new segment, with its doc values written by the
commit) and time the first search after it, then warm again. This is the
library a server worker runs; the HTTP layer adds the same small cost to
first and warm requests.

With ``--workers N``: several worker processes over one index, as a server with
several workers, where the commit is made by another process. ``N`` processes run what
a server worker runs on opening the index (``WhooshStore`` + ``warm_up``, with its
background refresher) and ``N`` more the same without the refresher (the code before),
side by side on the same commits. Each round, this process commits one new article (a
new segment), waits ``--delay`` seconds, then every worker runs its first search on
the new state at once (as requests arriving after a commit), then ``--warm`` searches
(the warm p50 of that state). Reported: per kind of worker, the median over
``--rounds`` rounds of the first search's CPU and wall ms and its ratio to the warm p50::

    python -m benchmarks.bench_first_search --index /tmp/reuters-16 --copy-to /tmp/nq-first \
        --workers 2 --rounds 7 --delay 0.5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from typing import Any

from newsquarry.search.core.models import Article, Entity
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.searching import run_search, warm_up

WORDS = ["oil", "bank", "trade", "dollar", "wheat", "profit", "shares", "tax", "gold", "coffee"]


def request(word: str) -> SearchRequest:
    return SearchRequest(
        q=word,
        filters={"place": ["U.S."]},
        date_from="1987-03",
        facets=["person", "org", "place", "date"],
    )


CPU: dict[str, float] = {}  # CPU ms of the last timed() call, and CPU medians by step


def timed(store: WhooshStore, word: str) -> float:
    """Wall ms of one search (its CPU ms, robust to other load, go to CPU["last"])."""
    c0, t0 = time.process_time(), time.perf_counter()
    run_search(store, request(word))
    CPU["last"] = (time.process_time() - c0) * 1000
    return (time.perf_counter() - t0) * 1000


def warm(store: WhooshStore, n: int) -> float:
    walls, cpus = [], []
    for i in range(n):
        walls.append(timed(store, WORDS[i % len(WORDS)]))
        cpus.append(CPU["last"])
    CPU["warm"] = statistics.median(cpus)
    return statistics.median(walls)


def _new_article(n: int) -> tuple[Article, list]:
    art = Article(id=f"bench-first-{n}", title=f"Oil talks {n}", source="Bench",
                  date="1987-04-01", text=f"U.S. oil officials met OPEC in Vienna, round {n}."
                  "\n\nTalks on oil output went on.")  # fmt: skip
    passages = split_passages(art)
    p = passages[0]
    p.entities.append(Entity("OPEC", "OPEC", "org", p.text.index("OPEC"), p.text.index("OPEC") + 4))
    return art, passages


def _worker(conn: Any, path: str, refresh: bool) -> None:
    """One server worker: open the index, warm it, answer timing requests from the pipe."""
    store = WhooshStore(path)
    try:
        warm_up(store, refresh=refresh)
    except TypeError:  # the code before the refresher (a baseline run with PYTHONPATH)
        warm_up(store)
    conn.send("ready")
    while True:
        cmd = conn.recv()
        if cmd[0] == "first":
            refresher = getattr(store, "refresher", None)
            ready = refresher is not None and refresher.warmed_generation >= store.generation
            wall = timed(store, cmd[1])
            conn.send((wall, CPU["last"], int(store.searcher().ixreader.generation()), ready))
        elif cmd[0] == "warm":
            wall = warm(store, cmd[1])
            conn.send((wall, CPU["warm"]))
        else:
            store.close()
            conn.send("bye")
            return


def multi_worker(args: argparse.Namespace) -> None:
    """First search of each worker after a commit made by another process (``--workers``)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    kinds = [("refresher", True), ("no refresher (before)", False)]
    if args.plain_only:  # e.g. the code before these changes, through PYTHONPATH
        kinds = [("no refresher", False)]
    workers = []  # (kind, conn, process)
    for kind, refresh in kinds:
        for _ in range(args.workers):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(theirs, args.copy_to, refresh), daemon=True)
            proc.start()
            workers.append((kind, mine, proc))
    for _, conn, _ in workers:
        assert conn.recv() == "ready"
    writer = WhooshStore(args.copy_to, background_merges=False)  # "another process": no warm-up
    rows: dict[str, list[tuple[float, float, float, float]]] = {k: [] for k, _ in kinds}
    ready = dict.fromkeys(rows, 0)  # first searches whose state the refresher had warmed
    loads = [os.getloadavg()[0]]
    for r in range(args.rounds):
        with writer.writer() as w:
            w.put(*_new_article(r))
        generation = writer.generation
        time.sleep(args.delay)
        word = WORDS[r % len(WORDS)]
        for _, conn, _ in workers:  # all at once, as requests arriving after the commit
            conn.send(("first", word))
        firsts = [conn.recv() for _, conn, _ in workers]
        assert all(f[2] == generation for f in firsts), "a worker searched an old state"
        for _, conn, _ in workers:
            conn.send(("warm", args.warm))
        warms = [conn.recv() for _, conn, _ in workers]
        for (kind, _, _), (fw, fc, _, ok), (ww, wc) in zip(workers, firsts, warms, strict=True):
            rows[kind].append((fw, fc, ww, wc))
            ready[kind] += ok
        loads.append(os.getloadavg()[0])
    for _, conn, proc in workers:
        conn.send(("stop",))
        conn.recv()
        proc.join(30)
    writer.close()
    med = statistics.median
    print(f"{args.workers} worker(s) of each kind, {args.rounds} rounds, a commit by another "
          f"process then {args.delay:g} s, load average {min(loads):.1f}-{max(loads):.1f}")  # fmt: skip
    print(
        "\n| worker | first search CPU ms (x warm p50) | wall ms (x warm p50) | warm p50 CPU / wall ms |"
    )
    print("|---|---:|---:|---:|")
    for kind, got in rows.items():
        fw, fc, ww, wc = (med([g[i] for g in got]) for i in range(4))
        rc = med([g[1] / g[3] for g in got])
        rw = med([g[0] / g[2] for g in got])
        print(f"| {kind} | {fc:.0f} ({rc:.1f}x) | {fw:.0f} ({rw:.1f}x) | {wc:.1f} / {ww:.1f} |")
    print("\n(medians over rounds and workers; ratios are medians of each search's ratio)")
    for kind, n in ready.items():
        print(
            f"{kind}: state already warmed by the refresher before {n} of {len(rows[kind])} first searches"
        )
    shutil.rmtree(args.copy_to, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--copy-to", required=True)
    ap.add_argument("--warm", type=int, default=30)
    ap.add_argument(
        "--no-warm-up", dest="warm_up", action="store_false",
        help="skip warm_up() (which a server worker runs when it opens the index)",
    )  # fmt: skip
    ap.add_argument("--workers", type=int, default=0, help="worker processes of each kind")
    ap.add_argument(
        "--rounds", type=int, default=5, help="commits, each followed by a first search"
    )
    ap.add_argument("--delay", type=float, default=0.5, help="seconds from commit to search")
    ap.add_argument("--plain-only", action="store_true", help="only workers without refresher")
    args = ap.parse_args(argv)
    shutil.rmtree(args.copy_to, ignore_errors=True)
    shutil.copytree(args.index, args.copy_to)
    if args.workers:
        multi_worker(args)
        return
    t0 = time.perf_counter()
    store = WhooshStore(args.copy_to)
    open_ms = (time.perf_counter() - t0) * 1000
    warm_ms = warm_up(store) * 1000 if args.warm_up else 0.0
    first = timed(store, "oil")
    first_cpu = CPU["last"]
    p50 = warm(store, args.warm)
    p50_cpu = CPU["warm"]
    commits, afters, after_cpus, ratios, cpu_ratios, p50s, p50_cpus = [], [], [], [], [], [], []
    for r in range(args.rounds):  # one commit each: medians, not one sample
        t0 = time.perf_counter()
        with store.writer() as w:
            w.put(*_new_article(r))
        commits.append((time.perf_counter() - t0) * 1000)
        afters.append(timed(store, WORDS[r % len(WORDS)]))
        after_cpus.append(CPU["last"])
        p50s.append(warm(store, args.warm))
        p50_cpus.append(CPU["warm"])
        ratios.append(afters[-1] / p50s[-1])
        cpu_ratios.append(after_cpus[-1] / p50_cpus[-1])
    med = statistics.median
    commit_ms, after, after_cpu = med(commits), med(afters), med(after_cpus)
    p50_after, p50_after_cpu = med(p50s), med(p50_cpus)
    print("| step | wall ms | CPU ms |")
    print("|---|---:|---:|")
    print(f"| open the store | {open_ms:.0f} | |")
    print(f"| warm_up() (as a server worker does on opening) | {warm_ms:.0f} | |")
    print(f"| first faceted search | {first:.0f} ({first / p50:.1f}x warm p50) |"
          f" {first_cpu:.0f} ({first_cpu / p50_cpu:.1f}x) |")  # fmt: skip
    print(f"| warm p50 | {p50:.1f} | {p50_cpu:.1f} |")
    print(f"| commit of one article (new segment + doc values), median of {args.rounds} |"
          f" {commit_ms:.0f} | |")  # fmt: skip
    print(f"| first search after the commit, median | {after:.0f} ({med(ratios):.1f}x warm p50) |"
          f" {after_cpu:.0f} ({med(cpu_ratios):.1f}x) |")  # fmt: skip
    print(f"| warm p50 after the commit, median | {p50_after:.1f} | {p50_after_cpu:.1f} |")
    print(f"(ratios after a commit: median of each round's ratio; load average "
          f"{os.getloadavg()[0]:.1f})")  # fmt: skip
    store.close()
    shutil.rmtree(args.copy_to, ignore_errors=True)


if __name__ == "__main__":
    main()

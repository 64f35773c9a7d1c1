"""Growth curve: how latency, size, memory and open time grow with the number of passages.

Usage::

    # build (or extend) an index of at least N passages, then measure it
    nice -n 10 python -m benchmarks.bench_growth --index /tmp/nq-grow-300k --min-passages 300000
    # measure an existing index (e.g. the real Reuters index built with ``newsquarry index``)
    python -m benchmarks.bench_growth --index /tmp/reuters-16 --copy-to /tmp/nq-grow-copy --no-build

Corpus: Reuters-21578 repeated whole, as ``bench_search.py`` does (copy k>0 of
article ``X`` is ``X-copyk``). Entities come from Reuters' own tags (no spaCy: it
would take hours per copy here); quotations are the passage's double-quoted
spans of 20+ characters, attributed to the article's first person tag, so the
quote case has quote documents to search. An existing smaller index is
extended (copies are appended after the ones it holds), so the 1M index can
start as a copy of the 300k one. The build is not optimized: the index keeps
the segments the merge policy leaves, as a user's index would.

Measured, each in new processes (``cold``: a process that opens the index and
runs one search, timed from before the open to after the search, imports
excluded; median of ``--cold`` processes, words rotated), and in one process
(``warm``: p50 over ``--warm`` calls cycling ten words, after one round):

- plain: ``oil``-like single-word queries, top 10 with exact total;
- faceted: two filters (place, date from 1987-03) and four facets;
- quote: ``mode="quotes"`` for the same words;
- open: ``WhooshStore(path, create=False)`` plus its first searcher (after one
  process has verified the checksums of the copy, not counted);
- memory: the process's RSS after opening and one search of each kind, minus the
  RSS after imports (what the searcher, doc values and caches take);
- size: bytes of the index folder (segments, doc values, the rest).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WORDS = ["oil", "bank", "trade", "dollar", "wheat", "profit", "shares", "tax", "gold", "coffee"]
CASES = ("plain", "faceted", "quote")
QUOTED = re.compile(r'"([^"\n]{20,400})"')


def build(index: Path, corpus_path: str, min_passages: int) -> None:
    """Create or extend ``index`` to at least ``min_passages`` passages of repeated Reuters."""
    from benchmarks.bench_search import TagEnricher, copies_needed, read_corpus
    from newsquarry.search.core.models import Article, Quote
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import index_articles

    corpus = read_corpus(corpus_path)
    copies = copies_needed(corpus, min_passages)
    store = WhooshStore(index, create=True)
    have = store.stats()["articles"] // len(corpus)
    print(f"index holds {have} copies; building up to {copies}", file=sys.stderr)

    class Enricher(TagEnricher):
        def enrich(self, items):  # type: ignore[no-untyped-def]
            for article, passages in super().enrich(items):
                people = self.tags[article.id.split("-copy")[0]].get("person") or [None]
                for p in passages:
                    for m in QUOTED.finditer(p.text):
                        p.quotes.append(
                            Quote(m.group(1), m.start(1), m.end(1), "direct", people[0])
                        )
                yield article, passages

    def todo() -> Iterator[Article]:
        for k in range(have, copies):
            for a, _ in corpus:
                yield a if k == 0 else Article(
                    id=f"{a.id}-copy{k}", title=a.title, text=a.text, source=a.source,
                    date=a.date, url=a.url,
                )  # fmt: skip

    t0 = time.perf_counter()
    report = index_articles(store, todo(), enricher=Enricher(corpus), commit_every=5000)
    store.wait_for_merges()
    store.close()
    print(f"added {report.passages} passages in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def request(case: str, word: str) -> Any:
    from newsquarry.search.core.requests import SearchRequest

    # measured, not cut: the default 5 s limit (a server's policy) can stop a cold search
    # of a large index on a loaded machine
    limit = 300.0
    if case == "plain":
        return SearchRequest(q=word, time_limit=limit)
    if case == "faceted":  # two filters (place, a date range) and four facets
        return SearchRequest(
            q=word, filters={"place": ["USA", "U.S."]}, date_from="1987-03",
            facets=["person", "org", "place", "date"], time_limit=limit,
        )  # fmt: skip
    return SearchRequest(q=word, mode="quotes", time_limit=limit)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


def child(index: str, case: str, word: str) -> None:
    """One cold process: open, one search; prints its timings and memory as JSON."""
    import newsquarry.search.query.searching as searching
    from newsquarry.search.engine.store import WhooshStore

    base = rss_mb()
    t0 = time.perf_counter()
    store = WhooshStore(index, create=False)
    store.searcher()
    t1 = time.perf_counter()
    r = searching.run_search(store, request(case, word))
    t2 = time.perf_counter()
    for other in CASES:  # the memory of a process that has served every kind of search
        searching.run_search(store, request(other, word))
    out = {"open_ms": (t1 - t0) * 1000, "first_ms": (t2 - t0) * 1000, "total": r.total,
           "rss_mb": rss_mb() - base}  # fmt: skip
    print(json.dumps(out))


def folder_size(index: Path) -> dict[str, float]:
    sizes = {"segments": 0, "doc values": 0, "other": 0}
    for f in index.iterdir():
        if f.is_file():
            kind = {".seg": "segments", ".dv": "doc values"}.get(f.suffix, "other")
            sizes[kind] += f.stat().st_size
    return {k: v / 2**20 for k, v in sizes.items()}


def measure(index: Path, cold: int, warm: int) -> dict[str, Any]:
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.query.searching import run_search

    out: dict[str, Any] = {"index": str(index), "size_mb": folder_size(index)}
    colds: dict[str, list[dict]] = {c: [] for c in CASES}
    # one process first, not counted: it verifies the checksums of a copy's files (new
    # inodes; later processes skip that, ``newsquarry_VERIFIED``), which on a big index
    # under load can pass the search timeout
    store = WhooshStore(index, create=False)
    store.verify_readable()
    store.close()
    for i in range(cold):  # cases interleaved, a new word each round
        for case in CASES:
            cmd = [sys.executable, "-m", "benchmarks.bench_growth", "--index", str(index),
                   "--child", case, WORDS[i % len(WORDS)]]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"cold process failed: {done.stderr.strip()[-2000:]}")
            colds[case].append(json.loads(done.stdout.strip().splitlines()[-1]))
    store = WhooshStore(index, create=False)
    stats = store.stats()
    out.update(passages=stats["passages"], articles=stats["articles"], quotes=stats["quotes"],
               segments=stats["segments"])  # fmt: skip
    for case in CASES:
        for w in WORDS:  # each query once first: warm means its postings were read before
            run_search(store, request(case, w))
        times = []
        for i in range(warm):
            t0 = time.perf_counter()
            run_search(store, request(case, WORDS[i % len(WORDS)]))
            times.append((time.perf_counter() - t0) * 1000)
        c = colds[case]
        out[case] = {
            "cold_ms": statistics.median(x["first_ms"] for x in c),
            "warm_p50_ms": statistics.median(times),
            "warm_p95_ms": sorted(times)[int(0.95 * (len(times) - 1))],
        }
    every = [x for c in colds.values() for x in c]
    out["open_ms"] = statistics.median(x["open_ms"] for x in every)
    out["searcher_rss_mb"] = statistics.median(x["rss_mb"] for x in every)
    store.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--corpus", default="/work/shared/corpora/reuters21578.jsonl")
    ap.add_argument("--min-passages", type=int, default=0, help="build/extend to this size")
    ap.add_argument("--copy-to", help="measure a copy (searches may write derived files)")
    ap.add_argument("--cold", type=int, default=5, help="new processes per case")
    ap.add_argument("--warm", type=int, default=30, help="warm calls per case")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--json", help="append the figures to this JSON-lines file")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "WORD"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.index, *args.child)
    index = Path(args.index)
    if args.min_passages:
        build(index, args.corpus, args.min_passages)
    if args.build_only:
        return
    if args.copy_to:
        shutil.rmtree(args.copy_to, ignore_errors=True)
        shutil.copytree(index, args.copy_to)
        index = Path(args.copy_to)
    got = measure(index, args.cold, args.warm)
    got["load"] = os.getloadavg()
    print(json.dumps(got, indent=2))
    if args.json:
        with open(args.json, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(got) + "\n")
    if args.copy_to:
        shutil.rmtree(args.copy_to, ignore_errors=True)


if __name__ == "__main__":
    main()

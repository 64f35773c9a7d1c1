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
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

from newsquarry.search.models import Article, Entity
from newsquarry.search.passages import split_passages
from newsquarry.search.requests import SearchRequest
from newsquarry.search.searching import run_search, warm_up
from newsquarry.search.store import WhooshStore

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


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--copy-to", required=True)
    ap.add_argument("--warm", type=int, default=30)
    ap.add_argument(
        "--no-warm-up", dest="warm_up", action="store_false",
        help="skip warm_up() (which a server worker runs when it opens the index)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    shutil.rmtree(args.copy_to, ignore_errors=True)
    shutil.copytree(args.index, args.copy_to)
    t0 = time.perf_counter()
    store = WhooshStore(args.copy_to)
    open_ms = (time.perf_counter() - t0) * 1000
    warm_ms = warm_up(store) * 1000 if args.warm_up else 0.0
    first = timed(store, "oil")
    first_cpu = CPU["last"]
    p50 = warm(store, args.warm)
    p50_cpu = CPU["warm"]
    art = Article(id="bench-first", title="Oil talks", source="Bench", date="1987-04-01",
                  text="U.S. oil officials met OPEC in Vienna.\n\nTalks on oil output went on.")  # fmt: skip
    passages = split_passages(art)
    p = passages[0]
    p.entities.append(Entity("OPEC", "OPEC", "org", p.text.index("OPEC"), p.text.index("OPEC") + 4))
    t0 = time.perf_counter()
    with store.writer() as w:
        w.put(art, passages)
    commit_ms = (time.perf_counter() - t0) * 1000
    after = timed(store, "oil")
    after_cpu = CPU["last"]
    p50_after = warm(store, args.warm)
    p50_after_cpu = CPU["warm"]
    print("| step | wall ms | CPU ms |")
    print("|---|---:|---:|")
    print(f"| open the store | {open_ms:.0f} | |")
    print(f"| warm_up() (as a server worker does on opening) | {warm_ms:.0f} | |")
    print(f"| first faceted search | {first:.0f} ({first / p50:.1f}x warm p50) |"
          f" {first_cpu:.0f} ({first_cpu / p50_cpu:.1f}x) |")  # fmt: skip
    print(f"| warm p50 | {p50:.1f} | {p50_cpu:.1f} |")
    print(f"| commit of one article (new segment + doc values) | {commit_ms:.0f} | |")
    print(f"| first search after the commit | {after:.0f} ({after / p50_after:.1f}x warm p50) |"
          f" {after_cpu:.0f} ({after_cpu / p50_after_cpu:.1f}x) |")  # fmt: skip
    print(f"| warm p50 after the commit | {p50_after:.1f} | {p50_after_cpu:.1f} |")
    store.close()
    shutil.rmtree(args.copy_to, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What RM3 feedback (``query.feedback``) costs per search: bench_search's
``nl_filters2_facets4`` requests, keyword and hybrid, feedback on and off interleaved in one
process (so both share the machine's load), wall and CPU ms p50 / p95.

Usage::

    python -m benchmarks.bench_feedback --index /tmp/sem42-bench --rounds 5
    python -m benchmarks.bench_feedback --index /tmp/nq-reuters --retrieval keyword

The index is one bench_search built (``--semantic`` gives it vectors); hybrid calls clear
the query-vector cache first, so every call encodes its query.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.bench_search import FACETS4, FILTERS2, NL_QUERIES
from newsquarry.search.core import embedding
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query import feedback
from newsquarry.search.query.searching import run_search


def _pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--retrieval", nargs="+", default=["keyword", "hybrid"],
                    choices=["keyword", "hybrid"],
                    help="hybrid needs an index with vectors (bench_search --semantic)")  # fmt: skip
    args = ap.parse_args(argv)
    store = WhooshStore(args.index, create=False)
    res: dict[tuple[str, bool], list[tuple[float, float]]] = {}

    def one(on: bool, how: str) -> None:
        feedback.ENABLED = on
        for q in NL_QUERIES:
            if how == "hybrid":
                embedding._query.cache_clear()
            w, c = time.perf_counter(), time.process_time()
            run_search(store, SearchRequest(q=q, facets=FACETS4, filters=FILTERS2, retrieval=how))
            took = ((time.perf_counter() - w) * 1000, (time.process_time() - c) * 1000)
            res.setdefault((how, on), []).append(took)

    for how in args.retrieval:  # warm up
        one(True, how)
        one(False, how)
    res.clear()
    for _ in range(args.rounds):
        for how in args.retrieval:
            for on in (True, False):
                one(on, how)
    print("| retrieval | feedback | wall p50 | wall p95 | CPU p50 | CPU p95 |")
    print("|---|---|---:|---:|---:|---:|")
    for (how, on), v in res.items():
        wall, cpu = [x for x, _ in v], [y for _, y in v]
        print(f"| {how} | {'on' if on else 'off'} | {_pct(wall, .5):.1f} | {_pct(wall, .95):.1f} "
              f"| {_pct(cpu, .5):.1f} | {_pct(cpu, .95):.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()

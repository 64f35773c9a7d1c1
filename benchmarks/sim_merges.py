"""Simulate merge policies over a long import: rewrites per document and segment counts.

No index is written: each commit adds one segment of ``--docs`` documents and
the policy decides what merges, as Whoosh would call it. Compares Whoosh's
``MERGE_SMALL`` rule (re-implemented from whoosh-reloaded 2.7.5,
``whoosh.writing.MERGE_SMALL``) with ``search.merging.plan_merges``.

Usage::

    python -m benchmarks.sim_merges --commits 430 --docs 3500

(3,500 Whoosh documents is one commit of 500 Reuters articles: articles,
passages and quotes; 430 commits is about the ten-times corpus.)
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from newsquarry.search.engine.merging import plan_merges


def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def merge_small(sizes: list[int]) -> list[int]:
    """Whoosh's MERGE_SMALL: the smallest segments, up to the first i > 3 whose running
    total is under fib(i + 5)."""
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    total, chosen = 0, []
    for i, idx in enumerate(order):
        total += sizes[idx]
        chosen.append(idx)
        if i > 3 and total < fib(i + 5):
            return chosen if len(chosen) > 1 else []
    return []


def tiered(sizes: list[int]) -> list[int]:
    return plan_merges([(s, s) for s in sizes])


def simulate(policy: Callable[[list[int]], list[int]], commits: int, docs: int) -> dict:
    segs: list[int] = []
    written = biggest = most = 0
    for _ in range(commits):
        written += docs
        chosen = set(policy(segs))  # Whoosh merges into the commit's new segment
        merged = sum(segs[i] for i in chosen)
        written += merged
        biggest = max(biggest, merged + docs if chosen else 0)
        segs = [s for i, s in enumerate(segs) if i not in chosen] + [merged + docs]
        most = max(most, len(segs))
    return {
        "rewrites_per_doc": round(written / (commits * docs) - 1, 2),
        "largest_merge_docs": biggest,
        "max_segments": most,
        "final_segments": len(segs),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--commits", type=int, default=430)
    ap.add_argument("--docs", type=int, default=3500)
    args = ap.parse_args(argv)
    print("| policy | rewrites per document | largest merge (docs) | max segments | final |")
    print("|---|---|---|---|---|")
    for name, pol in (("Whoosh MERGE_SMALL", merge_small), ("merge_tiered", tiered)):
        r = simulate(pol, args.commits, args.docs)
        print(f"| {name} | {r['rewrites_per_doc']} | {r['largest_merge_docs']:,} | "
              f"{r['max_segments']} | {r['final_segments']} |")


if __name__ == "__main__":
    main()

"""Warm searches with and without the tokens segments keep (``archive.tokenoffsets``),
A/B in one process: two stores on the same index, one with ``token_offsets.enabled =
False`` (every highlight and the proximity rerank analyse the stored texts, as before the
files), called alternately (the order flipped every call) on ``bench_search``'s cases.

Usage::

    python -m benchmarks.bench_kept_tokens --index /tmp/nq-reuters --rounds 30 \\
        --cases facets4 filters2_facets4 nl_filters2_facets4

Printed: per case, the CPU ms per call (``time.process_time``) at p50 and the mean of
each, and the ratio analysed / kept. ``bench_search --analysed-highlights`` runs the same
comparison among every other engine; this one leaves the other engines' memory traffic out.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks import bench_search as b
from newsquarry.search.engine.store import WhooshStore


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--cases", nargs="*", default=["facets4", "filters2_facets4",
                                                   "nl_filters2_facets4"])  # fmt: skip
    args = ap.parse_args(argv)
    kept = WhooshStore(args.index, create=False)
    analysed = WhooshStore(args.index, create=False)
    analysed.token_offsets.enabled = False
    stores = {"kept": kept, "analysed": analysed}
    for case in args.cases:  # warm-up: every query once on each
        for i in range(len(b.QUERIES)):
            for s in stores.values():
                b.nq_case(s, case, i)
    cpu: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for case in args.cases:
            for i in range(len(b.QUERIES)):
                order = ("kept", "analysed") if (r + i) % 2 else ("analysed", "kept")
                for name in order:
                    c0 = time.process_time()
                    b.nq_case(stores[name], case, i)
                    cpu.setdefault((case, name), []).append((time.process_time() - c0) * 1000)
    print("| case | kept p50 / mean CPU ms | analysed p50 / mean CPU ms | analysed / kept (p50) |")
    print("|---|---:|---:|---:|")
    for case in args.cases:
        k, a = cpu[(case, "kept")], cpu[(case, "analysed")]
        print(f"| {case} | {statistics.median(k):.2f} / {statistics.mean(k):.2f} | "
              f"{statistics.median(a):.2f} / {statistics.mean(a):.2f} | "
              f"{statistics.median(a) / statistics.median(k):.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()

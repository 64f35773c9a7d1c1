"""Cold start: a fresh process's imports, open and first faceted search, against a baseline.

Usage::

    # the code before, as a tree importable as ``newsquarry`` (e.g. from git):
    mkdir -p /tmp/nq-base/newsquarry && git archive main search api | tar -x -C /tmp/nq-base/newsquarry
    python -m benchmarks.bench_cold --index /tmp/reuters --baseline /tmp/nq-base --rounds 15

Each round runs one new process per code version (this checkout, then the baseline
through ``PYTHONPATH``, interleaved), each of which imports what a server worker or a
notebook imports to search (``WhooshStore``, ``run_search``), opens the index
(``WhooshStore(path, create=False)``) and runs one faceted search (``oil``, two filters,
four facets, highlights: the request of ``bench_first_search``), and reports the CPU ms
(``time.process_time``, robust to other load) of each step and the wall ms of open plus
search. One process runs first and is not counted (it verifies the checksums of files
not verified yet, as the first process after a commit does). Printed: the medians per
version and their ratios (baseline / this). Bytecode is compiled first for both trees
(``compileall``), as an installation does: with ``PYTHONDONTWRITEBYTECODE`` set, every
import would compile the project's sources again.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(index: str, query: str) -> None:
    """One cold process: CPU ms of imports, open, first search; wall ms of open + search."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    c0 = time.process_time()
    from newsquarry.search.core.requests import SearchRequest
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.query.searching import run_search

    c1, w1 = time.process_time(), time.perf_counter()
    store = WhooshStore(index, create=False)
    c2 = time.process_time()
    result = run_search(
        store,
        SearchRequest(
            q=query,
            filters={"place": ["U.S."]},
            date_from="1987-03",
            facets=["person", "org", "place", "date"],
        ),
    )
    c3, w3 = time.process_time(), time.perf_counter()
    print(
        json.dumps(
            {
                "imports": (c1 - c0) * 1000,
                "open": (c2 - c1) * 1000,
                "search": (c3 - c2) * 1000,
                "open+search": (c3 - c1) * 1000,
                "wall": (w3 - w1) * 1000,
                "total": result.total,
                "hits": [asdict(h) for h in result.hits],  # names in display form too
                "facets": {
                    n: [(v.value, v.count) for v in f.values] for n, f in result.facets.items()
                },
            },
            default=str,
        )
    )


def run(index: str, query: str, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_cold", "--child", index, query],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(out.stderr[-1500:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index")
    ap.add_argument("--baseline", help="a folder holding the code before as newsquarry/")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--query", default="oil")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(*args.child)
    if not args.index:
        ap.error("--index is required")
    versions = [("this", None)] + ([("baseline", args.baseline)] if args.baseline else [])
    for folder in (ROOT / "search", *([args.baseline] if args.baseline else [])):
        compileall.compile_dir(str(folder), quiet=1)  # as an installation does (see above)
    for _, path in versions:  # the first process after a change verifies checksums
        run(args.index, args.query, path)
    got: dict[str, list[dict]] = {name: [] for name, _ in versions}
    loads = [os.getloadavg()[0]]
    t0 = time.time()
    for _ in range(args.rounds):
        for name, path in versions:
            got[name].append(run(args.index, args.query, path))
        loads.append(os.getloadavg()[0])
    steps = ("imports", "open", "search", "open+search", "wall")
    print(f"{args.rounds} rounds, interleaved, {time.time() - t0:.0f} s, "
          f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores")  # fmt: skip
    names = {s: "open+search wall ms" if s == "wall" else f"{s} CPU ms" for s in steps}
    print("\n| version | " + " | ".join(names[s] for s in steps) + " |")
    print("|---|" + "---:|" * len(steps))
    med = {n: {s: statistics.median(r[s] for r in rs) for s in steps} for n, rs in got.items()}
    for name in got:
        print(f"| {name} | " + " | ".join(f"{med[name][s]:.1f}" for s in steps) + " |")
    if args.baseline:
        print("| baseline / this | " + " | ".join(
            f"{med['baseline'][s] / med['this'][s]:.2f}x" for s in steps) + " |")  # fmt: skip
        same = all(
            (a["total"], a["hits"], a["facets"]) == (b["total"], b["hits"], b["facets"])
            for a, b in zip(got["this"], got["baseline"], strict=True)
        )
        print(f"\nsame total, hits and facets as the baseline in every round: {same}")


if __name__ == "__main__":
    main()

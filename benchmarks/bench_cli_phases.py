"""Where a whole-process CLI search spends its CPU time, phase by phase.

Usage::

    python -m benchmarks.bench_cli_phases --index /tmp/reuters-16 --runs 5

Each run is a new process (``--one`` below) that imports and does what
``newsquarry search oil --place U.S. --since 1987-03 --facet person --facet org
--facet place --facet date --json`` does, in order, and reports the CPU time of
each phase (``time.process_time``, robust to other load); the table gives the
median of each phase over the runs, beside the CPU time of ``python -c pass``
(the interpreter's own start, which every command pays) and of ``newsquarry
--help``. The phases' sum plus the interpreter start is the command's CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(index: str, query: str) -> list[tuple[str, float]]:
    """The phases of one CLI-like search in this (new) process: (name, CPU ms)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the CLI does
    marks: list[tuple[str, float]] = []
    last = time.process_time()

    def mark(name: str) -> None:
        nonlocal last
        now = time.process_time()
        marks.append((name, (now - last) * 1000))
        last = now

    import click  # noqa: F401

    import newsquarry.search.cli.output  # noqa: F401
    import newsquarry.search.core.config  # noqa: F401

    mark("click, output, config: what --help imports")
    import newsquarry.search.cli.app  # noqa: F401

    mark("the rest of the cli module")
    import numpy  # noqa: F401

    mark("numpy")
    from newsquarry.search.engine.light import install

    install()
    mark("Whoosh's core modules")
    from newsquarry.search.engine.store import WhooshStore

    mark("the store module and its imports")
    import newsquarry.search.query.searching  # noqa: F401

    mark("searching, facets, scoring, highlight, interpret")
    store = WhooshStore(index, create=False)
    searcher = store.searcher()
    mark("open the store and its searcher (segments, checksum record)")
    from newsquarry.search.engine.views import cache_for

    view = cache_for(store).view(searcher)
    mark("the view (map .dv files and the key table; live, doctype)")
    for f in ("person", "org", "place"):
        view.nkeys[f]  # noqa: B018
    mark("person/org/place keys (from the key table) + alias table")
    view.nkeys["article_id"]  # noqa: B018
    mark("article_id keys (hits' articles; hits' speakers and sources need no field)")
    from newsquarry.search.core.requests import SearchRequest
    from newsquarry.search.query.searching import run_search

    result = run_search(
        store,
        SearchRequest(
            q=query,
            filters={"place": ["U.S."]},
            date_from="1987-03",
            facets=["person", "org", "place", "date"],
        ),
    )
    mark("the search (postings, masks, 4 facets, 10 hits, interpretations)")
    json.dumps(result.to_dict(), default=str)
    mark("the JSON answer")
    return marks


def cpu_of(cmd: list[str]) -> float:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)) * 1000


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--query", default="oil")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.index, args.query)))
        return
    me = [sys.executable, "-m", "benchmarks.bench_cli_phases", "--index", args.index]
    runs, bare, helps = [], [], []
    for _ in range(args.runs):
        out = subprocess.run(
            [*me, "--query", args.query, "--one"], cwd=ROOT, capture_output=True, text=True
        )
        if out.returncode != 0:
            raise SystemExit(out.stderr[-500:])
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        bare.append(cpu_of([sys.executable, "-c", "pass"]))
        helps.append(cpu_of([sys.executable, "-m", "newsquarry.search.cli", "--help"]))
    print("| phase | median CPU ms |")
    print("|---|---:|")
    print(f"| the interpreter's start (`python -c pass`) | {statistics.median(bare):.0f} |")
    total = statistics.median(bare)
    for i, (name, _) in enumerate(runs[0]):
        ms = statistics.median(r[i][1] for r in runs)
        total += ms
        print(f"| {name} | {ms:.0f} |")
    print(f"| **sum** | {total:.0f} |")
    print(f"| `newsquarry --help`, whole process | {statistics.median(helps):.0f} |")


if __name__ == "__main__":
    main()

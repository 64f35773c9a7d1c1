"""Enrichment throughput next to spaCy's own ``nlp.pipe`` on the same texts.

Usage::

    python -m benchmarks.bench_enrich /work/shared/corpora/reuters21578.jsonl \
        --limit 1000 [--repeat 3] [--processes 1,2] [--batch-size 16]

For each process count it times, on the same articles in the same run:

* ``nlp.pipe``: spaCy alone, the same pipeline (the floor);
* ``Enricher``: parse + entity and quote rules + passage assignment
  (for n > 1 both backends: our own worker pool and spaCy's ``n_process``);
* ``rules only``: the rules on already parsed docs (our overhead, one process).

Each figure is the median of ``--repeat`` runs; words are whitespace tokens.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from collections.abc import Callable
from itertools import islice

from newsquarry.search.core.models import Article, Passage
from newsquarry.search.ingest.enrich import Enricher, load_nlp
from newsquarry.search.ingest.enrich.pipeline import analyse_doc
from newsquarry.search.ingest.passages import split_passages


def read_articles(path: str, limit: int | None) -> list[Article]:
    """The first ``limit`` articles of a JSONL file (id, title, text, date, source; all
    with None)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in islice(f, limit):
            rec = json.loads(line)
            out.append(
                Article(
                    id=str(rec["id"]),
                    title=rec.get("title") or "",
                    text=rec["text"],
                    source=rec.get("source"),
                    date=rec.get("date"),
                )
            )
    return out


def _cpu() -> float:
    """CPU seconds of this process and of its finished child processes (workers)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(runs: dict[str, Callable[[], object]], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU of this process) seconds per run, runs interleaved per round.

    Interleaving keeps a floor and the runs compared with it under the same
    machine load. CPU time counts this process and its worker processes, so it
    measures the work done (robust to other load on the machine), while wall
    time shows the speed-up of several processes.
    """
    walls: dict[str, list[float]] = {k: [] for k in runs}
    cpus: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            c0, t0 = _cpu(), time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(_cpu() - c0)
    return {k: (statistics.median(walls[k]), statistics.median(cpus[k])) for k in runs}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: prints a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--processes", default="1,2")
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    nlp = load_nlp()
    load_s = time.perf_counter() - t0
    articles = read_articles(args.path, args.limit)
    texts = [a.text for a in articles]
    words = sum(len(t.split()) for t in texts)
    n = len(articles)
    print(f"{n} articles, {words} words, model load {load_s:.2f} s (cached after first)")
    print(
        f"pipeline: {', '.join(nlp.pipe_names)}; batch size {args.batch_size}; "
        f"median of {args.repeat} runs\n"
    )

    def items() -> list[tuple[Article, list[Passage]]]:
        return [(a, split_passages(a)) for a in articles]

    rows = []

    def row(label: str, wall: float, cpu: float, floor: tuple[float, float] | None) -> None:
        over = ""
        if floor is not None:
            over = f"{100 * (wall / floor[0] - 1):+.1f}% | {100 * (cpu / floor[1] - 1):+.1f}%"
        else:
            over = " | "
        rows.append(
            f"| {label} | {wall:.1f} | {cpu:.1f} | {1000 * wall / n:.1f} | {words / wall:,.0f} "
            f"| {over} |"
        )

    docs = list(nlp.pipe(texts, batch_size=args.batch_size))
    rules_ms = None
    for procs in [int(p) for p in args.processes.split(",")]:
        runs: dict[str, Callable[[], object]] = {
            "floor": lambda p=procs: sum(
                1 for _ in nlp.pipe(texts, batch_size=args.batch_size, n_process=p)
            )
        }
        backends = ["pool"] if procs == 1 else ["pool", "spacy"]
        for backend in backends:
            enricher = Enricher(n_process=procs, batch_size=args.batch_size, backend=backend)
            runs[backend] = lambda e=enricher: sum(1 for _ in e.enrich(items()))
        if procs == 1:
            runs["rules"] = lambda d=docs: [analyse_doc(x) for x in d]
        res = measure(runs, args.repeat)
        row(f"`nlp.pipe` n_process={procs} (floor)", *res["floor"], None)
        for backend in backends:
            label = f"`Enricher` n_process={procs}" + (f" {backend}" if procs > 1 else "")
            row(label, *res[backend], res["floor"])
        if procs == 1:
            row("rules only, on parsed docs", *res["rules"], None)
            rules_ms = 1000 * res["rules"][1] / n
    print(
        "| run | wall s | CPU s | ms/article (wall) | words/s (wall) | vs floor, wall "
        "| vs floor, CPU |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(r)
    if rules_ms is not None:
        print(f"\nrules alone: {rules_ms:.2f} ms CPU per article")
    return 0


if __name__ == "__main__":
    sys.exit(main())

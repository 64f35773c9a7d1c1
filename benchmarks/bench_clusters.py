"""What quotation clusters cost: indexing time, linking per commit, quote search latency.

``write``: articles already enriched (read back, with their entities and quotations,
from an existing index such as a copy of the Reuters one, so spaCy is not in the
measurement and the quotations are real) are written into a new index in commits of
``--commit-every``, with clustering on (signatures computed at each commit) and off,
interleaved round by round in one process so both share the machine's load (which goes
first alternates). Reported: median wall and process CPU seconds of the writes, their
ratios, the signature time per commit, and the
share of a full index run (enrichment included: ``--full-ms`` wall ms per article, by
default all of Reuters' 275.3 s for 16,735 articles in docs/benchmarks.md) that the
signatures add if none of their time overlaps enrichment.

``link``: computing a state's clusters from scratch in a new process (the mapped
signature files, no saved links: the fallback and reference), and reading the saved
links of the same state instead; and the first time an index made before clusters is
opened (signatures computed from the stored quotations, then saved). The index is
written to (its saved links): give it a copy.

``commit``: a commit of N articles (copies of articles already indexed, under new ids)
and their deletion: the links of the new state kept incrementally against made from
scratch, in the process that linked the previous state (a server) and in a new process
reading the previous state's saved links (a CLI command after another process's commit),
and the first quote search after the deletion. Works on a copy of the index it is given.

``scale``: the same for generated quotations (no index: ``Clusters`` over generated
signatures and stand-in doc values), at growing numbers of quotations, one quotation
deleted and back at each state: does the per-state cost grow with the archive?

``latency``: quote search on the index, top 10 with two filters and four facets:
``before`` (clusters switched off: quote search as it was), ``none`` (hits carry their
cluster) and ``cluster`` (``group="cluster"``), interleaved; p50/p95 against the
faceted search target (p50 < 25 ms, p95 < 100 ms).

Usage::

    cp -a /tmp/reuters-16 /tmp/reuters-copy
    python -m benchmarks.bench_clusters write /tmp/reuters-copy --articles 2000 --rounds 3
    python -m benchmarks.bench_clusters link /tmp/reuters-copy
    python -m benchmarks.bench_clusters commit /tmp/reuters-copy --sizes 1 100 --rounds 6
    python -m benchmarks.bench_clusters latency /tmp/reuters-copy --rounds 10
    python -m benchmarks.bench_clusters scale --sizes 50000 200000 800000 --rounds 5
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from newsquarry.search.archive import quoteclusters as qc
from newsquarry.search.archive import quotesigs as qsigs
from newsquarry.search.core.models import Article, Entity, Passage, Quote
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore

QUOTE_FIELDS = set(Quote.__dataclass_fields__)
ENTITY_FIELDS = set(Entity.__dataclass_fields__)
QUERIES = ["oil", "debt", "trade", "prices", "bank", "dollar", "rates", "talks", "growth",
           "agreement"]  # fmt: skip


def enriched(path: str, n: int) -> list[tuple[Article, list[Passage]]]:
    """The first ``n`` articles of an index, rebuilt as (Article, passages) with their
    entities and quotations (no enrichment needed)."""
    from whoosh.query import Term

    store = WhooshStore(path, create=False, background_merges=False)
    s = store.searcher()
    ids = sorted(s.stored_fields(d)["id"] for d in s.docs_for_query(Term("doctype", "article")))
    out = []
    for aid in ids[:n]:
        a = store.get_article(aid)
        art = Article(id=aid, title=a["title"], text=a["text"], source=a.get("source"),
                      date=a.get("date"), url=a.get("url"))  # fmt: skip
        passages = []
        for p in a["passages"]:
            passages.append(Passage(
                id=p["id"], article_id=aid, position=p["position"], start=p["start"],
                end=p["end"], text=p["text"],
                entities=[Entity(**{k: v for k, v in e.items() if k in ENTITY_FIELDS})
                          for e in p["entities"]],
                quotes=[Quote(**{k: v for k, v in q.items() if k in QUOTE_FIELDS})
                        for q in p["quotes"]],
            ))  # fmt: skip
        out.append((art, passages))
    store.close()
    return out


class SignatureClock:
    """Wraps ``quotesigs.compute_segment`` to add up its time (the commit's share)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.original = qsigs.compute_segment

    def __call__(self, reader: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return self.original(reader)
        finally:
            self.seconds.append(time.perf_counter() - t0)


def write_once(
    items: list, commit_every: int, clustering: bool
) -> tuple[float, float, list[float]]:
    """Write ``items`` into a new index; (wall s, process CPU s, signature s per commit)."""
    folder = tempfile.mkdtemp(prefix="nq-clusters-")
    clock = SignatureClock()
    original = qsigs.persist_on_commit
    if clustering:
        qsigs.compute_segment = clock  # type: ignore[assignment]
    else:
        qsigs.persist_on_commit = lambda writer: writer  # type: ignore[assignment]
    try:
        store = WhooshStore(folder, background_merges=False)
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(items), commit_every):
            store.add(items[i : i + commit_every])
        took, cpu = time.perf_counter() - t0, time.process_time() - c0
        store.close()
    finally:
        qsigs.persist_on_commit = original  # type: ignore[assignment]
        qsigs.compute_segment = clock.original  # type: ignore[assignment]
        shutil.rmtree(folder, ignore_errors=True)
    return took, cpu, clock.seconds


def bench_write(args: argparse.Namespace) -> dict[str, Any]:
    items = enriched(args.index, args.articles)
    # the articles held in memory for the runs are not the writer's garbage: without this,
    # every extra allocation in a run makes the collector walk them all again
    gc.collect()
    gc.freeze()
    quotes = sum(len(p.quotes) for _, ps in items for p in ps)
    on, off, cpu_on, cpu_off, per_commit = [], [], [], [], []
    for r in range(args.rounds):
        for clustering in (r % 2 == 0, r % 2 == 1):  # alternate which goes first
            took, cpu, sig = write_once(items, args.commit_every, clustering)
            (on if clustering else off).append(took)
            (cpu_on if clustering else cpu_off).append(cpu)
            per_commit.extend(sig)
    med_on, med_off = statistics.median(on), statistics.median(off)
    sig_per_article = sum(per_commit) / args.rounds / len(items)
    full_ms = args.full_ms
    return {
        "articles": len(items),
        "quotations": quotes,
        "commit_every": args.commit_every,
        "rounds": args.rounds,
        "write_s_off": [round(x, 2) for x in off],
        "write_s_on": [round(x, 2) for x in on],
        "median_off": round(med_off, 2),
        "median_on": round(med_on, 2),
        "write_ratio": round(med_on / med_off, 3),
        "cpu_s_off": [round(x, 2) for x in cpu_off],
        "cpu_s_on": [round(x, 2) for x in cpu_on],
        "cpu_ratio": round(statistics.median(cpu_on) / statistics.median(cpu_off), 3),
        "signatures_ms_per_commit": round(statistics.median(per_commit) * 1000, 1)
        if per_commit
        else 0.0,  # fmt: skip
        "signatures_ms_per_article": round(sig_per_article * 1000, 3),
        "share_of_full_indexing": round(sig_per_article * 1000 / full_ms, 4),
        "full_index_ms_per_article": args.full_ms,
        "load": os.getloadavg()[0],
    }


def bench_link(args: argparse.Namespace) -> dict[str, Any]:
    from newsquarry.search.engine.views import cache_for

    out: dict[str, Any] = {}
    times: dict[str, list[float]] = {"full": [], "saved": []}
    for _ in range(args.rounds):
        for case in ("full", "saved"):  # from scratch (no saved links), then read back
            if case == "full" and os.path.exists(os.path.join(args.index, qc.LINKS_FILE)):
                os.remove(os.path.join(args.index, qc.LINKS_FILE))
            store = WhooshStore(args.index, create=False, background_merges=False)
            s = store.searcher()
            view = cache_for(store).view(s)
            view.tiebreak  # noqa: B018 - doc values first: measured elsewhere
            t0 = time.perf_counter()
            c = qc.clusters_for(store, s)
            times[case].append(time.perf_counter() - t0)
            assert c.how == case, (c.how, case)
            out["quotations"] = len(c.qdocs)
            out["multi_article_clusters"] = int((c.articles > 1).sum())
            store.close()
    for case, ts in times.items():
        out[f"{case}_s_median"] = round(statistics.median(ts), 3)
        out[f"{case}_s"] = [round(x, 3) for x in ts]
    # an index made before clusters: its first use computes and saves the signatures
    copy = tempfile.mkdtemp(prefix="nq-backfill-")
    shutil.rmtree(copy)
    shutil.copytree(args.index, copy)
    for name in os.listdir(copy):
        if name.endswith(qc.EXT):
            os.remove(os.path.join(copy, name))
    store = WhooshStore(copy, create=False, background_merges=False)
    s = store.searcher()
    cache_for(store).view(s).tiebreak  # noqa: B018
    t0 = time.perf_counter()
    qc.clusters_for(store, s)
    out["backfill_s"] = round(time.perf_counter() - t0, 2)
    store.close()
    shutil.rmtree(copy, ignore_errors=True)
    out["load"] = os.getloadavg()[0]
    return out


def _as_copies(items: list) -> list:
    """The articles under new ids: wire copies of articles already in the index, so
    every quotation they carry has a copy (the most checking a commit can cause)."""
    import dataclasses

    out = []
    for art, passages in items:
        aid = "bench-" + art.id
        out.append((dataclasses.replace(art, id=aid), [
            dataclasses.replace(p, id="bench-" + p.id, article_id=aid) for p in passages
        ]))  # fmt: skip
    return out


def bench_commit(args: argparse.Namespace) -> dict[str, Any]:
    """A commit of N articles and their deletion: the new state's links made in the
    commit of the process that linked the previous state (``link_after_commit``, a
    server) against linked from scratch; the first quote search after it; a new process
    reading the saved links of that state; and a commit by a process that links nothing
    (a bulk load), after which a new process (and the warm one) relink lazily."""
    from newsquarry.search.engine.views import cache_for

    folder = tempfile.mkdtemp(prefix="nq-commit-")
    shutil.rmtree(folder)
    shutil.copytree(args.index, folder)  # never written: a copy
    links = os.path.join(folder, qc.LINKS_FILE)
    try:
        items = _as_copies(enriched(folder, max(args.sizes)))
        store = WhooshStore(folder, create=False, background_merges=False)
        loader = WhooshStore(folder, create=False, background_merges=False)  # links nothing
        qc.clusters_for(store)
        hook_s: list[float] = []

        def timed_hook(st: Any) -> None:
            t0 = time.perf_counter()
            qc.link_now(st)  # what the hook has the background thread do, timed here
            hook_s.append(time.perf_counter() - t0)

        hooks = store.after_commit
        hooks[hooks.index(qc.link_after_commit)] = timed_hook

        def from_scratch_next() -> None:
            """The next state of ``store`` is linked from scratch: no links to start from."""
            cache = qc._CACHES[store]
            cache.last = None
            if os.path.exists(links):
                os.remove(links)

        def clusters_now(st: Any) -> tuple[float, str]:
            """Seconds to the state's clusters (doc values made first, not counted)."""
            s = st.searcher()
            cache_for(st).view(s).tiebreak  # noqa: B018
            t0 = time.perf_counter()
            c = qc.clusters_for(st, s)
            return time.perf_counter() - t0, c.how

        def new_process() -> tuple[float, str]:
            st = WhooshStore(folder, create=False, background_merges=False)
            try:
                return clusters_now(st)
            finally:
                st.close()

        def commit(st: Any, batch: list, delete: bool, link: bool) -> tuple[float, float]:
            """(wall s of the commit, s of linking in it)."""
            if not link:
                hooks.remove(timed_hook)
            hook_s.clear()
            t0 = time.perf_counter()
            try:
                if delete:
                    with st.writer() as w:
                        for art, _ in batch:
                            w.delete(art.id)
                else:
                    st.add(batch)
            finally:
                if not link:
                    hooks.append(timed_hook)
            return time.perf_counter() - t0, sum(hook_s)

        def same_as_full() -> bool:
            from newsquarry.search.engine.views import leaves_of

            s = store.searcher()
            kept = qc.clusters_for(store, s)
            cache = qc._CACHES[store]
            parts = [(off, cache._segment(r)) for r, off in leaves_of(s)]
            full = qc.Clusters(cache_for(store).view(s), parts)
            return full.how == "full" and bool(np.array_equal(full.label, kept.label))

        out: dict[str, Any] = {"quotations_before": len(qc.clusters_for(store).qdocs)}
        equal: list[bool] = []
        for size in args.sizes:
            batch = items[:size]
            res: dict[str, list] = {}

            def put(name: str, value: float, res: dict[str, list] = res) -> None:
                res.setdefault(name, []).append(value)

            for r in range(args.rounds):
                for kept in (r % 2 == 0, r % 2 == 1):  # interleaved, which goes first alternates
                    qc.clusters_for(store)  # the previous state linked (a server)
                    for step in ("add", "delete"):
                        if kept:  # linked in the commit, from the previous state's links
                            wall, linking = commit(store, batch, step == "delete", link=True)
                            put(f"{step}: commit wall s (links made in it)", wall)
                            put(f"{step}: linking in the commit s", linking)
                            took, how = clusters_now(store)
                            assert how == "incremental", how
                            put(f"{step}: first quote search's clusters s", took)
                            if step == "add":
                                equal.append(same_as_full())
                                took, how = new_process()
                                assert how == "saved", how
                                put(f"{step}: new process, saved links s", took)
                        else:  # linked from scratch at the first use
                            wall, _ = commit(store, batch, step == "delete", link=False)
                            put(f"{step}: commit wall s (no linking)", wall)
                            from_scratch_next()
                            took, how = clusters_now(store)
                            assert how == "full", how
                            put(f"{step}: linked from scratch s", took)
                    # another process (a bulk load) commits and links nothing: the next
                    # process starts from the saved links of the state before
                    qc.clusters_for(store)
                    commit(loader, batch, delete=False, link=True)
                    if not kept:
                        os.remove(links)
                    took, how = new_process()
                    assert how == ("incremental" if kept else "full"), how
                    tag = "incremental" if kept else "from scratch"
                    put(f"other process's commit: new process, {tag} s", took)
                    took, how = clusters_now(store)  # the warm process, lazily
                    put(f"other process's commit: warm process, lazily, {how} s", took)
                    commit(loader, batch, delete=True, link=True)
            out[f"commit_{size}"] = {
                k: {"median": round(statistics.median(v), 4), "all": [round(x, 4) for x in v]}
                for k, v in sorted(res.items())
            }
        out["incremental_equals_full"] = equal
        out["load"] = os.getloadavg()[0]
        store.close()
        loader.close()
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def synthetic_state(n: int, seed: int = 1, segments: int = 10) -> tuple[list, Any]:
    """``n`` generated quotations (a tenth of them edited copies of others, a day or two
    apart) in ``segments`` segments, and a stand-in for an index state's doc values (the
    columns ``Clusters`` reads): linking without Whoosh, at any size."""
    import random
    import types

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(20000)]
    texts: list[str] = []
    for _ in range(n):
        if texts and rng.random() < 0.1:
            w = rng.choice(texts).split()
            w = w[: max(6, len(w) - rng.randint(0, 4))]
        else:
            w = [rng.choice(vocab) for _ in range(rng.randint(8, 30))]
        texts.append(" ".join(w))
    per = -(-n // segments)
    parts, off = [], 0
    for start in range(0, n, per):
        chunk = texts[start : start + per]
        recs = [(j, t, "", f"q{start + j}", "direct") for j, t in enumerate(chunk)]
        parts.append((off, qsigs.compute(recs)))
        off += len(chunk)
    gen = np.random.default_rng(seed)
    day = np.sort(gen.integers(0, 365, n))  # copies come after their originals, mostly
    view = types.SimpleNamespace(
        size=n, live=np.ones(n, dtype=bool),
        date=(19870000 + (day // 28 + 1) * 100 + day % 28 + 1).astype(np.int32),
        tiebreak=np.arange(n, dtype=np.int64), article_of=np.arange(n, dtype=np.int64) // 3,
    )  # fmt: skip
    return parts, view


def bench_scale(args: argparse.Namespace) -> dict[str, Any]:
    """CPU seconds to link one index state after a change of one quotation (deleted, then
    back), kept incrementally from the previous state's links, against linking the state
    from scratch, at growing numbers of quotations (generated: ``synthetic_state``)."""
    out: dict[str, Any] = {}
    for n in args.sizes:
        parts, view = synthetic_state(n)
        c0 = time.process_time()
        c = qc.Clusters(view, parts)
        scratch = [time.process_time() - c0]
        links = c.links
        kept = []
        victims = np.flatnonzero(c.articles[c.label[c.qdocs]] > 1)[: args.rounds]
        for i in range(2 * args.rounds):
            view.live[c.qdocs[victims[i // 2 % len(victims)]]] = i % 2 == 1
            c0 = time.process_time()
            got = qc.Clusters(view, parts, links)
            kept.append(time.process_time() - c0)
            assert got.how == "incremental", got.how
            links = got.links
        c0 = time.process_time()
        full = qc.Clusters(view, parts)
        scratch.append(time.process_time() - c0)
        assert np.array_equal(full.label, got.label)  # the same clusters
        out[str(n)] = {
            "incremental_cpu_s_median": round(statistics.median(kept), 4),
            "incremental_cpu_s": [round(x, 4) for x in kept],
            "from_scratch_cpu_s": [round(x, 3) for x in scratch],
            "multi_quote_clusters": int((np.bincount(got.label[got.qdocs]) > 1).sum()),
            "load": os.getloadavg()[0],
        }
    return out


def bench_latency(args: argparse.Namespace) -> dict[str, Any]:
    from newsquarry.search.query import searching

    store = WhooshStore(args.index, create=False, background_merges=False)
    if args.no_postings_cache:
        # as bench_search's newsquarry-nocache: every call decodes its posting lists again
        from newsquarry.search.engine.views import cache_for

        cache_for(store).view(store.searcher()).postings_budget = 0
        cache_for(store).postings.budget = 0
    with_clusters = searching.clusters_for

    def request(q: str, group: str) -> SearchRequest:
        return SearchRequest(
            q=q, mode="quotes", group=group, facets=["speaker", "person", "place", "date"],
            filters={"place": ["USA", "UK", "Japan"], "date": ["1987-03", "1987-04"]},
        )  # fmt: skip

    def run(q: str, case: str) -> None:
        # "before": quote search as it was without clusters (no cluster fields on hits)
        searching.clusters_for = (lambda *a: None) if case == "before" else with_clusters
        try:
            searching.run_search(store, request(q, "none" if case == "before" else case))
        finally:
            searching.clusters_for = with_clusters

    cases = ("before", "none", "cluster")
    times: dict[str, list[float]] = {c: [] for c in cases}
    per_query: dict[str, list[float]] = {}
    for q in QUERIES:  # warm: each query once
        for c in cases:
            run(q, c)
    for _ in range(args.rounds):
        for q in QUERIES:
            for c in cases:
                t0 = time.perf_counter()
                run(q, c)
                ms = (time.perf_counter() - t0) * 1000
                times[c].append(ms)
                per_query.setdefault(f"{c}:{q}", []).append(ms)
    out: dict[str, Any] = {"calls_per_case": len(times["none"])}
    for c, ts in times.items():
        ts.sort()
        out[c] = {"p50_ms": round(statistics.median(ts), 1),
                  "p95_ms": round(ts[int(len(ts) * 0.95) - 1], 1)}  # fmt: skip
    out["median_ms_by_query"] = {k: round(statistics.median(v), 1) for k, v in per_query.items()}
    out["postings_cache"] = not args.no_postings_cache
    out["load"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("index")
    w.add_argument("--articles", type=int, default=2000)
    w.add_argument("--commit-every", type=int, default=250)
    w.add_argument("--rounds", type=int, default=3)
    w.add_argument("--full-ms", type=float, default=round(275.3 * 1000 / 16735, 2),
                   help="wall ms per article of a full index run (docs/benchmarks.md)")  # fmt: skip
    lk = sub.add_parser("link")
    lk.add_argument("index")
    lk.add_argument("--rounds", type=int, default=3)
    cm = sub.add_parser("commit")
    cm.add_argument("index", help="an index (copied first: never written)")
    cm.add_argument("--sizes", type=int, nargs="+", default=[1, 100])
    cm.add_argument("--rounds", type=int, default=6)
    sc = sub.add_parser("scale")
    sc.add_argument("--sizes", type=int, nargs="+", default=[50000, 200000, 800000])
    sc.add_argument("--rounds", type=int, default=5)
    la = sub.add_parser("latency")
    la.add_argument("--no-postings-cache", action="store_true",
                    help="decode posting lists on every call (the figure for the target)")  # fmt: skip
    la.add_argument("index")
    la.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args(argv)
    fn = {"write": bench_write, "link": bench_link, "latency": bench_latency,
          "commit": bench_commit, "scale": bench_scale}[args.cmd]  # fmt: skip
    print(json.dumps(fn(args), indent=2))


if __name__ == "__main__":
    main()

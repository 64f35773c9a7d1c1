"""Search latency: newsquarry's library vs plain Whoosh ``groupedby`` vs SQLite FTS5.

Usage::

    python -m benchmarks.bench_search --index /tmp/nq-bench --sqlite /tmp/nq-bench.sqlite \\
        --min-passages 100000 --rounds 20

The first run builds both indexes (minutes); later runs reuse them (``--rebuild``
forces a new build).

Corpus: ``/work/shared/corpora/reuters21578.jsonl`` (16,735 Reuters stories,
1987), split into passages by ``search.passages.split_passages`` (70,610
passages). To reach ``--min-passages`` the corpus is repeated whole: copy k>0
of article ``X`` gets id ``X-copyk`` (same text, title, date and tags), so the
index is deterministic and its term statistics stay those of real text.

Entities come from Reuters' own ``people``, ``orgs`` and ``places`` tags (an
article's tags are given to each of its passages, display names derived from
the tag: "west-germany" -> "West Germany", "opec" -> "OPEC"), through an
enricher that fills ``Entity`` objects instead of running spaCy: spaCy over 16k
articles (about 3,000 words/s per process here) would take well over ten
minutes per copy, too long for a benchmark build.

Cases (each over ten queries of real newswire words, cycled; ``match="all"``, every
word required, as SQLite's AND, except ``nl_filters2_facets4``):
- ``plain``: top 10 hits with an exact total;
- ``facets4``: plus four facets (person, org, place, date by month);
- ``filters2_facets4``: plus two filters (place in {usa, uk}; date = 1987-03),
  with multi-select counts in newsquarry and SQLite (each facet's counts
  ignore its own filter);
- ``value_search``: place values starting with a prefix, with counts under the
  query;
- ``nl_filters2_facets4``: ``filters2_facets4`` with ten natural-language queries
  of 4-6 words (``NL_QUERIES``) in the default matching mode (``most``: a passage
  needs one word that is not a stop word); SQLite runs the same words ORed;
- ``hybrid_filters2_facets4`` (``--semantic``): the same with ``retrieval="hybrid"``:
  the query's embedding (all-MiniLM-L6-v2; the cache of recent queries is cleared before
  each call, so every call encodes its query: also measured on its own,
  ``query_embedding``), the exact product with every passage vector, keyword matches plus
  neighbours above the floor, fused by RRF.

Vectors (``--semantic``): encoding 70,000 distinct passages would take about an hour on
these shared cores, so ``--vector-pool`` (2,000) distinct passages of the index are
encoded for real and every passage gets the vector of one of them (docnum modulo the
pool): the matrices have the real size and the similarities a real distribution (the
neighbour sets hold repeats); the encoding cost per passage is measured on the pool.
All other cases run with ``retrieval="keyword"``.

Engines:
- ``newsquarry``: ``search.searching.run_search`` / ``facet_values`` (doc values,
  decoded postings kept per index state in a bounded LRU);
- ``newsquarry-nocache``: the same with both postings caches off (the view's
  LRU and the per-segment one), so every call decodes its posting lists from
  the index files (the worst case for a query whose words were not searched
  recently);
- ``groupedby``: the same index through plain Whoosh: ``searcher.search(q,
  limit=10, filter=..., groupedby=FieldFacet(..., allow_overlap=True))`` plus
  ``len(results)`` for the exact total. It makes one pass with every filter
  applied to every facet, i.e. *not* multi-select (that would take one more
  pass per filtered facet), so its times are a lower bound for the same job;
- ``sqlite``: FTS5 (porter, unicode61 remove_diacritics) with bm25 top 10,
  ``count(*)`` and one ``GROUP BY`` per facet over a (rowid, facet, value)
  table; the FTS5 match runs once per call into a temporary table and
  multi-select filters are ``EXISTS`` probes on indexed tables;
- ``newsquarry-analysed`` (``--analysed-highlights``): ``newsquarry`` with every hit's
  text analysed again for its highlights instead of read from the tokens each segment
  keeps (``archive.tokenoffsets``): the code before them, interleaved with it;
- ``tantivy`` (installed with ``pip install 'newsquarry[bench]'``; left out, with a
  message, when it is not): the same passages, filters, facets and page through the Rust
  engine's binding, ``benchmarks.tantivy_engine`` (its docstring has the details).
  Totals and facet counts are compared with newsquarry's as SQLite's are.

``--cold N``: N rounds of one fresh process per engine (interleaved, a first one not
counted): the CPU ms of its imports, then the CPU and wall ms of opening the index and
running the first ``filters2_facets4`` search (``_COLD``).

An index built before the kept tokens gets them once when the benchmark opens it
(``tokenoffsets.backfill``), as it gets its doc values and decoded postings.

Latency is wall time per call on a warm process (each query run once first);
p50 and p95 over ``rounds`` x 10 calls per case and engine, engines
interleaved per round so that machine noise hits them alike. The CPU time of
each call (``time.process_time``) is printed too: on a shared machine it is the
cost of the call itself, wall time adds the wait for a core.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from whoosh import query as wq
from whoosh import sorting

from benchmarks import tantivy_engine
from newsquarry.search.archive import tokenoffsets
from newsquarry.search.core.models import Article, Entity
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.engine.views import cache_for
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import article_from_mapping
from newsquarry.search.query.searching import facet_values, run_search

CORPUS = "/work/shared/corpora/reuters21578.jsonl"
QUERIES = [
    "oil prices",
    "interest rates",
    "trade deficit",
    "bank",
    "coffee",
    "wheat exports",
    "profit",
    "dollar",
    "stock market",
    "gold",
]
# natural-language queries of 4-6 words for the default matching mode (``most``)
NL_QUERIES = [
    "what happened to oil prices today",
    "central bank raises interest rates",
    "trade deficit with japan widened",
    "coffee export quota talks collapse",
    "wheat exports to the soviet union",
    "company reports higher quarterly profit",
    "dollar falls against the yen",
    "stock market prices in new york",
    "gold prices rise on inflation fears",
    "banks cut their lending rates again",
]
FACETS4 = ["person", "org", "place", "date"]
FILTERS2 = {"place": ["usa", "uk"], "date": ["1987-03"]}
PREFIXES = ["ca", "j", "w", "b", "s", "fr", "n", "ch", "it", "a"]


# -- corpus --------------------------------------------------------------------


def display_name(tag: str, kind: str) -> str:
    """Reuters tag -> a display name: 'west-germany' -> 'West Germany', 'opec' -> 'OPEC'."""
    if kind == "place" and len(tag) <= 3 or kind == "org" and len(tag) <= 5:
        return tag.upper()
    return " ".join(w.capitalize() for w in tag.split("-"))


def read_corpus(path: str) -> list[tuple[Article, dict[str, list[str]]]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            tags = {
                "person": [display_name(t, "person") for t in d.get("people", [])],
                "org": [display_name(t, "org") for t in d.get("orgs", [])],
                "place": [display_name(t, "place") for t in d.get("places", [])],
            }
            out.append((article_from_mapping(d), tags))
    return out


def copies_needed(corpus: list, min_passages: int) -> int:
    per_copy = sum(len(split_passages(a)) for a, _ in corpus)
    return max(1, math.ceil(min_passages / per_copy))


def articles(corpus: list, copies: int) -> Iterator[Article]:
    for k in range(copies):
        for a, _ in corpus:
            if k == 0:
                yield a
            else:
                yield Article(
                    id=f"{a.id}-copy{k}",
                    title=a.title,
                    text=a.text,
                    source=a.source,
                    date=a.date,
                    url=a.url,
                )


class TagEnricher:
    """The enricher protocol, filling entities from Reuters tags instead of spaCy."""

    def __init__(self, corpus: list) -> None:
        self.tags = {a.id: t for a, t in corpus}

    def enrich(self, items):
        for article, passages in items:
            tags = self.tags[article.id.split("-copy")[0]]
            for p in passages:
                for kind, names in tags.items():
                    p.entities.extend(Entity(n, n, kind, 0, 0) for n in names)
            yield article, passages


def build_whoosh(index_dir: Path, corpus: list, copies: int) -> WhooshStore:
    if index_dir.exists():
        shutil.rmtree(index_dir)
    store = WhooshStore(index_dir)
    t0 = time.perf_counter()
    report = index_articles(
        store, articles(corpus, copies), enricher=TagEnricher(corpus), commit_every=5000
    )
    store.optimize()  # through the store: every feature's files for the one segment
    print(
        f"built Whoosh index: {report.passages} passages in {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    return store


def passages_of(corpus: list, copies: int) -> Iterator[tuple[Article, Any]]:
    """(article, passage with its tag entities) of the benchmark, in index order: what
    SQLite FTS5 and tantivy are fed."""
    items = ((a, split_passages(a)) for a in articles(corpus, copies))
    for article, passages in TagEnricher(corpus).enrich(items):
        for p in passages:
            yield article, p


def tantivy_rows(corpus: list, copies: int) -> Iterator[dict[str, Any]]:
    """The passages as tantivy documents (``benchmarks.tantivy_engine``): folded keys."""
    for article, p in passages_of(corpus, copies):
        row: dict[str, Any] = {"id": p.id, "text": p.text, "month": (article.date or "")[:7]}
        for kind in ("person", "org", "place"):
            row[kind] = sorted({fold(n) for n in p.names(kind)})
        yield row


def build_sqlite(db_path: Path, corpus: list, copies: int) -> None:
    if db_path.exists():
        db_path.unlink()
    db = sqlite3.connect(db_path)
    db.executescript(
        """
        CREATE TABLE p(rowid INTEGER PRIMARY KEY, id TEXT, article_id TEXT, date TEXT,
                       text TEXT, title TEXT);
        CREATE VIRTUAL TABLE fts USING fts5(text, title, content='p', content_rowid='rowid',
                       tokenize='porter unicode61 remove_diacritics 2');
        CREATE TABLE v(rowid INTEGER, facet TEXT, value TEXT, key TEXT);
        """
    )
    rowid = 0
    t0 = time.perf_counter()
    for article, p in passages_of(corpus, copies):
        rowid += 1
        db.execute(
            "INSERT INTO p VALUES (?,?,?,?,?,?)",
            (rowid, p.id, article.id, article.date, p.text, article.title),
        )
        for kind in ("person", "org", "place"):
            for n in p.names(kind):
                db.execute("INSERT INTO v VALUES (?,?,?,?)", (rowid, kind, n, fold(n)))
    db.execute("INSERT INTO fts(fts) VALUES ('rebuild')")
    db.execute("CREATE INDEX v_facet ON v(facet, key, rowid)")
    db.execute("CREATE INDEX v_row ON v(rowid, facet)")
    db.execute("CREATE INDEX p_date ON p(date)")
    db.commit()
    db.close()
    print(
        f"built SQLite FTS5: {rowid} passages in {time.perf_counter() - t0:.0f} s", file=sys.stderr
    )


# -- engines -------------------------------------------------------------------


def nq_case(store: WhooshStore, case: str, i: int) -> Any:
    q = QUERIES[i % len(QUERIES)]
    kw = "keyword"
    if case == "plain":
        return run_search(store, SearchRequest(q=q, highlight=True, match="all", retrieval=kw))
    if case == "facets4":
        return run_search(store, SearchRequest(q=q, facets=FACETS4, match="all", retrieval=kw))
    if case == "filters2_facets4":
        return run_search(store, SearchRequest(q=q, facets=FACETS4, filters=FILTERS2,
                                               match="all", retrieval=kw))  # fmt: skip
    if case in ("nl_filters2_facets4", "hybrid_filters2_facets4"):
        nl = NL_QUERIES[i % len(NL_QUERIES)]
        how = "hybrid" if case.startswith("hybrid") else kw
        if how == "hybrid":  # every call encodes its query: the cost a new query pays
            from newsquarry.search.core import embedding

            embedding._query.cache_clear()
        return run_search(store, SearchRequest(q=nl, facets=FACETS4, filters=FILTERS2,
                                               retrieval=how))  # fmt: skip
    return facet_values(
        store, "place", PREFIXES[i % len(PREFIXES)], SearchRequest(q=q, match="all", retrieval=kw)
    )


def pool_vectors(store: WhooshStore, pool: int) -> dict[str, float]:
    """Give every passage without a vector one of ``pool`` real passage vectors (see the
    module docstring), committed like ``newsquarry embed``; the encoding's cost."""
    import numpy as np

    from newsquarry.search.archive import vectors
    from newsquarry.search.core import embedding

    searcher = store.searcher()
    todo = [(r.segment().segment_id(), vectors.missing_docs(store.path, r))
            for r, _ in searcher.ixreader.leaf_readers() if r.segment() is not None]  # fmt: skip
    todo = [(sid, miss) for sid, miss in todo if len(miss)]
    if not todo:
        return {}
    texts: list[str] = []
    seen: set[str] = set()
    for reader, _ in searcher.ixreader.leaf_readers():
        for d in vectors.wanted_docs(reader).tolist():
            t = reader.stored_fields(d).get("text") or ""
            if t and t not in seen:
                seen.add(t)
                texts.append(t)
            if len(texts) >= pool:
                break
        if len(texts) >= pool:
            break
    t0, c0 = time.perf_counter(), time.process_time()
    vecs = embedding.encode(texts)
    cost = {"pool": len(texts), "wall_ms_per_passage": (time.perf_counter() - t0) * 1000 / len(texts),
            "cpu_ms_per_passage": (time.process_time() - c0) * 1000 / len(texts)}  # fmt: skip
    for sid, miss in todo:
        with store.writer() as session:
            reader = vectors._reader_of(session._searcher, sid)
            seg = reader.segment()
            data = vectors.SegmentVectors(miss.astype(np.int32), vecs[miss % len(vecs)])
            vectors._replace_file(store, sid, seg.doc_count_all(), data)
            session.changed = True
    return cost


def query_embedding_cost() -> dict[str, float]:
    """Encoding a query not seen before (p50, p95 over 50 distinct queries), model loaded."""
    from newsquarry.search.core import embedding

    embedding.encode_query("warm up the model")
    times = []
    for n in range(50):
        t0 = time.perf_counter()
        embedding.encode([f"{NL_QUERIES[n % len(NL_QUERIES)]} {n}"])
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50": statistics.median(times), "p95": pct(times, 0.95)}


class GroupedBy:
    """The same searches through plain Whoosh (``groupedby`` facets)."""

    def __init__(self, store: WhooshStore) -> None:
        from whoosh.qparser import MultifieldParser

        self.store = store
        # newsquarry's default fields: a passage matches by its text and quotes
        self.parser = MultifieldParser(["text", "quote"], store.ix.schema)
        self.passage = wq.Term("doctype", "passage")

    def _filter(self, searcher: Any) -> Any:
        def terms(field: str, values: list[str]) -> list:
            wanted = {fold(v) for v in values}
            return [
                wq.Term(field, t.decode())
                for t in searcher.lexicon(field)
                if fold(t.decode()) in wanted
            ]

        return wq.And(
            [
                self.passage,
                wq.Or(terms("place", FILTERS2["place"])),
                wq.Prefix("date", FILTERS2["date"][0]),
            ]
        )

    def run(self, case: str, i: int) -> Any:
        s = self.store.searcher()
        if case in ("nl_filters2_facets4", "hybrid_filters2_facets4"):  # the same words
            from whoosh.qparser import MultifieldParser, OrGroup

            parser = MultifieldParser(["text", "quote"], self.store.ix.schema, group=OrGroup)
            q = parser.parse(NL_QUERIES[i % len(NL_QUERIES)])
            case = "filters2_facets4"
        else:
            q = self.parser.parse(QUERIES[i % len(QUERIES)])
        if case == "plain":
            r = s.search(q, limit=10, filter=self.passage)
            return len(r), [h["id"] for h in r]
        facets = {
            "person": sorting.FieldFacet("person", allow_overlap=True),
            "org": sorting.FieldFacet("org", allow_overlap=True),
            "place": sorting.FieldFacet("place", allow_overlap=True),
            "date": sorting.FieldFacet("date"),
        }
        if case == "value_search":
            r = s.search(q, limit=10, filter=self.passage, groupedby={"place": facets["place"]})
            prefix = PREFIXES[i % len(PREFIXES)]
            counts = {
                k: len(v)
                for k, v in r.groups("place").items()
                if k is not None and fold(k).startswith(prefix)
            }
            return sorted(counts.items(), key=lambda kv: -kv[1])[:10]
        flt = self._filter(s) if case == "filters2_facets4" else self.passage
        r = s.search(q, limit=10, filter=flt, groupedby=facets)
        out = {}
        for name in ("person", "org", "place"):
            counts = {k: len(v) for k, v in r.groups(name).items() if k is not None}
            out[name] = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
        months: dict[str, int] = {}
        for day, docs in r.groups("date").items():
            if day:
                months[day[:7]] = months.get(day[:7], 0) + len(docs)
        out["date"] = months
        return len(r), [h["id"] for h in r], out


class FTS5:
    """The same searches through SQLite FTS5 with GROUP BY counts.

    Per call the FTS5 match runs once into a temporary table of (rowid, bm25);
    the total, the top 10 and each facet's GROUP BY (with multi-select filters
    as ``EXISTS`` probes on indexed tables) are then computed from it.
    """

    def __init__(self, db_path: Path) -> None:
        self.db = sqlite3.connect(db_path, check_same_thread=False)
        self.db.execute("PRAGMA temp_store = MEMORY")

    @staticmethod
    def _match(q: str, op: str = "AND") -> str:
        # passages match by their own text (as in newsquarry, where the title only ranks)
        return f" {op} ".join(f'text : "{w}"' for w in q.split())

    def _filters(self, without: str | None) -> tuple[str, list]:
        sql, args = "", []
        for facet, values in FILTERS2.items():
            if facet == without:
                continue
            if facet == "date":
                sql += " AND EXISTS (SELECT 1 FROM p WHERE p.rowid = m.r AND p.date >= ? AND p.date < ?)"
                args += [values[0], values[0] + "~"]
            else:
                marks = ",".join("?" * len(values))
                sql += (
                    " AND EXISTS (SELECT 1 FROM v AS f WHERE f.rowid = m.r AND f.facet = ? "
                    f"AND f.key IN ({marks}))"
                )
                args += [facet, *[fold(v) for v in values]]
        return sql, args

    def run(self, case: str, i: int) -> Any:
        db = self.db
        db.execute("DROP TABLE IF EXISTS temp.m")
        if case in ("nl_filters2_facets4", "hybrid_filters2_facets4"):  # the same words
            match = self._match(NL_QUERIES[i % len(NL_QUERIES)], "OR")
            case = "filters2_facets4"
        else:
            match = self._match(QUERIES[i % len(QUERIES)])
        db.execute(
            "CREATE TEMP TABLE m AS SELECT rowid AS r, bm25(fts, 1.0, 2.0) AS s "
            "FROM fts WHERE fts MATCH ?",
            (match,),
        )
        if case == "value_search":
            prefix = PREFIXES[i % len(PREFIXES)]
            return db.execute(
                "SELECT v.value, count(*) c FROM m CROSS JOIN v ON v.rowid = m.r "
                "WHERE v.facet = 'place' AND v.key LIKE ? GROUP BY v.key ORDER BY c DESC LIMIT 10",
                (prefix + "%",),
            ).fetchall()
        use_filters = case == "filters2_facets4"
        fsql, fargs = self._filters(None) if use_filters else ("", [])
        total = db.execute(f"SELECT count(*) FROM m WHERE 1{fsql}", fargs).fetchone()
        top = db.execute(f"SELECT m.r FROM m WHERE 1{fsql} ORDER BY m.s LIMIT 10", fargs).fetchall()
        if case == "plain":
            return total, top
        out = {}
        for facet in ("person", "org", "place"):
            wsql, wargs = self._filters(facet) if use_filters else ("", [])
            out[facet] = db.execute(
                "SELECT v.value, count(*) c FROM m CROSS JOIN v ON v.rowid = m.r "
                f"WHERE v.facet = ?{wsql} GROUP BY v.key ORDER BY c DESC LIMIT 10",
                [facet, *wargs],
            ).fetchall()
        wsql, wargs = self._filters("date") if use_filters else ("", [])
        out["date"] = db.execute(
            "SELECT substr(p.date, 1, 7) d, count(*) FROM m CROSS JOIN p ON p.rowid = m.r "
            f"WHERE 1{wsql} GROUP BY d",
            wargs,
        ).fetchall()
        return total, top, out


def check_agreement(store: WhooshStore, fts: FTS5) -> list[str]:
    """Totals and facet counts of newsquarry and SQLite on every query and case."""
    problems = []
    for case in ("plain", "facets4", "filters2_facets4"):
        for i, q in enumerate(QUERIES):
            r = nq_case(store, case, i)
            got = fts.run(case, i)
            if r.total != got[0][0]:
                problems.append(f"{case} {q!r}: total {r.total} vs {got[0][0]}")
            if case == "plain":
                continue
            for facet in ("person", "org", "place"):
                ours = {fold(v.value): v.count for v in r.facets[facet].values}
                theirs = {fold(v): c for v, c in got[2][facet]}
                for key in ours.keys() & theirs.keys():
                    if ours[key] != theirs[key]:
                        problems.append(f"{case} {q!r} {facet}={key}: {ours[key]} vs {theirs[key]}")
            months = dict(got[2]["date"])
            for v in r.facets["date"].values:
                if months.get(v.value, 0) != v.count:
                    problems.append(
                        f"{case} {q!r} date={v.value}: {v.count} vs {months.get(v.value)}"
                    )
    return problems


# -- measuring -------------------------------------------------------------------


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * p
    lo, hi = math.floor(k), math.ceil(k)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def measure(
    engines: dict[str, Any], cases: list[str], rounds: int, slow_rounds: int | None = None
) -> dict:
    """p50/p95 per (engine, case) of wall time, and of the CPU time the process spent
    (``cpu_p50``/``cpu_p95``: what a call costs whatever else runs on the machine; on
    a loaded machine wall time also holds the time spent waiting for a core);
    ``groupedby`` runs only ``slow_rounds`` rounds if given."""
    times: dict[tuple[str, str], list[float]] = {(e, c): [] for e in engines for c in cases}
    cpu: dict[tuple[str, str], list[float]] = {(e, c): [] for e in engines for c in cases}
    for case in cases:  # warm-up: every query once per engine (two for the slow one)
        for name, fn in engines.items():
            if not _runs(fn, case):
                continue
            for i in range(2 if name == "groupedby" and slow_rounds else len(QUERIES)):
                fn(case, i)
    print("warmed up", file=sys.stderr)
    for r in range(rounds):
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
        for case in cases:
            for i in range(len(QUERIES)):
                for name, fn in engines.items():
                    if name == "groupedby" and slow_rounds is not None and r >= slow_rounds:
                        continue
                    if not _runs(fn, case):
                        continue
                    t0, c0 = time.perf_counter(), time.process_time()
                    fn(case, i)
                    times[(name, case)].append((time.perf_counter() - t0) * 1000)
                    cpu[(name, case)].append((time.process_time() - c0) * 1000)
    return {
        k: {
            "p50": statistics.median(v),
            "p95": pct(v, 0.95),
            "cpu_p50": statistics.median(cpu[k]),
            "cpu_p95": pct(cpu[k], 0.95),
            "n": len(v),
        }
        for k, v in times.items()
        if v
    }


def _runs(fn: Any, case: str) -> bool:
    """Whether an engine runs a case (tantivy has no ``value_search``)."""
    cases = getattr(getattr(fn, "__self__", None), "cases", None)
    return cases is None or case in cases


# a fresh process per engine: its imports, then open + the first faceted search (the
# ``filters2_facets4`` request of query ``i``), as CPU and wall ms (JSON on stdout)
_COLD = {
    "newsquarry": """
import json, sys, time
c0 = time.process_time()
from benchmarks.bench_search import FACETS4, FILTERS2, QUERIES
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query.searching import run_search
c1, w1 = time.process_time(), time.perf_counter()
store = WhooshStore(sys.argv[1], create=False)
r = run_search(store, SearchRequest(q=QUERIES[int(sys.argv[2])], facets=FACETS4,
               filters=FILTERS2, match="all", retrieval="keyword"))
c2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"imports": (c1 - c0) * 1000, "cpu": (c2 - c1) * 1000,
                  "wall": (w2 - w1) * 1000, "total": r.total}))
""",
    "tantivy": """
import json, sys, time
c0 = time.process_time()
from benchmarks.bench_search import FILTERS2, NL_QUERIES, QUERIES
from benchmarks.tantivy_engine import Tantivy
import tantivy
c1, w1 = time.process_time(), time.perf_counter()
got = Tantivy(sys.argv[1], QUERIES, NL_QUERIES, FILTERS2, str.lower).run(
    "filters2_facets4", int(sys.argv[2]))
c2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"imports": (c1 - c0) * 1000, "cpu": (c2 - c1) * 1000,
                  "wall": (w2 - w1) * 1000, "total": got[0][0]}))
""",
    "sqlite": """
import json, sys, time
c0 = time.process_time()
from benchmarks.bench_search import FTS5
c1, w1 = time.process_time(), time.perf_counter()
got = FTS5(sys.argv[1]).run("filters2_facets4", int(sys.argv[2]))
c2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"imports": (c1 - c0) * 1000, "cpu": (c2 - c1) * 1000,
                  "wall": (w2 - w1) * 1000, "total": got[0][0]}))
""",
}


def cold_starts(index: Path, db: Path, tv: Path | None, rounds: int) -> dict[str, Any]:
    """Per engine, the medians over ``rounds`` fresh processes (engines interleaved, the
    query rotated) of CPU ms of imports, CPU and wall ms of open + first search; one
    process per engine first, not counted (it verifies checksums, warms the page cache).
    ``benchmarks`` imports the library too, so imports are given for the record only."""
    import subprocess

    paths = {"newsquarry": index, "sqlite": db} | ({"tantivy": tv} if tv else {})
    got: dict[str, list[dict[str, float]]] = {e: [] for e in paths}
    root = str(Path(__file__).resolve().parent.parent)
    for r in range(rounds + 1):
        for engine, path in paths.items():
            out = subprocess.run(
                [sys.executable, "-c", _COLD[engine], str(path), str(r % len(QUERIES))],
                capture_output=True, text=True, check=True, cwd=root,
            )  # fmt: skip
            if r:
                got[engine].append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {
        e: {k: statistics.median(x[k] for x in v) for k in ("imports", "cpu", "wall")}
        | {"n": len(v)}
        for e, v in got.items()
    }


def print_cold(res: dict[str, Any]) -> None:
    print("\nfresh process: open + first filters2_facets4 search (imports apart), medians\n")
    print("| engine | imports CPU ms | open + search CPU ms | wall ms | wall / tantivy |")
    print("|---|---:|---:|---:|---:|")
    base = res.get("tantivy", {}).get("wall")
    for e, v in res.items():
        ratio = f"{v['wall'] / base:.1f}x" if base else "-"
        print(f"| {e} | {v['imports']:.1f} | {v['cpu']:.1f} | {v['wall']:.1f} | {ratio} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--index", default="/tmp/nq-bench", help="Whoosh index folder (reused)")
    ap.add_argument("--sqlite", default="/tmp/nq-bench.sqlite", help="SQLite file (reused)")
    ap.add_argument("--min-passages", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=20, help="rounds of the 10 queries per case")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--skip-groupedby", action="store_true")
    ap.add_argument(
        "--groupedby-rounds", type=int, help="fewer rounds for the slow groupedby engine"
    )
    ap.add_argument("--skip-nocache", action="store_true", help="skip newsquarry-nocache")
    ap.add_argument(
        "--whoosh-postings",
        action="store_true",
        help="also newsquarry-whoosh: no cache and no .pst files (Whoosh's postings decoded)",
    )
    ap.add_argument(
        "--analysed-highlights", action="store_true",
        help="also newsquarry-analysed: highlights by analysing each hit's text (no kept tokens)",
    )  # fmt: skip
    ap.add_argument("--json", help="also write the figures to this JSON file")
    ap.add_argument("--cases", nargs="*", help="cases to run (default: all)")
    ap.add_argument(
        "--semantic",
        action="store_true",
        help="give the index vectors (--vector-pool) and run hybrid_filters2_facets4",
    )
    ap.add_argument("--vector-pool", type=int, default=2000)
    ap.add_argument(
        "--tantivy", default="/tmp/nq-bench.tantivy", help="tantivy index folder (reused)"
    )
    ap.add_argument("--skip-tantivy", action="store_true")
    ap.add_argument(
        "--cold", type=int, default=0, metavar="N",
        help="also N rounds of fresh processes per engine: open + first faceted search",
    )  # fmt: skip
    args = ap.parse_args(argv)

    index_dir, db_path, tv_dir = Path(args.index), Path(args.sqlite), Path(args.tantivy)
    use_tantivy = not args.skip_tantivy and tantivy_engine.available()
    if not args.skip_tantivy and not use_tantivy:
        print(
            "tantivy is not installed: its engine is left out "
            "(pip install 'newsquarry[bench]', or --skip-tantivy)",
            file=sys.stderr,
        )
    corpus = None
    need_tv = use_tantivy and (args.rebuild or not tv_dir.exists())
    if args.rebuild or not index_dir.exists() or not db_path.exists() or need_tv:
        corpus = read_corpus(args.corpus)
        copies = copies_needed(corpus, args.min_passages)
        print(f"corpus x{copies}", file=sys.stderr)
        if args.rebuild or not index_dir.exists():
            build_whoosh(index_dir, corpus, copies).close()
        if args.rebuild or not db_path.exists():
            build_sqlite(db_path, corpus, copies)
        if need_tv:
            tantivy_engine.build(tv_dir, tantivy_rows(corpus, copies))

    store = WhooshStore(index_dir, create=False)
    t0 = time.process_time()
    added = tokenoffsets.backfill(store)  # an index built before the files: added once
    if added:
        print(f"token offsets written for {added} segment(s) in "
              f"{time.process_time() - t0:.1f} s of CPU", file=sys.stderr)  # fmt: skip
    stats = store.stats()
    t0 = time.perf_counter()
    dv = cache_for(store)
    dv.view(store.searcher())
    view_s = time.perf_counter() - t0
    print(
        f"index: {stats['passages']} passages, {stats['articles']} articles, "
        f"{stats['segments']} segment(s); doc values and postings files opened in "
        f"{view_s:.2f} s ({dv.builds} doc-values and {dv.postings_builds} postings files "
        "built first)",
        file=sys.stderr,
    )
    semantic_cost: dict[str, Any] = {}
    if args.semantic:
        semantic_cost["encoding"] = pool_vectors(store, args.vector_pool)
        semantic_cost["query_embedding_ms"] = query_embedding_cost()
        print(f"semantic: {semantic_cost}", file=sys.stderr)
    engines: dict[str, Any] = {"newsquarry": lambda c, i: nq_case(store, c, i)}
    if not args.skip_nocache:
        # a second store object, hence its own doc-values view, with no decoded-postings
        # cache: every query decodes its posting lists from the index files again
        bare = WhooshStore(index_dir, create=False)
        cache_for(bare).view(bare.searcher()).postings_budget = 0
        cache_for(bare).postings.budget = 0  # nor the per-segment one
        engines["newsquarry-nocache"] = lambda c, i: nq_case(bare, c, i)
    if args.analysed_highlights:
        # the same library highlighting as before the kept tokens: every hit's text analysed
        again = WhooshStore(index_dir, create=False)
        again.token_offsets.enabled = False
        engines["newsquarry-analysed"] = lambda c, i: nq_case(again, c, i)
    if args.whoosh_postings:
        # as before decoded postings were on disk: every list decoded from Whoosh's blocks
        raw = WhooshStore(index_dir, create=False)
        cache_for(raw).postings_files = False
        cache_for(raw).view(raw.searcher()).postings_budget = 0
        cache_for(raw).postings.budget = 0
        engines["newsquarry-whoosh"] = lambda c, i: nq_case(raw, c, i)
    if not args.skip_groupedby:
        engines["groupedby"] = GroupedBy(store).run
    engines["sqlite"] = FTS5(db_path).run
    if use_tantivy:
        engines["tantivy"] = tantivy_engine.Tantivy(tv_dir, QUERIES, NL_QUERIES, FILTERS2, fold).run
    for name in ("sqlite", "tantivy"):
        if name in engines:
            problems = check_agreement(store, engines[name].__self__)
            print(
                f"newsquarry vs {name} totals and facet counts: {len(problems)} difference(s)",
                *problems[:10],
                sep="\n",
                file=sys.stderr,
            )
    cases = args.cases or ["plain", "facets4", "filters2_facets4", "value_search",
                           "nl_filters2_facets4"]  # fmt: skip
    if args.semantic and "hybrid_filters2_facets4" not in cases:
        cases.append("hybrid_filters2_facets4")
    res = measure(engines, cases, args.rounds, args.groupedby_rounds) if args.rounds else {}
    cold_res = {}
    if args.cold:
        cold_res = cold_starts(index_dir, db_path, tv_dir if use_tantivy else None, args.cold)
        print_cold(cold_res)

    print(f"\n{stats['passages']} passages; ms per call (p50 / p95); ratio = other / newsquarry\n")
    head = "| case | newsquarry p50 | p95 |"
    others = [e for e in engines if e != "newsquarry"]
    for e in others:
        head += f" {e} p50 | p95 | ratio p50 | ratio p95 |"
    print(head)
    print("|" + "---|" * (3 + 4 * len(others)))
    for case in cases if res else []:
        nq = res[("newsquarry", case)]
        row = f"| {case} | {nq['p50']:.1f} | {nq['p95']:.1f} |"
        for e in others:
            o = res.get((e, case))
            if o is None:
                row += " - | - | - | - |"
                continue
            row += (
                f" {o['p50']:.1f} | {o['p95']:.1f} | {o['p50'] / nq['p50']:.1f}x |"
                f" {o['p95'] / nq['p95']:.1f}x |"
            )
        print(row)
    print("\nCPU ms per call (p50 / p95): the process's own time, without waiting for a core\n")
    print("| case | " + " | ".join(f"{e} p50 | p95" for e in engines) + " |")
    print("|" + "---|" * (1 + 2 * len(engines)))
    for case in cases if res else []:
        row = f"| {case} |"
        for e in engines:
            o = res.get((e, case))
            row += f" {o['cpu_p50']:.1f} | {o['cpu_p95']:.1f} |" if o else " - | - |"
        print(row)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "passages": stats["passages"],
                    "doc_values_build_s": view_s,
                    "semantic": semantic_cost,
                    "results": {f"{e}/{c}": v for (e, c), v in res.items()},
                    "cold": cold_res,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()

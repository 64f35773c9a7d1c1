"""tantivy (the Rust engine, through its Python binding) on the passages ``bench_search``
feeds SQLite FTS5: the same filters, facets and page, for the side-by-side of issue 37.

tantivy is an optional benchmark dependency (``pip install 'newsquarry[bench]'``);
``available()`` says whether it is installed, and the benchmark leaves the engine out
(saying so) when it is not.

The index: one tantivy document per passage, ``text`` (stored, tokenizer ``en_stem``:
words, lower case, English Snowball stems, with positions), ``id`` (stored), the passage's
person, org and place keys (folded names, ``raw`` tokenizer, fast fields: multi-valued
columns the terms aggregations count) and its month (``1987-03``, a fast field). Written
by one writer (one thread, 512 MB of heap: the whole of Reuters fits, so one commit makes
one segment, as the Whoosh index is optimized into one).

A call (``run``): the query parsed on ``text`` (every word required, ``+w``, for the AND
cases; the words ORed for the natural-language case, as SQLite runs them); the total and
the top 10 by BM25 under both filters; a snippet of 240 characters with its highlighted
ranges for each of the 10 (``SnippetGenerator``, as newsquarry highlights its page); and
the four terms aggregations with multi-select counts: person and org under both filters,
place under the date filter only, the month under the place filter only (each facet's
counts ignore its own filter, as in newsquarry and SQLite): four searcher calls.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FACET_SIZE = 10
SNIPPET_CHARS = 240
HEAP_BYTES = 512_000_000


def available() -> bool:
    """Whether the tantivy binding is installed."""
    return importlib.util.find_spec("tantivy") is not None


def schema() -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("text", stored=True, tokenizer_name="en_stem", index_option="position")
    for name in ("person", "org", "place", "month"):
        sb.add_text_field(name, fast=True, tokenizer_name="raw", index_option="basic")
    return sb.build()


def build(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write a tantivy index of ``rows`` ({id, text, person, org, place, month}: keys as
    lists of folded names) at ``path`` (replaced); the number of documents."""
    import tantivy

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    ix = tantivy.Index(schema(), path=str(path))
    w = ix.writer(heap_size=HEAP_BYTES, num_threads=1)
    n = 0
    t0 = time.perf_counter()
    for row in rows:
        w.add_document(tantivy.Document(**row))
        n += 1
    w.commit()
    w.wait_merging_threads()
    ix.reload()
    print(
        f"built tantivy: {n} passages in {time.perf_counter() - t0:.0f} s, "
        f"{ix.searcher().num_segments} segment(s)",
        file=sys.stderr,
    )
    return n


class Tantivy:
    """The benchmark's searches through tantivy (see the module docstring)."""

    cases = ("plain", "facets4", "filters2_facets4", "nl_filters2_facets4")

    def __init__(self, path: Path, queries: list[str], nl_queries: list[str],
                 filters: dict[str, list[str]], fold: Any) -> None:  # fmt: skip
        import tantivy

        self.t = tantivy
        self.ix = tantivy.Index.open(str(path))
        self.schema = self.ix.schema
        self.queries, self.nl_queries = queries, nl_queries
        place = [fold(v) for v in filters["place"]]
        self.place = tantivy.Query.term_set_query(self.schema, "place", place)
        self.month = tantivy.Query.term_query(self.schema, "month", filters["date"][0])

    def _and(self, *parts: Any) -> Any:
        return self.t.Query.boolean_query([(self.t.Occur.Must, p) for p in parts])

    @staticmethod
    def _terms(field: str) -> dict[str, Any]:
        return {field: {"terms": {"field": field, "size": FACET_SIZE}}}

    def run(self, case: str, i: int) -> Any:
        """One call of a case, shaped as ``bench_search.FTS5.run``'s: ((total,), hits,
        facets) with hits [(id, snippet html, highlighted ranges)] and facets {person, org,
        place, date: [(key, count)]} (``date`` by month)."""
        searcher = self.ix.searcher()
        if case in ("nl_filters2_facets4", "hybrid_filters2_facets4"):  # the same words ORed
            q = self.ix.parse_query(self.nl_queries[i % len(self.nl_queries)], ["text"])
            case = "filters2_facets4"
        else:  # every word required
            words = self.queries[i % len(self.queries)].split()
            q = self.ix.parse_query(" ".join(f"+{w}" for w in words), ["text"])
        filtered = case == "filters2_facets4"
        top_q = self._and(q, self.place, self.month) if filtered else q
        res = searcher.search(top_q, FACET_SIZE, count=True)
        gen = self.t.SnippetGenerator.create(searcher, top_q, self.schema, "text")
        gen.set_max_num_chars(SNIPPET_CHARS)
        hits = []
        for _score, addr in res.hits:
            doc = searcher.doc(addr)
            snip = gen.snippet_from_doc(doc)
            hits.append(
                (doc["id"][0], snip.to_html(), [(r.start, r.end) for r in snip.highlighted()])
            )
        if case == "plain":
            return (res.count,), hits
        if filtered:
            aggs = searcher.aggregate(top_q, self._terms("person") | self._terms("org"))
            aggs |= searcher.aggregate(self._and(q, self.month), self._terms("place"))
            aggs |= searcher.aggregate(self._and(q, self.place), self._terms("month"))
        else:
            fields = ("person", "org", "place", "month")
            aggs = searcher.aggregate(q, {k: v for f in fields for k, v in self._terms(f).items()})
        facets = {
            name: [(b["key"], b["doc_count"]) for b in aggs[field]["buckets"]]
            for name, field in (("person", "person"), ("org", "org"), ("place", "place"),
                                ("date", "month"))
        }  # fmt: skip
        return (res.count,), hits, facets

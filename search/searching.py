"""The search library the HTTP API and the CLI both call.

``run_search(store, request) -> SearchResult`` and
``facet_values(store, facet, prefix, request, size) -> FacetResult``.

How a search runs (DESIGN.md section 5):

1. the request is validated here (``UnknownFacet``, ``InvalidRequest``,
   ``QueryError``), so the CLI and the API report the same errors;
2. the query is parsed (``query.parse_query``) and evaluated into a mask of
   matching documents by set algebra over postings (``docvalues``): this gives
   the exact total and the facet counts without scoring anything;
3. the matching documents are ranked by BM25F computed with numpy over the
   query terms' posting blocks (``scoring``; title and quote text carry field
   boosts 2.0 and 1.5 in the schema), so filters always apply and the time
   limit (a deadline checked between posting lists, no SIGALRM: safe in
   threads) raises ``SearchTimeout`` rather than returning partial results;
4. hits are highlighted (``highlight``), facets counted (``facets``) and a
   spelling suggestion computed when the query finds little (``suggest``).

Empty query: browsing. An empty ``q`` (with or without filters) matches every
passage (or quote), so facets can be used to explore the index; with
``sort="relevance"`` browsing lists documents in index order.

Sorts: ``relevance`` (BM25F), ``date`` (oldest first), ``-date`` (newest
first); ties and dateless documents (listed last) keep index order, which is
article then passage order. Date-sorted hits carry ``score = 0.0``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from .config import load_settings
from .docvalues import VALUE_FIELDS, Deadline, Postings, View, cache_for, match_mask
from .errors import InvalidRequest, QueryError, SearchTimeout, UnknownFacet
from .facets import FacetCounter, build_filters, date_bounds
from .highlight import highlight
from .query import ParsedQuery, parse_query
from .requests import (
    DATE_INTERVALS,
    MODES,
    SORTS,
    FacetResult,
    Hit,
    QuoteHit,
    SearchRequest,
    SearchResult,
)
from .schema import FACETS
from .scoring import bm25_scores, top_k
from .suggest import SUGGEST_BELOW, corrected_text

DOCTYPE_FOR_MODE = {"passages": "passage", "quotes": "quote"}


# -- validation ------------------------------------------------------------------


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value))
        except ValueError:
            raise InvalidRequest(
                f"{name} must be a whole number, got {value!r}", field=name
            ) from None
    return value


def validate(request: SearchRequest, settings: dict[str, Any]) -> SearchRequest:
    """Check a request against the settings; raises UnknownFacet or InvalidRequest."""
    r = request
    if not isinstance(r.q, str):
        raise InvalidRequest("q must be a string", field="q")
    if r.mode not in MODES:
        raise InvalidRequest(
            f"mode must be one of {', '.join(MODES)}, got {r.mode!r}", field="mode"
        )
    if r.sort not in SORTS:
        raise InvalidRequest(
            f"sort must be one of {', '.join(SORTS)}, got {r.sort!r}", field="sort"
        )
    r.page = _int(r.page, "page")
    r.per_page = _int(r.per_page, "per_page")
    r.facet_size = _int(r.facet_size, "facet_size")
    if r.page < 1:
        raise InvalidRequest(f"page must be 1 or more, got {r.page}", field="page")
    if not 1 <= r.per_page <= settings["max_per_page"]:
        raise InvalidRequest(
            f"per_page must be between 1 and {settings['max_per_page']}, got {r.per_page}",
            field="per_page",
        )
    if r.page * r.per_page > settings["max_page_depth"]:
        raise InvalidRequest(
            f"page {r.page} with per_page {r.per_page} goes past result "
            f"{settings['max_page_depth']}, the deepest reachable: refine the query",
            field="page",
        )
    if not 1 <= r.facet_size <= settings["max_facet_size"]:
        raise InvalidRequest(
            f"facet_size must be between 1 and {settings['max_facet_size']}, got {r.facet_size}",
            field="facet_size",
        )
    if r.date_interval not in DATE_INTERVALS:
        raise InvalidRequest(
            f"date_interval must be one of {', '.join(DATE_INTERVALS)}, got {r.date_interval!r}",
            field="date_interval",
        )
    facets = list(dict.fromkeys(r.facets or []))
    for f in facets:
        if f not in FACETS:
            raise UnknownFacet(
                f"unknown facet {f!r}; facets are: {', '.join(FACETS)}", field="facets"
            )
    if len(facets) > settings["max_facets"]:
        raise InvalidRequest(
            f"at most {settings['max_facets']} facets per search, got {len(facets)}",
            field="facets",
        )
    r.facets = facets
    if not isinstance(r.filters, dict):
        raise InvalidRequest("filters must map facet names to lists of values", field="filters")
    nvalues = 0
    clean: dict[str, list[str]] = {}
    for name, values in r.filters.items():
        if name not in FACETS:
            raise UnknownFacet(
                f"unknown filter {name!r}; filters are: {', '.join(FACETS)}", field="filters"
            )
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
            raise InvalidRequest(f"filter {name!r} must be a list of strings", field="filters")
        if name == "date":
            for v in values:
                date_bounds(v, what="filters.date")
        nvalues += len(values)
        clean[name] = list(values)
    if nvalues > settings["max_filter_values"]:
        raise InvalidRequest(
            f"at most {settings['max_filter_values']} filter values per search, got {nvalues}",
            field="filters",
        )
    r.filters = clean
    for name in ("date_from", "date_to"):
        v = getattr(r, name)
        if v is not None and v != "":
            date_bounds(str(v), what=name)
    if r.time_limit is not None:
        try:
            ok = float(r.time_limit) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InvalidRequest(
                "time_limit must be a positive number of seconds", field="time_limit"
            )
    return r


# -- the search --------------------------------------------------------------------


class _Prepared:
    """What every search step needs: the view, the parsed query, base and final masks."""

    def __init__(self, store: Any, request: SearchRequest, settings: dict[str, Any]) -> None:
        self.started = time.perf_counter()
        self.request = request
        self.settings = settings
        self.searcher = store.searcher()
        self.view: View = cache_for(store).view(self.searcher)
        limit = request.time_limit or settings["search_time_limit"]
        self.deadline = Deadline(float(limit))
        self.parsed: ParsedQuery = parse_query(
            request.q,
            searcher=self.searcher,
            view=self.view,
            mode=request.mode,
            max_expansion=settings["max_term_expansion"],
            max_length=settings["max_query_length"],
            deadline=self.deadline,
        )
        doctype = self.view.doctype_mask(DOCTYPE_FOR_MODE[request.mode])
        self.postings = Postings(self.searcher, self.view)
        if self.parsed.empty:
            self.base = doctype
        else:
            self.base = match_mask(
                self.searcher, self.view, self.parsed.query, self.deadline, self.postings
            )
            self.base &= doctype
        self.filters = build_filters(
            self.view, request.filters, request.date_from or None, request.date_to or None
        )
        self.final = self.filters.combined(self.base)
        self.counter = FacetCounter(self.view, self.searcher, self.base, self.filters)


def _settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    return settings if settings is not None else load_settings()


def run_search(
    store: Any, request: SearchRequest, settings: dict[str, Any] | None = None
) -> SearchResult:
    """Run one search: hits for the requested page, exact total, facets, suggestion."""
    settings = _settings(settings)
    request = validate(request, settings)
    prep = _Prepared(store, request, settings)
    total = int(prep.final.sum())
    docnums, scores, partial = _page(prep, total)
    if request.mode == "quotes":
        hits: list[Hit | QuoteHit] = _quote_hits(prep, docnums, scores)
    else:
        hits = _passage_hits(prep, docnums, scores)
    facets = {
        f: prep.counter.facet(f, request.facet_size, request.date_interval) for f in request.facets
    }
    suggestion = None
    if request.suggest and not prep.parsed.empty and total < SUGGEST_BELOW:
        suggestion = _suggest(prep, total)
    return SearchResult(
        request=request,
        total=total,
        hits=hits,
        facets=facets,
        suggestion=suggestion,
        took_ms=round((time.perf_counter() - prep.started) * 1000, 2),
        partial=partial,
        generation=_generation(prep.searcher),
    )


def facet_values(
    store: Any,
    facet: str,
    prefix: str,
    request: SearchRequest | None = None,
    size: int = 10,
    settings: dict[str, Any] | None = None,
) -> FacetResult:
    """Values of one facet starting with ``prefix`` (folded; any word of the value),
    with their counts under the request's query and filters (the facet's own
    filter excluded, as for multi-select counts), most frequent first."""
    settings = _settings(settings)
    request = validate(request or SearchRequest(), settings)
    if facet not in FACETS:
        raise UnknownFacet(
            f"unknown facet {facet!r}; facets are: {', '.join(FACETS)}", field="facet"
        )
    size = _int(size, "size")
    if not 1 <= size <= settings["max_facet_size"]:
        raise InvalidRequest(
            f"size must be between 1 and {settings['max_facet_size']}, got {size}", field="size"
        )
    if not isinstance(prefix, str):
        raise InvalidRequest("prefix must be a string", field="prefix")
    prep = _Prepared(store, request, settings)
    return prep.counter.search_values(facet, prefix, size, request.date_interval)


def _generation(searcher: Any) -> int:
    try:
        return int(searcher.ixreader.generation())
    except (AttributeError, TypeError, ValueError):  # empty or composite readers
        return 0


def _page(prep: _Prepared, total: int) -> tuple[list[int], list[float], bool]:
    """Global docnums and scores of the requested page (and whether it is partial)."""
    r = prep.request
    start = (r.page - 1) * r.per_page
    end = start + r.per_page
    if total == 0 or start >= total:
        return [], [], False
    matched = np.flatnonzero(prep.final)
    if r.sort in ("date", "-date"):
        dates = prep.view.date[matched].astype(np.int64)
        missing = dates == 0
        key = np.where(missing, 99999999, dates) if r.sort == "date" else -dates
        key = np.where(missing, 99999999, key)
        order = np.lexsort((matched, key))
        chosen = matched[order[start:end]]
        return [int(d) for d in chosen], [0.0] * len(chosen), False
    if prep.parsed.empty:
        chosen = matched[start:end]
        return [int(d) for d in chosen], [0.0] * len(chosen), False
    scores = bm25_scores(prep.view, prep.postings, prep.parsed.scoring_terms, prep.deadline)
    chosen = top_k(matched, scores, end)[start:end]
    return [int(d) for d in chosen], [float(scores[d]) for d in chosen], False


def _passage_hits(prep: _Prepared, docnums: list[int], scores: list[float]) -> list[Hit]:
    hits = []
    terms = prep.parsed.highlight_terms
    for docnum, score in zip(docnums, scores, strict=True):
        d = prep.searcher.stored_fields(docnum)
        data = json.loads(d.get("data") or "{}")
        quotes = data.get("quotes", [])
        text = d.get("text", "")
        snippet, matches = highlight(text, terms) if prep.request.highlight else (None, [])
        hits.append(
            Hit(
                id=d["id"],
                article_id=d["article_id"],
                position=d.get("position", 0),
                start=d.get("start", 0),
                end=d.get("end", 0),
                text=text,
                title=d.get("title", ""),
                score=round(score, 4),
                source=d.get("source"),
                date=d.get("date"),
                url=d.get("url"),
                snippet=snippet,
                matches=matches,
                entities=data.get("entities", []),
                quotes=quotes,
                speakers=list(dict.fromkeys(q["speaker"] for q in quotes if q.get("speaker"))),
            )
        )
    return hits


def _quote_hits(prep: _Prepared, docnums: list[int], scores: list[float]) -> list[QuoteHit]:
    hits = []
    terms = prep.parsed.highlight_terms
    titles: dict[str, str | None] = {}
    for docnum, score in zip(docnums, scores, strict=True):
        d = prep.searcher.stored_fields(docnum)
        data = json.loads(d.get("data") or "{}")
        pid = d.get("passage_id", "")
        if pid not in titles:
            p = prep.searcher.document(id=pid)
            titles[pid] = p.get("title") if p else None
        text = d.get("quote", "")
        snippet, matches = highlight(text, terms) if prep.request.highlight else (None, [])
        hits.append(
            QuoteHit(
                id=d["id"],
                passage_id=pid,
                article_id=d["article_id"],
                text=text,
                kind=data.get("kind") or d.get("quote_kind", ""),
                score=round(score, 4),
                speaker=data.get("speaker"),
                speaker_mention=data.get("speaker_mention"),
                cue=data.get("cue"),
                start=d.get("start", 0),
                end=d.get("end", 0),
                title=titles[pid],
                source=d.get("source"),
                date=d.get("date"),
                snippet=snippet,
                matches=matches,
            )
        )
    return hits


def _suggest(prep: _Prepared, total: int) -> str | None:
    """A corrected query that finds more than the original, if there is one."""
    fixed = corrected_text(prep.parsed.text, prep.parsed.tokens, prep.searcher, prep.view)
    if not fixed or fixed == prep.parsed.text:
        return None
    try:
        parsed = parse_query(
            fixed,
            searcher=prep.searcher,
            view=prep.view,
            mode=prep.request.mode,
            max_expansion=prep.settings["max_term_expansion"],
            max_length=prep.settings["max_query_length"] * 2,
            deadline=prep.deadline,
        )
        mask = match_mask(prep.searcher, prep.view, parsed.query, prep.deadline, prep.postings)
    except (QueryError, SearchTimeout):  # the search itself was answered: only drop the hint
        return None
    mask &= prep.view.doctype_mask(DOCTYPE_FOR_MODE[prep.request.mode])
    found = int(prep.filters.combined(mask).sum())
    return fixed if found > total else None


def warm_up(store: Any) -> float:
    """Prepare a store for fast first answers; returns the seconds it took.

    A server worker calls this when it opens the index, before its first
    request: it maps every segment's doc values and resolves the key ids of
    every facet field, and runs one query and one filtered, faceted search so
    the modules and patterns Whoosh and numpy load on first use are loaded.
    Without it a fresh worker's first faceted search took ~13x a warm one
    (docs/benchmarks.md, "First search").
    """
    t0 = time.monotonic()
    view = cache_for(store).view(store.searcher())
    for fname in VALUE_FIELDS:
        view.nkeys[fname]  # resolves the field's key ids
    view.date  # noqa: B018 - computed on first access
    run_search(
        store,
        SearchRequest(q="the OR warm*", facets=list(FACETS), filters={"date": ["2000"]}),
    )
    return time.monotonic() - t0

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
   These run under the same deadline: past it they are left out (hits left get an
   unmarked snippet) and the result says ``partial``, naming them in ``cut_short``.

Empty query: browsing. An empty ``q`` (with or without filters) matches every
passage (or quote), so facets can be used to explore the index; with
``sort="relevance"`` browsing lists documents in index order.

Sorts: ``relevance`` (BM25F), ``date`` (oldest first), ``-date`` (newest
first); ties and dateless documents (listed last) keep index order, which is
article then passage order. Date-sorted hits carry ``score = 0.0``.
"""

from __future__ import annotations

import json
import re
import time
from functools import partial
from typing import Any

import numpy as np

from newsquarry.search.archive import quoteclusters
from newsquarry.search.archive.quoteclusters import clusters_for
from newsquarry.search.archive.stories import stories_for
from newsquarry.search.core.background import FOREGROUND
from newsquarry.search.core.config import load_settings
from newsquarry.search.core.errors import InvalidRequest, QueryError, SearchTimeout, UnknownFacet
from newsquarry.search.core.fields import FieldSpec
from newsquarry.search.core.models import quote_record
from newsquarry.search.core.requests import (
    DOCTYPE_FOR_MODE,
    FacetResult,
    Hit,
    QuoteHit,
    SearchRequest,
    SearchResult,
)
from newsquarry.search.engine import hooks
from newsquarry.search.engine.documents import stored_document
from newsquarry.search.engine.docvalues import SCORED_FIELDS, VALUE_FIELDS
from newsquarry.search.engine.refresh import Refresher
from newsquarry.search.engine.schema import FACETS
from newsquarry.search.engine.store import generation_of as _generation
from newsquarry.search.engine.views import View, cache_for
from newsquarry.search.query import storygroups
from newsquarry.search.query.clusters import describe_hits
from newsquarry.search.query.facets import (
    FacetCounter,
    all_of_mask,
    build_filters,
    canonical_record,
    display_form,
)
from newsquarry.search.query.feedback import matched_articles
from newsquarry.search.query.fieldfacets import FieldTable, table_for
from newsquarry.search.query.fieldfacets import declared as declared_fields
from newsquarry.search.query.highlight import PageHighlighter, snippet_html
from newsquarry.search.query.interpret import FACETS as INTERPRETED
from newsquarry.search.query.interpret import index_words, interpretations
from newsquarry.search.query.parse import ParsedQuery, parse_query
from newsquarry.search.query.postings import Deadline, Postings, match_mask
from newsquarry.search.query.proximity import RERANK, rerank
from newsquarry.search.query.ranking import article_rank, search_scores, word_pairs
from newsquarry.search.query.scoring import top_k
from newsquarry.search.query.semantic import Semantic, resolve
from newsquarry.search.query.semantic import warm as warm_semantic
from newsquarry.search.query.suggest import corrected_text
from newsquarry.search.query.validation import _int, validate  # noqa: F401 (re-exported)

# -- the search --------------------------------------------------------------------


class _Prepared:
    """What every search step needs: the view, the parsed query, base and final masks."""

    def __init__(
        self,
        store: Any,
        request: SearchRequest,
        settings: dict[str, Any],
        declared: list[FieldSpec] | None = None,
    ) -> None:
        self.started = time.perf_counter()
        self.request = request
        self.settings = settings
        self.searcher = store.searcher()
        self.view: View = cache_for(store).view(self.searcher)
        self.declared = {s.name: s for s in declared or []}
        self._fields: FieldTable | None = None
        self._folder = getattr(store, "path", None)
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
            match=request.match,
        )
        self.doctype = DOCTYPE_FOR_MODE[request.mode]
        doctype = self.view.doctype_mask(self.doctype)
        self.postings = Postings(self.searcher, self.view)
        if self.parsed.empty:
            self.base = doctype
        else:
            self.base = match_mask(
                self.searcher, self.view, self.parsed.query, self.deadline, self.postings
            )
            self.base &= doctype
        # by meaning (``query.semantic``): what matches is the neighbours, or the keyword
        # matches and the neighbours; filters and facets apply to it as to words
        self.semantic: Semantic | None = None
        retrieval = resolve(request, settings, store, self.searcher)
        if retrieval != "keyword":
            self.semantic = Semantic(self, store, retrieval)
            self.base = self.semantic.base
        builtin = {k: v for k, v in request.filters.items() if k not in self.declared}
        self.filters = build_filters(
            self.view,
            builtin,
            request.date_from or None,
            request.date_to or None,
            all_of=request.all_of,
        )
        for name, values in request.filters.items():
            values = [v for v in values if v is not None and str(v).strip()]
            if name in self.declared and values:
                spec = self.declared[name]
                one = partial(self.fields.filter_mask, spec)
                anded = name in self.filters.all_of
                self.filters.masks[name] = all_of_mask(one, values) if anded else one(values)
                self.filters.selected[name] = list(values)
        self.final = self.filters.combined(self.base)
        self.counter = FacetCounter(self.view, self.searcher, self.base, self.filters)
        self.reranked: np.ndarray | None = None  # proximity-reranked head (``_ordered``)
        self.article_rank: np.ndarray | None = None  # per article key id (``article_rank``)
        self.matched_articles: np.ndarray | None = None  # ``feedback.matched_articles``
        self._final_docs: np.ndarray | None = None
        self.interpretation_bases: dict[tuple[str, str], Any] = {}  # ``interpret._count``
        self.cut_short: list[str] = []  # steps the deadline cut: ``SearchResult.cut_short``
        self._stored: dict[int, dict[str, Any]] = {}
        self.highlighter = PageHighlighter(self.parsed.highlight_terms, self.view,
                                           getattr(store, "token_offsets", None), self.deadline)  # fmt: skip

    @property
    def final_docs(self) -> np.ndarray:
        """The matching documents' docnums (``final``), once per search. Scores are
        combined (coordination, article score) and read at these only."""
        got = self._final_docs
        if got is None:
            got = self._final_docs = np.flatnonzero(self.final)
        return got

    @property
    def fields(self) -> FieldTable:
        """The index's extra fields over this view (``query.fieldfacets``), made on use."""
        if self._fields is None:
            self._fields = table_for(self.view, self.searcher, self._folder)
        return self._fields

    def facet(self, name: str) -> FacetResult:
        """One facet of the request: a built-in one, or a declared field."""
        r = self.request
        spec = self.declared.get(name)
        if spec is None:
            return self.counter.facet(name, r.facet_size, r.date_interval)
        return self.fields.facet(
            spec, self.counter.mask_for(name), r.facet_size,
            self.filters.selected.get(name, []), r.date_interval,
        )  # fmt: skip

    def hit_fields(self, docnum: int) -> dict[str, Any]:
        """The declared fields of a hit's article, as given."""
        if not self.declared:
            return {}
        gid = int(self.view.article_of[docnum])
        return self.fields.values_of(gid, list(self.declared.values())) if gid >= 0 else {}

    def stored(self, docnum: int) -> dict[str, Any]:
        """A document's stored fields, read (and decompressed) once per search: the
        proximity rerank and the hits of the page read the same passages."""
        got = self._stored.get(docnum)
        if got is None:
            got = self._stored[docnum] = self.searcher.stored_fields(docnum)
        return got


def _settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    return settings if settings is not None else load_settings()


def run_search(
    store: Any,
    request: SearchRequest,
    settings: dict[str, Any] | None = None,
    within: SearchRequest | None = None,
) -> SearchResult:
    """Run one search: hits for the requested page, exact total, facets, suggestion.

    ``within`` (a scoped read key's filters and dates) bounds what the hits say about
    their quotation clusters (articles carrying them, first seen), as it bounds the hits.
    """
    with FOREGROUND:  # background work done ahead of need waits while searches run
        return _run_search(store, request, settings, within)


def _run_search(
    store: Any,
    request: SearchRequest,
    settings: dict[str, Any] | None,
    within: SearchRequest | None,
) -> SearchResult:
    settings = _settings(settings)
    specs = declared_fields(store)
    request = validate(request, settings, specs)
    prep = _Prepared(store, request, settings, specs)
    total = int(prep.final.sum())
    total_articles = _count_articles(prep)
    clusters = clusters_for(store, prep.searcher) if request.mode == "quotes" else None
    total_clusters = total_stories = 0
    others: list[list[int]] = []
    partial = False
    st = stories_for(prep.view, prep.searcher, prep._folder)
    # per document its story: an array over the whole index, made only when asked for
    labels = st.doc_labels(prep.view) if "story" in (request.group, request.dedupe) else None
    if request.dedupe == "story":
        prep.counter.per_story = labels
    if labels is not None and request.group == "story":
        total_stories = _count_keys(labels[prep.final])
        docnums, scores, others = _grouped_page(prep, total_stories, labels)
    elif request.group == "article":
        docnums, scores, others = _grouped_page(prep, total_articles, prep.view.article_of)
    elif request.group == "cluster" and clusters is not None:
        total_clusters = _count_keys(clusters.label[prep.final])
        docnums, scores, others = _grouped_page(prep, total_clusters, clusters.label)
    else:
        docnums, scores, partial = _page(prep, total)
    # a scoped key's filters and dates: what hits may say about clusters and copies
    scope = None
    if within is not None:
        scope = build_filters(
            prep.view, within.filters, within.date_from or None, within.date_to or None
        )
    if request.mode == "quotes":
        hits: list[Hit | QuoteHit] = _quote_hits(prep, docnums, scores)
        if clusters is not None:
            quotes = scope.combined(prep.view.doctype_mask("quote")) if scope is not None else None
            describe_hits(prep.searcher, prep.view, clusters, hits, docnums, quotes)
    else:
        hits = _passage_hits(prep, docnums, scores)
    storygroups.describe(
        hits, docnums, prep.view, st, scope.combined(prep.view.live) if scope is not None else None
    )
    if prep.semantic is not None:
        for hit, d in zip(hits, docnums, strict=True):
            hit.matched_by = prep.semantic.matched_by(d)
            hit.similarity = prep.semantic.similarity(d)
    for hit, more in zip(hits, others, strict=False):
        hit.more_count = len(more)
        hit.more_ids = [prep.searcher.stored_fields(d)["id"] for d in more]
    facets = {f: prep.facet(f) for f in request.facets}
    suggestion = None
    if request.suggest and not prep.parsed.empty:
        suggestion = _suggest(prep, total)

    offered = interpretations(prep) if request.suggest else []
    return SearchResult(
        request=request,
        total=total,
        hits=hits,
        facets=facets,
        suggestion=suggestion[0] if suggestion else None,
        suggestion_total=suggestion[1] if suggestion else None,
        interpretations=offered,
        took_ms=round((time.perf_counter() - prep.started) * 1000, 2),
        partial=partial or bool(prep.cut_short),
        cut_short=prep.cut_short,
        generation=_generation(prep.searcher),
        total_articles=total_articles,
        total_clusters=total_clusters,
        total_stories=total_stories,
        retrieval=prep.semantic.retrieval if prep.semantic is not None else "keyword",
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
    specs = declared_fields(store)
    request = validate(request or SearchRequest(), settings, specs)
    known = FACETS + tuple(s.name for s in specs)
    if facet not in known:
        raise UnknownFacet(
            f"unknown facet {facet!r}; facets are: {', '.join(known)}", field="facet"
        )
    size = _int(size, "size")
    if not 1 <= size <= settings["max_facet_size"]:
        raise InvalidRequest(
            f"size must be between 1 and {settings['max_facet_size']}, got {size}", field="size"
        )
    if not isinstance(prefix, str):
        raise InvalidRequest("prefix must be a string", field="prefix")
    prep = _Prepared(store, request, settings, specs)
    if request.dedupe == "story":
        st = stories_for(prep.view, prep.searcher, prep._folder)
        prep.counter.per_story = st.doc_labels(prep.view)
    spec = prep.declared.get(facet)
    if spec is not None:
        return prep.fields.facet(
            spec, prep.counter.mask_for(facet), size, prep.filters.selected.get(facet, []),
            request.date_interval, prefix=prefix,
        )  # fmt: skip
    return prep.counter.search_values(facet, prefix, size, request.date_interval)


def _count_articles(prep: _Prepared) -> int:
    """Distinct articles among the matching documents (exact)."""
    if prep.semantic is None:  # what matches is what matches by words
        return len(matched_articles(prep))
    return _count_keys(prep.view.article_of[prep.final])


def _count_keys(keys: np.ndarray) -> int:
    """Distinct non-negative keys (article or cluster numbers) in an array (exact)."""
    if not len(keys):
        return 0
    seen = np.zeros(int(keys.max()) + 2, dtype=bool)
    seen[keys + 1] = True  # -1 (no article / cluster) lands on slot 0, not counted
    return int(np.count_nonzero(seen[1:]))


def _ordered(
    prep: _Prepared, matched: np.ndarray, k: int, scores: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The first ``k`` matched docnums in the requested order, and all scores (or zeros);
    ``scores`` reuses the scores of an earlier call."""
    r = prep.request
    if r.sort in ("date", "-date"):
        dates = prep.view.date[matched].astype(np.int64)
        missing = dates == 0
        key = np.where(missing, 99999999, dates) if r.sort == "date" else -dates
        key = np.where(missing, 99999999, key)
        order = np.lexsort((matched, key))
        return matched[order[:k]], np.zeros(prep.view.size, dtype=np.float32)
    if prep.parsed.empty and prep.semantic is None:
        return matched[:k], np.zeros(prep.view.size, dtype=np.float32)
    if scores is None:
        scores = search_scores(prep)
        prep.reranked = None
    pairs = word_pairs(prep) if prep.semantic is None else []  # hybrid: in the keyword ranking
    if not pairs:
        return top_k(matched, scores, k, prep.view.ties), scores
    # proximity reorders the best RERANK passages of the whole ranking (once per
    # search), so every page and every caller sees the same order
    if prep.reranked is None:
        head = top_k(prep.final_docs, scores, RERANK, prep.view.ties)
        fname = "quote" if prep.request.mode == "quotes" else "text"
        prep.reranked = rerank(
            head, scores, pairs, lambda d: prep.stored(d).get(fname) or "", prep.view.ties,
            lambda d, text_of, p: prep.highlighter.pair_share(d, fname, text_of, p),
        )  # fmt: skip
    return top_k(matched, scores, k, prep.view.ties), scores


def _page(prep: _Prepared, total: int) -> tuple[list[int], list[float], bool]:
    """Global docnums and scores of the requested page (and whether it is partial)."""
    r = prep.request
    start = (r.page - 1) * r.per_page
    end = start + r.per_page
    if total == 0 or start >= total:
        return [], [], False
    matched = prep.final_docs
    chosen, scores = _ordered(prep, matched, end)
    chosen = chosen[start:end]
    return [int(d) for d in chosen], [float(scores[d]) for d in chosen], False


def _grouped_page(
    prep: _Prepared, total_articles: int, art: np.ndarray
) -> tuple[list[int], list[float], list[list[int]]]:
    """group="article" (or "cluster"): the best hit of each article (cluster: ``art`` maps
    docnums to group numbers) on the requested page, groups in the order of their best
    hit, with the group's other hits, best first."""
    r = prep.request
    start = (r.page - 1) * r.per_page
    end = start + r.per_page
    if total_articles == 0 or start >= total_articles:
        return [], [], []
    matched = prep.final_docs
    if (
        r.group == "article"
        and r.mode == "passages"
        and r.sort == "relevance"
        and (not prep.parsed.empty or prep.semantic is not None)
    ):
        return _article_ranked_page(prep, matched, start, end)
    k = min(len(matched), max(4 * end, 64))
    scores = None
    while True:  # widen the ranked prefix until it holds ``end`` distinct articles
        ordered, scores = _ordered(prep, matched, k, scores)
        arts = art[ordered]
        _, first = np.unique(arts, return_index=True)
        if len(first) >= min(end, total_articles) or k >= len(matched):
            break
        k = min(len(matched), k * 4)
    first.sort()
    best = ordered[first][start:end]
    others: list[list[int]] = []
    m_art = art[matched]
    for d in best:
        same = matched[m_art == art[d]]
        same = same[same != d]
        if len(same) > 1:
            same = _ordered(prep, same, len(same), scores)[0]
        others.append([int(x) for x in same])
    return [int(d) for d in best], [float(scores[d]) for d in best], others


def _article_ranked_page(
    prep: _Prepared, matched: np.ndarray, start: int, end: int
) -> tuple[list[int], list[float], list[list[int]]]:
    """Relevance-sorted ``group=article`` for passages: articles ordered by their own
    score (``article_rank``: the whole article, its title once), ties by article id;
    each shown by its best passage, with its other matching passages, best first.

    The unit ranked is the unit shown: an article's order does not depend on how its
    text happens to be cut into passages, and a story about the query's topic ranks
    above one with a single passage that mentions it (docs/quality.md, "Ranking").
    """
    view = prep.view
    scores = search_scores(prep)
    prep.reranked = None
    rank = (
        article_rank(prep) if prep.semantic is None else prep.semantic.articles(prep, article_rank)
    )
    art = view.article_of
    m_art = art[matched]
    present = np.zeros(len(rank), dtype=bool)
    present[m_art[m_art >= 0]] = True
    candidates = np.flatnonzero(present)
    chosen = top_k(candidates, rank, end, view.rank("article_id"))[start:end]
    best: list[int] = []
    out_scores: list[float] = []
    others: list[list[int]] = []
    for a in chosen:
        same = matched[m_art == a]
        ordered = _ordered(prep, same, len(same), scores)[0]
        best.append(int(ordered[0]))
        out_scores.append(float(rank[a]))
        others.append([int(x) for x in ordered[1:]])
    return best, out_scores, others


def _passage_hits(prep: _Prepared, docnums: list[int], scores: list[float]) -> list[Hit]:
    hits = []
    for docnum, score in zip(docnums, scores, strict=True):
        d = prep.stored(docnum)
        data = json.loads(d.get("data") or "{}")
        # names in their index-wide display form, quotes with article offsets (facets, models)
        record = canonical_record(
            prep.view,
            {
                "entities": data.get("entities", []),
                "quotes": [quote_record(q, d.get("start", 0)) for q in data.get("quotes", [])],
                "source": d.get("source"),
            },
        )
        text = d.get("text", "")
        snippet, matches = _highlight(prep, docnum, "text", text)
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
                source=record["source"],
                date=d.get("date"),
                url=d.get("url"),
                snippet=snippet,
                matches=matches,
                entities=record["entities"],
                quotes=record["quotes"],
                speakers=record["speakers"],
                fields=prep.hit_fields(docnum),
            )
        )
    return hits


def _quote_hits(prep: _Prepared, docnums: list[int], scores: list[float]) -> list[QuoteHit]:
    hits = []
    titles: dict[str, str | None] = {}
    starts: dict[str, int] = {}
    for docnum, score in zip(docnums, scores, strict=True):
        d = prep.searcher.stored_fields(docnum)
        data = json.loads(d.get("data") or "{}")
        pid = d.get("passage_id", "")
        if pid not in titles:
            p = stored_document(prep.searcher, pid, "passage")
            titles[pid] = p.get("title") if p else None
            starts[pid] = p.get("start", 0) if p else 0
        quote_record(data, starts[pid])
        text = d.get("quote", "")
        snippet, matches = _highlight(prep, docnum, "quote", text)
        hits.append(
            QuoteHit(
                id=d["id"],
                passage_id=pid,
                article_id=d["article_id"],
                text=text,
                kind=data.get("kind") or d.get("quote_kind", ""),
                score=round(score, 4),
                speaker=display_form(prep.view, "speaker", data.get("speaker")),
                speaker_mention=data.get("speaker_mention"),
                cue=data.get("cue"),
                start=d.get("start", 0),
                end=d.get("end", 0),
                article_start=data.get("article_start"),
                article_end=data.get("article_end"),
                title=titles[pid],
                source=display_form(prep.view, "source", d.get("source")),
                date=d.get("date"),
                snippet=snippet,
                matches=matches,
                fields=prep.hit_fields(docnum),
            )
        )
    return hits


def _highlight(prep: _Prepared, docnum: int, field: str, text: str) -> tuple[str | None, list]:
    """A hit's (snippet, matches) of its ``field`` text; once the deadline has passed, the
    text's start unmarked and no matches (``cut_short``: "highlights")."""
    if not prep.request.highlight:
        return None, []
    if "highlights" not in prep.cut_short:
        try:
            return prep.highlighter(docnum, field, text)
        except SearchTimeout:
            prep.cut_short.append("highlights")
    return snippet_html(text, []), []


def _suggest(prep: _Prepared, total: int) -> tuple[str, int] | None:
    """A corrected query that finds more than the original, and its hit count; None
    past the deadline (``cut_short``: "suggestion")."""
    try:
        p = prep.parsed
        fixed = corrected_text(p.text, p.tokens, prep.searcher, prep.view, prep.deadline)
        if not fixed or fixed == prep.parsed.text:
            return None
        parsed = parse_query(
            fixed,
            searcher=prep.searcher,
            view=prep.view,
            mode=prep.request.mode,
            max_expansion=prep.settings["max_term_expansion"],
            max_length=prep.settings["max_query_length"] * 2,
            deadline=prep.deadline,
            match=prep.request.match,
        )
        mask = match_mask(prep.searcher, prep.view, parsed.query, prep.deadline, prep.postings)
    except QueryError:  # the search itself was answered: only drop the hint
        return None
    except SearchTimeout:
        prep.cut_short.append("suggestion")
        return None
    mask &= prep.view.doctype_mask(DOCTYPE_FOR_MODE[prep.request.mode])
    found = int(prep.filters.combined(mask).sum())
    return (fixed, found) if found > total else None


def warm_up(store: Any, refresh: bool = True, writes: bool = False) -> float:
    """Prepare a store for fast first answers; returns the seconds it took.

    A server worker calls this when it opens the index, before its first
    request: it maps every segment's doc values and resolves the key ids of
    every facet field, and runs one query and one filtered, faceted search so
    the modules and patterns Whoosh and numpy load on first use are loaded.
    Without it a fresh worker's first faceted search took ~13x a warm one
    (docs/benchmarks.md, "First search").

    Then it keeps the store warm: each state this process commits is warmed before
    its writer returns, and (``refresh``) a background thread (``search.refresh``)
    warms each state other processes commit (other workers' writes, background
    merges) within a fraction of a second, before searches ask for it.

    ``writes``: this process will write (an API worker with writes enabled): the alias
    table's evidence, which a commit reads first, is read now rather than in the first
    write (~150 ms of CPU on Reuters, the slowest write of a process).
    """
    t0 = time.monotonic()
    _warm_state(store, "open")
    quoteclusters.prepare(store)  # the buckets each later commit's linking looks values up in
    aliases = getattr(store, "aliases", None)
    if writes and aliases is not None:
        try:
            aliases.evidence()  # kept while its files do not change
        except Exception:  # noqa: BLE001 - an optimisation: the first write reads it then
            pass
    # and from now on each state this process commits, before its writer returns, as a
    # search engine warms a new searcher before exposing it (Lucene's warmers, eager
    # global ordinals): the first search after a commit finds the view built
    hooks = getattr(store, "after_commit", None)
    if hooks is not None and _warm_after_commit not in hooks:
        hooks.append(_warm_after_commit)
    # ... built before the commit is published: a search that moves to the new state the
    # moment it is committed finds its view made (it built it beside the writer before:
    # read p99 under a write a second 2.0-2.3x, docs/benchmarks.md)
    early = getattr(store, "before_publish", None)
    if early is not None and _warm_unpublished not in early:
        early.append(_warm_unpublished)
    try:  # the model, when searches by meaning will come (seconds: torch is imported)
        warm_semantic(store)
    except Exception:  # noqa: BLE001 - an optimisation: the first such search loads it
        pass
    if refresh and hasattr(store, "refresher") and store.refresher is None:
        store.refresher = Refresher(store, warm_refreshed)
    return time.monotonic() - t0


def _warm_unpublished(store: Any, searcher: Any) -> View:
    """Build the view of the state ``searcher`` reads: its arrays and the name-word index.
    Registered as ``WhooshStore.before_publish`` (a searcher over the segments a commit of
    this process is about to publish, before any other thread can search that state), and
    the first step of every warm (``_warm_state``)."""
    view = cache_for(store).view(searcher)
    _warm_view(view)
    for fname in INTERPRETED:
        index_words(view.registries[fname])  # name keys by word: the query's names
    return view


def _warm_after_commit(store: Any) -> int:
    """Warm the state a commit of this process made, in its writer
    (``WhooshStore.after_commit``): the view's arrays only, no searches (they doubled
    a write's CPU); returns its generation."""
    refresher = getattr(store, "refresher", None)
    if refresher is not None:  # being warmed here: the refresher need not warm it too
        refresher.note_warmed(store.generation)
    return _warm_state(store, "commit")


def warm_refreshed(store: Any, background_links: bool = True) -> int:
    """Warm a state another process committed (``refresh.Refresher``, off the request
    path): the view's arrays, one search with hits and, if this process linked quotation
    clusters before, the state's links (from the previous state's): in the linking thread
    at a quiet moment (``background_links``, so the refresher goes on to the next state),
    else here. Returns the generation warmed."""
    generation = _warm_state(store, "refresh")
    if background_links:
        quoteclusters.link_after_commit(store)
    else:
        quoteclusters.link_now(store)
    return generation


def _warm_view(view: View) -> None:
    """Build a view's arrays that searches read: key ids, filters' documents by key,
    dates, doctype masks, lengths, the ranking's per-article arrays and tie-breaks."""
    for fname in VALUE_FIELDS:
        view.nkeys[fname]  # resolves the field's key ids
        view.key_docs(fname)  # documents by key: what a filter on the field reads
        view.rank(fname)  # facet values' order
    view.date  # noqa: B018 - computed on first access
    view.tiebreak  # noqa: B018
    for doctype in ("passage", "quote"):
        view.live_count(doctype)
        for fname in SCORED_FIELDS:
            view.lengths[fname]  # noqa: B018
            view.avg_length(fname, doctype)
        view.article_lengths("text", doctype)
        view.article_lengths("title", doctype, per_article="max")


def _warm_state(store: Any, why: str) -> int:
    """Build what searches read on the current state: the view's arrays, the name-word
    index and, unless ``why`` is "commit", (through searches with hits) hits' stored
    fields and display names; on opening ("open") the quotes view too. Returns the
    generation it warmed."""
    searcher = store.searcher()
    view = _warm_unpublished(store, searcher)
    if why == "commit":
        return _generation(searcher)
    # the written forms of every segment's values, which the facet values and hits shown
    # are displayed with (decoded per segment on first use: ~2/3 of a fresh process's first
    # search after the rest of the warm-up; segments' columns are kept across views, so a
    # refresh decodes its new segments' only). Not at commit: after a merge, the merged
    # segment's forms would be decoded in the writer
    for col in view.cols:
        for fname in VALUE_FIELDS:
            col.field(fname).terms  # noqa: B018 - decoded on first access
    # and each segment's stored-fields column (its offsets are read on first use): the hits
    # of a first search come from segments the warm-up searches did not touch
    for reader, _offset in searcher.ixreader.leaf_readers():
        if reader.doc_count_all():
            try:
                reader.stored_fields(0)
            except Exception:  # noqa: BLE001 - an optimisation; a search reports damage
                pass
    # no user waits for these: the search deadline (which protects users) is not theirs. A
    # quotes search may link the state's quotation clusters (~1 s of CPU on Reuters), which
    # passed the 5 s deadline on a loaded machine and left the rest of the warm-up undone
    hours = WARM_UP_TIME_LIMIT
    if why == "open":  # the modules and patterns a filtered, faceted search loads
        run_search(
            store,
            SearchRequest(
                q="the OR warm*", facets=list(FACETS), filters={"date": ["2000"]}, time_limit=hours
            ),
        )
    # and searches with hits, as users make them: the ranking's per-view arrays (article
    # lengths, tie-breaks), hits' stored fields, display names, the quotes view (not after
    # each commit: a process that linked quotation clusters links each state it commits,
    # from the previous one's, after the commit in a thread: quoteclusters.link_after_commit)
    word = _a_word(store)
    if word:
        run_search(store, SearchRequest(q=word, facets=list(FACETS), time_limit=hours))
        if why == "open":
            run_search(store, SearchRequest(q=word, mode="quotes", time_limit=hours))
    return _generation(searcher)


WARM_UP_TIME_LIMIT = 3600.0  # seconds: warm-up searches are not users' searches


def _a_word(store: Any) -> str | None:
    """A word of the first stored passage (a query sure to have hits), or None."""
    searcher = store.searcher()
    for docnum in range(min(searcher.doc_count_all(), 50)):
        try:
            text = searcher.stored_fields(docnum).get("text") or ""
        except Exception:  # noqa: BLE001 - deleted or unreadable: try the next one
            continue
        m = re.search(r"[A-Za-z]{5,}", text)
        if m:
            return m.group(0).lower()
    return None


hooks.provide("search", run_search)

"""Co-occurrence: who (and what) appears together with a person, an organisation, a place.

"Who is mentioned or quoted together with Juan Guaidó?" is a facet count over the passages
that mention him, with the selected value itself left out. It is computed from the same
doc values as facets (``docvalues.View``), so it costs about what a faceted search costs:

- **passage** counts: for each value of a target facet, the number of passages that match
  the query and *every* filter (no multi-select here: the selection is the subject) and
  hold that value;
- **article** counts: for each value, the number of articles that hold at least one such
  passage *and* mention the value in any of their passages (co-quotes in the same
  article: two speakers quoted in one story, in different paragraphs).

Values are grouped by folded key and shown in their display form, as facets are; the
subject's own values (the filter values, and the names they select) are left out.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from newsquarry.search.core import npsets
from newsquarry.search.core.config import load_settings
from newsquarry.search.core.errors import InvalidRequest, UnknownFacet
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.schema import FACET_FIELDS
from newsquarry.search.query.facets import NAME_FACETS, build_filters, partial_name_gids
from newsquarry.search.query.searching import _generation, _Prepared, validate

TARGETS = ("person", "org", "place", "speaker", "source")
DEFAULT_TARGETS = ("person", "org", "place", "speaker")


@dataclass
class CoValue:
    value: str
    count: int


@dataclass
class CoFacet:
    name: str
    passage: list[CoValue] = field(default_factory=list)  # same passage, top values
    article: list[CoValue] = field(default_factory=list)  # same article, top values


@dataclass
class Cooccurrence:
    request: SearchRequest
    passages: int  # passages matching the query and every filter
    articles: int  # articles holding at least one of them
    facets: dict[str, CoFacet]
    took_ms: float = 0.0
    generation: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _subject_gids(view: Any, fname: str, values: list[str]) -> set[int]:
    """Key ids a filter selects (exact folded value, else the names it is part of)."""
    out: set[int] = set()
    for v in values:
        key = fold(v)
        gid = view.gid(fname, key)
        if gid is not None:
            out.add(gid)
        elif key:
            out.update(partial_name_gids(view, fname, key))
    return out


def _top(view: Any, fname: str, counts: np.ndarray, skip: set[int], size: int) -> list[CoValue]:
    counts = counts.copy()
    if skip:
        counts[list(skip)] = 0
    nz = np.flatnonzero(counts)
    order = np.lexsort((view.rank(fname)[nz], -counts[nz]))
    return [CoValue(view.display(fname, int(g)), int(counts[g])) for g in nz[order[:size]]]


def cooccurrence(
    store: Any,
    request: SearchRequest,
    targets: list[str] | tuple[str, ...] = DEFAULT_TARGETS,
    size: int = 10,
    settings: dict[str, Any] | None = None,
    *,
    within: SearchRequest | None = None,
) -> Cooccurrence:
    """Values most often found with the request's selection, by passage and by article.

    ``within`` (filters and dates of a scoped read key) also limits the *other* passages
    of the matched articles that the article counts look at, so a key never reveals
    names from passages outside its scope.
    """
    settings = settings if settings is not None else load_settings()
    request.mode, request.facets = "passages", []
    request = validate(request, settings)
    targets = list(dict.fromkeys(targets or DEFAULT_TARGETS))
    for name in targets:
        if name not in TARGETS:
            raise UnknownFacet(
                f"cannot count co-occurrence of {name!r}; choose from {', '.join(TARGETS)}",
                field="facet",
            )
    if not isinstance(size, int) or not 1 <= size <= settings["max_facet_size"]:
        raise InvalidRequest(
            f"size must be between 1 and {settings['max_facet_size']}, got {size}", field="size"
        )
    prep = _Prepared(store, request, settings)
    view, final = prep.view, prep.final
    passages = view.doctype_mask("passage")

    article_of = view.article_of  # per document, its article's key id (cached per view)
    matched_articles = npsets.unique(article_of[final & (article_of >= 0)])
    in_articles = passages & np.isin(article_of, matched_articles)
    if within is not None:
        scope = build_filters(view, within.filters, within.date_from, within.date_to)
        in_articles = scope.combined(in_articles)
    n_articles = max(1, view.nkeys["article_id"])

    # the subject is left out of every name facet: with person=X, X is not "quoted with X"
    subject = [v for f in NAME_FACETS for v in request.filters.get(f, [])]
    facets: dict[str, CoFacet] = {}
    for name in targets:
        fname = FACET_FIELDS[name]
        given = subject if name in NAME_FACETS else request.filters.get(name, [])
        skip = _subject_gids(view, fname, given)
        by_passage = view.count(fname, final)
        docs, gids = view.docs[fname], view.gids[fname]
        sel = in_articles[docs]
        pairs = npsets.unique(gids[sel].astype(np.int64) * n_articles + article_of[docs[sel]])
        by_article = np.bincount(pairs // n_articles, minlength=view.nkeys[fname])
        facets[name] = CoFacet(
            name=name,
            passage=_top(view, fname, by_passage, skip, size),
            article=_top(view, fname, by_article, skip, size),
        )
    return Cooccurrence(
        request=request,
        passages=int(final.sum()),
        articles=len(matched_articles),
        facets=facets,
        took_ms=round((time.perf_counter() - prep.started) * 1000, 2),
        generation=_generation(prep.searcher),
    )

"""Quotation clusters at query time: a hit's cluster and first-seen copy, and one cluster's
members with their articles (``GET /v1/quotes/clusters/<id>``)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from newsquarry.search.archive.quoteclusters import Clusters, clusters_for
from newsquarry.search.archive.quotesigs import words
from newsquarry.search.core import npsets
from newsquarry.search.core.errors import NotFound
from newsquarry.search.core.ids import shorten
from newsquarry.search.engine.documents import stored_document
from newsquarry.search.engine.views import cache_for
from newsquarry.search.query.facets import build_filters, display_form


def _visible(clusters: Clusters, c: int, scope: np.ndarray | None) -> np.ndarray:
    members = clusters.members(c)
    return members if scope is None else members[scope[members]]


def _seen(searcher: Any, docnum: int) -> dict[str, Any]:
    """A quotation's place for "first seen": its id, article, date, source, title."""
    d = searcher.stored_fields(docnum)
    p = stored_document(searcher, d.get("passage_id", ""), "passage") or {}
    return {
        "id": d.get("id"),
        "article_id": d.get("article_id"),
        "date": d.get("date"),
        "source": d.get("source"),
        "title": p.get("title"),
    }


def describe_hits(
    searcher: Any,
    view: Any,
    clusters: Clusters,
    hits: list[Any],
    docnums: list[int],
    scope: np.ndarray | None = None,
) -> None:
    """Set each quote hit's ``cluster``, ``cluster_articles`` and ``first_seen``.

    ``scope`` (a mask of the quotations a read key may see) bounds both, so a scoped
    key never learns of articles outside it.
    """
    for hit, d in zip(hits, docnums, strict=True):
        c = clusters.of_doc(d)
        if c < 0:
            continue
        members = _visible(clusters, c, scope)
        hit.cluster = clusters.public_id(c)
        arts = view.article_of[members]
        hit.cluster_articles = max(1, len(npsets.unique(arts[arts >= 0])))
        if hit.cluster_articles > 1:
            seen = _seen(searcher, int(members[0]))
            seen["source"] = display_form(view, "source", seen["source"])
            hit.first_seen = seen


def quote_cluster(store: Any, cluster: str, within: Any | None = None) -> dict[str, Any]:
    """A quotation cluster: canonical text, speakers, first seen, articles and sources.

    ``cluster`` is a cluster id (a quote hit's ``cluster``). ``within`` (a
    ``SearchRequest`` whose filters and dates a scoped read key imposes) keeps
    only the quotations inside it. ``NotFound`` for an unknown id, or one with no
    quotation inside ``within``.
    """
    searcher = store.searcher()
    view = cache_for(store).view(searcher)
    clusters = clusters_for(store, searcher)
    c = clusters.resolve(cluster) if isinstance(cluster, str) else None
    scope = None
    if within is not None:
        scope = build_filters(
            view, within.filters, within.date_from or None, within.date_to or None
        ).combined(view.doctype_mask("quote"))
    members = _visible(clusters, c, scope) if c is not None else np.zeros(0, np.int64)
    if not len(members):
        raise NotFound(f"no quotation cluster with id {shorten(str(cluster))!r}")
    quotes = []
    for d in members.tolist():
        seen = _seen(searcher, d)
        stored = searcher.stored_fields(d)
        data = json.loads(stored.get("data") or "{}")
        seen.update(
            text=stored.get("quote", ""),
            speaker=display_form(view, "speaker", data.get("speaker")),
            kind=data.get("kind") or stored.get("quote_kind"),
            passage_id=stored.get("passage_id"),
            source=display_form(view, "source", seen["source"]),
        )
        quotes.append(seen)
    # canonical: the wording most copies carry (compared as ``words``); ties: the longer,
    # then the first seen
    forms = Counter(" ".join(words(q["text"])) for q in quotes)
    canonical = min(
        range(len(quotes)),
        key=lambda i: (-forms[" ".join(words(quotes[i]["text"]))], -len(quotes[i]["text"]), i),
    )
    speakers = Counter(q["speaker"] for q in quotes if q["speaker"])
    sources = Counter(q["source"] for q in quotes if q["source"])
    articles = list(dict.fromkeys(q["article_id"] for q in quotes))
    return {
        "id": clusters.public_id(c),  # type: ignore[arg-type]
        "text": quotes[canonical]["text"],
        "speakers": [{"name": n, "count": k} for n, k in speakers.most_common()],
        "first_seen": quotes[0],
        "article_count": len(articles),
        "quote_count": len(quotes),
        "sources": [{"source": n, "count": k} for n, k in sources.most_common()],
        "quotes": quotes,
    }

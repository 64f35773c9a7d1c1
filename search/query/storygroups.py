"""Stories at query time: a wire story and its syndicated copies as one unit of results.

``archive.stories`` links the articles of an index state into stories; a search uses
them three ways: ``group="story"`` (the best hit of each story, its other copies'
hits in ``more_ids``), ``dedupe="story"`` (facet values counted once per story) and,
on every hit, ``story`` and ``copies`` (other articles carrying it). Inside a scoped
read key, copies are counted among the articles the key can see.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from newsquarry.search.archive.stories import Stories, stories_for
from newsquarry.search.core.requests import Hit, QuoteHit
from newsquarry.search.engine.views import View, cache_for


def describe(
    hits: list[Hit | QuoteHit],
    docnums: list[int],
    view: View,
    st: Stories,
    scope: np.ndarray | None = None,
) -> None:
    """Set each hit's ``story`` and ``copies`` (counted inside ``scope``, a document mask
    of what a scoped key may see, when given)."""
    visible = None
    if scope is not None:
        arts = view.article_of[scope & view.doctype_mask("article")]
        visible = np.zeros(len(st.label), dtype=bool)
        visible[arts[(arts >= 0) & (arts < len(st.label))]] = True
    for hit, d in zip(hits, docnums, strict=True):
        gid = int(view.article_of[d])
        if not 0 <= gid < len(st.label):
            continue
        n = int(st.label[gid])
        hit.story = st.story_id(n)
        if visible is None:
            hit.copies = st.copies(gid)
        else:
            same = (st.label == n) & st.live & visible
            hit.copies = max(0, int(np.count_nonzero(same)) - 1)


def copies_of(view: View, st: Stories, article_gid: int) -> list[dict[str, Any]]:
    """The articles of one article's story, first publication first: id, source, date,
    ``similarity`` (estimated share of word runs in common with the first, over both) and
    ``changed`` (estimated share of its word runs not in the first: 0 for a copy as
    published or cut short, more for one rewritten or added to)."""
    if not 0 <= article_gid < len(st.label):
        return []
    first = int(st.first[st.label[article_gid]])
    return [
        {
            "id": st.article_keys[g],
            "source": st.sources.get(g),
            "date": st.dates.get(g) or None,
            "first": g == first,
            "similarity": round(float(st.similarity[g]), 2),
            "changed": round(1.0 - float(st.kept[g]), 2),
        }
        for g in st.members(article_gid)
    ]


def article_copies(store: Any, article_id: str) -> list[dict[str, Any]]:
    """The story of one article as ``copies_of`` lists it (empty when no other article
    carries it): the record ``newsquarry show`` and ``GET /v1/articles/{id}`` add."""
    searcher = store.searcher()
    view = cache_for(store).view(searcher)
    gid = view.gid("article_id", article_id)
    if gid is None:
        return []
    st = stories_for(view, searcher, getattr(store, "path", None))
    return copies_of(view, st, gid) if st.copies(gid) else []

"""Pseudo-relevance feedback for the article ranking: RM3 (Lavrenko and Croft's relevance
model, interpolated with the query as in Abdul-Jaleel et al., TREC 2004; the form Anserini
and Pyserini run beside BM25).

A reader's query names a topic in a few words; the stories about it use more ("coffee
prices and export quotas": ICO, producers, Brazil, bags). RM3 reads the best ``FB_DOCS``
articles of the first ranking, weighs each word of theirs by its share of the article
times the article's score (the relevance model), keeps the ``FB_TERMS`` heaviest, and
ranks the articles again by the query (weight ``ORIGINAL_WEIGHT``) and those words
together. The settings are the published defaults (10 articles, 10 words, 0.5), not
tuned here.

It changes the article order only (``group=article``, and the article evidence every
passage carries), never what matches: totals and facet counts stay those of the words
typed. Stop words and numbers are never feedback words (a figure belongs to one story, not
to a topic); the original words keep deciding coordination.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from newsquarry.search.engine.schema import text_analyzer
from newsquarry.search.query.parse import STOP_WORDS
from newsquarry.search.query.scoring import top_k

FB_DOCS = 10
FB_TERMS = 10
ORIGINAL_WEIGHT = 0.5
ENABLED = True
_WORDS = re.compile(r"\w+").findall
_ANALYZER = text_analyzer()


@lru_cache(maxsize=100_000)
def _index_form(word: str) -> str | None:
    """The text field's index form of one lower-cased word; None for stop words, numbers
    and one-letter words."""
    if word in STOP_WORDS or len(word) < 2 or word.isdigit() or word[0].isdigit():
        return None
    forms = [t.text for t in _ANALYZER(word)]
    return forms[0] if len(forms) == 1 else None


def feedback_terms(prep: Any, rank: np.ndarray) -> dict[str, float]:
    """The relevance model's ``FB_TERMS`` heaviest words (index forms) over the best
    ``FB_DOCS`` matching articles by ``rank`` (per article key id), L1-normalised."""
    view = prep.view
    art = view.article_of
    words = prep.final if prep.semantic is None else prep.final & prep.semantic.words
    matched = art[words & (art >= 0)]
    if not len(matched):
        return {}
    present = np.unique(matched)
    top = top_k(present, rank, FB_DOCS, view.rank("article_id"))
    top = top[rank[top] > 0]
    if not len(top):
        return {}
    passages = np.flatnonzero(np.isin(art, top) & view.doctype_mask("passage"))
    counts: dict[int, Counter[str | None]] = {int(a): Counter() for a in top}
    for d in passages.tolist():
        text = prep.stored(d).get("text") or ""
        counts[int(art[d])].update(map(_index_form, _WORDS(text.lower())))
    for c in counts.values():
        c.pop(None, None)
    model: Counter[str] = Counter()
    for a, c in counts.items():
        length = sum(c.values())
        if not length:
            continue
        weight = float(rank[a])
        for form, n in c.items():
            model[form] += weight * n / length
    best = model.most_common(FB_TERMS)
    total = sum(v for _, v in best)
    return {t: v / total for t, v in best} if total else {}


def feedback_boosts(
    prep: Any, terms: dict[tuple[str, str], float], rank: np.ndarray
) -> dict[tuple[str, str], float] | None:
    """The boosts RM3 adds to ``terms`` (the query's scoring terms, each at its boost):
    the feedback words in the text (where they were read, as Anserini expands the body
    field only), scaled so that a query word alone keeps its
    boost (its share ``ORIGINAL_WEIGHT`` of the interpolated model). BM25 sums over terms,
    so the article scores of the query plus these are the expanded query's. None when
    there is no feedback (disabled, nothing matched, or no word found)."""
    if not ENABLED or prep.parsed.empty or prep.request.mode != "passages":
        return None
    text_terms = {t: b for (f, t), b in terms.items() if f == "text"}
    if not text_terms:
        return None
    fb = feedback_terms(prep, rank)
    if not fb:
        return None
    scale = (1 - ORIGINAL_WEIGHT) * sum(text_terms.values()) / ORIGINAL_WEIGHT
    return {("text", t): p * scale for t, p in fb.items()}

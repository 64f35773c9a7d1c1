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
    counts: dict[int, Counter[str]] = {int(a): Counter() for a in top}
    for d in passages:
        text = prep.stored(int(d)).get("text") or ""
        c = counts[int(art[d])]
        for w in _WORDS(text.lower()):
            form = _index_form(w)
            if form is not None:
                c[form] += 1
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


def expanded_terms(
    prep: Any, terms: dict[tuple[str, str], float], rank: np.ndarray
) -> dict[tuple[str, str], float] | None:
    """``terms`` (the query's scoring terms) interpolated with the feedback words, in
    text and title, scaled so a query word alone keeps its boost; None when there is no
    feedback (disabled, nothing matched, or no word found)."""
    if not ENABLED or prep.parsed.empty or prep.request.mode != "passages":
        return None
    fb = feedback_terms(prep, rank)
    text_terms = {t: b for (f, t), b in terms.items() if f == "text"}
    if not fb or not text_terms:
        return None
    # query model: each term's boost, L1-normalised; the mix scaled back by the query's size
    q_total = sum(text_terms.values())
    scale = q_total / ORIGINAL_WEIGHT
    out = {k: b for k, b in terms.items()}
    for t, p in fb.items():
        for f in ("text", "title"):
            w = (1 - ORIGINAL_WEIGHT) * p * scale
            out[(f, t)] = out.get((f, t), 0.0) + w
    return out

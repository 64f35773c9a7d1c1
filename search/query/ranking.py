"""The ranking of one search's matches by their words: BM25F over the passages, the
article's score beside each passage's (``scoring.article_scores``, with RM3 feedback,
``query.feedback``), coordination, and the pairs of query words the proximity rerank looks
for; hybrid search fuses this ranking with the nearest passages (``query.semantic``).

``prep`` is a prepared search (``searching._Prepared``): its view, postings, parsed query
and match masks; what is computed once per search is kept on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from newsquarry.search.query.feedback import feedback_boosts, rescored
from newsquarry.search.query.proximity import RERANK, rerank
from newsquarry.search.query.scoring import (
    ARTICLE_WEIGHT,
    COORD_POWER,
    article_coordination,
    article_scores,
    article_scores_at,
    bm25_scores,
    coordination,
    idf,
    top_k,
)


def search_scores(prep: Any) -> np.ndarray:
    """Relevance of every document: by words (``_keyword_scores``), or by meaning, alone
    or fused with the keyword ranking (``query.semantic``)."""
    if prep.semantic is not None:
        return prep.semantic.scores(prep, _keyword_ranking)
    return _keyword_scores(prep)


def _keyword_ranking(prep: Any) -> np.ndarray:
    """The keyword scores in the order a keyword search gives: with the proximity rerank
    of the head of the keyword matches (the ranking hybrid search fuses)."""
    scores = _keyword_scores(prep)
    pairs = word_pairs(prep)
    if pairs and prep.semantic is not None:
        words = np.flatnonzero(prep.final & prep.semantic.words)
        head = top_k(words, scores, RERANK, prep.view.ties)
        fname = "quote" if prep.request.mode == "quotes" else "text"
        rerank(head, scores, pairs, lambda d: prep.stored(d).get(fname) or "", prep.view.ties)
    return scores


def _keyword_scores(prep: Any) -> np.ndarray:
    """Relevance of every document by its words.

    ``all`` and ``any``: BM25F over the passage's text and title (quotes: the
    quotation). ``most``, passages: the passage's BM25 over its text times its
    coordination (the idf-weighted share of the important words it holds), plus
    its article's score (``scoring.article_scores``: the whole article's text and
    its title once, times the article's coordination), which is also kept in
    ``prep.article_rank`` to order articles (``group=article``). ``most``, quotes:
    BM25 times coordination.

    A plain word with several index forms ("say": "sai" and "said") scores by its
    best form in each document, so it never counts twice.
    """
    parsed = prep.parsed
    view, postings, deadline, doctype = prep.view, prep.postings, prep.deadline, prep.doctype
    passages = prep.request.mode == "passages"
    most = parsed.match == "most"
    if not passages:
        fields = ["quote"]
    elif most:  # the title scores once per article, in the article's score
        fields = ["text"]
    else:
        fields = ["text", "title"]
    terms = dict(parsed.scoring_terms)
    if passages and most:
        terms = {k: b for k, b in terms.items() if k[0] != "title"}
    multi = [w for w in parsed.loose if len(w.terms) > 1 and (w.terms[0] and not w.stop)]
    for w in multi:
        for t in w.terms:
            for f in fields:
                terms.pop((f, t), None)
    scores = bm25_scores(view, postings, terms, deadline, doctype)
    for w in multi:
        best = None
        for t in w.terms:
            one = bm25_scores(view, postings, {(f, t): 1.0 for f in fields}, deadline, doctype)
            best = one if best is None else np.maximum(best, one)
        if best is not None:
            scores += best
    if most and COORD_POWER:
        words = [[(f, t) for t in w.terms for f in fields] for w in parsed.important]
        coord = coordination(view, postings, words, deadline, doctype)
        if coord is not None:  # where it is read: the matching documents (``final_docs``)
            m = prep.final_docs
            scores[m] *= coord[m] ** COORD_POWER
    if most and passages and ARTICLE_WEIGHT:
        prep.article_rank = article_rank(prep)
        m = prep.final_docs
        padded = np.zeros(len(prep.article_rank) + 1, dtype=np.float32)
        padded[:-1] = prep.article_rank  # an article-level array; -1 (no article) reads 0
        scores[m] += ARTICLE_WEIGHT * padded[view.article_of[m]]
    return scores


def article_rank(prep: Any) -> np.ndarray:
    """Per article key id, the score that orders articles: ``scoring.article_scores``,
    in ``most`` mode times the article's coordination."""
    if prep.article_rank is not None:
        return prep.article_rank
    parsed = prep.parsed
    view, postings, deadline, doctype = prep.view, prep.postings, prep.deadline, prep.doctype
    rank = article_scores(view, postings, parsed.scoring_terms, deadline, doctype)
    coord = None
    if parsed.match == "most" and COORD_POWER:
        words = [[(f, t) for t in w.terms for f in ("text", "title")] for w in parsed.important]
        coord = article_coordination(view, postings, words, deadline, doctype)
        if coord is not None:
            rank *= coord**COORD_POWER
    extra = feedback_boosts(prep, parsed.scoring_terms, rank)  # RM3 (``query.feedback``)
    if extra:
        chosen = rescored(prep, rank)
        more = article_scores_at(view, postings, extra, chosen, deadline, doctype)
        if coord is not None:
            more *= coord[chosen] ** COORD_POWER
        rank = rank.copy()
        rank[chosen] += more
    prep.article_rank = rank
    return rank


def word_pairs(prep: Any) -> list[tuple[set[str], set[str], float]]:
    """Consecutive important words of a ``most`` query, with their mean idf."""
    parsed = prep.parsed
    if parsed.match != "most":
        return []
    words = parsed.important
    if len(words) < 2:
        return []
    fname = "quote" if prep.request.mode == "quotes" else "text"
    live = prep.view.doctype_mask(prep.doctype)
    n = float(prep.view.live_count(prep.doctype)) or 1.0
    schema = prep.searcher.schema

    def weight(w: Any) -> float:
        df = 0
        for t in w.terms:
            ids, _ = prep.postings.get(fname, schema[fname].to_bytes(t))
            df = max(df, int(np.count_nonzero(live[ids])))
        return idf(n, df)

    weights = [weight(w) for w in words]
    return [
        (set(a.terms), set(b.terms), (wa + wb) / 2)
        for a, b, wa, wb in zip(words, words[1:], weights, weights[1:], strict=False)
    ]

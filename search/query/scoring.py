"""Relevance: BM25F computed with numpy over posting blocks, for every match at once.

Scoring document by document through Whoosh matchers costs about half a second
for a common word at 100k passages (Python per posting); here each query term's
posting list is read block by block (ids and weights) and scored as arrays.

The formula is BM25F as in Whoosh (B=0.75, K1=1.2): for each term and field,
``idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))`` with
``idf = log(N / (df + 1)) + 1``; the schema's field boosts (title 2.0, quote
1.5) are already in the stored weights. A document's score is the sum over the
query's positive terms (words under NOT add nothing) in the fields that hold
them, each times its query boost (``word^2``); only documents of the final
match set are ranked, so filters always apply.

Statistics depend on content only, never on how the index is split into
segments: ``N`` is the number of live documents of the kind searched
(passages, or quotes), ``df`` the number of them holding the term, ``avgdl``
their mean (byte-quantized) field length. Whoosh's own statistics count
deleted documents until a merge and mix the three document kinds, so the same
articles ranked differently after an update, a merge or ``optimize``.

``coordination`` weighs a ``most``-mode score by how much of the query's
important words a document holds (each word weighted by its idf), so that a
passage with three of four words outranks one that repeats a single word.
"""

from __future__ import annotations

from math import log

import numpy as np

from newsquarry.search.core import npsets
from newsquarry.search.engine.docvalues import SCORED_FIELDS
from newsquarry.search.engine.views import View
from newsquarry.search.query.postings import Deadline, Postings

B = 0.75
K1 = 1.2
# exponent of the coordination factor (``most`` mode): 0 = off; see docs/quality.md
COORD_POWER = 1.0
# weight of the article's own score added to each passage's (``article_scores``)
ARTICLE_WEIGHT = 1.0


def idf(n: float, df: int) -> float:
    return log(n / (df + 1)) + 1


def bm25_scores(
    view: View,
    postings: Postings,
    terms: dict[tuple[str, str], float],
    deadline: Deadline,
    doctype: str = "passage",
) -> np.ndarray:
    """Per-document BM25F scores of (field, index term) pairs, each times its query boost."""
    scores = np.zeros(view.size, dtype=np.float32)
    if not terms or not view.size:
        return scores
    live = view.doctype_mask(doctype)
    n = float(view.live_count(doctype)) or 1.0
    schema = postings.searcher.schema
    for (fieldname, text), boost in sorted(terms.items()):
        if fieldname not in SCORED_FIELDS:
            continue
        ids, tf = postings.get(fieldname, schema[fieldname].to_bytes(text))
        if not len(ids):
            continue
        df = int(np.count_nonzero(live[ids]))
        dl = view.lengths_of(fieldname, ids)
        avg = view.avg_length(fieldname, doctype) or 1.0
        scores[ids] += boost * idf(n, df) * (tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * dl / avg))
        deadline.check()
    return scores


def article_scores(
    view: View,
    postings: Postings,
    terms: dict[tuple[str, str], float],
    deadline: Deadline,
    doctype: str = "passage",
) -> np.ndarray:
    """Per article key id, the BM25F score of the whole article: its passages' text
    together, and its title counted once.

    Passage-level evidence alone misses what an article is about: a passage naming
    "production", "crop" and "estimates" once each outranks a passage of a sugar
    story that names "sugar" once. The article's score (Callan, "Passage-level
    evidence in document retrieval", SIGIR 1994) lets the story's topic count; it is
    added to each passage's score, and it alone orders articles (``group=article``).
    Statistics are over articles: N = articles with live passages, df = articles
    holding the term, tf = the term's count over the article's passages, dl = the
    sum of their (quantized) text lengths. Every passage carries its article's title,
    so the title is read from one passage: its tf and length once per article, its
    df over articles (per passage, a title word's df and weight would grow with the
    article's length).
    """
    nkeys = view.nkeys["article_id"] if view.size else 0
    acc = np.zeros(nkeys, dtype=np.float64)
    if not terms or not view.size:
        return acc
    for fieldname in ("text", "title"):
        field_terms = {t: b for (f, t), b in terms.items() if f == fieldname}
        if not field_terms:
            continue
        if fieldname == "text":
            dl, n_articles, avg = view.article_lengths(fieldname, doctype)
        else:
            dl, n_articles, avg = view.article_lengths(fieldname, doctype, per_article="max")
        if not n_articles:
            continue
        for text, boost in sorted(field_terms.items()):
            held, t = _held(view, postings, fieldname, text, doctype)
            if not len(held):
                continue
            norm = K1 * ((1 - B) + B * dl[held] / avg)
            acc[held] += boost * idf(float(n_articles), len(held)) * t * (K1 + 1) / (t + norm)
            deadline.check()
    return acc


def _held(
    view: View, postings: Postings, fieldname: str, text: str, doctype: str
) -> tuple[np.ndarray, np.ndarray]:
    """The articles holding a term in a field and its tf in each (``per_article_tf``)
    over its whole posting list; their number (the term's article df) is kept per index
    state (``View.stats_put``) for ``article_df``."""
    ids, tf = postings.get(fieldname, postings.searcher.schema[fieldname].to_bytes(text))
    a = view.live_article_of(doctype)[ids]
    keep = a >= 0
    if not keep.all():
        a, tf = a[keep], tf[keep]
    held, t = per_article_tf(
        a, tf, fieldname == "text", view.nkeys["article_id"], view.articles_contiguous
    )
    view.stats_put(("article_df", fieldname, text, doctype), len(held))
    return held, t


def article_df(
    view: View, postings: Postings, fieldname: str, text: str, doctype: str = "passage"
) -> int:
    """How many articles with live documents of ``doctype`` hold a term in a field: read
    once per index state over the term's list (an int per term, as a term dictionary
    keeps a document frequency), then kept."""
    df = view.stats_get(("article_df", fieldname, text, doctype))
    return len(_held(view, postings, fieldname, text, doctype)[0]) if df is None else df


def article_scores_at(
    view: View,
    postings: Postings,
    terms: dict[tuple[str, str], float],
    articles: np.ndarray,
    deadline: Deadline,
    doctype: str = "passage",
) -> np.ndarray:
    """``article_scores`` of ``terms`` (in the text) for the given articles only (sorted
    key ids), in their order: the same values, with work in proportion to those articles'
    documents, not to the terms' posting lists; a term's idf from ``article_df``."""
    out = np.zeros(len(articles), dtype=np.float64)
    if not terms or not len(articles) or not view.size:
        return out
    if any(f != "text" for f, _ in terms):
        raise ValueError("article_scores_at scores the text only")
    dl, n_articles, avg = view.article_lengths("text", doctype)
    if not n_articles:
        return out
    docs = view.article_docs(articles)
    docs = docs[view.doctype_mask(doctype)[docs]]
    where = np.searchsorted(articles, view.article_of[docs])  # each document's article
    norm = K1 * ((1 - B) + B * dl[articles] / avg)
    schema = postings.searcher.schema
    for (_f, text), boost in sorted(terms.items()):
        btext = schema["text"].to_bytes(text)
        df = article_df(view, postings, "text", text, doctype)
        if not df:
            continue
        # summed in document order, as ``np.bincount`` sums them: the same tf
        t = np.bincount(where, weights=postings.weights_at("text", btext, docs),
                        minlength=len(articles))  # fmt: skip
        held = np.flatnonzero(t)
        th = t[held]
        out[held] += boost * idf(float(n_articles), df) * th * (K1 + 1) / (th + norm[held])
        deadline.check()
    return out


def per_article_tf(
    a: np.ndarray, tf: np.ndarray, summed: bool, nkeys: int, contiguous: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The articles holding a term and its tf in each (float64): ``a`` and ``tf`` are the
    article key ids and weights of its postings in docnum order; ``summed`` adds an
    article's weights (its text), else one is taken (the same title on every passage).

    When an article's live documents are one run of docnums (``contiguous``:
    ``View.articles_contiguous``), each run is one article: linear in the postings, never
    in the number of articles (``nkeys``). The sums are ``np.bincount``'s (float64, in
    docnum order)."""
    if contiguous:
        if not len(a):
            return a, np.zeros(0, dtype=np.float64)
        starts = npsets.run_starts(a)  # where a run (an article) starts
        w = tf.astype(np.float64)
        return a[starts], (np.add.reduceat(w, starts) if summed else w[starts])
    if summed:
        tf_a = np.bincount(a, weights=tf, minlength=nkeys)
    else:
        tf_a = np.zeros(nkeys, dtype=np.float64)
        tf_a[a] = tf
    held = np.flatnonzero(tf_a)
    return held, tf_a[held]


def article_coordination(
    view: View,
    postings: Postings,
    words: list[list[tuple[str, str]]],
    deadline: Deadline,
    doctype: str = "passage",
) -> np.ndarray | None:
    """Per article key id, the idf-weighted share of ``words`` the article holds
    (in any passage's text, or its title); None under two words. The article-level
    twin of ``coordination``: a story that names three of four query words across
    its passages beats one that repeats one of them."""
    if len(words) < 2 or not view.size:
        return None
    art = view.live_article_of(doctype)
    live = view.doctype_mask(doctype)
    n = float(view.live_count(doctype)) or 1.0
    nkeys = view.nkeys["article_id"]
    have = np.zeros(nkeys, dtype=np.float64)
    total = 0.0
    schema = postings.searcher.schema
    for pairs in words:
        held = np.zeros(nkeys, dtype=bool)
        df = 0
        for fieldname, text in pairs:
            ids, _ = postings.get(fieldname, schema[fieldname].to_bytes(text))
            a = art[ids]
            held[a[a >= 0]] = True
            if fieldname != "title":
                df = max(df, int(np.count_nonzero(live[ids])))
        w = idf(n, df)
        have[held] += w
        total += w
        deadline.check()
    return have / total if total else None


def coordination(
    view: View,
    postings: Postings,
    words: list[list[tuple[str, str]]],
    deadline: Deadline,
    doctype: str = "passage",
) -> np.ndarray | None:
    """Per document, the idf-weighted share of ``words`` it holds (1.0 = all of them).

    Each word is a list of (field, term) pairs; a document holds the word when
    any of them occurs in it. None when there is nothing to weigh (under two words).
    """
    if len(words) < 2 or not view.size:
        return None
    live = view.doctype_mask(doctype)
    n = float(view.live_count(doctype)) or 1.0
    schema = postings.searcher.schema
    have = np.zeros(view.size, dtype=np.float32)
    total = 0.0
    for pairs in words:
        lists = []
        df = 0
        for fieldname, text in pairs:
            ids, _ = postings.get(fieldname, schema[fieldname].to_bytes(text))
            lists.append(ids)
            if fieldname != "title":
                df = max(df, int(np.count_nonzero(live[ids])))
        w = idf(n, df)
        # a document counts the word once, whichever of its forms and fields hold it
        held = lists[0] if len(lists) == 1 else npsets.unique(np.concatenate(lists))
        have[held] += w
        total += w
        deadline.check()
    return have / total if total else None


def top_k(
    candidates: np.ndarray, scores: np.ndarray, k: int, tiebreak: np.ndarray | None = None
) -> np.ndarray:
    """The k best candidates (global docnums): score descending, then ``tiebreak``
    ascending (a content-derived rank, so equal scores order the same whatever the
    segment history), then docnum."""
    if not len(candidates) or k <= 0:
        return candidates[:0]
    sc = scores[candidates]
    if len(candidates) > 4 * k:
        kth = np.partition(sc, len(sc) - k)[len(sc) - k]
        keep = sc >= kth  # ties at the boundary all kept, so paging is stable
        candidates, sc = candidates[keep], sc[keep]
    if tiebreak is None:
        order = np.lexsort((candidates, -sc))
    else:
        order = np.lexsort((candidates, tiebreak[candidates], -sc))
    return candidates[order[:k]]

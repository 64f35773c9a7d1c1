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

The words are the index's own terms, as the text analyzer makes them ("don't" one word, a
possessive dropped), read from the tokens each segment keeps (``archive.tokenoffsets``):
neither the articles' stored text nor the analyzer is touched at search time. A stop word
is known by its index form, so a word that stems to one ("one" -> "on", "others" ->
"other") is left out with it. A segment without the file has its passages read and
analysed, to the same words.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from newsquarry.search.archive.tokenoffsets import analyse
from newsquarry.search.core import npsets
from newsquarry.search.engine.schema import text_analyzer
from newsquarry.search.query.parse import STOP_WORDS
from newsquarry.search.query.scoring import top_k

FB_DOCS = 10
FB_TERMS = 10
ORIGINAL_WEIGHT = 0.5
RESCORED = 1000  # articles the expanded query ranks again (Anserini keeps 1000 hits)
ENABLED = True
_ANALYZER = text_analyzer()
_TEXT_CODE = 1  # ``archive.tokenoffsets.FIELDS``: a passage keeps the tokens of its text


_STOP_FORMS = frozenset(t.text for w in STOP_WORDS for t in _ANALYZER(w))


def feedback_terms(prep: Any, rank: np.ndarray) -> dict[str, float]:
    """The relevance model's ``FB_TERMS`` heaviest words (index forms) over the best
    ``FB_DOCS`` matching articles by ``rank`` (per article key id), L1-normalised."""
    view = prep.view
    art = view.article_of
    present = matched_articles(prep)
    if not len(present):
        return {}
    top = top_k(present, rank, FB_DOCS, view.rank("article_id"))
    top = top[rank[top] > 0]
    if not len(top):
        return {}
    passages = view.article_docs(np.sort(top))
    passages = passages[view.doctype_mask("passage")[passages]]
    kept, passages = _kept_counts(prep, passages)
    counts: dict[int, Counter[str | None]] = {int(a): Counter() for a in top}
    for d in passages.tolist():  # segments that keep no tokens: read and analyse the text
        text = prep.stored(d).get("text") or ""
        counts[int(art[d])].update(map(_feedback_word, analyse(text)[0]))
    for c in counts.values():
        c.pop(None, None)
    length = np.zeros(len(rank), dtype=np.float64)
    for arts, _tids, n, _segment in kept:
        np.add.at(length, arts, n)
    for a, c in counts.items():
        length[a] += sum(c.values())
    model: Counter[str] = Counter()
    for arts, tids, n, segment in kept:
        share = rank[arts] * n / length[arts]
        u, inv = np.unique(tids, return_inverse=True)
        mass = np.bincount(inv, weights=share, minlength=len(u))
        if len(kept) == 1 and not passages.size:  # one segment: its best words only
            best = np.argsort(-mass, kind="stable")[:FB_TERMS]
            u, mass = u[best], mass[best]
        for t, m in zip(u.tolist(), mass.tolist(), strict=True):
            model[segment.vocab[t].decode("utf-8")] += m
    for a, c in counts.items():
        if length[a]:
            weight = float(rank[a]) / float(length[a])
            for form, n in c.items():
                model[form] += weight * n
    # the heaviest words, equal weights in the order of their forms (whatever the path)
    best = sorted(model.items(), key=lambda kv: (-kv[1], kv[0]))[:FB_TERMS]
    total = sum(v for _, v in best)
    return {t: v / total for t, v in best} if total else {}


def matched_articles(prep: Any) -> np.ndarray:
    """The key ids (sorted) of the articles with a passage matching the words typed (in
    hybrid search, by its words), once per search."""
    got = prep.matched_articles
    if got is None:
        view = prep.view
        words = prep.final if prep.semantic is None else prep.final & prep.semantic.words
        a = view.article_of[words]
        a = a[a >= 0]
        if view.articles_contiguous:  # one run per article: no sort of them all
            got = np.sort(a[npsets.run_starts(a)])
        else:
            got = npsets.unique(a)
        prep.matched_articles = got
    return got


def rescored(prep: Any, rank: np.ndarray) -> np.ndarray:
    """The articles RM3 ranks again (sorted key ids): the first ranking's best
    ``RESCORED`` matching articles. The feedback words reorder these among themselves and
    never lower one (a boost is at least 0), so they stay ahead of every article below
    them, whose scores are the first ranking's: the expanded query's cost is that of
    ``RESCORED`` articles' passages, whatever the archive's size."""
    present = matched_articles(prep)
    return np.sort(top_k(present, rank, RESCORED, prep.view.rank("article_id")))


def _kept_counts(prep: Any, passages: np.ndarray) -> tuple[list[tuple], np.ndarray]:
    """The feedback words of ``passages`` (global docnums) counted from their segments'
    kept tokens (``archive.tokenoffsets``): the analyzer's index forms, read without the
    stored text or analysing it again. Per segment (article key ids, term ids, counts, its
    kept tokens, whose vocabulary names the ids), one row per feedback word of an
    article; and the passages
    whose segment keeps no tokens, to be read and analysed."""
    source = getattr(prep.highlighter, "source", None)
    if source is None or not len(passages):
        return [], passages
    view, art = prep.view, prep.view.article_of
    offsets = np.asarray(view.offsets)
    seg_of = np.searchsorted(offsets, passages, side="right") - 1
    out: list[tuple] = []
    left: list[np.ndarray] = []
    for i in npsets.unique(seg_of).tolist():
        docs = passages[seg_of == i]
        col = view.cols[i]
        kept = source.get(col.segid, col.ndocs) if i >= 0 else None
        if kept is None:
            left.append(docs)
            continue
        local = docs - int(offsets[i])
        ok = kept.field[local] == _TEXT_CODE
        if not ok.all():
            left.append(docs[~ok])
            docs, local = docs[ok], local[ok]
        tids, sizes = kept.doc_tokens(local)
        arts = np.repeat(art[docs].astype(np.int64), sizes)
        good = _eligible(kept, tids)
        if not good.any():
            continue
        nvocab = len(kept.vocab)
        keys, n = np.unique(arts[good] * nvocab + tids[good], return_counts=True)
        out.append((keys // nvocab, keys % nvocab, n.astype(np.float64), kept))
    return out, (np.concatenate(left) if left else passages[:0])


def _eligible(kept: Any, tids: np.ndarray) -> np.ndarray:
    """Per token, whether its term id is a feedback word (not a stop word, a number or one
    letter: ``_feedback_word``); each id of a segment classed once."""
    cls = kept.derived.get("feedback")
    if cls is None:
        cls = kept.derived["feedback"] = np.full(len(kept.vocab), -1, dtype=np.int8)
    got = cls[tids]
    unknown = npsets.unique(tids[got < 0])
    if len(unknown):
        words = [_feedback_word(kept.vocab[t].decode("utf-8")) for t in unknown.tolist()]
        cls[unknown] = [w is not None for w in words]
        got = cls[tids]
    return got == 1


@lru_cache(maxsize=100_000)
def _feedback_word(form: str) -> str | None:
    """An index form as a feedback word, or None for stop words, numbers and one letter."""
    if form in _STOP_FORMS or len(form) < 2 or form[0].isdigit():
        return None
    return form


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

"""Relevance: BM25F computed with numpy over posting blocks, for every match at once.

Scoring document by document through Whoosh matchers costs about half a second
for a common word at 100k passages (Python per posting); here each query term's
posting list is read block by block (ids and weights) and scored as arrays.

The formula is Whoosh's ``BM25F`` (B=0.75, K1=1.2): for each term and field,
``idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))`` with
``idf = log(N / (df + 1)) + 1``, N and df over all documents, ``dl`` the
document's (byte-quantized) field length; the schema's field boosts (title 2.0,
quote 1.5) are already in the stored weights. A document's score is the sum
over the query's positive terms (words under NOT add nothing) in the fields
that hold them, each times its query boost (``word^2``); only documents of the final match set are ranked, so filters
always apply.
"""

from __future__ import annotations

from math import log

import numpy as np

from .docvalues import SCORED_FIELDS, Deadline, Postings, View

B = 0.75
K1 = 1.2


def bm25_scores(
    view: View, postings: Postings, terms: dict[tuple[str, str], float], deadline: Deadline
) -> np.ndarray:
    """Per-document BM25F scores of (field, index term) pairs, each times its query boost."""
    scores = np.zeros(view.size, dtype=np.float32)
    if not terms or not view.size:
        return scores
    n = float(view.size)
    schema = postings.searcher.schema
    for (fieldname, text), boost in sorted(terms.items()):
        if fieldname not in SCORED_FIELDS:
            continue
        ids, tf = postings.get(fieldname, schema[fieldname].to_bytes(text))
        if not len(ids):
            continue
        idf = log(n / (len(ids) + 1)) + 1
        dl = view.lengths[fieldname][ids]
        avg = view.avglen[fieldname] or 1.0
        scores[ids] += boost * idf * (tf * (K1 + 1)) / (tf + K1 * ((1 - B) + B * dl / avg))
        deadline.check()
    return scores


def top_k(candidates: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The k best candidates (global docnums): score descending, then docnum ascending."""
    if not len(candidates) or k <= 0:
        return candidates[:0]
    sc = scores[candidates]
    if len(candidates) > 4 * k:
        kth = np.partition(sc, len(sc) - k)[len(sc) - k]
        keep = sc >= kth  # ties at the boundary all kept, so paging is stable
        candidates, sc = candidates[keep], sc[keep]
    order = np.lexsort((candidates, -sc))
    return candidates[order[:k]]

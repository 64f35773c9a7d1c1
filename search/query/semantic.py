"""Search by meaning: nearest passages (or quotations) by their vectors, and their fusion
with the keyword ranking (``retrieval`` semantic or hybrid, ``similar_to``).

What matches, so totals, facets and groups stay exact and explainable:

- ``semantic``: the passages whose cosine similarity to the query is at least the floor
  (the ``semantic_floor`` setting, 0.2 by default: a nonsense query such as
  "xyzzy plugh" reaches 0.16 on the seed article, a related passage 0.2 to 0.5);
- ``hybrid``: the keyword matches, plus those neighbours;
- ``similar_to`` with a ``q``: the neighbours of ``similar_to`` that match ``q`` too.

The set does not depend on the filters, so filters, dates and multi-select facet counts
apply to it as to a keyword search. Each hit says ``matched_by``: words, meaning or both.

Ranking. ``semantic`` orders by similarity. ``hybrid`` fuses the keyword ranking (BM25F
with coordination and the proximity rerank, as a keyword search orders) with the
similarity ranking by reciprocal rank fusion, score = 1/(k + rank by words) + 1/(k + rank by
meaning), k = 60, ranks counted among the matches after filters (a document absent from
one list gets nothing from it). A convex combination of min-max normalised BM25 and
similarity was measured against it (docs/benchmarks.md, "Search by meaning"): RRF needs
no score normalisation, which differs per query, and did as well or better on both
yardsticks, so it is the one used (``FUSION``).

Nearest neighbours are exact: a brute-force product of the query vector with every mapped
float16 segment matrix (torch's half-precision matrix-vector product, 6.7 ms for 141,220 passages
on one thread here). At 768 bytes a passage the matrices are 77 MB per 100,000
passages (768 MB per million), paged in by the kernel like every doc value: an
approximate index (HNSW) would add memory, build time and recall loss for no gain at this
size.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from newsquarry.search.archive.vectors import segment_vectors
from newsquarry.search.core import embedding
from newsquarry.search.core.errors import InvalidRequest, QueryTooLong, SemanticUnavailable
from newsquarry.search.core.requests import RETRIEVALS
from newsquarry.search.engine.views import leaves_of

RRF_K = 60
FUSION = "rrf"  # or "convex" (measured in benchmarks/eval_ranking.py)
CONVEX_WEIGHT = 0.5  # share of the similarity in a convex combination


def resolve(request: Any, settings: dict[str, Any], store: Any, searcher: Any) -> str:
    """The retrieval a request runs: keyword, semantic or hybrid (``auto`` resolved).

    Asking for meaning without the extra, or on an index without vectors, raises
    ``SemanticUnavailable`` (501, 409) saying how to enable it; ``auto`` falls back to
    keyword instead."""
    asked = request.retrieval or settings.get("retrieval") or "auto"
    if asked not in RETRIEVALS:
        raise InvalidRequest(
            f"retrieval must be one of {', '.join(RETRIEVALS)}, got {asked!r}", field="retrieval"
        )
    if not isinstance(request.similar_to, str):
        raise InvalidRequest("similar_to must be a string", field="similar_to")
    longest = int(settings.get("max_query_length") or 400)
    if len(request.similar_to) > longest:
        raise QueryTooLong(
            f"similar_to is {len(request.similar_to)} characters long; at most {longest}",
            field="similar_to",
        )
    if request.similar_to.strip():
        asked = "semantic"
    text = request.q.strip() or request.similar_to.strip()
    if asked == "keyword":
        return asked
    if asked == "auto":
        if not text or not embedding.installed():
            return "keyword"
        return "hybrid" if has_vectors(store, searcher) else "keyword"
    embedding.require()
    if not has_vectors(store, searcher):
        raise SemanticUnavailable(
            "this index has no vectors yet: run `newsquarry embed` to add them "
            "(new articles get them while indexing)",
            status=409,
        )
    return asked if text else "keyword"  # nothing to compare with: browsing


def has_vectors(store: Any, searcher: Any) -> bool:
    """Whether any segment of the searcher's state has vectors."""
    folder = getattr(store, "path", None)
    if folder is None:
        return False
    for reader, _off in leaves_of(searcher):
        seg = reader.segment()
        if len(segment_vectors(folder, seg.segment_id(), seg.doc_count_all()).docs):
            return True
    return False


def similarities(store: Any, searcher: Any, size: int, query: np.ndarray) -> np.ndarray:
    """Cosine similarity of every document to ``query`` (-1 where it has no vector)."""
    import torch  # lazy: only a search by meaning pays for it

    out = np.full(size, -1.0, dtype=np.float32)
    q = torch.from_numpy(np.ascontiguousarray(query, dtype=np.float16))
    for reader, off in leaves_of(searcher):
        seg = reader.segment()
        sv = segment_vectors(store.path, seg.segment_id(), seg.doc_count_all())
        if not len(sv.docs):
            continue
        with warnings.catch_warnings():  # the mapping is read-only; torch only reads it
            warnings.simplefilter("ignore", UserWarning)
            mat = torch.from_numpy(sv.vecs)
        out[off + sv.docs.astype(np.int64)] = (mat @ q).float().numpy()
    return out


class Semantic:
    """What a search by meaning adds to a prepared search (``searching._Prepared``)."""

    def __init__(self, prep: Any, store: Any, retrieval: str) -> None:
        request = prep.request
        self.retrieval = retrieval
        text = request.similar_to.strip() or request.q
        self.floor = float(prep.settings.get("semantic_floor", 0.2))
        kind = prep.view.doctype_mask(prep.doctype)
        started = time.monotonic()
        query = embedding.encode_query(text)
        if prep.deadline.at is not None:  # encoding the query (on first use: loading torch
            prep.deadline.at += time.monotonic() - started  # and the model, seconds) is not
            # the search's own work: the time limit does not count it
        sims = similarities(store, prep.searcher, prep.view.size, query)
        self.sims = sims
        self.near = (sims >= self.floor) & kind
        self.words = prep.base & kind if not prep.parsed.empty else np.zeros_like(kind)
        if request.similar_to.strip():
            self.base = self.near & self.words if request.q.strip() else self.near
        elif retrieval == "semantic":
            self.base = self.near
        else:
            self.base = self.near | self.words

    def scores(self, prep: Any, keyword: Any) -> np.ndarray:
        """Relevance of every document: similarity (semantic), or the fusion of
        ``keyword(prep)`` (the keyword ranking's scores) with it (hybrid)."""
        if self.retrieval == "semantic" or prep.request.similar_to.strip():
            return np.maximum(self.sims, 0.0).astype(np.float32)
        words = keyword(prep)
        final = prep.final
        return fuse(words, self.sims, final & self.words, final & self.near, prep.view.tiebreak)

    def articles(self, prep: Any, keyword: Any) -> np.ndarray:
        """Per article key id, the score that orders articles (``group=article``): the
        best similarity of its matching passages (semantic), or the reciprocal rank fusion
        of the keyword article order (``keyword(prep)``: the article's own score) with that
        best similarity (hybrid). The unit ranked is the unit shown, as by words."""
        hybrid = self.retrieval == "hybrid" and not prep.parsed.empty
        words = keyword(prep) if hybrid else None
        art = prep.view.article_of
        n = len(words) if words is not None else len(prep.view.rank("article_id"))
        near = np.flatnonzero(prep.final & self.near)
        near = near[art[near] >= 0]
        best = np.full(n, -1.0, dtype=np.float32)
        np.maximum.at(best, art[near], self.sims[near])
        if words is None:
            return np.maximum(best, 0.0)
        by_words = np.zeros(n, dtype=bool)
        hit = np.flatnonzero(prep.final & self.words)
        by_words[art[hit][art[hit] >= 0]] = True
        by_meaning = np.zeros(n, dtype=bool)
        by_meaning[art[near]] = True
        order = prep.view.rank("article_id")
        return fuse(words, best, by_words, by_meaning, order)

    def matched_by(self, docnum: int) -> str:
        w, m = bool(self.words[docnum]), bool(self.near[docnum])
        return "both" if w and m else ("words" if w else "meaning")

    def similarity(self, docnum: int) -> float | None:
        s = float(self.sims[docnum])
        return round(s, 4) if s > -1.0 else None


def _ranks(scores: np.ndarray, docs: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """1-based rank of each of ``docs`` by ``scores`` (best first, ties by ``tiebreak``)."""
    order = np.lexsort((tiebreak[docs], -scores[docs]))
    ranks = np.empty(len(docs), dtype=np.float64)
    ranks[order] = np.arange(1, len(docs) + 1)
    return ranks


def fuse(
    words: np.ndarray,
    sims: np.ndarray,
    by_words: np.ndarray,
    by_meaning: np.ndarray,
    tiebreak: np.ndarray,
    fusion: str | None = None,
) -> np.ndarray:
    """Hybrid scores: reciprocal rank fusion (or a convex combination, ``FUSION``) of the
    keyword scores over ``by_words`` and the similarities over ``by_meaning``."""
    out = np.zeros(len(words), dtype=np.float64)
    wd, md = np.flatnonzero(by_words), np.flatnonzero(by_meaning)
    if (fusion or FUSION) == "convex":
        if len(wd):
            w = words[wd].astype(np.float64)
            span = float(w.max() - w.min()) or 1.0
            out[wd] += (1 - CONVEX_WEIGHT) * (w - w.min()) / span
        out[md] += CONVEX_WEIGHT * np.maximum(sims[md], 0.0)
        return out.astype(np.float32)
    if len(wd):
        out[wd] += 1.0 / (RRF_K + _ranks(words, wd, tiebreak))
    if len(md):
        out[md] += 1.0 / (RRF_K + _ranks(sims, md, tiebreak))
    return out.astype(np.float32)


def warm(store: Any) -> None:
    """Load the model and encode a query, when the index has vectors and the extra is
    installed (a server's first search by meaning then answers at once)."""
    if embedding.installed() and has_vectors(store, store.searcher()):
        embedding.encode_query("warm up")

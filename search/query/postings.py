"""Query evaluation into document sets: a Whoosh query tree to a numpy mask over a view.

Terms are read as raw posting blocks and combined by set algebra, positional queries
(phrases) fall back to Whoosh matchers: totals and facet counts never need scoring.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from whoosh import query as wq

from newsquarry.search.core.errors import SearchTimeout
from newsquarry.search.engine.blocks import segment_postings
from newsquarry.search.engine.pstore import sorted_positions
from newsquarry.search.engine.views import View, leaves_of


class Deadline:
    """A monotonic deadline; ``check()`` raises SearchTimeout once it has passed."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds if seconds else None

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() > self.at

    def check(self) -> None:
        if self.expired():
            raise SearchTimeout(f"the search took longer than {self.seconds:g} s and was stopped")


class Postings:
    """Decoded posting lists (global ids, weights) of one searcher, read once per term.

    A segment's list is a slice of its decoded postings file (``search.pstore``)
    for the fields that file covers; otherwise (other fields, no file) Whoosh's
    pickled, zlib-compressed blocks are decoded, and kept per segment in the
    ``SegmentPostingsCache``. Within a request the mask evaluation and the BM25F
    ranking share the lists; across requests the view keeps the most recently
    used ones up to a budget of postings (``View.postings_budget``). A view
    belongs to one state of the index, so cached postings are never stale.
    """

    def __init__(self, searcher: Any, view: View) -> None:
        self.searcher = searcher
        self.view = view
        self.leaves = leaves_of(searcher)
        self.local: dict[tuple[str, bytes], tuple[np.ndarray, np.ndarray]] = {}

    def get(self, fieldname: str, btext: bytes) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(btext, bytes):  # some multi-term queries expand to text
            btext = _to_bytes(self.searcher, fieldname, btext)
        key = (fieldname, btext)
        got = self.local.get(key)
        if got is None:
            got = self.view.cached_postings(key)
        if got is None:
            ids_parts, w_parts = [], []
            start = 0
            base = self.view.partial_postings(key)  # the first segments', from the last view
            if base is not None:
                start = self.view.partial_upto
                ids_parts.append(base[0])
                w_parts.append(base[1])
            shared = self.view.segment_postings
            leaves = zip(self.leaves[start:], self.view.cols[start:], strict=True)
            for (reader, off), cols in leaves:
                pf = cols.postings
                if pf is not None and pf.covers(fieldname):
                    ids, weights = pf.get(fieldname, btext)  # slices of the mapped file
                    if len(ids):
                        ids_parts.append(ids + off)
                        w_parts.append(weights)
                    continue
                skey = (cols.segid, fieldname, btext)
                seg = shared.get(skey) if shared is not None else None
                if seg is None:
                    seg = segment_postings(reader, fieldname, btext)
                    if shared is not None:
                        shared.put(skey, seg)
                ids, weights = seg
                if len(ids):
                    ids_parts.append(ids + off)
                    w_parts.append(weights)
            if ids_parts:
                got = (np.concatenate(ids_parts), np.concatenate(w_parts))
            else:
                got = (np.zeros(0, np.int64), np.zeros(0, np.float32))
            self.view.cache_postings(key, got)
        self.local[key] = got
        return got

    def weights_at(self, fieldname: str, btext: bytes, docs: np.ndarray) -> np.ndarray:
        """A term's weights (0 where absent) at sorted global docnums ``docs``: from the
        decoded list when this request or the view holds it, else from each segment's
        mapped list (``PostingsFile.at``): a handful of documents cost a handful of
        lookups, whatever the term's document frequency."""
        key = (fieldname, btext)
        got = self.local.get(key)
        if got is None:
            got = self.view.cached_postings(key)
        if got is None and all(
            cols.postings is not None and cols.postings.covers(fieldname) for cols in self.view.cols
        ):
            out = np.zeros(len(docs), dtype=np.float32)
            bounds = np.searchsorted(docs, self.view.offsets + [self.view.size])
            for i, cols in enumerate(self.view.cols):
                a, b = int(bounds[i]), int(bounds[i + 1])
                if a < b:
                    local = docs[a:b] - self.view.offsets[i]
                    out[a:b] = cols.postings.at(fieldname, btext, local)
            return out
        ids, w = got if got is not None else self.get(fieldname, btext)
        out = np.zeros(len(docs), dtype=np.float32)
        at, found = sorted_positions(ids, docs)
        out[at] = w[found]
        return out


def _term_mask(view: View, postings: Postings, fieldname: str, btext: bytes) -> np.ndarray:
    m = view.empty()
    ids, _ = postings.get(fieldname, btext)
    m[ids] = True
    return m


def _to_bytes(searcher: Any, fieldname: str, text: Any) -> bytes:
    if isinstance(text, bytes):
        return text
    return searcher.schema[fieldname].to_bytes(text)


def match_mask(
    searcher: Any, view: View, q: Any, deadline: Deadline, postings: Postings | None = None
) -> np.ndarray:
    """The live documents matching a Whoosh query, as a boolean mask (no scoring)."""
    postings = postings or Postings(searcher, view)
    if [off for _, off in postings.leaves] != view.offsets:
        raise RuntimeError("doc-values view does not belong to this searcher")
    return _eval(searcher, view, postings, q, deadline) & view.live


def _eval(searcher: Any, view: View, leaves: Postings, q: Any, deadline: Deadline) -> np.ndarray:
    deadline.check()
    if q is None or isinstance(q, wq.qcore._NullQuery):
        return view.empty()
    if isinstance(q, wq.Every):
        return np.ones(view.size, dtype=bool)
    if isinstance(q, wq.Term):
        return _term_mask(view, leaves, q.fieldname, _to_bytes(searcher, q.fieldname, q.text))
    if isinstance(q, wq.Not):
        return ~_eval(searcher, view, leaves, q.query, deadline)
    if isinstance(q, wq.AndNot):
        return _eval(searcher, view, leaves, q.a, deadline) & ~_eval(
            searcher, view, leaves, q.b, deadline
        )
    if isinstance(q, wq.AndMaybe):
        return _eval(searcher, view, leaves, q.a, deadline)
    if isinstance(q, wq.Require):
        return _eval(searcher, view, leaves, q.a, deadline) & _eval(
            searcher, view, leaves, q.b, deadline
        )
    if isinstance(q, wq.And):
        m = np.ones(view.size, dtype=bool)
        for sub in q.subqueries:
            m &= _eval(searcher, view, leaves, sub, deadline)
        return m
    if isinstance(q, (wq.Or, wq.DisjunctionMax)):
        m = view.empty()
        for sub in q.subqueries:
            m |= _eval(searcher, view, leaves, sub, deadline)
        return m
    if isinstance(q, wq.ConstantScoreQuery) or (
        isinstance(q, wq.WrappingQuery) and not isinstance(q, wq.Not)
    ):
        return _eval(searcher, view, leaves, q.child, deadline)
    if isinstance(q, wq.MultiTerm):
        m = view.empty()
        for n, btext in enumerate(q._btexts(searcher.ixreader)):
            ids, _ = leaves.get(q.fieldname, btext)
            m[ids] = True
            if n % 64 == 0:
                deadline.check()
        return m
    # positional queries (phrases, spans): let Whoosh match them
    m = view.empty()
    ids = []
    for n, docnum in enumerate(searcher.docs_for_query(q)):
        ids.append(docnum)
        if n % 2048 == 0:
            deadline.check()
    if ids:
        m[np.asarray(ids, dtype=np.int64)] = True
    return m

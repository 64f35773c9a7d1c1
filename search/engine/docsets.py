"""A view's document sets by key and their counts (``engine.views.View`` takes these
methods): the documents holding given keys of a field, filter masks kept per view, date
ranges, and per key counts over a mask. Split from ``views`` for its size; the methods
read the view's fields (``docs``, ``gids``, ``cols``, ``_stats``, ``_lock``...).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from newsquarry.search.core import npsets

MASK_BYTES = 64 << 20  # filter masks kept per view (``View._kept_mask``); 0: none
SPARSE_COUNT = 8  # ``View.count`` reads a mask's own pairs under 1/8 of the field's pairs
_UNASKED, _ASKED = object(), object()  # ``DocumentSets._at_second_use``
_SCAN_KEYS = 4  # at most this many keys: a first key mask of a field scans it (``key_mask``)


class DocumentSets:
    """The document-set methods of ``View``."""

    def key_mask(self, fieldname: str, gids: list[int]) -> np.ndarray:
        """Documents holding any of the given key ids in a field (read-only: kept).

        Reads only those keys' documents (``key_docs``), not the whole field: a
        search builds a mask per filter and per offered interpretation, and a scan
        of the field (``numpy.isin``) cost 2 ms each at 70k passages. Until the field's
        documents by key are built (a warm-up builds them, and the field's second such
        mask), a few keys are found by comparing the field's key ids with each: a pass
        over the field per key (0.05 ms for Reuters' 95,000 place pairs) where sorting
        them costs a fresh process's first filter 1-5 ms. The same documents either way.
        """

        def make() -> np.ndarray:
            m = self.empty()
            m[self.key_doc_ids(fieldname, gids)] = True
            return m

        return self._kept_mask(("key", fieldname, tuple(sorted(set(gids)))), make)

    def _kept_mask(self, key: tuple, make: Any) -> np.ndarray:
        """A filter's mask made once per view: the same filters come back search after
        search (a desk's place, the last month), as Lucene's query cache keeps the
        document sets of filters used again. At most ``MASK_BYTES`` of masks are kept,
        the least recently used dropped first; a kept mask is read-only."""
        with self._lock:
            got = self._masks.get(key)
            if got is not None:
                self._masks.move_to_end(key)
                return got
        got = make()
        if MASK_BYTES < self.size:
            return got
        got.flags.writeable = False
        with self._lock:
            self._masks[key] = got
            while len(self._masks) * max(self.size, 1) > MASK_BYTES:
                self._masks.popitem(last=False)
        return got

    def key_doc_ids(self, fieldname: str, gids: Any) -> np.ndarray:
        """The docnums (grouped by segment, then key) of the documents holding any of the
        given key ids in a field: work in proportion to those documents, not the view."""
        canon = self.canon.get(fieldname)
        gids = [int(g) for g in gids]
        if gids and canon is not None:
            gids = sorted({int(canon[g]) if g < len(canon) else g for g in gids} - {-1})
        if not gids:
            return np.zeros(0, dtype=np.int64)
        if len(gids) <= _SCAN_KEYS and ("key_docs", fieldname) not in self._stats:
            with self._lock:
                first = fieldname not in self._scanned
                self._scanned.add(fieldname)
            if first:  # the field's first few-key lookup: a scan, no sort (see key_mask)
                docs, field_gids = self.docs[fieldname], self.gids[fieldname]
                sel = field_gids == gids[0]
                for g in gids[1:]:
                    sel |= field_gids == g
                return docs[sel]
        keys, docs = self.key_docs(fieldname)
        # (segment, key) pairs: each segment's part is sorted by key, and the parts
        # follow each other in segment order, so one search finds every range
        want = np.asarray(gids, dtype=np.int64)
        segs = np.arange(len(self.cols), dtype=np.int64) << 32
        q = (segs[:, None] + want[None, :]).ravel()
        lo = np.searchsorted(keys, q, "left")
        n = np.searchsorted(keys, q, "right") - lo
        total = int(n.sum())
        if not total:
            return np.zeros(0, dtype=np.int64)
        lo, n = lo[n > 0], n[n > 0]
        idx = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(total)
        return docs[idx]

    def key_docs(self, fieldname: str) -> tuple[np.ndarray, np.ndarray]:
        """A field's documents grouped by key id: (segment number << 32 | key id, sorted,
        and the global docnums in that order), computed once per view from each
        segment's part, which is sorted once and kept with the segment across views (a
        new view sorts only its new segments' pairs; a sort of the whole field cost up
        to 8 ms a field on Reuters at every commit)."""
        key = ("key_docs", fieldname)
        got = self._stats.get(key)
        if got is None:
            self.nkeys[fieldname]  # the field's per-segment parts
            keys, docs = [], []
            for i, (c, (ldocs, gids), off) in enumerate(
                zip(self.cols, self._parts[fieldname], self.offsets, strict=True)
            ):

                def make(ldocs: np.ndarray = ldocs, gids: np.ndarray = gids) -> tuple:
                    order = npsets.stable_order(gids)
                    return gids[order].astype(np.int64), ldocs[order].astype(np.int64)

                sk, sd = c.derive(key, (gids,), make)
                keys.append(sk + (i << 32))
                docs.append(sd + off)
            got = (
                (np.concatenate(keys), np.concatenate(docs))
                if keys
                else (np.zeros(0, np.int64), np.zeros(0, np.int64))
            )
            self._stats[key] = got
        return got  # type: ignore[return-value]

    def date_mask(self, lo: int | None, hi: int | None) -> np.ndarray:
        """Documents whose date (YYYYMMDD int) lies in [lo, hi]; dateless docs never match
        (read-only: kept, as ``key_mask``)."""

        def make() -> np.ndarray:
            m = self.date > 0
            if lo is not None:
                m &= self.date >= lo
            if hi is not None:
                m &= self.date <= hi
            return m

        return self._kept_mask(("date", lo, hi), make)

    def count(self, fieldname: str, mask: np.ndarray) -> np.ndarray:
        """Per key id, the number of documents of ``mask`` holding it.

        A pass over the field's (document, key) pairs; for a mask of few documents, once
        the field has been counted before in this view, only those documents' pairs are
        read, through each document's first pair (``_pair_starts``): a facet beside a
        rare word's matches costs its matches, not the archive."""
        docs = self.docs[fieldname]
        n = self.nkeys[fieldname]
        if not len(docs):
            return np.zeros(n, dtype=np.int64)
        starts = self._pair_starts(fieldname, docs)
        if starts is not None and np.count_nonzero(mask) * SPARSE_COUNT < len(docs):
            hits = np.flatnonzero(mask)
            lo = starts[hits]
            size = starts[hits + 1] - lo
            total = int(size.sum())
            idx = np.repeat(lo - (np.cumsum(size) - size), size) + np.arange(total)
            return np.bincount(self.gids[fieldname][idx], minlength=n)
        sel = mask[docs]
        return np.bincount(self.gids[fieldname][sel], minlength=n)

    def _pair_starts(self, fieldname: str, docs: np.ndarray) -> np.ndarray | None:
        """Per docnum, the index of its first pair in the field's pairs (and the total at
        the end), made at the field's second count in this view (a first search does not
        pay for it); None before, or if the pairs are not in docnum order."""

        def make() -> np.ndarray | None:
            if len(docs) > 1 and bool((docs[1:] < docs[:-1]).any()):
                return None
            kind = np.int32 if len(docs) < 2**31 else np.int64  # 4 bytes a document
            got = np.zeros(self.size + 1, dtype=kind)
            np.cumsum(np.bincount(docs, minlength=self.size), out=got[1:])
            return got

        return self._at_second_use(("pair_starts", fieldname), make)

    def _at_second_use(self, key: tuple, make: Any) -> Any:
        """``make()``, kept in this view, from the second time ``key`` is asked for; None
        the first time: a first search does not pay for what only later ones use."""
        got = self._stats.get(key, _UNASKED)
        if got is _UNASKED:
            self._stats[key] = _ASKED
            return None
        if got is _ASKED:
            got = self._stats[key] = make()
        return got

    def date_buckets(self, div: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct ``date // div`` values (sorted) of the dated documents of ``mask``
        and how many documents have each. From the second call for a ``div`` in this view,
        through each document's bucket number made once (no sort of the matches' dates)."""

        def make() -> tuple[np.ndarray, np.ndarray]:
            dated = self.date > 0
            values, inv = np.unique(self.date[dated] // div, return_inverse=True)
            bucket = np.full(self.size, -1, dtype=np.int32)
            bucket[dated] = inv
            return values, bucket

        got = self._at_second_use(("date_buckets", div), make)
        if got is None:  # the first time: the matches' dates sorted
            dates = self.date[mask]
            return npsets.unique_counts(dates[dates > 0] // div)
        values, bucket = got
        b = bucket[mask]
        counts = np.bincount(b[b >= 0], minlength=len(values))
        held = counts > 0
        return values[held], counts[held]

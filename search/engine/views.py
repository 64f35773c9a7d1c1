"""Views: the doc values of one searcher's segments glued into whole-index arrays, cached.

A ``View`` is built per index state (segment ids and deletion counts) from the per-segment
columns of ``engine.docvalues``; ``DocValuesCache`` keeps the views and columns of one store
across commits (unchanged segments are reused), and maps name keys through the key resolver
a feature provides (the alias table, ``store.key_resolver``).
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from newsquarry.search.core import npsets
from newsquarry.search.engine import docvalues, dvstore, keytable, pstore
from newsquarry.search.engine.docsets import DocumentSets
from newsquarry.search.engine.docvalues import (
    _LENGTHS,
    ALIAS_FIELDS,
    DOCTYPES,
    SCORED_FIELDS,
    VALUE_FIELDS,
    KeyRegistry,
    SegmentColumns,
    _Computed,
)


class _Lazy(dict):
    """A dict whose missing entries are computed on first access (thread-safe)."""

    def __init__(self, make: Any, lock: threading.RLock) -> None:
        super().__init__()
        self._make = make
        self._lock = lock

    def __missing__(self, key: str) -> Any:
        with self._lock:
            if dict.__contains__(self, key):
                return dict.__getitem__(self, key)
            value = self._make(key)
            self[key] = value
            return value


STATS_KEPT = 100_000  # statistics per view of one kind (ints: a few MB at most)


def _glued(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    """Per-segment arrays as one whole-index array: one segment's array as it is (mapped
    from its file, never written), not a copy."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


class _KeyList(Sequence[str]):
    """A field's first ``n`` keys (key id -> folded key), read from its registry on first
    use: an adopted key table's keys are decoded only when a search matches or lists
    them (article ids: 16,735 keys, 1.5 ms of a fresh process's first search, which counts
    and ranks by article without them, and whose hits show ten: ``KeyRegistry.key``).
    The registry only grows, so they are the keys ``n`` held when the field was built."""

    def __init__(self, registry: KeyRegistry, n: int) -> None:
        self._registry = registry
        self._n = n
        self._keys: list[str] | None = None

    def _got(self) -> list[str]:
        got = self._keys
        if got is None:
            with self._registry.lock:
                got = self._keys = self._registry.keys[: self._n]
        return got

    def __getitem__(self, i: Any) -> Any:
        if self._keys is None and isinstance(i, (int, np.integer)) and 0 <= i < self._n:
            return self._registry.key(int(i))  # one key: not every key decoded for it
        return self._got()[i]

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        return iter(self._got())


class _Ties:
    """``View.tiebreak[docs]`` for the docnums asked: the same values, from the full array
    once it is built, else from those documents' articles alone."""

    def __init__(self, view: View) -> None:
        self._view = view

    def __getitem__(self, docs: Any) -> np.ndarray:
        view = self._view
        full = view._tiebreak
        if full is not None:
            return full[docs]
        art = view.article_of[docs]
        rank = view.rank("article_id")
        return np.where(art >= 0, rank[np.maximum(art, 0)], len(rank))


class View(DocumentSets):
    """The doc values of one searcher's segments as global arrays (built per field on use)."""

    def __init__(
        self,
        leaves: list[tuple[Any, int]],
        cols: list[SegmentColumns],
        registries: dict,
        resolver: Any = None,
    ) -> None:
        # readers are not kept: each thread evaluates queries on its own searcher's
        # readers (Whoosh readers are not thread-safe and may be closed on refresh)
        self.offsets = [off for _, off in leaves]
        self.cols = cols
        self.registries = registries
        # the alias table (search.aliases.Resolver): name fields count, filter and show
        # every value under its canonical key; canon[field] maps key id -> canonical id
        self.resolver = (
            resolver if resolver is not None and (resolver.canon or resolver.types) else None
        )
        self.canon: dict[str, np.ndarray] = {}
        self.size = sum(c.ndocs for c in cols)
        live = []
        self._dels: list[int] = []  # deleted documents per segment
        for (reader, _), c in zip(leaves, cols, strict=True):
            m = np.ones(c.ndocs, dtype=bool)
            if reader.has_deletions():
                dels = np.fromiter(reader.deleted_docs_set, dtype=np.int64)
                m[dels[dels < c.ndocs]] = False
            live.append(m)
            self._dels.append(int(c.ndocs - np.count_nonzero(m)))
        self.live = np.concatenate(live) if live else np.zeros(0, dtype=bool)
        self.doctype = _glued([c.doctype for c in cols], np.int8)
        self._fields_lock = threading.RLock()
        self._date: np.ndarray | None = None
        # per field, each segment's (local docnums, key ids) as counted (aliases applied)
        self._parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._field_data = _Lazy(self._make_field, self._fields_lock)
        self.docs = _Lazy(lambda f: self._field_data[f][0], self._fields_lock)
        self.gids = _Lazy(lambda f: self._field_data[f][1], self._fields_lock)
        self.nkeys = _Lazy(lambda f: self._field_data[f][2], self._fields_lock)
        self.keys = _Lazy(lambda f: self._field_data[f][3], self._fields_lock)
        self.lengths = _Lazy(
            lambda f: (
                _LENGTHS[np.concatenate([c.length_codes(f) for c in cols])]
                if cols
                else np.zeros(0, np.float32)
            ),
            self._fields_lock,
        )
        # as Whoosh's BM25F: total field length over all documents, deleted ones included
        self.avglen = {
            f: (sum(c.field_totals[f] for c in cols) / self.size) if self.size else 1.0
            for f in SCORED_FIELDS
        }
        self._postings: OrderedDict[tuple[str, bytes], tuple[np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._postings_size = 0
        self._doctype_masks: dict[Any, np.ndarray] = {}
        self._ranks: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._present: dict[str, dict[int, list[str]]] = {}
        self._stats: dict[tuple, Any] = {}
        self._scanned: set[str] = set()  # fields a key mask scanned (``key_mask``)
        self._article_of: np.ndarray | None = None
        self._tiebreak: np.ndarray | None = None
        self._contiguous: bool | None = None
        self._masks: OrderedDict[tuple, np.ndarray] = OrderedDict()  # ``_kept_mask``
        self._displays: dict[tuple[str, int], str] = {}
        self._light: dict[str, tuple[int, np.ndarray | None]] = {}  # ``_key_ids``
        self.segment_postings: SegmentPostingsCache | None = None  # set by DocValuesCache
        # a previous view's decoded postings, covering this view's first segments only
        # (``inherit``): completed with the new segments' on first use
        self._partial: dict[tuple[str, bytes], tuple[np.ndarray, np.ndarray]] = {}
        self.partial_upto = 0

    # -- statistics (content only, never segment history) ---------------------
    def live_count(self, doctype: str) -> int:
        """Live documents of one doctype."""
        key = ("count", doctype)
        got = self._stats.get(key)
        if got is None:
            got = self._stats[key] = int(np.count_nonzero(self.doctype_mask(doctype)))
        return int(got)

    def _live_of(self, i: int) -> np.ndarray:
        """The live mask of segment ``i`` (a view of ``self.live``)."""
        off = self.offsets[i]
        return self.live[off : off + self.cols[i].ndocs]

    def avg_length(self, fieldname: str, doctype: str) -> float:
        """Mean (byte-quantized) length of a field over the live documents of a doctype."""
        key = (fieldname, doctype)
        got = self._stats.get(key)
        if got is None:
            total, n = 0.0, 0
            row = DOCTYPES[doctype] + 1  # (a document of no doctype: -1, row 0)
            for i, c in enumerate(self.cols):

                def make(c: SegmentColumns = c, i: int = i) -> np.ndarray:
                    # per doctype, the live documents holding each length byte: one pass
                    # over the segment answers every doctype's mean (one new array)
                    codes = c.doctype.astype(np.intp)
                    codes += 1
                    codes <<= 8
                    codes |= c.length_codes(fieldname)
                    if self._dels[i]:
                        codes = codes[self._live_of(i)]
                    counts = np.bincount(codes, minlength=256 * (len(DOCTYPES) + 1))
                    return counts.reshape(-1, 256)

                # per segment and deletion count (deletions only grow)
                counts = c.derive(("length_counts", fieldname), (self._dels[i],), make)[row]
                # float64 sums of products of small integers: exact, so independent of
                # document order (the same as summing the documents' lengths one by one)
                total += float(counts.astype(np.float64) @ _LENGTHS.astype(np.float64))
                n += int(counts.sum())
            got = total / n if n else 1.0
            self._stats[key] = got
        return float(got)

    def stats_get(self, key: tuple) -> Any:
        """A statistic kept for this view (this state of the index), or None."""
        return self._stats.get(key)

    def stats_put(self, key: tuple, value: Any) -> None:
        """Keep a statistic of this view's content (``query.scoring``'s per-term article
        counts); at most ``STATS_KEPT`` of them, the oldest dropped first."""
        with self._lock:
            stats = self._stats
            if key not in stats and len(stats) >= STATS_KEPT:
                for old in [k for k in stats if k and k[0] == key[0]][: STATS_KEPT // 4]:
                    del stats[old]
            stats[key] = value

    def lengths_of(self, fieldname: str, docs: np.ndarray) -> np.ndarray:
        """``lengths[fieldname][docs]``; a one-segment view whose whole array is not built yet
        (a warm-up builds it) reads just these documents' length bytes."""
        if len(self.cols) == 1 and not dict.__contains__(self.lengths, fieldname):
            return _LENGTHS[self.cols[0].length_codes(fieldname)[docs]]
        return self.lengths[fieldname][docs]

    def article_lengths(
        self, fieldname: str, doctype: str, per_article: str = "sum"
    ) -> tuple[np.ndarray, int, float]:
        """Per article key id, the summed (or, ``per_article="max"``, the largest) field
        length of its live documents of a doctype; the number of such articles and
        their mean length.

        Summed from each segment's own array (kept with the segment across views, per
        deletion count): an article's documents are all in one segment (one commit adds
        them, a merge moves them together), so a "max" is one segment's max too."""
        key = ("article_len", fieldname, doctype, per_article)
        got = self._stats.get(key)
        if got is None:
            nkeys = self.nkeys["article_id"]
            lengths = np.zeros(nkeys, dtype=np.float64)
            count = np.zeros(nkeys, dtype=np.int64)
            code = DOCTYPES[doctype]  # (``nkeys`` above made the per-segment parts)
            for i, (c, (docs, gids)) in enumerate(
                zip(self.cols, self._parts["article_id"], strict=True)
            ):

                def make(c: SegmentColumns = c, i: int = i, docs=docs, gids=gids) -> tuple:
                    art = np.full(c.ndocs, -1, dtype=np.int64)
                    art[docs] = gids
                    sel = (c.doctype == code) & self._live_of(i) & (art >= 0)
                    values = _LENGTHS[c.length_codes(fieldname)[sel]].astype(np.float64)
                    a = art[sel]
                    if not len(a):
                        return a, values, np.zeros(0, np.int64)
                    if per_article == "max":  # the largest value per article: sort, last
                        order = np.lexsort((values, a))
                        a, values = a[order], values[order]
                        last = np.flatnonzero(np.r_[a[1:] != a[:-1], True])
                        n = np.diff(np.r_[-1, last])
                        return a[last], values[last], n
                    u, inv, n = np.unique(a, return_inverse=True, return_counts=True)
                    return u, np.bincount(inv, weights=values, minlength=len(u)), n

                a, v, n = c.derive(
                    ("article_len", fieldname, doctype, per_article),
                    (self._dels[i], gids),
                    make,
                )
                # ``a`` is unique within a segment (an article's documents are all in
                # one segment anyway: one commit adds them, a merge moves them together)
                if per_article == "max":
                    lengths[a] = np.maximum(lengths[a], v)
                else:
                    lengths[a] += v
                count[a] += n
            n = int(np.count_nonzero(count))
            avg = float(lengths.sum() / n) if n else 1.0
            got = self._stats[key] = (lengths, n, avg or 1.0)  # type: ignore[assignment]
        return got  # type: ignore[return-value]

    @property
    def article_of(self) -> np.ndarray:
        """Per document, the key id of its article (-1 if none). When every document holds
        one article id, in docnum order (a view of one segment), that is the field's key
        ids as they are (no array of the whole index to fill)."""
        with self._lock:
            got = self._article_of
            if got is None:
                docs, gids = self.docs["article_id"], self.gids["article_id"]
                n = self.size
                if n and len(docs) == n and docs[0] == 0 and docs[-1] == n - 1:
                    if bool(np.all(docs[1:] > docs[:-1])):  # docs == arange(n)
                        got = gids
                if got is None:
                    got = np.full(n, -1, dtype=np.int64)
                    got[docs] = gids
                self._article_of = got
        return got

    @property
    def articles_contiguous(self) -> bool:
        """Whether every article's live documents are one run of docnums among the live
        documents. One commit adds an article's documents together and merges keep their
        order (a replaced article's old documents are deleted), so this holds on every
        index the store makes; per-article sums over a docnum-ordered selection of live
        documents can then be taken run by run, never over an array of all articles
        (``query.scoring``)."""
        with self._lock:
            got = self._contiguous
        if got is None:
            a = self.article_of[self.live]
            a = a[a >= 0]
            # as many runs as distinct articles (none: trivially so)
            got = not len(a) or len(npsets.run_starts(a)) == int(np.count_nonzero(np.bincount(a)))
            with self._lock:
                self._contiguous = got
        return got

    def article_docs(self, articles: np.ndarray) -> np.ndarray:
        """The sorted docnums of the given articles' (key ids) live documents. Where each
        article's live documents are one run (``articles_contiguous``), from each run's
        bounds, kept per view: work in proportion to those documents; else through the
        article key's document lists."""
        if not self.articles_contiguous:
            docs = np.sort(self.key_doc_ids("article_id", articles.tolist()))
            return docs[self.live[docs]]
        key = ("article_runs",)
        got = self._stats.get(key)
        if got is None:
            a = self.article_of
            where = np.flatnonzero(self.live & (a >= 0))
            runs = a[where]
            starts = npsets.run_starts(runs)
            ends = np.append(starts[1:], len(runs)) - 1
            lo = np.full(self.nkeys["article_id"], -1, dtype=np.int64)
            span = np.zeros(self.nkeys["article_id"], dtype=np.int64)
            lo[runs[starts]] = where[starts]
            span[runs[starts]] = where[ends] - where[starts] + 1
            got = self._stats[key] = (lo, span)
        lo, span = got
        s, n = lo[articles], span[articles]
        s, n = s[n > 0], n[n > 0]
        total = int(n.sum())
        docs = np.repeat(s - (np.cumsum(n) - n), n) + np.arange(total)
        docs.sort()
        return docs[self.live[docs]]

    @property
    def tiebreak(self) -> np.ndarray:
        """Per document, the alphabetical rank of its article id: equal scores are
        ordered by article id, then by position in the article (docnum order within
        an article, which every segment history keeps)."""
        with self._lock:
            got = self._tiebreak
        if got is None:
            art = self.article_of
            rank = self.rank("article_id")
            got = np.where(art >= 0, rank[np.maximum(art, 0)], len(rank))
            with self._lock:
                self._tiebreak = got
        return got

    @property
    def ties(self) -> _Ties:
        """``tiebreak`` indexed by docnums without building it for the whole index when it is
        not built yet (a warm-up builds it): a first search orders a few dozen
        candidates, and the whole array cost a fresh process 1 ms on Reuters."""
        return _Ties(self)

    def _make_field(self, fname: str) -> tuple[np.ndarray, np.ndarray, int, list[str]]:
        """(global docnums, key ids, key count, keys) of a field over this view's segments."""
        if self.resolver is not None and fname in ALIAS_FIELDS:
            # each segment is mapped once per alias table (kept across views: a commit
            # maps only its new segment)
            def raw(c: SegmentColumns) -> Any:
                return lambda f: (c.field(f).docs, c.field(f).gids)

            # the key resolver a feature provides (the alias table, ``store.key_resolver``)
            parts, nkeys, keys, self.canon[fname] = self.resolver.remap(
                fname, [(c.segid, raw(c)) for c in self.cols], self.registries
            )
            self._parts[fname] = parts
            docs, gids = self._joined(parts)
            return docs, gids, nkeys, keys
        docs, gids = self._raw_field(fname)
        reg = self.registries[fname]
        nkeys = reg.size()  # every key id of these segments is registered by now
        return docs, gids, nkeys, _KeyList(reg, nkeys)

    def _raw_field(self, fname: str) -> tuple[np.ndarray, np.ndarray]:
        """(global docnums, key ids) of a field as indexed (no alias applied)."""
        parts = [(p.docs, p.gids) for p in (c.field(fname) for c in self.cols)]
        self._parts[fname] = parts
        return self._joined(parts)

    def _joined(self, parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """Each segment's (local docnums, key ids) as one (global docnums, key ids) pair. A
        view of one segment uses that segment's arrays as they are (its docnums are the
        global ones; nothing writes into a view's arrays): no copy (each new array of a
        field's ~90,000 pairs costs a fresh process 0.1-0.2 ms, most of it the kernel's
        first touch of its pages). Docnums are signed integers of the segment file's type
        then (int32), else int64."""
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int32)
        if len(parts) == 1:
            (d, g), off = parts[0], self.offsets[0]
            return (d if not off and d.dtype.kind == "i" else np.add(d, off, dtype=np.int64)), g
        pairs = zip(parts, self.offsets, strict=True)
        docs = np.concatenate([np.add(d, off, dtype=np.int64) for (d, _), off in pairs])
        return docs, np.concatenate([g for _, g in parts])

    def key_table(self, fieldname: str) -> str | None:
        """The name of this view's merged key table (``keytable.table_id``) when the field's
        key ids are that table's ids (its registry adopted it), else None: arrays saved in
        those ids (``archive.stories``) are valid in every process whose registry did."""
        if not self.cols:
            return None
        name = keytable.table_id([(c.segid, c.ndocs) for c in self.cols])
        return name if self.registries[fieldname].table == name else None

    @property
    def date(self) -> np.ndarray:
        """Per document, its date as a YYYYMMDD int (0: none)."""
        d = self._date
        if d is None:
            d = _glued([c.date for c in self.cols], np.int32)
            self._date = d
        return d

    # -- masks -------------------------------------------------------------
    def empty(self) -> np.ndarray:
        return np.zeros(self.size, dtype=bool)

    def doctype_mask(self, doctype: str) -> np.ndarray:
        """Live documents of one doctype."""
        m = self._doctype_masks.get(doctype)
        if m is None:
            m = (self.doctype == DOCTYPES[doctype]) & self.live
            self._doctype_masks[doctype] = m
        return m

    def live_article_of(self, doctype: str) -> np.ndarray:
        """Per document, its article's key id when it is a live document of ``doctype``,
        else -1 (int32): one gather tells a posting's article and whether it counts."""
        key = ("article_of", doctype)
        m = self._doctype_masks.get(key)
        if m is None:
            m = np.where(self.doctype_mask(doctype), self.article_of, -1).astype(np.int32)
            self._doctype_masks[key] = m
        return m

    postings_budget = 4_000_000  # postings kept decoded per view (about 48 MB)

    def cached_postings(self, key: tuple[str, bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        with self._lock:
            got = self._postings.get(key)
            if got is not None:
                self._postings.move_to_end(key)
            return got

    def cache_postings(self, key: tuple[str, bytes], value: tuple[np.ndarray, np.ndarray]) -> None:
        size = len(value[0])
        if size > self.postings_budget // 4:
            return
        with self._lock:
            if key in self._postings:
                return
            self._postings[key] = value
            self._postings_size += size
            while self._postings_size > self.postings_budget and self._postings:
                _, old = self._postings.popitem(last=False)
                self._postings_size -= len(old[0])

    def partial_postings(self, key: tuple[str, bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        """A term's postings in this view's first ``partial_upto`` segments, from the view
        it inherited from (taken: the caller completes them and caches the whole)."""
        if not self._partial:
            return None
        with self._lock:
            return self._partial.pop(key, None)

    def inherit(self, prev: View) -> None:
        """Carry over what a previous view decoded, when this view holds the same segments
        at the same places followed by new ones (a commit that added segments, or deleted
        documents only): its postings (Whoosh's raw postings: deletions are masked
        separately, so a segment's never change) and the display names of keys the new
        segments do not hold. Lucene keeps per-segment caches across a refresh for the
        same reason: without this, every commit (a write per second under load) threw
        away the decoded postings of every word searched, and every search's first
        request after it decoded them again from every segment."""
        k = len(prev.cols)
        if not k or k > len(self.cols) or self.offsets[:k] != prev.offsets:
            return
        if [c.segid for c in self.cols[:k]] != [c.segid for c in prev.cols]:
            return
        with prev._lock:
            entries = list(prev._postings.items())
        if k == len(self.cols):
            for key, value in entries:
                self.cache_postings(key, value)
        else:
            self._partial = dict(entries)
            self.partial_upto = k
        if prev.resolver is not self.resolver:
            return
        new_gids: dict[str, set[int]] = {}
        for fieldname, gid in list(prev._displays):
            held = new_gids.get(fieldname)
            if held is None:
                parts = [c.field(fieldname).term_gid for c in self.cols[k:]]
                held = new_gids[fieldname] = set(np.concatenate(parts).tolist()) if parts else set()
            if gid not in held:
                self._displays[(fieldname, gid)] = prev._displays[(fieldname, gid)]

    def rank(self, fieldname: str) -> np.ndarray:
        """Alphabetical rank of each key id (stable tie-breaking), computed once per view."""
        r = self._ranks.get(fieldname)
        if r is None:
            r = self._ranks[fieldname] = self.registries[fieldname].rank(self.nkeys[fieldname])
        return r

    # -- values ------------------------------------------------------------
    def gid(self, fieldname: str, key: str) -> int | None:
        """The key id a folded key is counted under in this view (None: not in it).

        A field whose documents no facet or filter of this view has needed yet is not
        built for it (``_key_ids``): a hit's speaker or source is shown in its display
        form without mapping every document of the field (8.5 ms for the speakers of
        Reuters in a new process's first search)."""
        if dict.__contains__(self._field_data, fieldname):
            nkeys, canon = self.nkeys[fieldname], self.canon.get(fieldname)
        else:
            nkeys, canon = self._key_ids(fieldname)
        gid = self.registries[fieldname].ids.get(key)
        if gid is None or gid >= nkeys:
            return None
        # an alias is counted under its canonical key
        if canon is None or gid >= len(canon):
            return gid
        return int(canon[gid]) if canon[gid] >= 0 else None

    def _key_ids(self, fieldname: str) -> tuple[int, np.ndarray | None]:
        """(key count, key id -> canonical id or None) of a field as ``_make_field`` makes
        them, without the field's documents: its segments' keys registered, and for a
        name field the alias table's map of them (``Resolver.key_map``; the map only grows,
        so the ids agree with the field's once it is built)."""
        with self._fields_lock:
            got = self._light.get(fieldname)
            if got is None:

                def raw(c: SegmentColumns) -> Any:
                    return lambda f: (c.field(f).docs, c.field(f).gids)

                if self.resolver is not None and fieldname in ALIAS_FIELDS:
                    parts = [(c.segid, raw(c)) for c in self.cols]
                    canon = self.resolver.key_map(fieldname, parts, self.registries)
                    got = (len(canon), canon)
                else:
                    for c in self.cols:  # registers the segments' keys
                        c.field(fieldname)
                    got = (self.registries[fieldname].size(), None)
                self._light[fieldname] = got
        return got

    def canonical_key(self, fieldname: str, key: str) -> str:
        """The folded key a folded value is counted under (the alias table's canonical)."""
        if self.resolver is None or fieldname not in ALIAS_FIELDS:
            return key
        return self.resolver.key(key)

    def members(self, fieldname: str, gid: int) -> list[int]:
        """The key ids counted under the same key as ``gid`` (its aliases and itself)."""
        self.nkeys[fieldname]  # resolves the field's key ids
        canon = self.canon.get(fieldname)
        if canon is None or gid >= len(canon) or canon[gid] < 0:
            return [gid]
        return np.flatnonzero(canon == canon[gid]).tolist()

    def display(self, fieldname: str, gid: int) -> str:
        """The most common written form of a key (ties: more accented, then smaller).

        One form per key for the whole view (memoised: hits ask for the same names).
        """
        got = self._displays.get((fieldname, gid))
        if got is not None:
            return got
        keys = self.registries[fieldname].keys  # (``self.keys`` would build the field)
        if self.resolver is not None and fieldname in ALIAS_FIELDS:
            # a canonical name is shown as the alias table says
            got = self.resolver.display.get(keys[gid])
            if got is not None:
                self._displays[(fieldname, gid)] = got
                return got
        total: Counter = Counter()
        for c in self.cols:
            fc = c.field(fieldname)
            for i in np.flatnonzero(fc.term_gid == gid).tolist():
                total[fc.terms[i]] += int(fc.term_count[i])
        if not total:
            got = keys[gid]
        else:
            got = min(total, key=lambda f: (-total[f], -sum(ord(ch) > 127 for ch in f), f))
        self._displays[(fieldname, gid)] = got
        return got

    def raw_terms(self, fieldname: str) -> dict[int, list[str]]:
        """Key id -> the raw indexed terms (written forms) present in this view."""
        with self._lock:
            got = self._present.get(fieldname)
            if got is None:
                got = {}
                for c in self.cols:
                    fc = c.field(fieldname)
                    for gid, idxs in fc.by_gid().items():
                        bucket = got.setdefault(gid, [])
                        bucket.extend(fc.terms[i] for i in idxs if fc.terms[i] not in bucket)
                self._present[fieldname] = got
        return got


class SegmentPostingsCache:
    """Decoded postings per (segment, field, term), kept across index states (an LRU).

    Segments never change (deletions are masked by the view's live mask), so a
    commit that adds a segment leaves every cached entry valid: the first
    search after it decodes only the new segment's postings.
    """

    budget = 4_000_000  # postings kept (about 48 MB)

    def __init__(self) -> None:
        self._items: OrderedDict[tuple[str, str, bytes], tuple[np.ndarray, np.ndarray]] = (
            OrderedDict()
        )
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, bytes]) -> tuple[np.ndarray, np.ndarray] | None:
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
            return got

    def put(self, key: tuple[str, str, bytes], value: tuple[np.ndarray, np.ndarray]) -> None:
        size = len(value[0])
        if size > self.budget // 4:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = value
            self._size += size
            while self._size > self.budget and self._items:
                _, old = self._items.popitem(last=False)
                self._size -= len(old[0])


class DocValuesCache:
    """Segment columns and views of one index; thread-safe.

    A segment's columns come from its ``.dv`` file (``dvstore``); a segment
    without a valid one (an index written before doc values were saved, or a
    file lost) is read from its postings once and its file written then, so the
    next process maps it.
    """

    key_tables = True  # False: registries built segment by segment (tests, benchmarks)

    def __init__(self, folder: str | os.PathLike | None = None) -> None:
        self.folder = folder
        self.registries = {f: KeyRegistry() for f in VALUE_FIELDS}
        self.segments: dict[str, SegmentColumns] = {}
        self.views: dict[tuple, View] = {}
        self.postings = SegmentPostingsCache()
        self.lock = threading.Lock()
        self.aliases: Any = None  # () -> the store's alias Resolver (search.aliases), if any
        self.loads = 0  # segments opened so far, from their file or their postings
        self.builds = 0  # segments read from their postings (no valid file)
        self.postings_builds = 0  # segments whose ``.pst`` file was missing or not valid
        self.postings_files = True  # False: always decode Whoosh's postings (benchmarks)
        self.key_table_builds = 0  # merged key tables missing or not valid, written here

    def _open_segment(self, reader: Any) -> SegmentColumns:
        seg = reader.segment()
        segid = seg.segment_id()
        ndocs = reader.doc_count_all()
        src = dvstore.read(self.folder, segid, ndocs) if self.folder is not None else None
        if src is None:
            arrays, meta = docvalues.compute_segment(reader)  # (patched in tests)
            self.builds += 1
            src = _Computed(ndocs, arrays, meta)
            if self.folder is not None:
                try:
                    dvstore.write(self.folder, segid, ndocs, arrays, meta)
                except OSError:  # a read-only index: keep the columns in memory only
                    pass
        self.loads += 1
        return SegmentColumns(segid, src, self.registries, self._open_postings(reader, ndocs))

    def _open_postings(self, reader: Any, ndocs: int) -> pstore.PostingsFile | None:
        """A segment's decoded postings file; written first if missing or not valid (an index
        from before these files, or a damaged one). None without a folder or if it cannot be
        written: the search then decodes Whoosh's postings, as before."""
        if self.folder is None or not self.postings_files:
            return None
        segid = reader.segment().segment_id()
        got = pstore.read(self.folder, segid, ndocs)
        if got is None:
            self.postings_builds += 1
            try:
                pstore.write_segment(self.folder, reader)
            except OSError:  # a read-only index
                return None
            got = pstore.read(self.folder, segid, ndocs)
        return got

    def _adopt_key_table(self, cols: list[SegmentColumns]) -> None:
        """Start the (empty) registries from the merged key table of these segments
        (``search.keytable``), written first if missing or not valid; without a table
        (no folder, a read-only one) each segment registers its keys as it is used."""
        if self.folder is None or not cols:
            return
        segs = [(c.segid, c.ndocs) for c in cols]
        table = keytable.read(self.folder, segs, VALUE_FIELDS)
        if table is None:
            self.key_table_builds += 1
            try:
                keytable.write(self.folder, segs, VALUE_FIELDS, [c.src for c in cols])
            except OSError:  # a read-only index
                return
            table = keytable.read(self.folder, segs, VALUE_FIELDS)
            if table is None:
                return
        name = keytable.table_id(segs)
        for f in VALUE_FIELDS:
            count = functools.cache(lambda f=f: table.count(f, len(cols)))
            self.registries[f].adopt(
                lambda f=f: table.keys(f),
                name,
                count,
                lambda f=f, count=count: table.key_reader(f, count()),
            )
            for i, c in enumerate(cols):
                c.table_ids[f] = table.local_to_table(f, i)

    def view(self, searcher: Any) -> View:
        """The view for a searcher, opening only segments not seen before."""
        leaves = leaves_of(searcher)
        segkey = tuple(
            (r.segment().segment_id(), r.segment().deleted_count(), off) for r, off in leaves
        )
        resolver = self.aliases() if self.aliases is not None else None
        key = (segkey, resolver.version if resolver is not None else None)
        v = self.views.get(key)
        if v is not None:
            return v
        with self.lock:
            v = self.views.get(key)
            if v is not None:
                return v
            cols = []
            for r, _ in leaves:
                segid = r.segment().segment_id()
                c = self.segments.get(segid)
                if c is None:
                    c = self.segments[segid] = self._open_segment(r)
                cols.append(c)
            if self.key_tables and all(reg.empty() for reg in self.registries.values()):
                self._adopt_key_table(cols)
            v = View(leaves, cols, self.registries, resolver)
            v.segment_postings = self.postings
            if self.views:  # the newest view: its decoded postings and names, where valid
                v.inherit(next(reversed(self.views.values())))
            # keep only what the newest views need
            wanted = {segid for segid, _, _ in segkey}
            for segid in list(self.segments):
                if segid not in wanted:
                    del self.segments[segid]
            if len(self.views) >= 4:
                self.views.pop(next(iter(self.views)))
            self.views[key] = v
            return v


_CACHES: weakref.WeakKeyDictionary[Any, DocValuesCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(store: Any) -> DocValuesCache:
    """The doc-values cache of a store (one per store object)."""
    with _CACHES_LOCK:
        c = _CACHES.get(store)
        if c is None:
            c = _CACHES[store] = DocValuesCache(getattr(store, "path", None))
            if getattr(store, "key_resolver", None) is not None:
                # through a weak reference: the cache is the value of a weak-keyed
                # dictionary, and a strong one would keep the store (and its
                # background threads) alive forever
                ref = weakref.ref(store)
                c.aliases = lambda: s.key_resolver() if (s := ref()) is not None else None
        return c


# -- query -> mask -------------------------------------------------------------


def leaves_of(searcher: Any) -> list[tuple[Any, int]]:
    """(segment reader, docnum offset) of a searcher, in docnum order."""
    return [
        (r, off)
        for r, off in searcher.ixreader.leaf_readers()
        if getattr(r, "segment", lambda: None)() is not None
    ]

"""Per-segment doc values and fast document sets (numpy masks).

Why: Whoosh's ``groupedby`` on multi-valued KEYWORD fields re-reads the
postings on every query (about 0.9 s at 50k passages). Like Lucene's doc
values, we read each segment's postings once into columns:

- ``doctype`` and ``date`` (YYYYMMDD as an int, 0 = none): one value per doc;
- for each facet KEYWORD field and ``article_id``: (doc, key id) pairs, where
  the key id names a *folded* value (``textnorm.fold``) in a registry shared
  by all segments of the index, so "Guaidó" and "Guaido" count as one value
  and a doc holding both forms counts once.

Columns are cached per segment id (segments are immutable in Whoosh; only
their deletions grow, and deletions are applied separately through a "live"
mask), so after ``searcher.refresh()`` unchanged segments are reused and a new
or merged segment is read once. A ``View`` glues the columns of the segments
of one searcher into global arrays (global docnum = segment offset + local
docnum); views are cached per (segment ids, deletion counts), so a changed
index never serves stale counts.

Document sets are numpy boolean arrays over global docnums. ``match_mask``
evaluates a Whoosh query tree into such a mask by set algebra over raw posting
blocks (terms), falling back to Whoosh matchers for positional queries
(phrases): totals and facet counts never need scoring.
"""

from __future__ import annotations

import bisect
import json
import os
import threading
import time
import weakref
from collections import Counter, OrderedDict
from typing import Any

import numpy as np
from whoosh import query as wq
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import TermNotFound
from whoosh.util.numeric import byte_to_length

from newsquarry.search.core import npsets
from newsquarry.search.core.errors import SearchTimeout
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine import dvstore, pstore
from newsquarry.search.engine.whoosh_fixes import length_bytes

VALUE_FIELDS = ("person", "org", "place", "speaker", "source", "quote_kind", "article_id")
ALIAS_FIELDS = ("person", "org", "place", "speaker")  # name fields the alias table maps
SCORED_FIELDS = ("text", "title", "quote")
_LENGTHS = np.array([byte_to_length(b) for b in range(256)], dtype=np.float32)
DOCTYPES = {"article": 0, "passage": 1, "quote": 2}


# -- building blocks ---------------------------------------------------------


def _block_arrays(m: Any) -> tuple[np.ndarray, np.ndarray]:
    """The (ids, weights) of a W3 leaf matcher's current block, decoded with numpy."""
    if m._data is None:
        m._read_data()
    raw_ids, raw_w = m._data[0], m._data[1]
    n = m._blocklength
    if m._byteids:
        ids = np.asarray(raw_ids, dtype=np.int64)
    else:  # delta-encoded
        ids = np.cumsum(np.asarray(raw_ids, dtype=np.int64))
    if raw_w is None:
        w = np.ones(n, dtype=np.float32)
    elif isinstance(raw_w, float):
        w = np.full(n, raw_w, dtype=np.float32)
    else:
        w = np.asarray(raw_w, dtype=np.float32)
    return ids[m._i :], w[m._i :]


def leaf_postings(matcher: Any) -> tuple[np.ndarray, np.ndarray]:
    """All (ids, weights) of a raw posting list (deleted docs included), block by block.

    Reads Whoosh's W3 blocks directly and decodes them with numpy: per-posting
    matcher calls, or Whoosh's own ``delta_decode`` generator, cost several
    times more.
    """
    while isinstance(matcher, FilterMatcher):
        matcher = matcher.child
    id_parts: list[np.ndarray] = []
    w_parts: list[np.ndarray] = []
    if all(hasattr(matcher, a) for a in ("_read_data", "_data", "_byteids", "_next_block")):
        while matcher.is_active():
            ids, w = _block_arrays(matcher)
            id_parts.append(ids)
            w_parts.append(w)
            matcher._next_block()
    else:
        ids_l, w_l = [], []
        while matcher.is_active():
            ids_l.append(matcher.id())
            w_l.append(matcher.weight())
            matcher.next()
        id_parts.append(np.asarray(ids_l, dtype=np.int64))
        w_parts.append(np.asarray(w_l, dtype=np.float32))
    if not id_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(id_parts), np.concatenate(w_parts)


def segment_postings(reader: Any, fieldname: str, btext: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Local docnums and weights (term frequency x field boost) of a term in one segment."""
    try:
        terms = getattr(reader, "_terms", None)
        if terms is not None and fieldname in reader.schema:
            # the raw matcher: ``reader.postings`` wraps it in a FilterMatcher for
            # deletions, which has already stepped over leading deleted documents
            if not isinstance(btext, bytes):
                btext = reader.schema[fieldname].to_bytes(btext)
            m = terms.matcher(fieldname, btext, reader.schema[fieldname].format)
        else:
            m = reader.postings(fieldname, btext)
    except (TermNotFound, KeyError):
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    return leaf_postings(m)


def _length_codes(reader: Any, fieldname: str, n: int) -> np.ndarray:
    """The per-document length bytes of a field (Whoosh stores lengths quantized to a byte)."""
    out = np.zeros(n, dtype=np.uint8)
    try:
        from whoosh.codec.whoosh3 import LENGTHS_COLUMN

        col = reader._perdoc._cached_reader(f"_{fieldname}_len", LENGTHS_COLUMN)
    except AttributeError:
        col = None
    if col is None:
        return out
    raw = length_bytes(col)  # one byte per document, stored contiguously
    if raw is None:
        out[:] = np.fromiter((col[i] for i in range(n)), dtype=np.uint8, count=n)
    else:
        count = min(len(raw), n)
        out[:count] = np.frombuffer(raw, dtype=np.uint8, count=count)
    return out


def segment_term_ids(reader: Any, fieldname: str, btext: bytes) -> list[int]:
    """Local docnums holding a term in one segment, deleted docs included."""
    return segment_postings(reader, fieldname, btext)[0].tolist()


def _date_int(text: str) -> int:
    digits = text[:10].replace("-", "")
    if len(digits) == 8 and digits.isdigit():
        return int(digits)
    return 0


class KeyRegistry:
    """Folded key <-> integer id for one field, shared by all segments; only grows.

    A new process may start it from a segment list's merged key table (``adopt``,
    ``search.keytable``): the keys (sorted) are decoded on first use, and the dict of
    ids, which only lookups of a given value need, when first asked for.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] | None = {}
        self._keys: list[str] = []
        self._pending: Any = None  # () -> the keys of an adopted table, not decoded yet
        self.lock = threading.RLock()
        # alphabetical order of the first ``len(_order)`` keys, extended as keys come:
        # every view of the store (a new one after each commit) ranks from it
        self._sorted: list[str] = []
        self._order: list[int] = []
        self._rank_lock = threading.Lock()
        self.derived: dict = {}  # other tables kept across views (search.interpret)

    def empty(self) -> bool:
        """No key registered and no table adopted."""
        return self._pending is None and not self._keys

    def adopt(self, load_keys: Any) -> None:
        """Start from a key table: ``load_keys()`` gives the keys, sorted, ids 0..n-1.

        Only while empty; the segments' key ids then come from the same table.
        """
        with self.lock:
            if not self.empty():
                raise RuntimeError("a key table can only start an empty registry")
            self._pending = load_keys

    def _materialise(self) -> None:
        with self.lock:
            load, self._pending = self._pending, None
            if load is not None:
                keys = load()
                self._keys, self._ids = keys, None
                with self._rank_lock:  # sorted already: ranks are the ids
                    self._sorted, self._order = list(keys), list(range(len(keys)))

    @property
    def keys(self) -> list[str]:
        """Key id -> folded key (the list grows; read it under ``lock`` for a stable copy)."""
        if self._pending is not None:
            self._materialise()
        return self._keys

    @property
    def ids(self) -> dict[str, int]:
        """Folded key -> key id."""
        got = self._ids
        if got is None or self._pending is not None:
            with self.lock:
                keys = self.keys
                if self._ids is None:
                    self._ids = dict(zip(keys, range(len(keys)), strict=True))
                got = self._ids
        return got

    def rank(self, n: int) -> np.ndarray:
        """Alphabetical rank (0..n-1) of each of the first ``n`` key ids.

        Kept sorted as keys are added (a commit adds a few), so a new view does not
        sort every key again (an ``argsort`` of 16,735 article ids: ~15 ms).
        """
        self.keys  # noqa: B018 - an adopted table's keys first (they come with their order)
        with self._rank_lock:
            done = len(self._order)
            if done < n:
                keys = self.keys[done:n]
                if done == 0 or len(keys) > 64:
                    self._order = sorted(range(n), key=self.keys.__getitem__)
                    self._sorted = [self.keys[g] for g in self._order]
                else:
                    for gid, key in enumerate(keys, start=done):
                        at = bisect.bisect_right(self._sorted, key)
                        self._sorted.insert(at, key)
                        self._order.insert(at, gid)
            order = np.fromiter(self._order, dtype=np.int64, count=len(self._order))
        if len(order) > n:  # later keys than this view knows: leave them out, keep it dense
            order = order[order < n]
        r = np.empty(n, dtype=np.int64)
        r[order] = np.arange(n)
        return r

    def id_for(self, key: str) -> int:
        with self.lock:
            ids, known = self.ids, self._keys
            gid = ids.get(key)
            if gid is None:
                gid = ids[key] = len(known)
                known.append(key)
            return gid

    def ids_for(self, keys: list[str]) -> np.ndarray:
        """The ids of many distinct keys at once (registering new ones), as an int32 array."""
        with self.lock:
            ids, known = self.ids, self._keys
            new = [k for k in keys if k not in ids]
            ids.update(zip(new, range(len(known), len(known) + len(new)), strict=True))
            known.extend(new)
            return np.fromiter(map(ids.__getitem__, keys), dtype=np.int32, count=len(keys))


def _json_array(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def compute_segment(reader: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Read one segment's postings into doc-values arrays (the content of its ``.dv`` file).

    Per value field: ``<f>.docs``/``<f>.keys`` are (local docnum, local key index)
    pairs sorted by document, one per distinct folded key a document holds;
    ``<f>.strings`` holds the folded keys and the raw terms (written forms), with
    ``<f>.term_key`` (each term's key index) and ``<f>.term_count`` (documents
    per term, deleted ones included) for display names.
    """
    n = reader.doc_count_all()
    doctype = np.full(n, -1, dtype=np.int8)
    for name, code in DOCTYPES.items():
        ids = segment_postings(reader, "doctype", name.encode("utf-8"))[0]
        if len(ids):
            doctype[ids] = code
    date = np.zeros(n, dtype=np.int32)
    for btext in reader.lexicon("date"):
        value = _date_int(btext.decode("utf-8"))
        if value:
            date[segment_postings(reader, "date", btext)[0]] = value
    arrays: dict[str, np.ndarray] = {"doctype": doctype, "date": date}
    totals: dict[str, int] = {}
    for fname in SCORED_FIELDS:
        arrays[f"len.{fname}"] = _length_codes(reader, fname, n)
        totals[fname] = int(reader.field_length(fname))
    for fname in VALUE_FIELDS:
        keys: dict[str, int] = {}
        terms: list[str] = []
        term_key: list[int] = []
        term_count: list[int] = []
        doc_parts: list[np.ndarray] = []
        key_parts: list[np.ndarray] = []
        for btext in reader.lexicon(fname):
            term = btext.decode("utf-8")
            key = term if fname == "article_id" else fold(term)
            k = keys.setdefault(key, len(keys))
            ids = segment_postings(reader, fname, btext)[0]
            terms.append(term)
            term_key.append(k)
            term_count.append(len(ids))
            doc_parts.append(ids)
            key_parts.append(np.full(len(ids), k, dtype=np.int64))
        nkeys = len(keys)
        if doc_parts and nkeys:
            pairs = npsets.unique(np.concatenate(doc_parts) * nkeys + np.concatenate(key_parts))
            docs, lkeys = (pairs // nkeys).astype(np.int32), (pairs % nkeys).astype(np.int32)
        else:
            docs = lkeys = np.zeros(0, dtype=np.int32)
        key_list = list(keys)
        arrays[f"{fname}.docs"] = docs
        arrays[f"{fname}.keys"] = lkeys
        arrays[f"{fname}.term_key"] = np.asarray(term_key, dtype=np.int32)
        arrays[f"{fname}.term_count"] = np.asarray(term_count, dtype=np.int64)
        arrays[f"{fname}.strings"] = _json_array(
            {"keys": key_list, "terms": None if terms == key_list else terms}
        )
    return arrays, {"field_totals": totals}


class _Computed:
    """Doc values computed in memory, with the interface of ``dvstore.SegmentFile``."""

    def __init__(self, ndocs: int, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        self.ndocs = ndocs
        self.arrays = arrays
        self.meta = meta

    def array(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def json(self, name: str) -> Any:
        return json.loads(self.arrays[name].tobytes().decode("utf-8"))


def write_segment_file(
    storage: Any, schema: Any, segment: Any, postings: pstore.Capture | None = None
) -> None:
    """Compute a just-written segment's doc values and save them next to it, with its
    decoded postings (``search.pstore``: from ``postings``, recorded while the writer wrote
    them, else read back from the segment).

    Called by a writer before its new table of contents names the segment
    (``persist_on_commit``), so every committed segment has its files; the
    segment's own files are complete on disk by then.
    """
    from whoosh.reading import SegmentReader

    reader = SegmentReader(storage, schema, segment)
    try:
        arrays, meta = compute_segment(reader)
        if postings is not None and postings.done:
            postings.write(storage.folder, segment.segment_id(), segment.doc_count_all())
        else:
            pstore.write_segment(storage.folder, reader)
    finally:
        reader.close()
    dvstore.write(storage.folder, segment.segment_id(), segment.doc_count_all(), arrays, meta)


def write_key_table(
    folder: str | os.PathLike, segments: list[Any], before: list[Any] | None = None
) -> None:
    """Write the merged key table of a commit's segments (``search.keytable``) from their
    ``.dv`` files, unless it is there already (a commit that only deleted documents);
    from the table of the ``before`` segments where there is one (only the new segments'
    keys are read then).

    Called before the TOC, so the commit's manifest lists it. A segment without a valid
    ``.dv`` file leaves the table to the first search that needs it.
    """
    from newsquarry.search.engine import keytable

    segs = [(s.segment_id(), s.doc_count_all()) for s in segments]
    if not segs or os.path.exists(os.path.join(folder, keytable.file_name(segs))):
        return
    sources = [dvstore.read(folder, segid, ndocs) for segid, ndocs in segs]
    if any(src is None for src in sources):
        return
    previous = None
    if before:
        old = [(s.segment_id(), s.doc_count_all()) for s in before]
        table = keytable.read(folder, old, VALUE_FIELDS)
        previous = (old, table) if table is not None else None
    keytable.write(folder, segs, VALUE_FIELDS, sources, previous)


def persist_on_commit(writer: Any) -> Any:
    """Make a Whoosh ``SegmentWriter`` save the doc values and decoded postings of the
    segments its commit adds.

    The new segment and any segment a merge produces get their ``.dv`` and ``.pst``
    files before the table of contents that names them is written: a crash before the
    TOC leaves orphan files that Whoosh's cleanup removes with the segment's.
    """
    earlier = list(writer.segments)
    before = {s.segment_id() for s in earlier}
    original = writer._commit_toc
    captured = pstore.capture(writer)  # what it writes into its one new segment
    own = getattr(getattr(writer, "newsegment", None), "segment_id", lambda: None)()

    def commit_toc(segments: list[Any]) -> None:
        for seg in segments:
            if seg.segment_id() not in before:
                mine = captured if seg.segment_id() == own else None
                write_segment_file(writer.storage, writer.schema, seg, mine)
        write_key_table(writer.storage.folder, segments, earlier)
        original(segments)

    writer._commit_toc = commit_toc
    return writer


class FieldColumns:
    """One value field of one segment, with key ids resolved against the index's registry.

    ``terms`` (the raw indexed terms, written forms: only display names need them) may
    come as a function that decodes them on first use.
    """

    def __init__(
        self,
        docs: np.ndarray,  # local docnums
        gids: np.ndarray,  # key ids, parallel to docs
        terms: list[str] | Any,  # raw indexed terms, or () -> them
        term_gid: np.ndarray,  # key id of each term
        term_count: np.ndarray,  # documents per term
    ) -> None:
        self.docs = docs
        self.gids = gids
        self.term_gid = term_gid
        self.term_count = term_count
        self._terms = terms if isinstance(terms, list) else None
        self._load_terms = None if isinstance(terms, list) else terms
        self._by_gid: dict[int, list[int]] | None = None

    @property
    def terms(self) -> list[str]:
        got = self._terms
        if got is None:
            got = self._terms = self._load_terms()
        return got

    def by_gid(self) -> dict[int, list[int]]:
        """Key id -> indexes of its terms (built on first use)."""
        got = self._by_gid
        if got is None:
            got = {}
            for i, gid in enumerate(self.term_gid.tolist()):
                got.setdefault(gid, []).append(i)
            self._by_gid = got
        return got


class SegmentColumns:
    """The doc values of one segment (immutable): mapped from its file, or computed.

    A field's key ids are resolved against the registry only when a query first
    touches that field, so a search that uses two facets decodes two fields.
    """

    def __init__(
        self,
        segid: str,
        src: Any,
        registries: dict[str, KeyRegistry],
        postings: pstore.PostingsFile | None = None,
    ) -> None:
        self.segid = segid
        self.src = src
        self.postings = postings  # decoded postings on disk (search.pstore), if any
        self.ndocs: int = src.ndocs
        self.registries = registries
        self.field_totals: dict[str, int] = src.meta["field_totals"]
        self._fields: dict[str, FieldColumns] = {}
        self._lock = threading.Lock()
        # field -> local key index -> key id, from a merged key table (search.keytable)
        # adopted by the registries; other fields register their keys one by one
        self.table_ids: dict[str, np.ndarray] = {}
        # arrays derived from this segment alone, kept across views (a new view computes
        # them for its new segments only): key -> (what they were derived from, value)
        self.derived: dict[tuple, tuple[Any, Any]] = {}

    def derive(self, key: tuple, source: tuple, make: Any) -> Any:
        """``make()``, computed once per ``source`` and kept with the segment.

        ``source`` names what the value was derived from: arrays (compared by identity:
        a field's key ids are a new array when the alias table maps them anew) and plain
        values (compared by equality: the segment's deletion count)."""
        got = self.derived.get(key)
        if got is not None and _same(got[0], source):
            return got[1]
        value = make()
        self.derived[key] = (source, value)
        return value

    @property
    def doctype(self) -> np.ndarray:
        return self.src.array("doctype")

    @property
    def date(self) -> np.ndarray:
        return self.src.array("date")

    def length_codes(self, fname: str) -> np.ndarray:
        return self.src.array(f"len.{fname}")

    def field(self, fname: str) -> FieldColumns:
        got = self._fields.get(fname)
        if got is not None:
            return got
        with self._lock:
            got = self._fields.get(fname)
            if got is None:
                lkeys = self.src.array(f"{fname}.keys")
                term_key = self.src.array(f"{fname}.term_key")
                l2g = self.table_ids.get(fname)
                if l2g is None:
                    strings = self.src.json(f"{fname}.strings")
                    keys = strings["keys"]
                    l2g = self.registries[fname].ids_for(keys)
                    terms: Any = strings["terms"] if strings["terms"] is not None else keys
                else:  # ids from the merged key table: the written forms only if shown

                    def terms() -> list[str]:
                        strings = self.src.json(f"{fname}.strings")
                        return strings["terms"] if strings["terms"] is not None else strings["keys"]

                got = FieldColumns(
                    docs=self.src.array(f"{fname}.docs"),
                    gids=l2g[lkeys] if len(lkeys) else np.zeros(0, np.int32),
                    terms=terms,
                    term_gid=l2g[term_key] if len(term_key) else np.zeros(0, np.int32),
                    term_count=self.src.array(f"{fname}.term_count"),
                )
                self._fields[fname] = got
        return got


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        x is y or (not isinstance(x, np.ndarray) and not isinstance(y, np.ndarray) and x == y)
        for x, y in zip(a, b, strict=True)
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


class View:
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
        self.doctype = np.concatenate([c.doctype for c in cols]) if cols else np.zeros(0, np.int8)
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
        self._doctype_masks: dict[str, np.ndarray] = {}
        self._ranks: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._present: dict[str, dict[int, list[str]]] = {}
        self._stats: dict[tuple, Any] = {}
        self._article_of: np.ndarray | None = None
        self._tiebreak: np.ndarray | None = None
        self._displays: dict[tuple[str, int], str] = {}
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
            code = DOCTYPES[doctype]
            for i, c in enumerate(self.cols):

                def make(c: SegmentColumns = c, i: int = i) -> tuple[float, int]:
                    m = (c.doctype == code) & self._live_of(i)
                    # float64 sum of small integers: exact, so independent of document order
                    lens = _LENGTHS[c.length_codes(fieldname)[m]].astype(np.float64)
                    return float(lens.sum()), int(np.count_nonzero(m))

                # per segment and deletion count (deletions only grow)
                seg_total, seg_n = c.derive(
                    ("avg_length", fieldname, doctype), (self._dels[i],), make
                )
                total += seg_total
                n += seg_n
            got = total / n if n else 1.0
            self._stats[key] = got
        return float(got)

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
        """Per document, the key id of its article (-1 if none)."""
        with self._lock:
            got = self._article_of
            if got is None:
                got = np.full(self.size, -1, dtype=np.int64)
                got[self.docs["article_id"]] = self.gids["article_id"]
                self._article_of = got
        return got

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

    def _make_field(self, fname: str) -> tuple[np.ndarray, np.ndarray, int, list[str]]:
        """(global docnums, key ids, key count, keys) of a field over this view's segments."""
        if self.resolver is not None and fname in ALIAS_FIELDS:
            from newsquarry.search.archive.aliases import remap

            # each segment is mapped once per alias table (kept across views: a commit
            # maps only its new segment)
            def raw(c: SegmentColumns) -> Any:
                return lambda f: (c.field(f).docs, c.field(f).gids)

            parts, nkeys, keys, self.canon[fname] = remap(
                fname, [(c.segid, raw(c)) for c in self.cols], self.registries, self.resolver
            )
            self._parts[fname] = parts
            pairs = zip(parts, self.offsets, strict=True)
            docs = (
                np.concatenate([d.astype(np.int64) + o for (d, _), o in pairs])
                if parts
                else np.zeros(0, np.int64)
            )
            gids = np.concatenate([g for _, g in parts]) if parts else np.zeros(0, np.int32)
            return docs, gids, nkeys, keys
        docs, gids = self._raw_field(fname)
        reg = self.registries[fname]
        with reg.lock:  # every key id of these segments is registered by now
            nkeys = len(reg.keys)
            keys = reg.keys[:nkeys]
        return docs, gids, nkeys, keys

    def _raw_field(self, fname: str) -> tuple[np.ndarray, np.ndarray]:
        """(global docnums, key ids) of a field as indexed (no alias applied)."""
        parts = [c.field(fname) for c in self.cols]
        self._parts[fname] = [(p.docs, p.gids) for p in parts]
        docs = (
            np.concatenate(
                [p.docs.astype(np.int64) + off for p, off in zip(parts, self.offsets, strict=True)]
            )
            if parts
            else np.zeros(0, np.int64)
        )
        gids = np.concatenate([p.gids for p in parts]) if parts else np.zeros(0, np.int32)
        return docs, gids

    @property
    def date(self) -> np.ndarray:
        """Per document, its date as a YYYYMMDD int (0: none)."""
        d = self._date
        if d is None:
            d = np.concatenate([c.date for c in self.cols]) if self.cols else np.zeros(0, np.int32)
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

    def key_mask(self, fieldname: str, gids: list[int]) -> np.ndarray:
        """Documents holding any of the given key ids in a field.

        Reads only those keys' documents (``key_docs``), not the whole field: a
        search builds a mask per filter and per offered interpretation, and a scan
        of the field (``numpy.isin``) cost 2 ms each at 70k passages.
        """
        m = self.empty()
        canon = self.canon.get(fieldname)
        if gids and canon is not None:
            gids = sorted({int(canon[g]) if g < len(canon) else g for g in gids} - {-1})
        if gids:
            keys, docs = self.key_docs(fieldname)
            # (segment, key) pairs: each segment's part is sorted by key, and the parts
            # follow each other in segment order, so one search finds every range
            want = np.asarray(gids, dtype=np.int64)
            segs = np.arange(len(self.cols), dtype=np.int64) << 32
            q = (segs[:, None] + want[None, :]).ravel()
            lo = np.searchsorted(keys, q, "left")
            n = np.searchsorted(keys, q, "right") - lo
            total = int(n.sum())
            if total:
                lo, n = lo[n > 0], n[n > 0]
                idx = np.repeat(lo - (np.cumsum(n) - n), n) + np.arange(total)
                m[docs[idx]] = True
        return m

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
                    order = np.argsort(gids, kind="stable")
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
        """Documents whose date (YYYYMMDD int) lies in [lo, hi]; dateless docs never match."""
        m = self.date > 0
        if lo is not None:
            m &= self.date >= lo
        if hi is not None:
            m &= self.date <= hi
        return m

    def count(self, fieldname: str, mask: np.ndarray) -> np.ndarray:
        """Per key id, the number of documents of ``mask`` holding it."""
        docs = self.docs[fieldname]
        if not len(docs):
            return np.zeros(self.nkeys[fieldname], dtype=np.int64)
        sel = mask[docs]
        return np.bincount(self.gids[fieldname][sel], minlength=self.nkeys[fieldname])

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
        self.nkeys[fieldname]  # resolves the field's key ids
        gid = self.registries[fieldname].ids.get(key)
        if gid is None or gid >= self.nkeys[fieldname]:
            return None
        canon = self.canon.get(fieldname)  # an alias is counted under its canonical key
        if canon is None or gid >= len(canon):
            return gid
        return int(canon[gid]) if canon[gid] >= 0 else None

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
        if fieldname in self.canon:  # a canonical name is shown as the alias table says
            got = self.resolver.display.get(self.keys[fieldname][gid])
            if got is not None:
                self._displays[(fieldname, gid)] = got
                return got
        total: Counter = Counter()
        for c in self.cols:
            fc = c.field(fieldname)
            for i in np.flatnonzero(fc.term_gid == gid).tolist():
                total[fc.terms[i]] += int(fc.term_count[i])
        if not total:
            got = self.keys[fieldname][gid]
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
            arrays, meta = compute_segment(reader)
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
        from newsquarry.search.engine import keytable

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
        for f in VALUE_FIELDS:
            self.registries[f].adopt(lambda f=f: table.keys(f))
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
            if getattr(store, "alias_resolver", None) is not None:
                # through a weak reference: the cache is the value of a weak-keyed
                # dictionary, and a strong one would keep the store (and its
                # background threads) alive forever
                ref = weakref.ref(store)
                c.aliases = lambda: s.alias_resolver() if (s := ref()) is not None else None
        return c


# -- query -> mask -------------------------------------------------------------


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


def leaves_of(searcher: Any) -> list[tuple[Any, int]]:
    """(segment reader, docnum offset) of a searcher, in docnum order."""
    return [
        (r, off)
        for r, off in searcher.ixreader.leaf_readers()
        if getattr(r, "segment", lambda: None)() is not None
    ]


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

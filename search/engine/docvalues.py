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
from typing import Any

import numpy as np
from whoosh.codec.whoosh3 import LENGTHS_COLUMN
from whoosh.reading import SegmentReader
from whoosh.util.numeric import byte_to_length

from newsquarry.search.core import npsets
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine import dvstore, keytable, pstore
from newsquarry.search.engine.blocks import segment_postings
from newsquarry.search.engine.whoosh_fixes import length_bytes

VALUE_FIELDS = ("person", "org", "place", "speaker", "source", "quote_kind", "article_id")
ALIAS_FIELDS = ("person", "org", "place", "speaker")  # name fields the alias table maps
SCORED_FIELDS = ("text", "title", "quote")
_LENGTHS = np.array([byte_to_length(b) for b in range(256)], dtype=np.float32)
DOCTYPES = {"article": 0, "passage": 1, "quote": 2}


# -- building blocks ---------------------------------------------------------


def _length_codes(reader: Any, fieldname: str, n: int) -> np.ndarray:
    """The per-document length bytes of a field (Whoosh stores lengths quantized to a byte)."""
    out = np.zeros(n, dtype=np.uint8)
    try:
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
        self._pending_count: Any = None  # () -> how many keys that table holds
        self._pending_key: Any = None  # () -> (table id -> its key, or None), not decoding
        self._key_reader: Any = None  # what ``_pending_key`` gave, once asked
        self._single = 0  # keys read one by one from the adopted table (``key``)
        self.lock = threading.RLock()
        # alphabetical order of the first ``len(_order)`` keys, extended as keys come:
        # every view of the store (a new one after each commit) ranks from it
        self._sorted: list[str] = []
        self._order: list[int] = []
        self._rank_lock = threading.Lock()
        self.derived: dict = {}  # other tables kept across views (search.interpret)
        # the key table adopted (``keytable.table_id``), if any: while it is, the ids of its
        # keys are its own (the registry only grows), so files saved in them stay valid
        self.table: str | None = None

    def empty(self) -> bool:
        """No key registered and no table adopted."""
        return self._pending is None and not self._keys

    def adopt(
        self, load_keys: Any, table: str | None = None, count: Any = None, key: Any = None
    ) -> None:
        """Start from a key table: ``load_keys()`` gives the keys, sorted, ids 0..n-1.

        Only while empty; the segments' key ids then come from the same table (named
        ``table``: ``self.table``). ``count()``, if given, says how many keys it holds
        without decoding them (``size``): a search that counts or ranks a field's
        documents by article (``article_id``) needs the number of keys, not the keys.
        ``key()``, if given, returns a function reading one key by id without decoding
        the others (or None: ``key`` then decodes them): a page of hits shows ten article
        ids of 16,735.
        """
        with self.lock:
            if not self.empty():
                raise RuntimeError("a key table can only start an empty registry")
            self._pending = load_keys
            self._pending_count = count
            self._pending_key = key
            self.table = table

    SINGLE_KEYS = 64  # keys read one by one before all are decoded (``key``)

    def key(self, gid: int) -> str:
        """The key of an id (``keys[gid]``); of an adopted table not decoded yet, read alone
        while only a few are asked for."""
        with self.lock:
            if self._pending is not None and self._pending_key is not None:
                if self._single < self.SINGLE_KEYS and 0 <= gid < self.size():
                    if self._key_reader is None:
                        self._key_reader = self._pending_key() or False
                    if self._key_reader:
                        self._single += 1
                        return self._key_reader(gid)
            return self.keys[gid]

    def _materialise(self) -> None:
        with self.lock:
            load, self._pending = self._pending, None
            count, self._pending_count = self._pending_count, None
            self._pending_key = self._key_reader = None
            if load is not None:
                keys = load()
                if count is not None and count() != len(keys):
                    raise ValueError(
                        f"a key table holds {len(keys)} keys, its segments' ids {count()}"
                    )
                self._keys, self._ids = keys, None
                with self._rank_lock:  # sorted already: ranks are the ids
                    self._sorted, self._order = list(keys), list(range(len(keys)))

    def size(self) -> int:
        """How many keys are registered (an adopted table's counted without decoding its
        keys, when it said how: ``adopt``)."""
        with self.lock:
            if self._pending is not None and self._pending_count is not None:
                return int(self._pending_count())
            return len(self.keys)

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
        with self.lock:
            if self._pending is not None and self._pending_count is not None:
                if n <= self._pending_count():  # an adopted table's keys, sorted: ranks are ids
                    return np.arange(n, dtype=np.int64)
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


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(
        x is y or (not isinstance(x, np.ndarray) and not isinstance(y, np.ndarray) and x == y)
        for x, y in zip(a, b, strict=True)
    )


def _mapped(l2g: np.ndarray, local: np.ndarray) -> np.ndarray:
    """``l2g[local]``: local key indexes as key ids. When the map is the identity (a
    one-segment index's key table holds that segment's keys in its order: Reuters'
    16,735 article ids), the local indexes are the ids, with no gather of every pair."""
    n = len(l2g)
    if (
        n
        and local.dtype == l2g.dtype
        and int(l2g[-1]) == n - 1
        and np.array_equal(l2g, np.arange(n, dtype=l2g.dtype))
        and int(local.min()) >= 0
        and int(local.max()) < n
    ):
        return local
    return l2g[local]


class FieldColumns:
    """One value field of one segment, with key ids resolved against the index's registry.

    ``terms`` (the raw indexed terms, written forms: only display names need them) may
    come as a function that decodes them on first use, and so may ``gids`` (one key id
    per pair: a hit's source shown in its display form reads the field's terms, not its
    87,000 pairs on Reuters).
    """

    def __init__(
        self,
        docs: np.ndarray,  # local docnums
        gids: np.ndarray | Any,  # key ids, parallel to docs, or () -> them
        terms: list[str] | Any,  # raw indexed terms, or () -> them
        term_gid: np.ndarray,  # key id of each term
        term_count: np.ndarray,  # documents per term
    ) -> None:
        self.docs = docs
        self._gids = gids if isinstance(gids, np.ndarray) else None
        self._make_gids = None if isinstance(gids, np.ndarray) else gids
        self._gids_lock = threading.Lock()
        self.term_gid = term_gid
        self.term_count = term_count
        self._terms = terms if isinstance(terms, list) else None
        self._load_terms = None if isinstance(terms, list) else terms
        self._by_gid: dict[int, list[int]] | None = None

    @property
    def gids(self) -> np.ndarray:
        got = self._gids
        if got is None:
            with self._gids_lock:  # one array: views tell arrays apart by identity
                got = self._gids
                if got is None:
                    got = self._gids = self._make_gids()
        return got

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
                    gids=(lambda l2g=l2g, lkeys=lkeys: _mapped(l2g, lkeys))
                    if len(lkeys)
                    else np.zeros(0, np.int32),
                    terms=terms,
                    term_gid=l2g[term_key] if len(term_key) else np.zeros(0, np.int32),
                    term_count=self.src.array(f"{fname}.term_count"),
                )
                self._fields[fname] = got
        return got

"""Decoded postings on disk: one file per segment, sliced from a memory mapping at query time.

Why: Whoosh keeps each posting list as pickled, zlib-compressed blocks; decoding
them was two thirds of an uncached natural-language search (docs/benchmarks.md).
This file holds the same lists already decoded, so a term's postings in a
segment are a slice of a mapped array: no unpickling, no inflating, no copy.

Name: ``<segment id>.pst`` beside the segment's files and its ``.dv`` file
(``dvstore``'s container format: magic, JSON header, 64-byte aligned arrays, one
atomic rename). Like ``.dv`` it is derived data: written when a segment is
written or merged, checked against the commit's manifest (CRC-32) before first
use, and when missing, truncated or garbled it is ignored and rebuilt from the
segment's postings, byte for byte the same. So it is written without fsync: a
crash can cost a rebuild, never a wrong answer, and a commit holding the write
lock does not wait for the disk twice more.

Content, for the fields scoring and filtering read (``FIELDS``; a query on any
other field reads Whoosh's postings):

- ``hash`` (uint64, sorted): a 64-bit BLAKE2b hash of ``field NUL term bytes`` per
  term; a lookup is one ``numpy.searchsorted``, and the term's own bytes
  (``keys`` sliced by ``key_off``) are compared, so a hash collision can cost a
  step, never a wrong list;
- ``post_off`` (uint64, one more than terms): where each term's postings start;
- ``docs``: local docnums in increasing order, uint16 when the segment has at
  most 65,536 documents, else uint32 (deleted documents included: deletions are
  the view's live mask, as for Whoosh's own lists);
- ``weights``: term frequency times field boost, as Whoosh's matchers give it
  (float32, as the search code has always used them). Stored as uint8 (or uint16)
  codes with ``scale`` (float32, per term: its field's boost) when ``code x scale``
  gives back every weight of the file exactly (checked when written), else as
  float32 with a scale of 1.
"""

from __future__ import annotations

import os
from array import array
from hashlib import blake2b  # (already imported by Whoosh: no start-up cost)
from typing import Any

import numpy as np

from newsquarry.search.engine import dvstore
from newsquarry.search.engine.blocks import segment_postings

EXT = ".pst"
FORMAT = 1
# the scored text fields and the fields filters and facets look up by term
FIELDS = (
    "text",
    "title",
    "quote",
    "doctype",
    "date",
    "article_id",
    "person",
    "org",
    "place",
    "speaker",
    "source",
    "quote_kind",
)
_EMPTY_IDS = np.zeros(0, np.int64)
_EMPTY_W = np.zeros(0, np.float32)


def file_name(segment_id: str) -> str:
    """The postings file of a segment (``segment_id`` as Whoosh's ``segment_id()``)."""
    return dvstore.file_name(segment_id, EXT)


def term_key(fieldname: str, btext: bytes) -> bytes:
    return fieldname.encode("utf-8") + b"\0" + btext


def term_hash(key: bytes) -> int:
    """The 64-bit hash a term is found by (stable across processes and machines)."""
    return int.from_bytes(blake2b(key, digest_size=8).digest(), "little")


def _narrowest(weights: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Weights as codes times ``scale`` (per posting): uint8 or uint16 codes where that gives
    back every weight exactly, else the weights themselves as float32 (``scale`` then 1)."""
    codes = weights / scale if weights.size else weights
    if weights.size and np.all(codes == np.round(codes)) and codes.min() >= 0:
        for dt in (np.uint8, np.uint16):
            if codes.max() <= np.iinfo(dt).max:
                narrow = codes.astype(dt)
                if np.array_equal(narrow.astype(np.float32) * scale, weights):
                    return narrow
    scale[:] = 1.0
    return weights.astype(np.float32)


def _boost(field: Any) -> float:
    return float(getattr(getattr(field, "format", None), "field_boost", 1.0) or 1.0)


def _arrays(
    schema: Any, ndocs: int, keys: list[bytes], starts: np.ndarray, docs: Any, weights: Any
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The file's arrays from terms (``keys``, in any order), where each term's postings
    start in the flat ``docs``/``weights`` (``starts``, one more than terms). The result
    depends only on the postings, so a rebuilt file is byte for byte the one first written."""
    n = len(keys)
    canon = sorted(range(n), key=keys.__getitem__)  # a fixed order for equal hashes
    hashes = np.fromiter((term_hash(keys[i]) for i in canon), dtype=np.uint64, count=n)
    by_hash = np.argsort(hashes, kind="stable")
    order = np.asarray(canon, dtype=np.int64)[by_hash]
    starts = np.asarray(starts, dtype=np.int64)
    lengths = (starts[1:] - starts[:-1])[order]
    post_off = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(lengths, out=post_off[1:])
    total = int(post_off[-1])
    # where each posting of the new order comes from in the flat input
    gather = np.repeat(starts[:-1][order] - post_off[:-1].astype(np.int64), lengths)
    gather += np.arange(total, dtype=np.int64)
    doc_type = np.uint16 if ndocs <= 1 << 16 else np.uint32
    docs = np.asarray(docs, dtype=np.int64)[gather].astype(doc_type)
    weights = np.asarray(weights, dtype=np.float32)[gather]
    klen = np.fromiter((len(keys[i]) for i in order), dtype=np.uint64, count=n)
    key_off = np.zeros(n + 1, dtype=np.uint64)
    np.cumsum(klen, out=key_off[1:])
    key_bytes = np.frombuffer(b"".join(keys[i] for i in order), dtype=np.uint8)
    boosts = {f: _boost(schema[f]) for f in FIELDS if f in schema}
    boost = np.fromiter(
        (boosts[keys[i].split(b"\0", 1)[0].decode()] for i in order), dtype=np.float32, count=n
    )
    codes = _narrowest(weights, np.repeat(boost, lengths))
    if codes.dtype == np.float32:
        boost[:] = 1.0
    arrays = {
        "hash": hashes[by_hash],
        "post_off": post_off,
        "key_off": key_off,
        "keys": key_bytes,
        "docs": docs,
        "weights": codes,
        "scale": boost,
    }
    return arrays, {"format": FORMAT, "fields": sorted(boosts)}


def compute(reader: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A segment's decoded postings (arrays and meta data of its ``.pst`` file), read from
    Whoosh's postings: for segments written without the file (old indexes, damage)."""
    keys: list[bytes] = []
    id_parts: list[np.ndarray] = []
    w_parts: list[np.ndarray] = []
    starts = [0]
    for fname in FIELDS:
        if fname not in reader.schema:
            continue
        for btext in reader.lexicon(fname):
            ids, w = segment_postings(reader, fname, btext)
            keys.append(term_key(fname, btext))
            id_parts.append(ids)
            w_parts.append(w)
            starts.append(starts[-1] + len(ids))
    docs = np.concatenate(id_parts) if id_parts else np.zeros(0, np.int64)
    weights = np.concatenate(w_parts) if w_parts else np.zeros(0, np.float32)
    return _arrays(reader.schema, reader.doc_count_all(), keys, np.asarray(starts), docs, weights)


def write_segment(folder: str | os.PathLike, reader: Any) -> None:
    """Compute a segment's decoded postings from Whoosh's and save them next to it."""
    arrays, meta = compute(reader)
    seg = reader.segment()
    dvstore.write(
        folder, seg.segment_id(), reader.doc_count_all(), arrays, meta, ext=EXT, durable=False
    )


class Capture:
    """The postings a Whoosh ``SegmentWriter`` writes into its new segment, recorded as they
    pass (``capture``), so the segment's file is written without decoding anything back."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.keys: list[bytes] = []
        self.starts: list[int] = []
        # compact C arrays (4 bytes a posting each), not lists of Python objects;
        # 'f' rounds a weight to float32 as Whoosh's own blocks do
        self.docs = array("I")
        self.weights = array("f")
        self.done = False

    def _record(self, items: Any) -> Any:
        wanted = {f for f in FIELDS if f in self.schema}
        keys, starts, docs, weights = self.keys, self.starts, self.docs, self.weights
        add_doc, add_weight = docs.append, weights.append
        last_fn, last_bt = None, None
        for item in items:
            fn, bt = item[0], item[1]
            if fn in wanted:
                if bt != last_bt or fn != last_fn:
                    keys.append(term_key(fn, bt))
                    starts.append(len(docs))
                    last_fn, last_bt = fn, bt
                add_doc(item[2])
                add_weight(item[3])
            yield item
        self.done = True

    def write(self, folder: str | os.PathLike, segment_id: str, ndocs: int) -> None:
        """Save the recorded postings as the file of the segment they were written to."""
        docs = np.frombuffer(self.docs, dtype=f"u{self.docs.itemsize}") if self.docs else []
        weights = np.frombuffer(self.weights, dtype=np.float32) if self.weights else []
        starts = np.asarray([*self.starts, len(self.docs)])
        arrays, meta = _arrays(self.schema, ndocs, self.keys, starts, docs, weights)
        dvstore.write(folder, segment_id, ndocs, arrays, meta, ext=EXT, durable=False)


def capture(writer: Any) -> Capture | None:
    """Record the postings a Whoosh ``SegmentWriter`` flushes into its new segment (None if
    the writer is not one whose field writer can be followed)."""
    fw = getattr(writer, "fieldwriter", None)
    original = getattr(fw, "add_postings", None)
    if original is None:
        return None
    got = Capture(writer.schema)

    def add_postings(schema: Any, lengths: Any, items: Any) -> Any:
        return original(schema, lengths, got._record(items))

    fw.add_postings = add_postings
    return got


LIST_SIDE = 8  # ``sorted_positions``: a list under this many times the documents asked is
# searched from its side


class PostingsFile:
    """The decoded postings of one segment, mapped from its ``.pst`` file."""

    def __init__(self, src: Any) -> None:
        self.fields = frozenset(src.meta["fields"])
        self.hash = src.array("hash")
        self.post_off = src.array("post_off")
        self.key_off = src.array("key_off")
        self.keys = src.array("keys")
        self.docs = src.array("docs")
        self.weights = src.array("weights")
        self.scale = src.array("scale")
        self.terms = len(self.hash)
        self.postings = len(self.docs)
        self._src = src  # keeps the mapping open

    def covers(self, fieldname: str) -> bool:
        return fieldname in self.fields

    def _find(self, fieldname: str, btext: bytes) -> int:
        """The term's row, or -1."""
        key = term_key(fieldname, btext)
        h = np.uint64(term_hash(key))
        i = int(np.searchsorted(self.hash, h))
        while i < self.terms and self.hash[i] == h:
            a, b = int(self.key_off[i]), int(self.key_off[i + 1])
            if self.keys[a:b].tobytes() == key:
                return i
            i += 1
        return -1

    def get(self, fieldname: str, btext: bytes) -> tuple[np.ndarray, np.ndarray]:
        """Local docnums (int64) and weights (float32) of a term; empty if absent."""
        i = self._find(fieldname, btext)
        if i < 0:
            return _EMPTY_IDS, _EMPTY_W
        lo, hi = int(self.post_off[i]), int(self.post_off[i + 1])
        w = self.weights[lo:hi]
        if w.dtype != np.float32:
            w = w.astype(np.float32) * self.scale[i]
        return self.docs[lo:hi].astype(np.int64), w

    def at(self, fieldname: str, btext: bytes, docs: np.ndarray) -> np.ndarray:
        """The term's weights (float32, as ``get`` gives them; 0 where absent) at sorted
        local docnums ``docs``, found in the mapped list by binary searches: each of
        ``docs`` in the list, or, for a list under ``LIST_SIDE`` times as long as ``docs``,
        each of its postings among ``docs``. Nothing else is read."""
        out = np.zeros(len(docs), dtype=np.float32)
        i = self._find(fieldname, btext)
        if i < 0 or not len(docs):
            return out
        lo, hi = int(self.post_off[i]), int(self.post_off[i + 1])
        at, found = sorted_positions(self.docs[lo:hi], docs)
        w = self.weights[lo:hi][found]
        if w.dtype != np.float32:
            w = w.astype(np.float32) * self.scale[i]
        out[at] = w
        return out


def sorted_positions(ids: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the sorted lists ``ids`` (postings) and ``docs`` meet: the positions in
    ``docs`` and in ``ids`` of their common values, by binary searches from the shorter
    side when ``ids`` is under ``LIST_SIDE`` times as long as ``docs``, else of ``docs`` in
    ``ids``."""
    if len(ids) <= LIST_SIDE * len(docs):  # each posting among the documents
        pos = np.searchsorted(docs, ids)
        ok = pos < len(docs)
        ok[ok] = docs[pos[ok]] == ids[ok]
        return pos[ok], np.flatnonzero(ok)
    pos = np.searchsorted(ids, docs)
    ok = pos < len(ids)
    ok[ok] = ids[pos[ok]] == docs[ok]
    return np.flatnonzero(ok), pos[ok]


def read(folder: str | os.PathLike, segment_id: str, ndocs: int) -> PostingsFile | None:
    """A segment's decoded postings, or None if its file is missing or not valid for it."""
    src = dvstore.read(folder, segment_id, ndocs, ext=EXT)
    if src is None or src.meta.get("format") != FORMAT:
        return None
    try:
        got = PostingsFile(src)
    except (KeyError, TypeError, ValueError):
        return None
    n = got.terms
    if (
        len(got.post_off) != n + 1
        or len(got.key_off) != n + 1
        or (n and (int(got.post_off[-1]) != got.postings or int(got.key_off[-1]) != len(got.keys)))
        or len(got.weights) != got.postings
        or len(got.scale) != n
    ):
        return None
    return got

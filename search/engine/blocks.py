"""A segment's postings read as numpy arrays, block by block, without Whoosh's matchers
(the fastest way to a term's documents and weights; used by doc values, decoded postings,
quotation signatures and query evaluation)."""

from __future__ import annotations

from typing import Any

import numpy as np
from whoosh.matching.wrappers import FilterMatcher
from whoosh.reading import TermNotFound


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

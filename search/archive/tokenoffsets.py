"""Token offsets per segment, for highlights: where each word of a stored text is and
what it is indexed as, in a file beside each segment (an engine feature, ``engine.hooks``).

A highlight marks the words of a hit's text whose index form (the text analyzer's: lower
case, accents folded, Porter stems) is one of the query's terms. Found by running the
analyzer over every hit's stored text again, that was the largest share of a warm search
(issue 37). The analyzer's tokens of each text are the same at every search, so they are
kept: per segment, for each passage its ``text`` and for each quotation document its
``quote`` (the texts hits show), the tokens in order as (term id, start, end) character
offsets into the stored text, and the segment's vocabulary of index forms (sorted, so a
query term is found by binary search). A highlight is then a lookup of the query's terms
and a pass over one text's token ids (``query.highlight.indexed_spans``).

The file (``.tok``): ``vocab`` (the sorted index forms, UTF-8, end to end) and
``vocab_offs``; per document ``field`` (0: no tokens kept, 1: its ``text``, 2: its
``quote``) and ``ptr`` (its tokens are ``ptr[d]:ptr[d + 1]``); per token ``tid``, ``start``
and ``end`` (each in the smallest unsigned type that holds it). Written by the commit that
adds the segment (before its table of contents, so it is in the commit's checksum
manifest) and carried through merges (term ids mapped to the merged vocabulary, no text
read again). Derived data: a segment without a valid file (written before the feature,
the file lost or damaged) is highlighted by analysing the text as before, with the same
answer; a merge computes the file for a source without one, and ``backfill`` writes the
missing files of an index's segments.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

import numpy as np

from newsquarry.search.engine import dvstore, hooks, integrity
from newsquarry.search.engine.blocks import segment_postings
from newsquarry.search.engine.schema import text_analyzer

EXT = integrity.TOKENS_EXT
VERSION = 1
FIELDS = ("", "text", "quote")  # field codes: the stored field whose tokens a document keeps
DOCTYPE_FIELD = {"passage": 1, "quote": 2}
_ANALYZER = text_analyzer()


def _smallest(values: np.ndarray) -> np.ndarray:
    """``values`` (non-negative integers) in the smallest unsigned type holding them."""
    top = int(values.max()) if len(values) else 0
    for t in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(t).max:
            return values.astype(t)
    return values.astype(np.uint64)


class _Vocab:
    """The sorted vocabulary of a file as a sequence of UTF-8 bytes (for ``bisect``)."""

    def __init__(self, blob: np.ndarray, offs: np.ndarray) -> None:
        self.blob, self.offs = blob, offs

    def __len__(self) -> int:
        return len(self.offs) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.blob[int(self.offs[i]) : int(self.offs[i + 1])].tobytes()

    def words(self) -> list[str]:
        raw = self.blob.tobytes()
        offs = self.offs.tolist()
        return [raw[a:b].decode("utf-8") for a, b in zip(offs, offs[1:], strict=False)]


@dataclass
class SegmentTokens:
    """One segment's kept tokens (see the module docstring)."""

    vocab_blob: np.ndarray  # uint8
    vocab_offs: np.ndarray  # (nvocab + 1,)
    field: np.ndarray  # (ndocs,) uint8 field codes
    ptr: np.ndarray  # (ndocs + 1,)
    tid: np.ndarray
    start: np.ndarray
    end: np.ndarray
    # what query features derive from this segment's tokens and keep with them (a
    # segment is immutable): ``query.feedback``'s word classes per term id
    derived: dict[str, Any] = dataclass_field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.vocab = _Vocab(self.vocab_blob, self.vocab_offs)

    def term_ids(self, terms: Any) -> np.ndarray:
        """The sorted term ids of those of ``terms`` (index forms) in the vocabulary."""
        out = []
        for t in terms:
            b = t.encode("utf-8")
            i = bisect.bisect_left(self.vocab, b)
            if i < len(self.vocab) and self.vocab[i] == b:
                out.append(i)
        return np.asarray(sorted(out), dtype=np.int64)

    def doc_tokens(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The term ids of the tokens of local documents ``docs``, end to end (int64), and
        how many each has."""
        starts = self.ptr[docs].astype(np.int64)
        sizes = self.ptr[docs + 1].astype(np.int64) - starts
        total = int(sizes.sum())
        if not total:
            return np.zeros(0, np.int64), sizes
        # token k of the output is token (k - its document's first output index) of it
        idx = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes) + np.arange(total)
        return self.tid[idx].astype(np.int64), sizes

    def tokens(self, doc: int, field: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(term ids, starts, ends) of a document's ``field`` text, or None when this
        file keeps no tokens of that field for it."""
        if not 0 <= doc < len(self.field) or FIELDS[int(self.field[doc])] != field:
            return None
        a, b = int(self.ptr[doc]), int(self.ptr[doc + 1])
        return self.tid[a:b], self.start[a:b], self.end[a:b]


def analyse(text: str) -> tuple[list[str], list[int], list[int]]:
    """The index forms and (start, end) offsets of a text's tokens, in order."""
    words, starts, ends = [], [], []
    for tok in _ANALYZER(text, chars=True, mode="index"):
        words.append(tok.text)
        starts.append(tok.startchar)
        ends.append(tok.endchar)
    return words, starts, ends


def compute(ndocs: int, texts: list[tuple[int, int, str]]) -> SegmentTokens:
    """Tokens of (local docnum, field code, text), docnums increasing, in a segment of
    ``ndocs`` documents."""
    ids: dict[str, int] = {}
    counts = np.zeros(ndocs + 1, dtype=np.int64)
    field = np.zeros(ndocs, dtype=np.uint8)
    tids: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    for doc, code, text in texts:
        words, s, e = analyse(text)
        field[doc] = code
        counts[doc + 1] = len(words)
        tids.extend(ids.setdefault(w, len(ids)) for w in words)
        starts.extend(s)
        ends.extend(e)
    order = sorted(ids)  # code point order = UTF-8 byte order
    rank = np.zeros(len(ids), dtype=np.int64)
    rank[[ids[w] for w in order]] = np.arange(len(order))
    tid = rank[np.asarray(tids, dtype=np.int64)] if tids else np.zeros(0, np.int64)
    return _make(order, field, np.cumsum(counts), tid, np.asarray(starts), np.asarray(ends))


def _make(vocab: list[str], field: np.ndarray, ptr: np.ndarray, tid: np.ndarray,
          start: np.ndarray, end: np.ndarray) -> SegmentTokens:  # fmt: skip
    raw = [w.encode("utf-8") for w in vocab]
    offs = np.zeros(len(raw) + 1, dtype=np.int64)
    offs[1:] = np.cumsum([len(b) for b in raw]) if raw else 0
    blob = np.frombuffer(b"".join(raw), dtype=np.uint8)
    return SegmentTokens(
        blob, _smallest(offs), field.astype(np.uint8), _smallest(ptr),
        _smallest(tid.astype(np.int64)), _smallest(start.astype(np.int64)),
        _smallest(end.astype(np.int64)),
    )  # fmt: skip


def segment_texts(reader: Any) -> list[tuple[int, int, str]]:
    """(local docnum, field code, text) of a segment's passages and quotation documents
    (deleted ones included: segments are immutable, deletions are masked later)."""
    schema = reader.schema
    out = []
    for doctype, code in DOCTYPE_FIELD.items():
        found, _ = segment_postings(reader, "doctype", schema["doctype"].to_bytes(doctype))
        name = FIELDS[code]
        out.extend((int(d), code, reader.stored_fields(int(d)).get(name) or "")
                   for d in np.unique(found).tolist())  # fmt: skip
    out.sort()
    return out


def compute_segment(reader: Any) -> SegmentTokens:
    return compute(reader.doc_count_all(), segment_texts(reader))


def write_segment_file(folder: Any, segid: str, ndocs: int, data: SegmentTokens) -> None:
    arrays = {
        "vocab": data.vocab_blob,
        "vocab_offs": data.vocab_offs,
        "field": data.field,
        "ptr": data.ptr,
        "tid": data.tid,
        "start": data.start,
        "end": data.end,
    }
    dvstore.write(folder, segid, ndocs, arrays, {"version": VERSION}, ext=EXT)


def _from_file(src: Any) -> SegmentTokens | None:
    if src.meta.get("version") != VERSION:
        return None
    a = src.array
    data = SegmentTokens(a("vocab"), a("vocab_offs"), a("field"), a("ptr"), a("tid"),
                         a("start"), a("end"))  # fmt: skip
    if len(data.field) != src.ndocs or len(data.ptr) != src.ndocs + 1:
        return None
    return data


_MISSING = object()
_cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
_lock = threading.Lock()
CACHE_SEGMENTS = 256


def segment_tokens(folder: Any, segid: str, ndocs: int) -> SegmentTokens | None:
    """A committed segment's kept tokens from its file (mapped, read on use), or None
    without a valid one: the caller analyses the text instead. Kept per segment."""
    if folder is None:
        return None
    key = (str(folder), segid)
    with _lock:
        got = _cache.get(key)
    if got is None:
        src = dvstore.read(folder, segid, ndocs, ext=EXT)
        got = _from_file(src) if src is not None else None
        got = _MISSING if got is None else got
        with _lock:
            _cache[key] = got
            while len(_cache) > CACHE_SEGMENTS:
                _cache.popitem(last=False)
    return None if got is _MISSING else got


class TokenSource:
    """The kept tokens of one store's segments (``store.token_offsets``, lent by the
    feature): ``enabled = False`` makes every highlight analyse its text (benchmarks)."""

    def __init__(self, folder: Any) -> None:
        self.folder = folder
        self.enabled = True

    def get(self, segid: str, ndocs: int) -> SegmentTokens | None:
        return segment_tokens(self.folder, segid, ndocs) if self.enabled else None


def forget(folder: Any) -> None:
    """Drop what is kept of a folder's segments (files written since are then read)."""
    with _lock:
        for key in [k for k in _cache if k[0] == str(folder)]:
            del _cache[key]


def write_merged(
    folder: Any, merged: Any, sources: list[Any], datas: list[SegmentTokens], maps: list[Any]
) -> None:
    """A merged segment's file from its sources' (``maps`` as ``merging._merge`` gives
    them: per source, (segment id, deletions, first new docnum, live docnums in order)):
    each live document's tokens in the merged order, term ids into the merged vocabulary."""
    words = [d.vocab.words() for d in datas]
    vocab = sorted(set().union(*words)) if words else []
    where = {w: i for i, w in enumerate(vocab)}
    fields, counts, tids, starts, ends = [], [np.zeros(1, np.int64)], [], [], []
    expected = 0
    for data, src_words, (_sid, _deleted, base, live) in zip(datas, words, maps, strict=True):
        if base != expected:  # not the layout this code knows: leave the file out
            return
        live_a = np.asarray(live, dtype=np.int64)
        expected += len(live_a)
        ptr = data.ptr.astype(np.int64)
        a, b = ptr[live_a], ptr[live_a + 1]
        lens = b - a
        # the indices of every live document's tokens, documents in order
        take = np.arange(int(lens.sum())) + np.repeat(a - (np.cumsum(lens) - lens), lens)
        remap = np.asarray([where[w] for w in src_words], dtype=np.int64)
        fields.append(data.field[live_a])
        counts.append(b - a)
        tids.append(remap[data.tid[take].astype(np.int64)] if len(take) else take)
        starts.append(data.start[take].astype(np.int64))
        ends.append(data.end[take].astype(np.int64))
    if expected != merged.doc_count_all():
        return
    tid = np.concatenate(tids) if tids else np.zeros(0, np.int64)
    used = np.unique(tid)  # the words of deleted documents only are left out
    out = _make(
        [vocab[i] for i in used.tolist()],
        np.concatenate(fields) if fields else np.zeros(0, np.uint8),
        np.cumsum(np.concatenate(counts)),
        np.searchsorted(used, tid),
        np.concatenate(starts) if starts else np.zeros(0, np.int64),
        np.concatenate(ends) if ends else np.zeros(0, np.int64),
    )
    write_segment_file(folder, merged.segment_id(), merged.doc_count_all(), out)


def backfill(store: Any) -> int:
    """Write the file of every segment of the index that has none (an index written before
    the feature), under the write lock, each entered in the current checksum manifest;
    the number written."""
    folder = Path(store.path)
    written = 0
    with store.write_lock():
        searcher = store.ix.searcher()
        try:
            for reader, _ in searcher.ixreader.leaf_readers():
                seg = getattr(reader, "segment", lambda: None)()
                if seg is None:
                    continue
                sid, ndocs = seg.segment_id(), seg.doc_count_all()
                if dvstore.read(folder, sid, ndocs, ext=EXT) is not None:
                    continue
                write_segment_file(folder, sid, ndocs, compute_segment(reader))
                _enter(folder, store.generation, sid)
                written += 1
        finally:
            searcher.close()
    forget(folder)
    return written


def _enter(folder: Path, gen: int, segid: str) -> None:
    """Enter a segment's new file in the generation's manifest (if it has one)."""
    integrity.enter_segment_file(folder, gen, segid, dvstore.file_name(segid, EXT))


class TokenOffsets(dvstore.SegmentFileFeature):
    """Token offsets as an engine feature: a ``.tok`` file per segment."""

    name = "token-offsets"
    ext = EXT

    compute = staticmethod(compute_segment)
    parse = staticmethod(_from_file)
    save = staticmethod(write_segment_file)
    merged = staticmethod(write_merged)

    def open(self, store: Any) -> dict[str, Any]:
        return {"token_offsets": TokenSource(getattr(store, "path", None))}


hooks.register(TokenOffsets())

"""Quotation signatures per segment: MinHash over word shingles, in a file beside each
segment, written by commits and carried through merges (an engine feature, ``engine.hooks``).

``archive.quotelinks`` links them into clusters; ``archive.quoteclusters`` keeps the
clusters of each index state.
"""

from __future__ import annotations

import functools
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine import dvstore, hooks
from newsquarry.search.engine.blocks import segment_postings

EXT = ".qmh"
NUM_PERM = 64
BANDS = 32
ROWS = NUM_PERM // BANDS
MIN_WORDS = 6  # shorter quotations ("no comment") are never clustered
LONG = 10  # shingles (11 words): from here a quotation may be a cut or edited copy
CONTAINMENT = 0.7  # long: share of the shorter one's shingles the other holds
SHORT_JACCARD = 0.8  # short (6 to 10 words): only near-identical copies
WINDOW_DAYS = 7  # a copy comes at most this long after the first-seen one
MAX_RUN = 32  # quotations sharing one band value beyond which it is no evidence
VERSION = 2
LINKS_FILE = "newsquarry_CLUSTERS.npz"  # the links of the last index state linked (derived)
# what decides the links besides the index state: a saved file made under other rules is
# not used (bump LINK_RULES with any change to ``link``)
LINK_RULES = (
    f"2 {NUM_PERM} {BANDS} {MIN_WORDS} {LONG} {CONTAINMENT} {SHORT_JACCARD} "
    + f"{WINDOW_DAYS} {MAX_RUN} {VERSION}"
)

_WORD = re.compile(r"[^\W_]+(?:['’.,][^\W_]+)*")
_DIGIT = re.compile(r"\d")


@functools.cache
def _hash_params() -> tuple[np.ndarray, np.ndarray]:
    """(a, b) of the multiply-shift hashes: (a * x + b) mod 2**64, top 32 bits; a odd.

    Made on first use: importing ``numpy.random`` costs every CLI search ~8 ms.
    Saved signatures depend on these values (seeded, always the same).
    """
    rng = np.random.default_rng(20260301)
    a = (rng.integers(1, 2**63, NUM_PERM, dtype=np.uint64) * np.uint64(2) + np.uint64(1)).reshape(
        1, -1
    )
    b = rng.integers(0, 2**63, NUM_PERM, dtype=np.uint64).reshape(1, -1)
    return a, b


_SHIFT = np.uint64(32)
_EMPTY = np.uint32(0xFFFFFFFF)


def words(text: str) -> list[str]:
    """The words of a quotation as compared: folded, no quote marks, dashes or ellipses.

    Numbers keep their inner points and commas ("7.5", "4,400"); an apostrophe
    inside a word stays ("don't"), curly or straight alike.
    """
    low = text.lower() if text.isascii() else fold(text).replace("’", "'")
    return _WORD.findall(low)


def shingles(tokens: list[str], memo: dict[str, int] | None = None) -> list[int]:
    """The distinct word-bigram hashes of a quotation (64-bit ints)."""
    if len(tokens) < 2:
        return []
    memo = {} if memo is None else memo
    h = []
    for w in tokens:
        x = memo.get(w)
        if x is None:
            x = memo[w] = zlib.crc32(w.encode("utf-8"))
        h.append(x)
    return list({(a << 32) | b for a, b in zip(h, h[1:], strict=False)})


_NUMBER_WORDS = frozenset(
    "two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty "
    "fifty sixty seventy eighty ninety hundred thousand".split()
)  # "one" is a pronoun too often


def figures(tokens: list[str]) -> list[str]:
    """The tokens holding a digit (amounts, dates, percentages) or a number word."""
    return sorted({w for w in tokens if _DIGIT.search(w) or w in _NUMBER_WORDS})


def signatures(flat: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """MinHash signatures (n x NUM_PERM uint32) of n shingle sets given end to end
    (``flat``, uint64) with their sizes. An empty set gets all 0xFFFFFFFF."""
    n = len(lens)
    out = np.full((n, NUM_PERM), _EMPTY, dtype=np.uint32)
    nonempty = np.flatnonzero(lens)
    if not len(nonempty):
        return out
    starts = np.concatenate(([0], np.cumsum(lens[nonempty])[:-1]))
    hash_a, hash_b = _hash_params()
    for p in range(NUM_PERM):
        hashed = (flat * hash_a[0, p] + hash_b[0, p]) >> _SHIFT
        out[nonempty, p] = np.minimum.reduceat(hashed, starts).astype(np.uint32)
    return out


@dataclass
class QuoteData:
    """What clustering keeps of one segment's quotations (parallel arrays)."""

    docs: np.ndarray  # local docnums of the quote documents
    sig: np.ndarray  # (n, NUM_PERM) uint32 signatures
    nsh: np.ndarray  # shingle counts (0: too short to cluster)
    speakers: list[str]  # folded speaker ("" unknown)
    figures: list[list[str]]  # figures of each quotation
    ids: list[str]  # quotation ids ("<passage id>#q<n>")
    indirect: np.ndarray  # 1 for reported (indirect) speech
    keys: np.ndarray | None = None  # stable quotation keys (``quote_keys``), made on demand
    bands: tuple[np.ndarray, np.ndarray] | None = None  # ``segment_bands``, made on demand
    bk: np.ndarray | None = None  # band values, for a scan until ``bands`` is made
    relinks: int = 0  # the ``relink`` calls that looked into this segment (this process)
    # the keys with their dates mixed in (``Clusters``), and the clusterable rows in their
    # order: a segment's dates never change, so made once per segment and process
    dated_keys: np.ndarray | None = None
    key_rows: np.ndarray | None = None


def compute(records: list[tuple]) -> QuoteData:
    """Cluster data for quotations given as (local docnum, text, speaker, id[, kind])."""
    flat: list[int] = []
    nsh, speakers, figs = [], [], []
    memo: dict[str, int] = {}
    for _, text, speaker, *_ in records:
        tokens = words(text or "")
        sh = shingles(tokens, memo) if len(tokens) >= MIN_WORDS else []
        flat.extend(sh)
        nsh.append(len(sh))
        speakers.append(fold(speaker) if speaker else "")
        figs.append(figures(tokens))
    lens = np.asarray(nsh, dtype=np.int64)
    return QuoteData(
        docs=np.asarray([r[0] for r in records], dtype=np.int32),
        sig=signatures(np.asarray(flat, dtype=np.uint64), lens),
        nsh=lens.astype(np.int32),
        speakers=speakers,
        figures=figs,
        ids=[r[3] for r in records],
        indirect=np.asarray([len(r) > 4 and r[4] == "indirect" for r in records], dtype=np.uint8),
    )


def _to_arrays(data: QuoteData) -> dict[str, np.ndarray]:
    strings = json.dumps(
        {"speakers": data.speakers, "figures": data.figures, "ids": data.ids},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
    return {
        "docs": data.docs,
        "sig": data.sig.reshape(-1),
        "nsh": data.nsh,
        "indirect": data.indirect,
        "strings": np.frombuffer(strings, dtype=np.uint8),
    }


def _from_file(src: Any) -> QuoteData | None:
    if src.meta.get("version") != VERSION or src.meta.get("perm") != NUM_PERM:
        return None
    strings = src.json("strings")
    docs = src.array("docs")
    return QuoteData(
        docs=docs,
        sig=src.array("sig").reshape(len(docs), NUM_PERM),
        nsh=src.array("nsh"),
        speakers=strings["speakers"],
        figures=strings["figures"],
        ids=strings["ids"],
        indirect=src.array("indirect"),
    )


def segment_records(reader: Any) -> list[tuple[int, str, str, str, str]]:
    """(local docnum, quote text, speaker, id, kind) of every quote document of a segment
    (deleted ones included: segments are immutable, deletions are masked later)."""
    schema = reader.schema
    ids, _ = segment_postings(reader, "doctype", schema["doctype"].to_bytes("quote"))
    out = []
    for docnum in sorted(set(ids.tolist())):
        d = reader.stored_fields(docnum)
        out.append((docnum, d.get("quote") or "", d.get("speaker") or "", d.get("id") or "",
                    d.get("quote_kind") or ""))  # fmt: skip
    return out


def compute_segment(reader: Any) -> QuoteData:
    return compute(segment_records(reader))


def write_segment_file(folder: Any, segid: str, ndocs: int, data: QuoteData) -> None:
    dvstore.write(
        folder, segid, ndocs, _to_arrays(data), {"version": VERSION, "perm": NUM_PERM}, ext=EXT
    )


def _take(
    data: QuoteData,
    keep: np.ndarray,
    sig: list[np.ndarray],
    nsh: list[np.ndarray],
    indirect: list[np.ndarray],
    speakers: list[str],
    figs: list[list[str]],
    ids: list[str],
) -> None:
    """Append the quotations of ``data`` at positions ``keep`` to the column lists."""
    sig.append(data.sig[keep])
    nsh.append(data.nsh[keep])
    indirect.append(data.indirect[keep])
    idx = keep.tolist()
    speakers.extend(data.speakers[i] for i in idx)
    figs.extend(data.figures[i] for i in idx)
    ids.extend(data.ids[i] for i in idx)


def write_merged(
    folder: Any, merged: Any, sources: list[Any], datas: list[QuoteData], maps: list[Any]
) -> None:
    """Save a merged segment's quotation data, carried over from its sources' (no stored
    field is read again). ``datas``: each source's data (``merge_source``); ``maps``: per
    source, (segment id, deletions, first new docnum, live docnums in order), as
    ``merging._merge`` copies them."""
    docs, sigs, nsh, speakers, figs, ids, indirect = [], [], [], [], [], [], []
    for seg, data, (_sid, _deleted, base, live) in zip(sources, datas, maps, strict=True):
        mapped = dvstore.merge_positions(seg, live, base, data.docs)
        keep = np.flatnonzero(mapped >= 0)
        docs.append(mapped[keep])
        _take(data, keep, sigs, nsh, indirect, speakers, figs, ids)
    data = QuoteData(
        docs=np.concatenate(docs).astype(np.int32) if docs else np.zeros(0, np.int32),
        sig=np.concatenate(sigs) if sigs else np.zeros((0, NUM_PERM), np.uint32),
        nsh=np.concatenate(nsh) if nsh else np.zeros(0, np.int32),
        speakers=speakers,
        figures=figs,
        ids=ids,
        indirect=np.concatenate(indirect) if indirect else np.zeros(0, np.uint8),
    )
    write_segment_file(folder, merged.segment_id(), merged.doc_count_all(), data)


class QuoteSignatures(dvstore.SegmentFileFeature):
    """Quotation signatures as an engine feature: a ``.qmh`` file per segment."""

    name = "quote-signatures"
    ext = EXT

    compute = staticmethod(compute_segment)
    parse = staticmethod(_from_file)
    save = staticmethod(write_segment_file)
    merged = staticmethod(write_merged)


hooks.register(QuoteSignatures())

"""Quotation clusters: the same quotation carried by several articles, grouped.

Why: wire copy and rewrites repeat a quotation across articles, slightly edited
(cut short, a word changed, other quote marks, "..." for a left-out part). A
quote search listed every copy as a separate hit; a cluster links them and says
who had it first.

Method: MinHash over word shingles, with banded LSH for candidates and a check
of every candidate pair.

- A quotation is normalised to words (``words``): case and accents folded,
  every quote mark, dash and ellipsis dropped, so quote style never matters;
  its shingles are its word bigrams (short quotations stay comparable: a changed
  word in a 10-word quotation keeps 7 of its 9 bigrams).
- Its signature is the minimum of ``NUM_PERM`` multiply-shift hashes over its
  shingles (numpy, one segment at a time, no dependency). ``BANDS`` bands of
  ``ROWS`` rows: two quotations sharing a band value are candidates (a pair with
  Jaccard 0.3 is a candidate with probability 0.95; see docs/quality.md).
- A candidate pair is linked when the estimated share of the *shorter* one's
  shingles that the other holds (containment, from the Jaccard estimate and the
  two shingle counts) reaches ``CONTAINMENT``: a truncated copy is contained in
  the full one even though their Jaccard is low. Two more rules keep template
  sentences of different people apart ("X said it raised its prime rate to 7.5
  pct" is said by a dozen banks): the speakers must agree where both are known
  (same folded name, or same last name), and the figures of the shorter
  quotation must all occur in the other.
- Clusters group the linked pairs in first-seen order (``assign``).

Storage: derived data, like the doc values. The signatures are computed from
the stored quote text when a segment is committed (``persist_on_commit``, the
same hook as ``dvstore``) and saved next to the segment as ``<segment id>.qmh``
(dvstore's file format); a segment without a valid file (an index made before
clusters, a lost or damaged file) has its signatures computed from its stored
fields once and the file written then.

Links are kept incrementally (``relink``): a state's candidate pairs are those of
an earlier state, keyed by stable quotation keys (``quote_keys``: id, speaker,
figures, signature, date; merges renumber documents, keys stay), minus the pairs of
quotations that are gone, with only the LSH buckets that a new quotation joined or
a gone one left made again (looked up in each segment's sorted band values; the
buckets too common to count, beyond ``MAX_RUN``, are kept with their members and
made again only when one of them leaves) and only pairs not seen before checked.
The grouping is kept the same way (``reassign``): each quotation's founder (the
first-seen copy whose cluster it joined) is kept by key, and only the connected
groups of quotations whose passing pairs changed are grouped again (``founders``),
so a deletion splits what it joined. The result is exactly ``pairs_full`` and
``founders``' from scratch, the fallback and the reference (tests compare them over
random states). What remains per state over all quotations is numpy work: linear
passes (mapping the earlier state's keys and pairs to the new positions, merging
the segments' sorted keys), two sorts (the first-seen order of the quotations, and
their order by cluster) and saving the links file.

When: a process that linked a state links each state it commits right after the
commit, in a daemon thread (``link_after_commit``, a ``store.after_commit`` hook
registered by ``clusters_for``; the writer does not wait for it), and a server
worker's refresher links the states other processes commit: a server's first quote
search after a write finds the clusters made, or links them itself if it comes
first. Any other state is linked on its first use (a CLI command). A bulk load that
never searches
quotations links nothing. The links of the last state are saved (``LINKS_FILE``:
CRC-checked, derived): a new process starts from them, or uses them as they are
for the same state; missing, damaged or made under other rules, they are linked
from scratch.

Cluster ids are ``c`` + 12 hex digits of the hash of the quotation id of the
cluster's first-seen member. Every member's own hash resolves to its cluster
too (``ClusterIndex.resolve``), so a link made before an earlier copy arrived
keeps working.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import re
import threading
import weakref
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsquarry.search.core import npsets
from newsquarry.search.core.background import FOREGROUND, Coalescing
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine import dvstore

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
    from newsquarry.search.engine.docvalues import segment_postings

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


def source_data(folder: Any, segment: Any, reader: Any) -> QuoteData:
    """A committed segment's quotation data: from its file, else from its stored fields
    through ``reader`` (already open: a merge reads its sources while they exist)."""
    src = dvstore.read(folder, segment.segment_id(), segment.doc_count_all(), ext=EXT)
    data = _from_file(src) if src is not None else None
    return data if data is not None else compute_segment(reader)


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
    field is read again). ``datas``: each source's data (``source_data``); ``maps``: per
    source, (segment id, deletions, first new docnum, live docnums in order), as
    ``merging._merge`` copies them."""
    docs, sigs, nsh, speakers, figs, ids, indirect = [], [], [], [], [], [], []
    for seg, data, (_sid, _deleted, base, live) in zip(sources, datas, maps, strict=True):
        new = np.full(seg.doc_count_all(), -1, dtype=np.int64)
        new[np.asarray(live, dtype=np.int64)] = base + np.arange(len(live))
        mapped = new[data.docs] if len(data.docs) else np.zeros(0, np.int64)
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


def persist_on_commit(writer: Any) -> Any:
    """Make a Whoosh writer save the quotation signatures of the segments its commit adds
    (before the TOC names them; see ``docvalues.persist_on_commit``)."""
    from whoosh.reading import SegmentReader

    before = {s.segment_id() for s in writer.segments}
    original = writer._commit_toc

    def commit_toc(segments: list[Any]) -> None:
        for seg in segments:
            if seg.segment_id() not in before:
                reader = SegmentReader(writer.storage, writer.schema, seg)
                try:
                    data = compute_segment(reader)
                finally:
                    reader.close()
                write_segment_file(
                    writer.storage.folder, seg.segment_id(), seg.doc_count_all(), data
                )
        original(segments)

    writer._commit_toc = commit_toc
    return writer


# -- linking -----------------------------------------------------------------


def _compatible_speakers(a: str, b: str) -> bool:
    """Unknown on either side, or one name's words all in the other's ("carlucci",
    "frank carlucci"); "anz merchant bank ltd" and "orion royal bank ltd" differ."""
    if not a or not b or a == b:
        return True
    wa, wb = set(a.split()), set(b.split())
    return wa <= wb or wb <= wa


def _figures_fit(short: list[str], long: list[str]) -> bool:
    return not short or set(short) <= set(long)


def _day_numbers(dates: np.ndarray) -> np.ndarray:
    """YYYYMMDD ints -> day numbers (proleptic ordinals); 0 (no date) stays 0."""
    values, inverse = np.unique(dates, return_inverse=True)
    days = np.zeros(len(values), dtype=np.int64)
    for i, value in enumerate(values.tolist()):
        if value <= 0:
            continue
        y, m, d = value // 10000, value // 100 % 100, value % 100
        try:
            days[i] = datetime.date(y, max(m, 1), max(d, 1)).toordinal()
        except ValueError:
            continue
    return days[inverse.reshape(-1)]


def band_keys(sig: np.ndarray) -> np.ndarray:
    """(n, BANDS) uint64: each quotation's value in every LSH band (its ROWS rows hashed)."""
    s = sig.astype(np.uint64).reshape(len(sig), BANDS, ROWS)
    key = s[:, :, 0].copy()
    for r in range(1, ROWS):
        key = key * np.uint64(0x9E3779B1) ^ s[:, :, r]
    return key


def _in_sorted(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Which ``values`` occur in the sorted array ``table`` (bool mask)."""
    if not len(table) or not len(values):
        return np.zeros(len(values), dtype=bool)
    pos = np.minimum(np.searchsorted(table, values), len(table) - 1)
    return table[pos] == values


def _stars(
    vals: np.ndarray, members: np.ndarray, rank: np.ndarray, presorted: bool = False
) -> tuple[np.ndarray, ...]:
    """The candidate pairs one band makes among ``members`` (quotation indexes; ``vals``:
    their values in the band): in each run of equal values of 2 to MAX_RUN quotations,
    the first seen against every other one. Returns (first seen, other, and of the runs
    beyond MAX_RUN: their values, sizes and members, run after run, first seen first)."""
    empty = np.zeros(0, np.int64)
    if len(members) < 2:
        return empty, empty, np.zeros(0, np.uint64), np.zeros(0, np.int32), empty
    # members already in first-seen order (``pairs_full``): a stable sort of the values
    by = np.argsort(vals, kind="stable") if presorted else np.lexsort((rank[members], vals))
    order, k = members[by], vals[by]
    starts = np.empty(len(k), dtype=bool)
    starts[0] = True
    np.not_equal(k[1:], k[:-1], out=starts[1:])
    if starts.all():
        return empty, empty, np.zeros(0, np.uint64), np.zeros(0, np.int32), empty
    idx = np.arange(len(k))
    first_of = np.maximum.accumulate(np.where(starts, idx, 0))
    # a band value shared by very many quotations is a common phrase, not a copy: copies
    # share other bands too
    run_start = np.flatnonzero(starts)
    run_len = np.diff(np.append(run_start, len(k)))
    over = run_len > MAX_RUN
    big = np.repeat(over, run_len)
    member = np.flatnonzero(~starts & ~big)
    return (order[first_of[member]], order[member], k[run_start[over]],
            run_len[over].astype(np.int32), order[big])  # fmt: skip


@dataclass
class Pairs:
    """The candidate pairs of a set of quotations, by quotation index: ``lo``/``hi`` (lo <
    hi), ``mask`` (bit b: band b's bucket made them candidates), ``ok`` (the pair passed
    the checks), and the buckets beyond MAX_RUN (``over_band``, ``over_val``, and their
    sizes and members: ``over_len``, ``over_members``, bucket after bucket)."""

    lo: np.ndarray
    hi: np.ndarray
    mask: np.ndarray
    ok: np.ndarray
    over_band: np.ndarray
    over_val: np.ndarray
    over_len: np.ndarray
    over_members: np.ndarray
    # ``relink`` only: the quotations (state positions) whose checked pairs changed (a
    # passing pair made or dropped), and where each of the base's quotations is now
    dirty: np.ndarray | None = None
    now: np.ndarray | None = None
    by_key: np.ndarray | None = None  # the clusterable quotations (positions) in key order


@dataclass
class Links:
    """``Pairs`` keyed by stable quotation keys (``quote_keys``) instead of indexes: what
    a later index state starts from (merges renumber documents; keys do not change)."""

    keys: np.ndarray  # sorted keys of the clusterable quotations of the state
    pi: np.ndarray  # each pair's quotations, as indexes into ``keys``
    pj: np.ndarray
    mask: np.ndarray
    ok: np.ndarray
    over_band: np.ndarray
    over_val: np.ndarray
    over_len: np.ndarray
    over_members: np.ndarray  # as indexes into ``keys``: a bucket left untouched is kept
    # per key, the index (into ``keys``) of the first-seen copy whose cluster it joined
    # (itself when it joined none): the next state re-groups only what changed
    founder: np.ndarray | None = None


def _check(
    sig: np.ndarray,
    nsh: np.ndarray,
    speakers: list[str],
    figs: list[list[str]],
    a: np.ndarray,
    b: np.ndarray,
) -> np.ndarray:
    """Which candidate pairs are near-duplicates (``a``: the earlier seen of each pair)."""
    out = np.zeros(len(a), dtype=bool)
    if not len(a):
        return out
    jac = (sig[a] == sig[b]).mean(axis=1)
    na, nb = nsh[a].astype(np.float64), nsh[b].astype(np.float64)
    inter = jac * (na + nb) / (1.0 + jac)
    contain = inter / np.minimum(na, nb)
    short_side = np.minimum(na, nb)
    ok = np.flatnonzero(((short_side >= LONG) & (contain >= CONTAINMENT)) | (jac >= SHORT_JACCARD))
    for i in ok.tolist():
        x, y = int(a[i]), int(b[i])
        if not _compatible_speakers(speakers[x], speakers[y]):
            continue
        short, long = (x, y) if nsh[x] <= nsh[y] else (y, x)
        if _figures_fit(figs[short], figs[long]):
            out[i] = True
    return out


def _oriented(lo: np.ndarray, hi: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each pair as (earlier seen, later seen)."""
    swap = rank[lo] > rank[hi]
    return np.where(swap, hi, lo), np.where(swap, lo, hi)


def _finish(
    lo: np.ndarray,
    hi: np.ndarray,
    mask: np.ndarray,
    ok: np.ndarray,
    known: np.ndarray,
    n: int,
    sig: np.ndarray,
    nsh: np.ndarray,
    speakers: list[str],
    figs: list[list[str]],
    rank: np.ndarray,
    over: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    prefix: int = 0,
) -> Pairs:
    """Candidate pairs given as possibly repeated entries (one per band, or an old pair and
    its new bands), merged: bands ORed, pairs left with no band dropped, the pairs not
    ``known`` checked; sorted by (lo, hi).

    ``prefix``: the first entries are distinct known pairs (an earlier state's, in
    ``relink``): only those among them that share both quotations with a later entry
    are merged with the later ones, and the result is put in order by a stable sort of
    a sequence that is sorted but for a few entries (an earlier state's pairs keep
    their order when its quotations keep theirs): linear rather than a sort of all."""
    a, b = np.minimum(lo, hi), np.maximum(lo, hi)
    if prefix:
        mark = np.zeros(n, dtype=bool)
        mark[a[prefix:]] = True
        mark[b[prefix:]] = True
        stay = ~(mark[a[:prefix]] & mark[b[:prefix]])  # can repeat no later entry
        rest = np.concatenate((np.flatnonzero(~stay), np.arange(prefix, len(a))))
        c1, m1, k1, o1 = _merge(a[rest], b[rest], mask[rest], known[rest], ok[rest], n)
        code = np.concatenate((a[:prefix][stay] * n + b[:prefix][stay], c1))
        by = np.argsort(code, kind="stable")
        code = code[by]
        merged = np.concatenate((mask[:prefix][stay], m1))[by]
        was_known = np.concatenate((np.ones(int(stay.sum()), bool), k1))[by]
        was_ok = np.concatenate((ok[:prefix][stay], o1))[by]
    else:
        code, merged, was_known, was_ok = _merge(a, b, mask, known, ok, n)
    keep = merged != 0
    # passing pairs no bucket makes any more: their quotations are re-grouped
    lost = code[~keep & was_ok]
    code, merged, was_known, was_ok = code[keep], merged[keep], was_known[keep], was_ok[keep]
    lo, hi = code // n, code % n
    todo = np.flatnonzero(~was_known)
    if len(todo):
        first, later = _oriented(lo[todo], hi[todo], rank)
        was_ok[todo] = _check(sig, nsh, speakers, figs, first, later)
    made = todo[was_ok[todo]]  # new passing pairs
    dirty = np.concatenate((lost // n, lost % n, lo[made], hi[made]))
    return Pairs(lo, hi, merged, was_ok, *over, dirty=dirty)


def _merge(
    a: np.ndarray, b: np.ndarray, mask: np.ndarray, known: np.ndarray, ok: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Entries of pairs (a < b) merged by pair: sorted codes (a * n + b), ORed bands, known
    and ok (of a known entry)."""
    code, inv = np.unique(a * n + b, return_inverse=True)
    inv = inv.reshape(-1)
    # each (pair, band) comes once, so the sum of the bits is their OR
    merged = np.bincount(inv, weights=mask.astype(np.float64), minlength=len(code))
    merged = merged.astype(np.uint64).astype(np.uint32)
    was_known = np.bincount(inv, weights=known, minlength=len(code)) > 0
    was_ok = np.bincount(inv, weights=known & ok, minlength=len(code)) > 0
    return code, merged, was_known, was_ok


def pairs_full(
    sig: np.ndarray, nsh: np.ndarray, speakers: list[str], figs: list[list[str]], rank: np.ndarray
) -> Pairs:
    """The candidate pairs of all quotations, each checked: the reference for ``relink``."""
    n = len(nsh)
    usable = np.flatnonzero(nsh > 0)
    usable = usable[np.argsort(rank[usable], kind="stable")]  # first seen first
    bk = band_keys(sig[usable])
    los, his, bits, ob, ov, ol, om = [], [], [], [], [], [], []
    for b in range(BANDS):
        first, other, big, big_len, big_members = _stars(bk[:, b], usable, rank, presorted=True)
        los.append(first)
        his.append(other)
        bits.append(np.full(len(first), 1 << b, dtype=np.uint32))
        ob.append(np.full(len(big), b, dtype=np.uint8))
        ov.append(big)
        ol.append(big_len)
        om.append(big_members)
    lo = np.concatenate(los)
    cat = np.concatenate
    return _finish(lo, cat(his), cat(bits), np.zeros(len(lo), bool), np.zeros(len(lo), bool),
                   n, sig, nsh, speakers, figs, rank, (cat(ob), cat(ov), cat(ol), cat(om)))  # fmt: skip


def relink(
    base: Links,
    keys: np.ndarray,
    sig: Any,
    nsh: np.ndarray,
    speakers: Any,
    figs: Any,
    rank: np.ndarray,
    members_of: Any = None,
    by_key: np.ndarray | None = None,
) -> tuple[Pairs, int, int] | None:
    """The candidate pairs of a new state from those of an earlier one (``base``), in work
    proportional to what changed: quotations that left drop their pairs, and in each band
    only the buckets that a new quotation joined or a gone one left are made again (their
    first-seen copy may have changed); only pairs not checked before are checked. Exactly
    ``pairs_full``'s answer. Returns (pairs, added, removed), or None when keys repeat or
    so much changed that ``pairs_full`` is the cheaper way.

    ``sig``, ``speakers`` and ``figs`` are only indexed (rows of the quotations looked at);
    ``members_of(band, sorted values)`` gives the clusterable quotations with one of these
    values in that band and their values (default: a scan of every quotation's bands);
    ``by_key``: the clusterable quotations in key order, if known (default: sorted here).
    """
    n = len(nsh)
    usable = np.flatnonzero(nsh > 0)
    if by_key is None:
        by_key = usable[np.argsort(keys[usable], kind="stable")]
    skeys = keys[by_key]
    if len(skeys) > 1 and bool((skeys[1:] == skeys[:-1]).any()):
        return None
    # where each of the base's quotations is now (-1: gone), and which are new
    now = np.full(len(base.keys), -1, dtype=np.int64)
    new = np.ones(len(skeys), dtype=bool)
    if len(skeys):
        pos = np.minimum(np.searchsorted(skeys, base.keys), len(skeys) - 1)
        found = skeys[pos] == base.keys
        now = np.where(found, by_key[pos], -1)
        new[pos[found]] = False
    added = by_key[new]
    removed = len(base.keys) - (len(skeys) - len(added))
    if len(added) + removed > max(64, len(usable) // 4):
        return None
    ia, ib = now[base.pi], now[base.pj]
    alive = (ia >= 0) & (ib >= 0)
    dead = ~alive & ((ia >= 0) | (ib >= 0))
    survivor = np.where(ia[dead] >= 0, ia[dead], ib[dead])
    dead_mask = base.mask[dead]
    la, lb = ia[alive], ib[alive]
    mask = base.mask[alive].copy()
    if members_of is None:
        every = band_keys(np.asarray(sig))

        def members_of(b: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            m = usable[_in_sorted(every[usable, b], values)]
            return m, every[m, b]

    bk_added = band_keys(sig[added]) if len(added) else np.zeros((0, BANDS), np.uint64)
    bk_survivor = band_keys(sig[survivor]) if len(survivor) else np.zeros((0, BANDS), np.uint64)
    touched = np.zeros(n, dtype=bool)
    # the buckets beyond MAX_RUN: made again only if one of their quotations left (they may
    # be small enough now) or a new one joined (its values are looked up anyway); the
    # others are kept as they are
    bucket_of = np.repeat(np.arange(len(base.over_len)), base.over_len)
    over_now = now[base.over_members]
    lost = np.zeros(len(base.over_len), dtype=bool)
    lost[bucket_of[over_now < 0]] = True
    carry = np.ones(len(base.over_len), dtype=bool)
    los, his, bits, ob, ov, ol, om = [la], [lb], [mask], [], [], [], []
    for b in range(BANDS):
        bit = np.uint32(1 << b)
        in_band = np.flatnonzero(base.over_band == b)
        values = npsets.unique(np.concatenate((
            bk_added[:, b], bk_survivor[(dead_mask & bit) != 0, b],
            base.over_val[in_band[lost[in_band]]],
        )))  # fmt: skip
        if not len(values):
            continue
        carry[in_band[_in_sorted(base.over_val[in_band], values)]] = False
        members, vals = members_of(b, values)
        # the pairs this band's touched buckets made are made again below
        touched[members] = True
        has = np.flatnonzero((mask & bit) != 0)
        mask[has[touched[la[has]]]] &= ~bit
        touched[members] = False
        first, other, big, big_len, big_members = _stars(vals, members, rank)
        los.append(first)
        his.append(other)
        bits.append(np.full(len(first), bit, dtype=np.uint32))
        ob.append(np.full(len(big), b, dtype=np.uint8))
        ov.append(big)
        ol.append(big_len)
        om.append(big_members)
    ob.append(base.over_band[carry])
    ov.append(base.over_val[carry])
    ol.append(base.over_len[carry])
    om.append(over_now[carry[bucket_of]])
    known = np.zeros(sum(len(x) for x in los), dtype=bool)
    known[: len(la)] = True
    ok = np.zeros(len(known), dtype=bool)
    ok[: len(la)] = base.ok[alive]
    cat = np.concatenate
    pairs = _finish(cat(los), cat(his), cat(bits), ok, known, n, sig, nsh, speakers, figs,
                    rank, (cat(ob), cat(ov), cat(ol), cat(om).astype(np.int64)),
                    prefix=len(la))  # fmt: skip
    # the survivors of passing pairs whose other quotation left are re-grouped too
    pairs.dirty = np.concatenate((pairs.dirty, survivor[base.ok[dead]]))  # type: ignore[arg-type]
    pairs.now = now
    pairs.by_key = by_key
    return pairs, len(added), removed


def keyed(
    pairs: Pairs, keys: np.ndarray, nsh: np.ndarray, founder: np.ndarray | None = None
) -> Links:
    """``pairs`` (and ``founder``, from ``founders``) by stable keys (for the next state)."""
    by_key = pairs.by_key
    if by_key is None:
        usable = np.flatnonzero(nsh > 0)
        by_key = usable[np.argsort(keys[usable], kind="stable")]
    at = np.full(len(nsh), -1, dtype=np.int64)
    at[by_key] = np.arange(len(by_key))
    # a quotation that joined a cluster joined it through a checked pair: its founder is
    # clusterable too, so has a key
    fk = at[founder[by_key]].astype(np.int32) if founder is not None else None
    return Links(keys[by_key], at[pairs.lo].astype(np.int32),
                 at[pairs.hi].astype(np.int32), pairs.mask, pairs.ok, pairs.over_band,
                 pairs.over_val, pairs.over_len, at[pairs.over_members].astype(np.int32),
                 fk)  # fmt: skip


def assign(
    n: int,
    pairs: Pairs,
    rank: np.ndarray,
    dates: np.ndarray | None = None,
    indirect: np.ndarray | None = None,
) -> np.ndarray:
    """Cluster labels (0..k-1) from the checked candidate pairs (``founders``, numbered)."""
    return labels_of(founders(n, pairs, rank, dates, indirect))


def founders(
    n: int,
    pairs: Pairs,
    rank: np.ndarray,
    dates: np.ndarray | None = None,
    indirect: np.ndarray | None = None,
) -> np.ndarray:
    """Per quotation, the first-seen copy whose cluster it joins (itself if none).

    In first-seen order (``rank``), a quotation joins the cluster of the earliest checked
    partner that founded a cluster, if it is at most ``WINDOW_DAYS`` later: every member
    is a near-duplicate of the cluster's first-seen copy, so template sentences that drift
    day after day ("The Federal Reserve is expected to enter the government securities
    market to add reserves") do not chain into one cluster. A reported (indirect)
    statement whose copies fall on three or more dates is a recurring formula: it only
    groups copies of the same day. ``dates`` are YYYYMMDD ints (0: none, then no window
    applies).
    """
    labels = np.arange(n, dtype=np.int64)
    good = np.flatnonzero(pairs.ok)
    if not len(good):
        return labels
    partners: dict[int, list[int]] = {}
    for x, y in zip(pairs.lo[good].tolist(), pairs.hi[good].tolist(), strict=True):
        partners.setdefault(x, []).append(y)
        partners.setdefault(y, []).append(x)
    # plain Python values of the linked quotations only (this loop reads them one by one;
    # lists over all quotations would make the collector walk the heap)
    nodes = np.fromiter(partners, np.int64, len(partners))
    ranks = dict(zip(partners, rank[nodes].tolist(), strict=True))
    day_of = _day_numbers(dates[nodes]) if dates is not None else np.zeros(len(nodes), np.int64)
    days = dict(zip(partners, day_of.tolist(), strict=True))
    formula = set()
    if indirect is not None:
        flags = dict(zip(partners, indirect[nodes].tolist(), strict=True))
        for x, ps in partners.items():
            if flags[x] and len({days[y] for y in ps} | {days[x]}) >= 3:
                formula.add(x)
    joined: dict[int, int] = {}  # quotation -> the first-seen copy whose cluster it joined
    for x in sorted(partners, key=ranks.__getitem__):
        best, rx, dx = -1, ranks[x], days[x]
        for p in partners[x]:
            if ranks[p] >= rx or p in joined:
                continue  # later, or not a cluster's first-seen copy
            dp = days[p]
            if dp and dx and (dx - dp > WINDOW_DAYS or (p in formula and dx != dp)):
                continue
            if best < 0 or ranks[p] < ranks[best]:
                best = p
        if best >= 0:
            joined[x] = best
    if joined:
        labels[np.fromiter(joined, np.int64, len(joined))] = np.fromiter(
            joined.values(), np.int64, len(joined)
        )
    return labels


def reassign(
    n: int,
    base_founder: np.ndarray,
    pairs: Pairs,
    rank: np.ndarray,
    dates: np.ndarray | None = None,
    indirect: np.ndarray | None = None,
) -> np.ndarray:
    """``founders`` of a state made by ``relink`` (``pairs`` carries ``now`` and
    ``dirty``), from the base state's (``base_founder``, by base key index): only the
    quotations connected (through passing pairs) to one whose passing pairs changed are
    grouped again; the others keep their founder. Exactly ``founders``' answer: a
    quotation's founder depends only on the passing pairs, ranks and dates of its
    connected component, and keys fix dates and the order of quotations that stay."""
    now, dirty = pairs.now, pairs.dirty
    assert now is not None and dirty is not None
    out = np.arange(n, dtype=np.int64)
    f_now = now[base_founder] if len(base_founder) else np.zeros(0, np.int64)
    carry = (now >= 0) & (f_now >= 0)
    out[now[carry]] = f_now[carry]
    mark = np.zeros(n, dtype=bool)
    mark[dirty] = True  # (a founder that left: its members are survivors of its pairs)
    good = np.flatnonzero(pairs.ok)
    lo, hi = pairs.lo[good], pairs.hi[good]
    # the connected components of the marked quotations: grow along passing pairs
    count = int(mark.sum())
    while count:
        touch = mark[lo] != mark[hi]
        if not touch.any():
            break
        mark[lo[touch]] = True
        mark[hi[touch]] = True
    sel = mark[lo]
    if not sel.any():
        return out
    sub = Pairs(lo[sel], hi[sel], pairs.mask[good[sel]], np.ones(int(sel.sum()), dtype=bool),
                pairs.over_band, pairs.over_val, pairs.over_len, pairs.over_members)  # fmt: skip
    again = founders(n, sub, rank, dates, indirect)
    nodes = np.flatnonzero(mark)
    out[nodes] = again[nodes]
    return out


def labels_of(founder: np.ndarray) -> np.ndarray:
    """Cluster labels 0..k-1 from ``founders``, numbered in the founders' order (what
    ``np.unique`` would give; a founder is its own founder, so no sort is needed)."""
    n = len(founder)
    root = founder == np.arange(n)
    number = np.cumsum(root) - 1
    return number[founder].astype(np.int64)


def link(
    sig: np.ndarray,
    nsh: np.ndarray,
    speakers: list[str],
    figs: list[list[str]],
    dates: np.ndarray | None = None,
    indirect: np.ndarray | None = None,
    seen_order: np.ndarray | None = None,
) -> np.ndarray:
    """Cluster labels (0..k-1, one per quotation), computed from scratch.

    Candidates (a shared band value; ``pairs_full``) are checked (``CONTAINMENT``,
    speakers, figures), then grouped in first-seen order (``assign``; ``seen_order``: a
    rank per quotation, default their order).
    """
    n = len(nsh)
    rank = np.arange(n, dtype=np.int64) if seen_order is None else seen_order
    return assign(n, pairs_full(sig, nsh, speakers, figs, rank), rank, dates, indirect)


def cluster_id(quote_id: str) -> str:
    """The public id of a cluster whose first-seen quotation has this id."""
    return "c" + hashlib.blake2b(quote_id.encode("utf-8"), digest_size=6).hexdigest()


# -- per index state ---------------------------------------------------------


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over uint64s: every input bit reaches every output bit."""
    x = x.astype(np.uint64)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def quote_keys(data: QuoteData) -> np.ndarray:
    """A stable 64-bit key per quotation of a segment's data: its id, speaker, kind,
    figures and signature hashed, so a quotation keeps its key through merges (which
    renumber documents) and a re-indexed one whose content changed gets a new one."""
    if data.keys is None:
        n = len(data.ids)
        head = np.fromiter(
            (zlib.crc32(f"{i}\x1f{s}\x1f{' '.join(f)}".encode())
             for i, s, f in zip(data.ids, data.speakers, data.figures, strict=True)),
            dtype=np.uint64, count=n,
        )  # fmt: skip
        h = data.nsh.astype(np.uint64) | (data.indirect.astype(np.uint64) << np.uint64(32))
        sig = data.sig.astype(np.uint64)
        for p in range(NUM_PERM):
            h = (h ^ sig[:, p]) * np.uint64(0x100000001B3)
            if p % 8 == 7:
                h = _mix(h)
        data.keys = _mix(h) ^ (head << np.uint64(32))
    return data.keys


class _Rows:
    """Per-segment columns read by index state position (``src``: the segment, ``pos``:
    the row in it) without copying them into one: a state's linking reads the rows of the
    few quotations it looks at, and a cluster's id the id of one."""

    def __init__(self, columns: list[Any], src: np.ndarray, pos: np.ndarray) -> None:
        self.columns, self.src, self.pos = columns, src, pos

    def __len__(self) -> int:
        return len(self.src)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, (int, np.integer)):
            return self.columns[self.src[i]][self.pos[i]]
        i = np.asarray(i, dtype=np.int64)
        src, pos = self.src[i], self.pos[i]
        first = self.columns[0]
        out = np.empty((len(i), *first.shape[1:]), dtype=first.dtype)
        for p in npsets.unique(src).tolist():
            at = np.flatnonzero(src == p)
            out[at] = self.columns[p][pos[at]]
        return out

    def __iter__(self) -> Any:
        for p, q in zip(self.src.tolist(), self.pos.tolist(), strict=True):
            yield self.columns[p][q]


def segment_bands(data: QuoteData) -> tuple[np.ndarray, np.ndarray]:
    """A segment's LSH buckets: per band (row), its quotations' band values sorted
    and the rows in that order, made once per segment and process (``relink`` looks new
    and gone quotations' values up in them)."""
    if data.bands is None:
        bk = data.bk if data.bk is not None else band_keys(data.sig)
        data.bk = None
        order = np.argsort(bk, axis=0, kind="stable")
        # one row per band, contiguous: a lookup searches a row in place (a column of an
        # (n, BANDS) array would be copied by every ``searchsorted``: the whole segment)
        data.bands = (
            np.ascontiguousarray(np.take_along_axis(bk, order, axis=0).T),
            np.ascontiguousarray(order.astype(np.int32).T),
        )
    return data.bands


def _key_order(
    view: Any, parts: list[tuple[int, QuoteData]], gs: list[np.ndarray], pos: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The state's quotation keys (state positions) and its clusterable quotations in key
    order, merged from each segment's sorted keys (made once per segment and process)."""
    keys, runs = [], []
    start = 0
    for (_, data), g, keep in zip(parts, gs, pos, strict=True):
        if data.dated_keys is None:
            # the date is part of a quotation's key: it decides the first-seen order,
            # so an article indexed again under another date has new keys (its pairs
            # are made again)
            data.dated_keys = quote_keys(data) ^ _mix(view.date[g].astype(np.uint64))
            rows = np.flatnonzero(data.nsh > 0)
            data.key_rows = rows[np.argsort(data.dated_keys[rows], kind="stable")]
        keys.append(data.dated_keys[keep])
        # this segment's clusterable live quotations in key order (state positions)
        at = np.full(len(g), -1, dtype=np.int64)
        at[keep] = start + np.arange(len(keep))
        run = at[data.key_rows]
        runs.append(run[run >= 0])
        start += len(keep)
    cat = np.concatenate
    qkeys = cat(keys) if keys else np.zeros(0, np.uint64)
    # all in key order: a merge of the segments' sorted runs (a stable sort finds them)
    by_key = cat(runs) if runs else np.zeros(0, np.int64)
    return qkeys, by_key[np.argsort(qkeys[by_key], kind="stable")]


class Clusters:
    """The clusters of one index state (a ``docvalues.View``): a column of cluster
    numbers over global docnums, and per cluster its members in first-seen order.

    ``label[docnum]`` is the cluster number of a live quotation (-1 for any other
    document); cluster numbers are internal to this state, ``public_id`` names them.
    ``links`` are the state's checked candidate pairs by quotation key (the next state
    starts from them), ``how`` says how they were made: "saved" (this state's, read
    back), "incremental" (``relink`` from an earlier state's) or "full" (``pairs_full``).
    """

    def __init__(
        self,
        view: Any,
        parts: list[tuple[int, QuoteData]],
        base: Links | None = None,
        saved: np.ndarray | None = None,
    ) -> None:
        live = view.live
        datas = [data for _, data in parts]
        qdocs, nsh, indirect, src, pos, gs = [], [], [], [], [], []
        for p, (off, data) in enumerate(parts):
            g = data.docs.astype(np.int64) + off
            keep = np.flatnonzero(live[g]) if len(g) else np.zeros(0, np.int64)
            qdocs.append(g[keep])
            nsh.append(data.nsh[keep])
            indirect.append(data.indirect[keep])
            src.append(np.full(len(keep), p, dtype=np.int64))
            pos.append(keep)
            gs.append(g)
        cat = np.concatenate
        self.qdocs = cat(qdocs) if qdocs else np.zeros(0, np.int64)
        src_all = cat(src) if src else np.zeros(0, np.int64)
        pos_all = cat(pos) if pos else np.zeros(0, np.int64)
        self.ids = _Rows([d.ids for d in datas], src_all, pos_all)
        # first seen first: earliest date (dateless last), then article id, then position
        # (docnum order within an article)
        raw_dates = view.date[self.qdocs].astype(np.int64)
        dates = np.where(raw_dates == 0, 99999999, raw_dates)
        seen = np.lexsort((self.qdocs, view.tiebreak[self.qdocs], dates))
        rank = np.empty(len(seen), dtype=np.int64)
        rank[seen] = np.arange(len(seen))
        self.added = self.removed = 0
        if saved is not None and base is not None and len(saved) == len(self.qdocs):
            labels, self.links, self.how = saved, base, "saved"
        else:
            # the quotations' keys, only to link (using saved links needs none: ~60 ms of a
            # CLI quotes command on Reuters)
            qkeys, by_key = _key_order(view, parts, gs, pos)
            nshs = cat(nsh) if nsh else np.zeros(0, np.int32)
            speakers = _Rows([d.speakers for d in datas], src_all, pos_all)
            figs = _Rows([d.figures for d in datas], src_all, pos_all)
            got = None
            if base is not None and datas:
                sig = _Rows([d.sig for d in datas], src_all, pos_all)
                members_of = self._members_of(datas, src_all, pos_all, nshs)
                got = relink(base, qkeys, sig, nshs, speakers, figs, rank, members_of, by_key)
            flags = cat(indirect) if indirect else np.zeros(0, np.uint8)
            if got is not None:
                pairs, self.added, self.removed = got
                self.how = "incremental"
                if base.founder is not None:  # only what the change reached is re-grouped
                    founder = reassign(len(nshs), base.founder, pairs, rank, raw_dates, flags)
                else:
                    founder = founders(len(nshs), pairs, rank, raw_dates, flags)
            else:
                sigs = (cat([d.sig[p] for d, p in zip(datas, pos, strict=True)]) if datas
                        else np.zeros((0, NUM_PERM), np.uint32))  # fmt: skip
                pairs = pairs_full(sigs, nshs, speakers, figs, rank)
                pairs.by_key = by_key
                self.how = "full"
                founder = founders(len(nshs), pairs, rank, raw_dates, flags)
            labels = labels_of(founder)
            self.links = keyed(pairs, qkeys, nshs, founder)
        self.count = int(labels.max()) + 1 if len(labels) else 0
        self.label = np.full(view.size, -1, dtype=np.int64)
        self.label[self.qdocs] = labels
        order = np.lexsort((rank, labels))
        self._order = order  # indexes into qdocs, grouped by label, first seen first
        sizes = np.bincount(labels, minlength=self.count)
        self._start = np.concatenate(([0], np.cumsum(sizes)))
        self._sizes, self._labels, self._article_of = sizes, labels, view.article_of
        self._articles: np.ndarray | None = None
        self._by_id: dict[str, int] | None = None
        self._lock = threading.Lock()

    @staticmethod
    def _members_of(
        datas: list[QuoteData], src: np.ndarray, pos: np.ndarray, nsh: np.ndarray
    ) -> Any:
        """``relink``'s bucket lookup over the segments' sorted band values: the live
        clusterable quotations (state positions) with given values in a band."""
        at: list[np.ndarray] = []  # per segment: row -> state position (-1: not live)
        for p, data in enumerate(datas):
            m = np.full(len(data.docs), -1, dtype=np.int64)
            sel = np.flatnonzero(src == p)
            m[pos[sel]] = sel
            at.append(m)
            # a segment's sorted buckets cost more than a few scans of its band values: a
            # process that relinks once (a CLI command) scans, a server sorts them on the
            # second relink and looks values up from then on
            data.relinks += 1
            if data.bands is None and data.relinks == 1 and data.bk is None:
                data.bk = band_keys(data.sig)

        def members_of(b: int, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            found, vals = [], []
            for p, data in enumerate(datas):
                if data.bands is None and data.relinks == 1 and data.bk is not None:
                    rows = np.flatnonzero(_in_sorted(data.bk[:, b], values))
                    state = at[p][rows]
                    keep = state >= 0
                    found.append(state[keep])
                    vals.append(data.bk[rows[keep], b])
                    continue
                srt, order = segment_bands(data)
                col = srt[b]
                lo = np.searchsorted(col, values, "left")
                lens = np.searchsorted(col, values, "right") - lo
                total = int(lens.sum())
                if not total:
                    continue
                rows = np.arange(total) + np.repeat(lo - (np.cumsum(lens) - lens), lens)
                state = at[p][order[b, rows]]
                keep = state >= 0
                found.append(state[keep])
                vals.append(col[rows][keep])
            if not found:
                return np.zeros(0, np.int64), np.zeros(0, np.uint64)
            m, v = np.concatenate(found), np.concatenate(vals)
            use = nsh[m] > 0
            return m[use], v[use]

        return members_of

    @property
    def articles(self) -> np.ndarray:
        """Per cluster, how many articles carry it (made on first use: searches count the
        articles of the clusters they show, from their members)."""
        if self._articles is None:
            sizes, labels = self._sizes, self._labels
            multi = np.flatnonzero(sizes[labels] > 1)  # a single quotation is in one article
            art = self._article_of[self.qdocs[multi]]
            base = int(art.max()) + 2 if len(art) else 1
            pairs = npsets.unique(labels[multi] * base + (art + 1))
            self._articles = np.where(
                sizes > 1, np.bincount(pairs // base, minlength=self.count), 1
            )
        return self._articles

    def members(self, c: int) -> np.ndarray:
        """Global docnums of a cluster's quotations, first seen first."""
        return self.qdocs[self._order[self._start[c] : self._start[c + 1]]]

    def first(self, c: int) -> int:
        """Index (into ``ids``/``qdocs``) of a cluster's first-seen quotation."""
        return int(self._order[self._start[c]])

    def public_id(self, c: int) -> str:
        return cluster_id(self.ids[self.first(c)])

    def of_doc(self, docnum: int) -> int:
        return int(self.label[docnum])

    def resolve(self, public: str) -> int | None:
        """The cluster a public id names: its first-seen quotation's, or any member's
        (a link made before an earlier copy was indexed). None if unknown."""
        with self._lock:
            if self._by_id is None:
                by_id: dict[str, int] = {}
                labels = self.label[self.qdocs]
                for i, qid in enumerate(self.ids):
                    by_id.setdefault(cluster_id(qid), int(labels[i]))
                for c in range(self.count):  # the current id wins over a member's
                    by_id[self.public_id(c)] = c
                self._by_id = by_id
        return self._by_id.get(public)


class ClusterCache:
    """Per-segment signatures (mapped from ``.qmh`` files, or computed once and saved)
    and the clusters of the newest index states of one store."""

    def __init__(self, folder: Any) -> None:
        self.folder = folder
        self.segments: dict[str, QuoteData] = {}
        self.states: dict[tuple, Clusters] = {}
        self.lock = threading.Lock()
        self.builds = 0  # segments computed from stored fields (no valid file)
        self.last: Links | None = None  # the links of the last state made in this process

    def _segment(self, reader: Any) -> QuoteData:
        segid = reader.segment().segment_id()
        got = self.segments.get(segid)
        if got is not None:
            return got
        ndocs = reader.doc_count_all()
        src = dvstore.read(self.folder, segid, ndocs, ext=EXT) if self.folder else None
        data = _from_file(src) if src is not None else None
        if data is None:
            data = compute_segment(reader)
            self.builds += 1
            if self.folder is not None:
                try:
                    write_segment_file(self.folder, segid, ndocs, data)
                except OSError:  # a read-only index: keep them in memory only
                    pass
        self.segments[segid] = data
        return data

    def _saved_links(self) -> tuple[str, np.ndarray, Links] | None:
        """The links a process saved (``LINKS_FILE``): (its state, labels, links), if intact.

        Linking is the costly part of a state's clusters; every new process (each CLI
        command) would pay it again. The saved state is this one (its labels are used as
        they are) or an earlier one (``relink`` starts from its links). The file is derived
        data: missing, damaged (CRC) or made under other rules, the links are made again
        from the signatures (``pairs_full``).
        """
        if self.folder is None:
            return None
        try:
            with np.load(os.path.join(self.folder, LINKS_FILE)) as z:
                if str(z["rules"]) != LINK_RULES:
                    return None
                arrays = {name: np.asarray(z[name]) for name in _LINK_ARRAYS}
                state = str(z["state"])
                if int(z["crc"]) != _links_crc(state, arrays):
                    return None
        except Exception:  # noqa: BLE001 - missing or damaged in any way: linked again
            return None
        links = Links(**{k: v for k, v in arrays.items() if k != "labels"})
        links.ok = links.ok.astype(bool)
        return state, arrays["labels"].astype(np.int64), links

    def _save_links(self, state: str, labels: np.ndarray, links: Links) -> None:
        if self.folder is None:
            return
        arrays = {"labels": np.ascontiguousarray(labels, dtype=np.int64)}
        for name in _LINK_ARRAYS[1:]:
            arrays[name] = np.ascontiguousarray(getattr(links, name))
        arrays["ok"] = arrays["ok"].astype(np.uint8)
        tmp = os.path.join(self.folder, f".{LINKS_FILE}.{os.getpid()}.{threading.get_ident()}")
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, rules=np.array(LINK_RULES), state=np.array(state),
                         crc=np.array(_links_crc(state, arrays)), **arrays)  # fmt: skip
            os.replace(tmp, os.path.join(self.folder, LINKS_FILE))
        except OSError:  # a read-only index: linked again by the next process
            try:
                os.remove(tmp)
            except OSError:
                pass

    def clusters(self, searcher: Any, view: Any) -> Clusters:
        from newsquarry.search.engine.views import leaves_of

        leaves = leaves_of(searcher)
        key = tuple(
            (r.segment().segment_id(), r.segment().deleted_count(), off) for r, off in leaves
        )
        with self.lock:
            got = self.states.get(key)
            if got is not None:
                return got
            parts = [(off, self._segment(r)) for r, off in leaves]
            state = hashlib.sha1(f"{LINK_RULES} {key!r}".encode()).hexdigest()
            # the links to start from: this process's last state's, else the saved ones
            base, saved = self.last, None
            if base is None:
                loaded = self._saved_links()
                if loaded is not None:
                    base = loaded[2]
                    saved = loaded[1] if loaded[0] == state else None
            got = Clusters(view, parts, base, saved)
            if got.how != "saved":
                self._save_links(state, got.label[got.qdocs], got.links)
            self.last = got.links
            wanted = {segid for segid, _, _ in key}
            for segid in list(self.segments):
                if segid not in wanted:
                    del self.segments[segid]
            if len(self.states) >= 2:
                self.states.pop(next(iter(self.states)))
            self.states[key] = got
            return got


_LINK_ARRAYS = ("labels", "keys", "pi", "pj", "mask", "ok", "over_band", "over_val", "over_len",
                "over_members", "founder")  # fmt: skip


def _links_crc(state: str, arrays: dict[str, np.ndarray]) -> int:
    crc = zlib.crc32(state.encode())
    for name in _LINK_ARRAYS:
        a = np.ascontiguousarray(arrays[name])
        crc = zlib.crc32(f"{name} {a.dtype.str} {a.shape}".encode(), crc)
        crc = zlib.crc32(a.tobytes(), crc)
    return crc


_CACHES: weakref.WeakKeyDictionary[Any, ClusterCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def clusters_for(store: Any, searcher: Any | None = None) -> Clusters:
    """The quotation clusters of a store's current state (computed once per state)."""
    from newsquarry.search.engine.views import cache_for

    searcher = searcher if searcher is not None else store.searcher()
    with _CACHES_LOCK:
        cache = _CACHES.get(store)
        if cache is None:
            cache = _CACHES[store] = ClusterCache(getattr(store, "path", None))
            # from now on each state this process commits is linked in the commit, from
            # this one's links: the first quote search after it finds them made
            hooks = getattr(store, "after_commit", None)
            if hooks is not None and link_after_commit not in hooks:
                hooks.append(link_after_commit)
    return cache.clusters(searcher, cache_for(store).view(searcher))


def prepare(store: Any) -> None:
    """Sort the LSH buckets of every segment of the state a process linked (a server's
    warm-up, ``searching.warm_up``): made on a process's second ``relink`` otherwise,
    which is a commit's in a server (seconds at a million quotations, once per process)."""
    cache = _CACHES.get(store)
    if cache is None:
        return
    with cache.lock:
        for data in cache.segments.values():
            segment_bands(data)


class _Linker(Coalescing):
    """Links a store's newest state in a daemon thread, after its commits: the writer
    returns without waiting for it (at Reuters size the linking doubled a one-article
    write's CPU), and the first quote search finds the state linked, or, if it comes
    first, links it itself (the same work, under the cache's lock: never twice)."""

    thread_name = "newsquarry-clusters"

    def __init__(self, store: Any) -> None:
        super().__init__()
        self._store = weakref.ref(store)

    def run_once(self) -> None:
        FOREGROUND.wait_quiet()  # not beside a search: a quote search links what it needs
        store = self._store()
        if store is None:
            return
        try:
            link_now(store)
        except Exception:  # noqa: BLE001 - the first quote search links it (and reports)
            pass


_LINKERS: weakref.WeakKeyDictionary[Any, _Linker] = weakref.WeakKeyDictionary()


def link_now(store: Any) -> None:
    """Link the store's newest state now if this process linked an earlier one (from that
    one's links: proportional to the change, ``relink``, ``reassign``), and save the links
    for other processes. A process that never searched quotations does not pay it."""
    cache = _CACHES.get(store)
    if cache is not None and cache.last is not None:
        clusters_for(store)


def link_after_commit(store: Any) -> None:
    """After a commit of this process (``WhooshStore.after_commit``), or a state another
    process committed (the refresher): have the new state linked in the background
    (``link_now`` in a daemon thread, once no search has run for a moment), if this
    process linked an earlier one; returns at once."""
    cache = _CACHES.get(store)
    if cache is None or cache.last is None:
        return
    with _CACHES_LOCK:
        linker = _LINKERS.get(store)
        if linker is None:
            linker = _LINKERS[store] = _Linker(store)
    linker.request()


def wait_for_links(store: Any, timeout: float | None = None) -> bool:
    """Wait until the linking asked for by this process's commits is done (tests,
    benchmarks, a clean shutdown); False if ``timeout`` passed first."""
    linker = _LINKERS.get(store)
    return True if linker is None else linker.wait(timeout)


# -- what hits and the cluster endpoint show -----------------------------------


def _visible(clusters: Clusters, c: int, scope: np.ndarray | None) -> np.ndarray:
    members = clusters.members(c)
    return members if scope is None else members[scope[members]]


def _seen(searcher: Any, docnum: int) -> dict[str, Any]:
    """A quotation's place for "first seen": its id, article, date, source, title."""
    from newsquarry.search.engine.store import stored_document

    d = searcher.stored_fields(docnum)
    p = stored_document(searcher, d.get("passage_id", ""), "passage") or {}
    return {
        "id": d.get("id"),
        "article_id": d.get("article_id"),
        "date": d.get("date"),
        "source": d.get("source"),
        "title": p.get("title"),
    }


def describe_hits(
    searcher: Any,
    view: Any,
    clusters: Clusters,
    hits: list[Any],
    docnums: list[int],
    scope: np.ndarray | None = None,
) -> None:
    """Set each quote hit's ``cluster``, ``cluster_articles`` and ``first_seen``.

    ``scope`` (a mask of the quotations a read key may see) bounds both, so a scoped
    key never learns of articles outside it.
    """
    from newsquarry.search.query.facets import display_form

    for hit, d in zip(hits, docnums, strict=True):
        c = clusters.of_doc(d)
        if c < 0:
            continue
        members = _visible(clusters, c, scope)
        hit.cluster = clusters.public_id(c)
        arts = view.article_of[members]
        hit.cluster_articles = max(1, len(npsets.unique(arts[arts >= 0])))
        if hit.cluster_articles > 1:
            seen = _seen(searcher, int(members[0]))
            seen["source"] = display_form(view, "source", seen["source"])
            hit.first_seen = seen


def quote_cluster(store: Any, cluster: str, within: Any | None = None) -> dict[str, Any]:
    """A quotation cluster: canonical text, speakers, first seen, articles and sources.

    ``cluster`` is a cluster id (a quote hit's ``cluster``). ``within`` (a
    ``SearchRequest`` whose filters and dates a scoped read key imposes) keeps
    only the quotations inside it. ``NotFound`` for an unknown id, or one with no
    quotation inside ``within``.
    """
    from collections import Counter

    from newsquarry.search.core.errors import NotFound
    from newsquarry.search.core.ids import shorten
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.facets import build_filters, display_form

    searcher = store.searcher()
    view = cache_for(store).view(searcher)
    clusters = clusters_for(store, searcher)
    c = clusters.resolve(cluster) if isinstance(cluster, str) else None
    scope = None
    if within is not None:
        scope = build_filters(
            view, within.filters, within.date_from or None, within.date_to or None
        ).combined(view.doctype_mask("quote"))
    members = _visible(clusters, c, scope) if c is not None else np.zeros(0, np.int64)
    if not len(members):
        raise NotFound(f"no quotation cluster with id {shorten(str(cluster))!r}")
    quotes = []
    for d in members.tolist():
        seen = _seen(searcher, d)
        stored = searcher.stored_fields(d)
        data = json.loads(stored.get("data") or "{}")
        seen.update(
            text=stored.get("quote", ""),
            speaker=display_form(view, "speaker", data.get("speaker")),
            kind=data.get("kind") or stored.get("quote_kind"),
            passage_id=stored.get("passage_id"),
            source=display_form(view, "source", seen["source"]),
        )
        quotes.append(seen)
    # canonical: the wording most copies carry (compared as ``words``); ties: the longer,
    # then the first seen
    forms = Counter(" ".join(words(q["text"])) for q in quotes)
    canonical = min(
        range(len(quotes)),
        key=lambda i: (-forms[" ".join(words(quotes[i]["text"]))], -len(quotes[i]["text"]), i),
    )
    speakers = Counter(q["speaker"] for q in quotes if q["speaker"])
    sources = Counter(q["source"] for q in quotes if q["source"])
    articles = list(dict.fromkeys(q["article_id"] for q in quotes))
    return {
        "id": clusters.public_id(c),  # type: ignore[arg-type]
        "text": quotes[canonical]["text"],
        "speakers": [{"name": n, "count": k} for n, k in speakers.most_common()],
        "first_seen": quotes[0],
        "article_count": len(articles),
        "quote_count": len(quotes),
        "sources": [{"source": n, "count": k} for n, k in sources.most_common()],
        "quotes": quotes,
    }

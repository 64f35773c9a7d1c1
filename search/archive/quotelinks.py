"""Linking quotations into clusters: candidate pairs from signature bands, checked
(speakers, figures, dates), oriented to the first-seen copy, relinked per commit.
"""

from __future__ import annotations

import datetime
import hashlib
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsquarry.search.archive.quotesigs import (
    BANDS,
    CONTAINMENT,
    LONG,
    MAX_RUN,
    NUM_PERM,
    ROWS,
    SHORT_JACCARD,
    WINDOW_DAYS,
    QuoteData,
)
from newsquarry.search.core import npsets

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

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

import hashlib
import os
import threading
import weakref
import zlib
from typing import Any

import numpy as np

from newsquarry.search.archive.quotelinks import (
    Links,
    _in_sorted,
    _key_order,
    _Rows,
    band_keys,
    cluster_id,
    founders,
    keyed,
    labels_of,
    pairs_full,
    reassign,
    relink,
    segment_bands,
)
from newsquarry.search.archive.quotesigs import (
    EXT,
    LINK_RULES,
    LINKS_FILE,
    NUM_PERM,
    QuoteData,
    _from_file,
    compute_segment,
    write_segment_file,
)
from newsquarry.search.core import npsets
from newsquarry.search.core.background import FOREGROUND, Coalescing
from newsquarry.search.engine import dvstore
from newsquarry.search.engine.views import cache_for, leaves_of


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

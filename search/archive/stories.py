"""Stories: the articles of an index state that are copies of one another (syndication).

Each article's signature (``archive.storysigs``) is cut into ``BANDS`` bands; articles
sharing a band value are candidates (locality-sensitive hashing), and a candidate pair
is linked when

- the estimated share of the shorter text's shingles found in the longer is at least
  ``CONTAINMENT`` (so a copy cut short, or with a paragraph added, is still a copy),
- most of the shorter text's figures are in the longer (two templated reports that
  differ only in their amounts are two stories), and
- their dates are at most ``WINDOW_DAYS`` apart (when both are dated).

Linked articles form a story (connected components); its first publication is its
earliest dated article (ties: the smaller id). A story is named by its first article's
id. Linking is done per index state, on first use, and kept for the state: it reads the
mapped signature files only (no stored field), in time linear in the articles.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import threading
import weakref
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsquarry.search.archive import storysigs
from newsquarry.search.archive.quotesigs import NUM_PERM
from newsquarry.search.engine import dvstore
from newsquarry.search.engine.views import View, leaves_of

BANDS = 32
ROWS = NUM_PERM // BANDS
CONTAINMENT = 0.7
FIGURES = 0.8  # share of the shorter text's figures the longer must hold
WINDOW_DAYS = 7
MAX_RUN = 64  # articles sharing one band value beyond which it is boilerplate, no evidence
RULES = f"{BANDS} {CONTAINMENT} {FIGURES} {WINDOW_DAYS} {MAX_RUN} {storysigs.VERSION}"


@dataclass
class Stories:
    """The stories of one index state, over the view's article key ids."""

    label: np.ndarray  # per article key id: its story number (every article has one)
    size: np.ndarray  # per story number: live articles in it
    first: np.ndarray  # per story number: the article key id of its first publication
    similarity: np.ndarray  # per article key id: estimated Jaccard with its story's first
    # per article key id: estimated share of its word runs found in its story's first
    # (1.0: a copy as published, or cut short; lower: rewritten or added to)
    kept: np.ndarray
    article_keys: Sequence[str]  # per article key id: the article id
    sources: Mapping[int, str]  # article key id -> source, for grouped articles
    dates: Mapping[int, str]  # article key id -> date, for grouped articles
    live: np.ndarray  # per article key id: a live article

    def doc_labels(self, view: View) -> np.ndarray:
        """Per document of ``view``: its story number (-1 for none)."""
        art = view.article_of
        out = np.full(len(art), -1, dtype=np.int64)
        ok = (art >= 0) & (art < len(self.label))
        out[ok] = self.label[art[ok]]
        return out

    def story_id(self, n: int) -> str:
        return self.article_keys[int(self.first[n])]

    def copies(self, article_gid: int) -> int:
        """Other live articles carrying the story of this article."""
        if not 0 <= article_gid < len(self.label):
            return 0
        return int(self.size[self.label[article_gid]]) - 1

    def members(self, article_gid: int) -> list[int]:
        """The live articles of this article's story, first publication first."""
        if not 0 <= article_gid < len(self.label):
            return []
        n = self.label[article_gid]
        got = np.flatnonzero((self.label == n) & self.live)
        first = int(self.first[n])
        rest = sorted(
            (int(g) for g in got if g != first),
            key=lambda g: (self.dates.get(g) or "9999", self.article_keys[g]),
        )
        return [first, *rest] if self.live[first] else rest


def _days(dates: list[str]) -> np.ndarray:
    """Day numbers of ISO dates (``YYYY[-MM[-DD]]``; -1 when undated or unreadable)."""
    out = np.full(len(dates), -1, dtype=np.int64)
    for i, d in enumerate(dates):
        if not d:
            continue
        parts = (d[:10].split("-") + ["1", "1"])[:3]
        try:
            out[i] = dt.date(int(parts[0]), int(parts[1]), int(parts[2])).toordinal()
        except ValueError:
            continue
    return out


def _find(parent: np.ndarray, x: int) -> int:
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


def link(view: View, searcher: Any, folder: Any) -> Stories:
    """The stories of ``view``'s index state (``searcher`` its searcher)."""
    nart = view.nkeys["article_id"]
    keys = list(view.keys["article_id"][:nart])
    art_of = view.article_of
    gids, sigs, nsh, figs, dates, srcs = [], [], [], [], [], []
    for reader, off in leaves_of(searcher):
        data = storysigs.segment_data(folder, reader)
        if not len(data.docs):
            continue
        glob = data.docs.astype(np.int64) + off
        keep = np.flatnonzero(view.live[glob])
        gids.append(art_of[glob[keep]])
        sigs.append(data.sig[keep])
        nsh.append(data.nsh[keep])
        for i in keep.tolist():
            figs.append(data.figures[i])
            dates.append(data.dates[i])
            srcs.append(data.sources[i])
    gid = np.concatenate(gids) if gids else np.zeros(0, np.int64)
    sig = np.concatenate(sigs) if sigs else np.zeros((0, NUM_PERM), np.uint32)
    n = np.concatenate(nsh).astype(np.int64) if nsh else np.zeros(0, np.int64)
    day = _days(dates)
    roots = group(sig, n, figs, day)
    # every article key id gets a story: its own unless grouped
    label = np.arange(max(nart, 1), dtype=np.int64)[:nart]
    live = np.zeros(nart, dtype=bool)
    live[gid[gid >= 0]] = True
    similarity = np.ones(nart, dtype=np.float32)
    kept = np.ones(nart, dtype=np.float32)
    sources: dict[int, str] = {}
    when: dict[int, str] = {}
    order_day = np.where(day >= 0, day, np.iinfo(np.int64).max)
    grouped = np.flatnonzero(np.bincount(roots, minlength=len(gid))[roots] > 1)
    by_root: dict[int, list[int]] = {}
    for i in grouped.tolist():
        by_root.setdefault(int(roots[i]), []).append(i)
    for members in by_root.values():
        first = min(members, key=lambda i: (order_day[i], keys[int(gid[i])]))
        fg = int(gid[first])
        for i in members:
            g = int(gid[i])
            label[g] = fg
            j = float((sig[i] == sig[first]).mean())
            similarity[g] = j
            kept[g] = min(1.0, j / (1.0 + j) * (n[i] + n[first]) / max(1, n[i]))
            sources[g] = srcs[i]
            when[g] = dates[i]
    size = np.bincount(label[live], minlength=nart) if nart else np.zeros(0, np.int64)
    stories = Stories(
        label=label,
        size=size,
        first=np.arange(nart, dtype=np.int64),  # story number = its first article's key id
        similarity=similarity,
        kept=kept,
        article_keys=keys,
        sources=sources,
        dates=when,
        live=live,
    )
    return stories


def linked_pairs(
    sig: np.ndarray, nsh: np.ndarray, figs: list[list[str]], day: np.ndarray
) -> np.ndarray:
    """The (i, j) pairs of articles that are copies of each other (module docstring)."""
    pairs = _candidates(sig, nsh)
    if not len(pairs):
        return pairs
    a, b = pairs[:, 0], pairs[:, 1]
    agree = (sig[a] == sig[b]).mean(axis=1)
    inter = agree / (1.0 + agree) * (nsh[a] + nsh[b])
    contain = inter / np.maximum(1, np.minimum(nsh[a], nsh[b]))
    near = (day[a] < 0) | (day[b] < 0) | (np.abs(day[a] - day[b]) <= WINDOW_DAYS)
    ok = np.flatnonzero((contain >= CONTAINMENT) & near)
    fit = [
        _figures_fit(figs[int(a[i])], figs[int(b[i])], int(nsh[a[i]]) <= int(nsh[b[i]]))
        for i in ok.tolist()
    ]
    return pairs[ok[np.asarray(fit, dtype=bool)]] if len(ok) else pairs[:0]


def group(sig: np.ndarray, nsh: np.ndarray, figs: list[list[str]], day: np.ndarray) -> np.ndarray:
    """Per article (row), the smallest row of its story: connected components of the
    linked pairs."""
    parent = np.arange(len(nsh))
    for x, y in linked_pairs(sig, nsh.astype(np.int64), figs, day).tolist():
        rx, ry = _find(parent, x), _find(parent, y)
        if rx != ry:
            parent[max(rx, ry)] = min(rx, ry)
    return np.array([_find(parent, i) for i in range(len(nsh))], dtype=np.int64)


def _figures_fit(fa: list[str], fb: list[str], a_shorter: bool) -> bool:
    """Most of the shorter text's figures are in the longer (or it has none)."""
    short, long = (fa, fb) if a_shorter else (fb, fa)
    if not short:
        return True
    held = set(long)
    return sum(1 for f in short if f in held) >= FIGURES * len(short)


def _candidates(sig: np.ndarray, nsh: np.ndarray) -> np.ndarray:
    """(i, j) pairs, i < j, of groupable articles sharing a band value (at most
    ``MAX_RUN`` articles per value)."""
    rows = np.flatnonzero(nsh > 0)
    if len(rows) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    out = []
    s = sig[rows].astype(np.uint64)
    for b in range(BANDS):
        band = s[:, b * ROWS]
        for r in range(1, ROWS):
            band = (band << np.uint64(32)) | s[:, b * ROWS + r]
        order = np.argsort(band, kind="stable")
        vals = band[order]
        starts = np.flatnonzero(np.concatenate(([True], vals[1:] != vals[:-1])))
        sizes = np.diff(np.concatenate((starts, [len(vals)])))
        two = starts[sizes == 2]  # most shared values: one pair, taken at once
        out.append(np.stack((rows[order[two]], rows[order[two + 1]]), axis=1))
        more = (sizes > 2) & (sizes <= MAX_RUN)
        for st, size in zip(starts[more].tolist(), sizes[more].tolist(), strict=True):
            members = rows[order[st : st + size]]
            ii, jj = np.triu_indices(size, k=1)
            out.append(np.stack((members[ii], members[jj]), axis=1))
    if not out:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(out)
    pairs.sort(axis=1)
    return np.unique(pairs, axis=0)


_states: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # view -> Stories
_lock = threading.Lock()
# the stories of the last state linked (derived data), in ``engine.dvstore``'s format: one
# mapped file with a JSON header, read without the zip and the per-array headers of the
# ``.npz`` it replaced (2.5 ms of a fresh process's first search on Reuters)
_NAME, _EXT = "newsquarry_STORIES", ".sto"
FILE = _NAME + _EXT
OLD_FILE = "newsquarry_STORIES.npz"  # as saved before: read, then saved again as ``FILE``


def state_of(searcher: Any) -> str:
    """A name for an index state's articles: its segments and their deletions."""
    key = sorted((r.segment().segment_id(), r.segment().deleted_count()) for r, _ in
                 leaves_of(searcher))  # fmt: skip
    return hashlib.sha1(f"{RULES} {key!r}".encode()).hexdigest()


def stories_for(view: View, searcher: Any, folder: Any) -> Stories:
    """The stories of a view's index state: linked once per state, and saved in the index
    folder (``FILE``) so the next process of the same state (each CLI command) reads them
    instead of linking again."""
    with _lock:
        got = _states.get(view)
    if got is None:
        state = state_of(searcher)
        got = _load(view, folder, state)
        if got is None:
            got = link(view, searcher, folder)
            _save(got, view, folder, state)
        with _lock:
            _states[view] = got
    return got


class _Saved(Mapping[int, str]):
    """One column of a saved file's grouped articles (sources or dates), parsed from its
    JSON on first use: only an article's copies list shows them, never a search."""

    def __init__(self, load: Any) -> None:
        self._load = load
        self._data: dict[int, str] | None = None

    def _got(self) -> dict[int, str]:
        if self._data is None:
            self._data = self._load()
        return self._data

    def __getitem__(self, key: int) -> str:
        return self._got()[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self._got())

    def __len__(self) -> int:
        return len(self._got())


def _save(st: Stories, view: View, folder: Any, state: str) -> None:
    """Only grouped articles are written (most articles are a story of their own): by id
    (JSON, with their sources and dates) and, when the article key ids are this state's
    key table's (``View.key_table``), as key ids too, which the next process of the same
    state maps with numpy instead of looking every id up."""
    if folder is None:
        return
    grouped = np.flatnonzero(st.size[st.label] > 1) if len(st.label) else np.zeros(0, np.int64)
    grouped = grouped[st.live[grouped]]
    doc = {
        "state": state,
        "ids": [st.article_keys[g] for g in grouped.tolist()],
        "first": [st.article_keys[int(st.label[g])] for g in grouped.tolist()],
        "sources": [st.sources.get(int(g), "") for g in grouped.tolist()],
        "dates": [st.dates.get(int(g), "") for g in grouped.tolist()],
    }
    raw = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    table = view.key_table("article_id") or ""
    head = _head(state, table)
    gid = grouped.astype(np.int32)
    fid = st.label[grouped].astype(np.int32)
    sim = st.similarity[grouped].astype(np.float32)
    kept = st.kept[grouped].astype(np.float32)
    arrays = {"doc": np.frombuffer(raw, dtype=np.uint8), "sim": sim, "kept": kept,
              "gid": gid, "fid": fid}  # fmt: skip
    meta = {"state": state, "table": table, "crc": zlib.crc32(raw),
            "ids_crc": _ids_crc(head, gid, fid, sim, kept)}  # fmt: skip
    try:  # written whole under a temporary name, then renamed (no fsync: derived data)
        dvstore.write(folder, _NAME, 0, arrays, meta, ext=_EXT, durable=False)
    except OSError:  # a read-only index: linked again by the next process
        return
    try:
        os.remove(os.path.join(folder, OLD_FILE))
    except OSError:
        pass


def _head(state: str, table: str) -> bytes:
    return json.dumps({"state": state, "table": table}).encode("utf-8")


def _ids_crc(head: bytes, gid: np.ndarray, fid: np.ndarray, *more: np.ndarray) -> int:
    crc = zlib.crc32(fid.tobytes(), zlib.crc32(gid.tobytes(), zlib.crc32(head)))
    for a in more:
        crc = zlib.crc32(a.tobytes(), crc)
    return crc


def _read(view: View, folder: Any, state: str) -> tuple | None:
    """What ``_save`` wrote for this state, if intact: (the JSON document's bytes, the
    grouped articles' similarities and kept shares, their (key ids, first key ids) when
    valid in this process, else None; the document, when those are None; whether it
    came from the older file and should be saved again)."""
    src = dvstore.read(folder, _NAME, 0, ext=_EXT)
    if src is None:
        return _read_npz(view, folder, state)
    meta = src.meta
    raw = src.array("doc").tobytes()
    if meta.get("crc") != zlib.crc32(raw) or meta.get("state") != state:
        return None
    sim, kept, gid, fid = (src.array(n) for n in ("sim", "kept", "gid", "fid"))
    table = meta.get("table")
    if meta.get("ids_crc") != _ids_crc(_head(state, table or ""), gid, fid, sim, kept):
        return None
    sim, kept = np.asarray(sim, dtype=np.float32), np.asarray(kept, dtype=np.float32)
    if table and table == view.key_table("article_id"):
        return raw, sim, kept, (gid.astype(np.int64), fid.astype(np.int64)), None, False
    doc = json.loads(raw)
    return (raw, sim, kept, None, doc, False) if doc.get("state") == state else None


def _read_npz(view: View, folder: Any, state: str) -> tuple | None:
    """``_read`` of the ``.npz`` saved before (``OLD_FILE``)."""
    with np.load(os.path.join(folder, OLD_FILE)) as z:
        raw = np.asarray(z["doc"]).tobytes()
        if int(z["crc"]) != zlib.crc32(raw):
            return None
        sim = np.asarray(z["sim"], dtype=np.float32)
        kept_saved = np.asarray(z["kept"], dtype=np.float32)
        by_id = None  # (grouped, firsts) as key ids, when valid in this process
        if "head" in z.files:  # (saved before the key ids were without them)
            head = np.asarray(z["head"]).tobytes()
            gid = np.asarray(z["gid"], dtype=np.int64)
            fid = np.asarray(z["fid"], dtype=np.int64)
            if int(z["ids_crc"]) != _ids_crc(head, gid.astype(np.int32), fid.astype(np.int32)):
                return None
            saved = json.loads(head)
            if saved.get("state") != state:
                return None
            if saved.get("table") and saved["table"] == view.key_table("article_id"):
                by_id = (gid, fid)
    doc = json.loads(raw) if by_id is None else None
    if doc is not None and doc.get("state") != state:
        return None
    return raw, sim, kept_saved, by_id, doc, True


def _load(view: View, folder: Any, state: str) -> Stories | None:
    """The saved stories of this very state, if intact (derived data: missing, damaged or
    of another state, they are linked again)."""
    if folder is None:
        return None
    try:
        got = _read(view, folder, state)
    except Exception:  # noqa: BLE001 - missing or damaged in any way: linked again
        return None
    if got is None:
        return None
    raw, sim, kept_saved, by_id, doc, older = got
    nart = view.nkeys["article_id"]
    keys = view.keys["article_id"]  # (``nart`` of them, decoded if a copies list shows one)
    label = np.arange(nart, dtype=np.int64)
    similarity = np.ones(nart, dtype=np.float32)
    kept = np.ones(nart, dtype=np.float32)
    live = np.zeros(nart, dtype=bool)
    live[view.article_of[view.live & (view.article_of >= 0)]] = True
    if by_id is not None:
        g, f = by_id
        if len(g) != len(sim) or len(f) != len(sim):
            return None
        if len(g) and (g.min() < 0 or f.min() < 0 or g.max() >= nart or f.max() >= nart):
            return None  # not this view's key ids: linked again
        label[g] = f
        similarity[g] = sim
        kept[g] = kept_saved

        def column(name: str) -> Any:
            def load() -> dict[int, str]:
                values = json.loads(raw)[name]
                return dict(zip(g.tolist(), values, strict=True))

            return _Saved(load)

        size = np.bincount(label[live], minlength=nart) if nart else np.zeros(0, np.int64)
        first_of = np.arange(nart, dtype=np.int64)
        got = Stories(
            label, size, first_of, similarity, kept, keys, column("sources"), column("dates"), live
        )
        if older:  # the older file: saved again as ``FILE``, once
            _save(got, view, folder, state)
        return got
    ids = view.registries["article_id"].ids
    sources: dict[int, str] = {}
    when: dict[int, str] = {}
    for i, (aid, first) in enumerate(zip(doc["ids"], doc["first"], strict=True)):
        g, f = ids.get(aid), ids.get(first)
        if g is None or f is None or g >= nart or f >= nart:
            return None  # the saved ids are not this view's: linked again
        label[g] = f
        similarity[g] = sim[i]
        kept[g] = kept_saved[i]
        sources[g] = doc["sources"][i]
        when[g] = doc["dates"][i]
    size = np.bincount(label[live], minlength=nart) if nart else np.zeros(0, np.int64)
    first_of = np.arange(nart, dtype=np.int64)
    got = Stories(label, size, first_of, similarity, kept, keys, sources, when, live)
    if older and view.key_table("article_id"):  # saved again as ``FILE``, with key ids, once
        _save(got, view, folder, state)
    return got

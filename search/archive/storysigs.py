"""Article signatures per segment, for syndication: MinHash over word shingles of each
article's text, in a file beside each segment (an engine feature, ``engine.hooks``),
written by the commit that adds the segment and carried through merges.

Wire copy (AP, Reuters, AFP) is republished whole or lightly edited by many outlets: a
new headline, a paragraph dropped or added, the ending cut, the outlet's own line. Such
copies share most of their runs of words, where two different stories on one event share
names and phrases but few runs of four words. ``archive.stories`` links the signatures
of an index state into stories.

The file (``.smh``) holds, per article document of the segment: its local docnum, a
64-value MinHash signature of its distinct four-word shingles, the shingle count, and
(as JSON) its id, source, date and figures (numbers kept to tell apart templated
reports that differ only in their amounts). A segment without the file (written before
the feature, or the file lost) is computed from its stored articles instead.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsquarry.search.archive.quotesigs import NUM_PERM, figures, signatures, words
from newsquarry.search.engine import dvstore, hooks
from newsquarry.search.engine.blocks import segment_postings

EXT = ".smh"
VERSION = 1
SHINGLE = 4  # words per shingle
MIN_WORDS = 40  # shorter texts (briefs, tables, one-line notes) are never grouped
MAX_WORDS = 20_000  # a longer text is signed by its first words (bounded work)
_MUL = np.uint64(0x9E3779B97F4A7C15)


def article_shingles(text: str) -> tuple[np.ndarray, list[str]]:
    """The distinct four-word shingle hashes (uint64) of a text and its figures; no
    shingles for a text under ``MIN_WORDS`` words."""
    tokens = words(text or "")[:MAX_WORDS]
    figs = figures(tokens)
    if len(tokens) < MIN_WORDS:
        return np.zeros(0, dtype=np.uint64), figs
    h = np.fromiter((zlib.crc32(w.encode("utf-8")) for w in tokens), np.uint64, len(tokens))
    n = len(h) - SHINGLE + 1
    sh = h[:n].copy()
    for k in range(1, SHINGLE):  # a polynomial of the word hashes, modulo 2**64
        sh = sh * _MUL + h[k : k + n]
    return np.unique(sh), figs


@dataclass
class StoryData:
    """What story linking keeps of one segment's articles (parallel arrays)."""

    docs: np.ndarray  # local docnums of the article documents
    sig: np.ndarray  # (n, NUM_PERM) uint32 signatures
    nsh: np.ndarray  # distinct shingle counts (0: too short to group)
    ids: list[str]
    sources: list[str]
    dates: list[str]
    figures: list[list[str]]


def compute(records: list[tuple[int, str, str, str, str]]) -> StoryData:
    """Story data for articles given as (local docnum, id, text, source, date)."""
    flat, lens, figs = [], [], []
    for _, _, text, _, _ in records:
        sh, fg = article_shingles(text)
        flat.append(sh)
        lens.append(len(sh))
        figs.append(fg)
    n = np.asarray(lens, dtype=np.int64)
    allsh = np.concatenate(flat) if flat else np.zeros(0, dtype=np.uint64)
    return StoryData(
        docs=np.asarray([r[0] for r in records], dtype=np.int32),
        sig=signatures(allsh, n),
        nsh=n.astype(np.int32),
        ids=[r[1] for r in records],
        sources=[r[3] for r in records],
        dates=[r[4] for r in records],
        figures=figs,
    )


def segment_records(reader: Any) -> list[tuple[int, str, str, str, str]]:
    """(local docnum, id, text, source, date) of every article document of a segment
    (deleted ones included: segments are immutable, deletions are masked later)."""
    schema = reader.schema
    found, _ = segment_postings(reader, "doctype", schema["doctype"].to_bytes("article"))
    out = []
    for docnum in sorted(set(found.tolist())):
        d = reader.stored_fields(docnum)
        try:
            data = json.loads(d.get("data") or "{}")
        except ValueError:
            data = {}
        out.append((docnum, d.get("id") or "", str(data.get("text") or ""),
                    str(data.get("source") or ""), str(data.get("date") or "")))  # fmt: skip
    return out


def compute_segment(reader: Any) -> StoryData:
    return compute(segment_records(reader))


def write_segment_file(folder: Any, segid: str, ndocs: int, data: StoryData) -> None:
    strings = json.dumps(
        {"ids": data.ids, "sources": data.sources, "dates": data.dates, "figures": data.figures},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
    arrays = {
        "docs": data.docs,
        "sig": data.sig.reshape(-1),
        "nsh": data.nsh,
        "strings": np.frombuffer(strings, dtype=np.uint8),
    }
    meta = {"version": VERSION, "perm": NUM_PERM, "shingle": SHINGLE, "min": MIN_WORDS}
    dvstore.write(folder, segid, ndocs, arrays, meta, ext=EXT)


def _from_file(src: Any) -> StoryData | None:
    meta = src.meta
    if (meta.get("version"), meta.get("perm"), meta.get("shingle"), meta.get("min")) != (
        VERSION, NUM_PERM, SHINGLE, MIN_WORDS,
    ):  # fmt: skip
        return None
    strings = src.json("strings")
    docs = np.array(src.array("docs"))
    return StoryData(
        docs=docs,
        sig=src.array("sig").reshape(len(docs), NUM_PERM),
        nsh=src.array("nsh"),
        ids=strings["ids"],
        sources=strings["sources"],
        dates=strings["dates"],
        figures=strings["figures"],
    )


_segments = dvstore.SegmentCache(EXT, _from_file, compute_segment)


def segment_data(folder: Any, reader: Any) -> StoryData:
    """A committed segment's story data: kept per segment (segments never change), from
    its file, else from its stored articles through ``reader``."""
    return _segments.get(folder, reader)


def write_merged(
    folder: Any, merged: Any, sources: list[Any], datas: list[StoryData], maps: list[Any]
) -> None:
    """A merged segment's file from its sources' (``maps`` as ``merging._merge`` gives
    them: per source, (segment id, deletions, first new docnum, live docnums in order))."""
    docs, sigs, nsh = [], [], []
    ids: list[str] = []
    srcs: list[str] = []
    dates: list[str] = []
    figs: list[list[str]] = []
    for seg, data, (_sid, _deleted, base, live) in zip(sources, datas, maps, strict=True):
        mapped = dvstore.merge_positions(seg, live, base, data.docs)
        keep = np.flatnonzero(mapped >= 0)
        docs.append(mapped[keep])
        sigs.append(data.sig[keep])
        nsh.append(data.nsh[keep])
        for i in keep.tolist():
            ids.append(data.ids[i])
            srcs.append(data.sources[i])
            dates.append(data.dates[i])
            figs.append(data.figures[i])
    out = StoryData(
        docs=np.concatenate(docs).astype(np.int32) if docs else np.zeros(0, np.int32),
        sig=np.concatenate(sigs) if sigs else np.zeros((0, NUM_PERM), np.uint32),
        nsh=np.concatenate(nsh).astype(np.int32) if nsh else np.zeros(0, np.int32),
        ids=ids,
        sources=srcs,
        dates=dates,
        figures=figs,
    )
    write_segment_file(folder, merged.segment_id(), merged.doc_count_all(), out)


class StorySignatures(dvstore.SegmentFileFeature):
    """Article signatures as an engine feature: a ``.smh`` file per segment."""

    name = "story-signatures"
    ext = EXT

    compute = staticmethod(compute_segment)
    parse = staticmethod(_from_file)
    save = staticmethod(write_segment_file)
    merged = staticmethod(write_merged)


hooks.register(StorySignatures())

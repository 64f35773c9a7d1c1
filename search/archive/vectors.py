"""Passage and quotation vectors per segment (search by meaning), an engine feature.

Vectors are computed at enrichment (``ingest.enrich.pipeline``, in the worker processes or
on Dask workers, in batches, outside the write lock) and ride on the passages
(``core.embedding.attach``). A commit writes, for the segment it adds, a ``.vec`` file
(``engine.dvstore`` format: mapped, no parsing) holding the local docnums that have a
vector and their unit vectors as float16 (768 bytes each: 768 MB per million passages).
The file is named after its segment, so the commit's manifest checksums it like every
segment file; a background merge carries the rows of live documents over; a deleted
document's row is masked by the view, as every doc value is.

An index written without the semantic extra has no ``.vec`` files (or files missing some
rows): it opens and searches by words as before, and ``embed`` (``newsquarry embed``)
adds the missing vectors segment by segment: each segment is encoded outside the lock,
then its file is written and committed (a new generation, so every process sees it), so an
interrupted run keeps what it committed and the next run goes on from there.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from newsquarry.search.core import embedding
from newsquarry.search.engine import dvstore, hooks, integrity
from newsquarry.search.engine.blocks import segment_postings

EXT = ".vec"
VERSION = 1
_DOCTYPES = ("passage", "quote")


@dataclass
class SegmentVectors:
    """One segment's vectors: local docnums (sorted) and their rows (n x DIM float16)."""

    docs: np.ndarray
    vecs: np.ndarray

    @classmethod
    def empty(cls) -> SegmentVectors:
        return cls(np.zeros(0, np.int32), np.zeros((0, embedding.DIM), embedding.DTYPE))


def write_segment_file(folder: Any, segid: str, ndocs: int, data: SegmentVectors) -> None:
    order = np.argsort(data.docs, kind="stable")
    meta = {"version": VERSION, "model": embedding.MODEL, "dim": embedding.DIM}
    arrays = {
        "docs": data.docs[order].astype(np.int32),
        "vecs": np.ascontiguousarray(data.vecs[order], dtype=embedding.DTYPE),
    }
    dvstore.write(folder, segid, ndocs, arrays, meta, ext=EXT)


def _from_file(src: Any) -> SegmentVectors | None:
    meta = src.meta
    if meta.get("version") != VERSION or meta.get("model") != embedding.MODEL:
        return None
    docs = src.array("docs")
    return SegmentVectors(docs, src.array("vecs").reshape(len(docs), meta["dim"]))


_cache: OrderedDict[tuple, SegmentVectors] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SEGMENTS = 512


def segment_vectors(folder: Any, segid: str, ndocs: int) -> SegmentVectors:
    """A segment's vectors (empty when it has no valid file), kept per file identity: a
    file ``embed`` rewrote is read again."""
    path = Path(folder) / dvstore.file_name(segid, EXT)
    try:
        st = os.stat(path)
    except OSError:
        return SegmentVectors.empty()
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _cache_lock:
        got = _cache.get(key)
    if got is not None:
        return got
    src = dvstore.read(folder, segid, ndocs, ext=EXT)
    got = (_from_file(src) if src is not None else None) or SegmentVectors.empty()
    with _cache_lock:
        _cache[key] = got
        while len(_cache) > _CACHE_SEGMENTS:
            _cache.popitem(last=False)
    return got


def wanted_docs(reader: Any) -> np.ndarray:
    """Local docnums of a segment's live passage and quotation documents (sorted)."""
    schema = reader.schema
    found = [segment_postings(reader, "doctype", schema["doctype"].to_bytes(t))[0]
             for t in _DOCTYPES]  # fmt: skip
    docs = np.unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
    seg = reader.segment()
    if seg is not None and seg.has_deletions():
        deleted = np.fromiter(seg.deleted_docs(), dtype=np.int64)
        docs = docs[~np.isin(docs, deleted)]
    return docs.astype(np.int64)


def missing_docs(folder: Any, reader: Any) -> np.ndarray:
    """The live passages and quotations of a segment that have no vector."""
    seg = reader.segment()
    have = segment_vectors(folder, seg.segment_id(), seg.doc_count_all()).docs
    want = wanted_docs(reader)
    return want[~np.isin(want, have)]


# -- the commit: vectors the enrichment attached, by document --------------------------


def capture(writer: Any) -> None:
    """Record the local docnum of each passage and quotation the writer adds (its own new
    segment), for the commit to put their vectors in the segment's file."""
    writer._nq_vec_docs = []  # (docnum, id)
    writer._nq_vectors = {}  # document id -> vector (``VectorFeature.put``)
    original = writer.add_document

    def add_document(**fields: Any) -> Any:
        if fields.get("doctype") in _DOCTYPES:
            writer._nq_vec_docs.append((writer.docnum, fields.get("id")))
        return original(**fields)

    writer.add_document = add_document
    copied: list[SegmentVectors] = []  # rows of segments merged into this one (optimize)
    add_reader = writer.add_reader

    def add_reader_with_vectors(reader: Any) -> Any:
        # Whoosh copies a segment's live documents, in order, from the writer's docnum on
        base, seg = writer.docnum, getattr(reader, "segment", lambda: None)()
        if seg is not None:
            sv = segment_vectors(writer.storage.folder, seg.segment_id(), seg.doc_count_all())
            if len(sv.docs):
                live = np.fromiter(reader.all_doc_ids(), dtype=np.int64)
                pos = np.minimum(np.searchsorted(live, sv.docs), max(len(live) - 1, 0))
                ok = (live[pos] == sv.docs) if len(live) else np.zeros(len(sv.docs), bool)
                copied.append(SegmentVectors((base + pos[ok]).astype(np.int32),
                                             np.array(sv.vecs[ok])))  # fmt: skip
        return add_reader(reader)

    writer.add_reader = add_reader_with_vectors
    own = getattr(getattr(writer, "newsegment", None), "segment_id", lambda: None)()
    commit_toc = writer._commit_toc

    def commit_with_vectors(segments: list[Any]) -> None:
        for seg in segments:
            if seg.segment_id() != own:
                continue
            rows = [(d, writer._nq_vectors[i]) for d, i in writer._nq_vec_docs
                    if i in writer._nq_vectors]  # fmt: skip
            parts = [SegmentVectors(np.asarray([d for d, _ in rows], np.int32),
                                    np.stack([v for _, v in rows]))] if rows else []  # fmt: skip
            parts += copied
            if parts:
                data = SegmentVectors(
                    np.concatenate([p.docs for p in parts]), np.concatenate([p.vecs for p in parts])
                )
                write_segment_file(
                    writer.storage.folder, seg.segment_id(), seg.doc_count_all(), data
                )
        commit_toc(segments)

    writer._commit_toc = commit_with_vectors


def write_merged(
    folder: Any, merged: Any, sources: list[Any], datas: list[SegmentVectors], maps: list[Any]
) -> None:
    """A merged segment's vectors, carried over from its sources' live rows."""
    docs, vecs = [], []
    for seg, data, (_sid, _deleted, base, live) in zip(sources, datas, maps, strict=True):
        if not len(data.docs):
            continue
        new = np.full(seg.doc_count_all(), -1, dtype=np.int64)
        new[np.asarray(live, dtype=np.int64)] = base + np.arange(len(live))
        mapped = new[data.docs]
        keep = np.flatnonzero(mapped >= 0)
        docs.append(mapped[keep])
        vecs.append(np.asarray(data.vecs[keep]))
    if docs and sum(len(d) for d in docs):
        out = SegmentVectors(np.concatenate(docs).astype(np.int32), np.concatenate(vecs))
        write_segment_file(folder, merged.segment_id(), merged.doc_count_all(), out)


# -- embed: vectors for what was indexed without them ----------------------------------


@dataclass
class EmbedProgress:
    """Where ``embed`` stands: documents to encode, encoded, segments written."""

    total: int = 0
    done: int = 0
    segments: int = 0
    commits: int = 0


def _texts(reader: Any, docs: np.ndarray) -> list[str]:
    out = []
    for d in docs.tolist():
        f = reader.stored_fields(int(d))
        if f.get("doctype") == "passage":
            out.append(embedding.passage_text(f.get("title"), f.get("text") or ""))
        else:
            out.append(f.get("quote") or "")
    return out


def _replace_file(store: Any, segid: str, ndocs: int, data: SegmentVectors) -> None:
    """Write a segment's new ``.vec`` file and its entry in the current manifest (under the
    write lock); the caller's empty commit then carries the entry into a new generation."""
    folder = Path(store.path)
    write_segment_file(folder, segid, ndocs, data)
    integrity.enter_segment_file(folder, store.generation, segid, dvstore.file_name(segid, EXT))


def embed(
    store: Any,
    on_progress: Callable[[EmbedProgress], None] | None = None,
    batch: int = 2048,
    every: bool = False,
) -> EmbedProgress:
    """Add vectors to every live passage and quotation that has none, segment by segment
    (``batch`` documents encoded per step; each segment committed once done, so an
    interrupted run keeps what it committed); ``every``: encode them all again (after a
    change of model or of what is encoded). Raises ``SemanticUnavailable`` without the
    semantic extra."""
    embedding.require()
    progress = EmbedProgress()
    searcher = store.searcher()
    todo = []
    for reader, _off in searcher.ixreader.leaf_readers():
        if reader.segment() is None:
            continue
        miss = wanted_docs(reader) if every else missing_docs(store.path, reader)
        if len(miss):
            todo.append((reader.segment().segment_id(), miss))
            progress.total += len(miss)
    if on_progress:
        on_progress(progress)
    for segid, miss in todo:
        seg_reader = _reader_of(store.searcher(), segid)
        if seg_reader is None:  # merged away meanwhile: its rows are in the merged segment's
            continue  # ... or missing there, for the next run
        parts = []
        for i in range(0, len(miss), batch):
            part = miss[i : i + batch]
            parts.append(embedding.encode(_texts(seg_reader, part)))
            progress.done += len(part)
            if on_progress:
                on_progress(progress)
        new = SegmentVectors(miss.astype(np.int32), np.concatenate(parts))
        with store.writer() as session:
            reader = _reader_of(session._searcher, segid)
            if reader is None:
                continue
            seg = reader.segment()
            old = segment_vectors(store.path, segid, seg.doc_count_all())
            if every:
                old = SegmentVectors.empty()
            data = SegmentVectors(
                np.concatenate([old.docs, new.docs]).astype(np.int32),
                np.concatenate([np.asarray(old.vecs), new.vecs]),
            )
            _replace_file(store, segid, seg.doc_count_all(), data)
            session.changed = True  # an empty commit: every process moves to the new file
        progress.segments += 1
        progress.commits += 1
        if on_progress:
            on_progress(progress)
    return progress


def _reader_of(searcher: Any, segid: str) -> Any:
    for reader, _off in searcher.ixreader.leaf_readers():
        seg = reader.segment()
        if seg is not None and seg.segment_id() == segid:
            return reader
    return None


def coverage(store: Any, searcher: Any) -> tuple[int, int]:
    """(live passages and quotations with a vector, without one)."""
    have = lack = 0
    for reader, _off in searcher.ixreader.leaf_readers():
        if reader.segment() is None:
            continue
        seg = reader.segment()
        vec = segment_vectors(store.path, seg.segment_id(), seg.doc_count_all()).docs
        want = wanted_docs(reader)
        n = int(np.count_nonzero(np.isin(want, vec)))
        have += n
        lack += len(want) - n
    return have, lack


class VectorFeature(hooks.Feature):
    """Passage and quotation vectors as an engine feature: a ``.vec`` file per segment."""

    name = "vectors"
    segment_exts = (EXT,)
    rebuilt_exts = (EXT,)  # a damaged file is rebuilt (``rebuild``), no article re-read

    def writer_opened(self, writer: Any) -> None:
        capture(writer)

    def put(self, session: Any, article: Any, passages: list[Any]) -> None:
        vectors = session._writer._nq_vectors
        for p in passages:
            vec, quotes = embedding.attached(p)
            if vec is not None:
                vectors[p.id] = vec
            for n, q in enumerate(quotes, start=1):
                if q is not None:
                    vectors[f"{p.id}#q{n}"] = q

    def survivor(
        self, folder: Any, segment: Any
    ) -> Callable[[dict[str, int], list[Any]], None] | None:
        """The vectors of a surviving segment's passages and quotations, attached to them
        again as enrichment attaches them (a repair re-encodes nothing that survived)."""
        got = segment_vectors(folder, segment.segment_id(), segment.doc_count_all())
        if not len(got.docs):
            return None
        row = {int(d): i for i, d in enumerate(got.docs.tolist())}

        def vector(docnums: dict[str, int], doc_id: str) -> np.ndarray | None:
            i = row.get(docnums.get(doc_id, -1))
            return None if i is None else np.array(got.vecs[i])

        def give(docnums: dict[str, int], passages: list[Any]) -> None:
            for p in passages:
                quotes = [vector(docnums, f"{p.id}#q{n}") for n in range(1, len(p.quotes) + 1)]
                vec = vector(docnums, p.id)
                if vec is not None or any(q is not None for q in quotes):
                    embedding.attach(p, vec, quotes)

        return give

    def merge_source(self, folder: Any, segment: Any, reader: Any) -> SegmentVectors:
        got = segment_vectors(folder, segment.segment_id(), segment.doc_count_all())
        return SegmentVectors(np.array(got.docs), np.array(got.vecs))  # before the file goes

    def write_merged(
        self, work: Any, merged: Any, sources: list[Any], data: list[Any], maps: Any
    ) -> None:
        write_merged(work, merged, sources, data, maps)

    def rebuild(self, folder: Any, searcher: Any) -> None:
        """Damaged ``.vec`` files are re-encoded from the stored texts (with the semantic
        extra), else removed from the index's files (``newsquarry embed`` adds them later)."""
        gen = max(integrity.toc_generations(Path(folder)))
        try:
            manifest = integrity.read_manifest(Path(folder), gen)
        except (integrity.ManifestMissing, ValueError, OSError):
            return
        changed = False
        for reader, _off in searcher.ixreader.leaf_readers():
            seg = reader.segment()
            if seg is None:
                continue
            name = dvstore.file_name(seg.segment_id(), EXT)
            entry = manifest.files.get(name)
            path = Path(folder) / name
            if entry is None or _intact(path, entry):
                continue
            if embedding.installed():
                docs = wanted_docs(reader)
                data = SegmentVectors(docs.astype(np.int32), embedding.encode(_texts(reader, docs)))
                write_segment_file(folder, seg.segment_id(), seg.doc_count_all(), data)
                size, crc = integrity.crc32_file(path)
                manifest.files[name] = {"size": size, "crc32": crc}
            else:
                path.unlink(missing_ok=True)
                del manifest.files[name]
                for s in manifest.segments:
                    if s["id"] == seg.segment_id():
                        s["files"] = [f for f in s["files"] if f != name]
            changed = True
        if changed:
            integrity.write_manifest_file(Path(folder), manifest)
            integrity.VERIFIER.learn(Path(folder), manifest)

    def stats(self, store: Any, searcher: Any) -> dict[str, Any]:
        have, lack = coverage(store, searcher)
        return {"vectors": {"model": embedding.MODEL, "with": have, "without": lack}}


def _intact(path: Path, entry: dict[str, int]) -> bool:
    try:
        size, crc = integrity.crc32_file(path)
    except OSError:
        return False
    return size == entry["size"] and crc == entry["crc32"]


hooks.register(VectorFeature())

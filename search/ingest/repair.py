"""Rebuild a damaged index from what survives (``newsquarry repair``).

What survives: every live article of every segment that ``check_index`` found
intact, read back from its stored records (the article record holds the whole
text and metadata, each passage record its offsets, entities and quotes, so
the documents written again are the ones first written; an article whose
record no longer gives its content hash is treated as lost). Deleted and
replaced documents stay out: which documents are deleted comes from the
table of contents, or from the manifest's copy of it when the TOC itself is
damaged.

What the user gives again: original files (any format ``newsquarry index``
reads). Each article in them that did not survive is read, split and
enriched again; articles that did survive are left as they are.

The rebuild is written as a new index in a hidden subfolder, ``.repair``, then
installed as the next generation of the index: its segment files are moved
into the index folder and its table of contents written there under the next
generation number (with its checksums), the rename of which is the commit, as
for any write. Readers see the damaged generation until then and the repaired
one after; a repair killed midway leaves the index as it was (the subfolder
is removed by the next repair). Finally the damaged files are deleted and the
index is checked again.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh.codec.whoosh3 import W3Codec, W3Segment
from whoosh.filedb.filestore import FileStorage
from whoosh.index import TOC, clean_files
from whoosh.reading import SegmentReader

from newsquarry.search.core.durability import fsync_path
from newsquarry.search.core.errors import IndexUnavailable, NotEnoughSpace
from newsquarry.search.core.models import Article, Entity, Passage, Quote, from_record
from newsquarry.search.engine import check as checking
from newsquarry.search.engine import hooks, integrity
from newsquarry.search.engine.locking import WriteLock
from newsquarry.search.engine.merging import free_bytes, segment_bytes
from newsquarry.search.engine.schema import build_schema
from newsquarry.search.engine.storage import DurableFileStorage
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import default_enricher, index_articles
from newsquarry.search.ingest.readers import ReadFailure, Skipped, read_paths

INDEX_NAME = integrity.INDEX_NAME
WORK_DIR = ".repair"


@dataclass
class RepairReport:
    """What ``repair`` did."""

    path: str
    generation_before: int | None
    generation_after: int | None = None
    damage: list[dict[str, Any]] = field(default_factory=list)  # check's problems before
    kept: int = 0  # articles rebuilt from intact segments
    recovered: list[str] = field(default_factory=list)  # lost, indexed again from files
    added: list[str] = field(default_factory=list)  # from files, not known to be lost
    lost: list[str] = field(default_factory=list)  # known lost, not in the files given
    unknown: list[str] = field(default_factory=list)  # damaged segments with unknown articles
    failed: list[dict[str, str]] = field(default_factory=list)  # files that could not be read
    rebuilt: list[str] = field(default_factory=list)  # features' files rebuilt (alias table)
    repaired: bool = False
    clean_after: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "repaired": self.repaired,
            "clean_after": self.clean_after,
            "generation_before": self.generation_before,
            "generation_after": self.generation_after,
            "damage": self.damage,
            "kept": self.kept,
            "recovered": self.recovered,
            "added": self.added,
            "lost": self.lost,
            "segments_with_unknown_articles": self.unknown,
            "failed": self.failed,
            "rebuilt": self.rebuilt,
        }


def _segments(folder: Path, report: checking.CheckReport) -> list[Any] | None:
    """The segments of the damaged generation with their deletions (TOC, else manifest)."""
    if report.toc_ok and report.generation is not None:
        try:
            return list(checking._read_toc(folder, report.generation).segments)
        except Exception:  # noqa: BLE001 - fall back to the manifest's copy
            pass
    manifest = report.manifest
    if manifest is None:
        return None
    codec = W3Codec()
    out = []
    prefix = f"{INDEX_NAME}_"
    for entry in manifest.segments:
        seg = W3Segment(
            codec,
            INDEX_NAME,
            doccount=entry["docs"],
            segid=entry["id"][len(prefix) :],
            deleted=set(entry["deleted"]) or None,
        )
        seg.compound = (entry["id"] + integrity.SEGMENT_EXT) in entry["files"]
        out.append(seg)
    return out


def _article_from_records(art: dict[str, Any], passages: list[dict[str, Any]]) -> Any:
    """An (Article, passages) pair rebuilt from stored records; None if they disagree."""
    data = json.loads(art["data"])
    article = Article(
        id=art["id"],
        title=data.get("title") or "",
        text=data["text"],
        source=data.get("source"),
        date=data.get("date"),
        url=data.get("url"),
        author=data.get("author"),
        path=data.get("path"),
        fields=data.get("fields") or {},
    )
    if article.content_hash != art.get("content_hash"):
        return None
    out = []
    for doc in sorted(passages, key=lambda d: d["position"]):
        extra = json.loads(doc.get("data") or "{}")
        out.append(
            Passage(
                id=doc["id"],
                article_id=doc["article_id"],
                position=doc["position"],
                start=doc["start"],
                end=doc["end"],
                text=doc["text"],
                entities=[from_record(Entity, e) for e in extra.get("entities", [])],
                quotes=[from_record(Quote, q) for q in extra.get("quotes", [])],
            )
        )
    if len(out) != data.get("passages", len(out)):
        return None
    return article, out


def _stored_articles(
    reader: Any,
) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]], dict[str, int]]]:
    """Each live article of a segment: its stored article record, passage records, and its
    documents' ids -> local docnums."""
    for article_id in list(reader.lexicon("article_id")):
        # live documents only: the reader leaves deleted ones out
        docs = list(reader.postings("article_id", article_id).all_ids())
        stored = [reader.stored_fields(d) for d in docs]
        art = next((d for d in stored if d.get("doctype") == "article"), None)
        if art is not None:
            docnums = {s["id"]: d for d, s in zip(docs, stored, strict=True) if "id" in s}
            yield art, [d for d in stored if d.get("doctype") == "passage"], docnums


class _Survivors:
    """The live articles of intact segments, read one article at a time (bounded memory).

    Iterating yields (Article, stored passages); afterwards ``ids`` holds the
    articles yielded, ``rejected`` those whose records disagree with their
    content hash, ``unreadable`` the segments that failed while being read
    (articles read from them before the failure verified, and are kept).
    """

    def __init__(self, folder: Path, segments: list[Any], damaged: set[str]) -> None:
        self.folder = folder
        self.segments = segments
        self.damaged = damaged
        self.ids: set[str] = set()
        self.rejected: set[str] = set()
        self.unreadable: set[str] = set()

    def __iter__(self) -> Iterator[tuple[Article, list[Passage]]]:
        storage = DurableFileStorage(str(self.folder), verify=False)
        schema = build_schema()
        for seg in self.segments:
            sid = seg.segment_id()
            if sid in self.damaged:
                continue
            try:
                reader = SegmentReader(storage, schema, seg)
            except Exception:  # noqa: BLE001 - a segment that cannot be opened is damaged
                self.unreadable.add(sid)
                continue
            # what features keep of these documents beyond their records (their vectors)
            carriers = [c for f in hooks.features() if (c := f.survivor(self.folder, seg))]
            records = _stored_articles(reader)
            try:
                while True:
                    try:
                        item = next(records, None)
                    except Exception:  # noqa: BLE001 - a segment that cannot be read through
                        self.unreadable.add(sid)
                        break
                    if item is None:
                        break
                    art, passages, docnums = item
                    # rebuilt outside the read's guard: a fault of this code is raised, never
                    # taken for damage (it once marked every segment holding a quotation
                    # unreadable, and repair kept nothing of them)
                    rebuilt = _article_from_records(art, passages)
                    if rebuilt is None:
                        self.rejected.add(art["id"])
                        continue
                    self.ids.add(art["id"])
                    for carry in carriers:
                        carry(docnums, rebuilt[1])
                    yield rebuilt  # a later segment's version replaces an earlier one
            finally:
                reader.close()


def _next_generation(folder: Path) -> int:
    names = os.listdir(folder)
    gens = [int(m.group(1)) for n in names if (m := integrity.TOC_RE.match(n))]
    gens += [int(m.group(1)) for n in names if (m := integrity.MANIFEST_RE.match(n))]
    return max(gens, default=-1) + 1


def repair(
    path: str | os.PathLike,
    paths: Iterable[str | os.PathLike] = (),
    *,
    enricher: Any = None,
    timeout: float = 30.0,
    commit_every: int = 2000,
    on_progress: Callable[..., None] | None = None,
) -> RepairReport:
    """Rebuild the index at ``path`` from its intact segments and the files in ``paths``.

    ``enricher`` enriches articles read from ``paths`` (the spaCy one by
    default, loaded only if there is something to enrich). Raises
    ``IndexUnavailable`` when there is no index, ``NotEnoughSpace`` when the
    rebuild would not fit, ``IndexBusy`` when a writer holds the lock.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise IndexUnavailable(f"no index at {folder}")
    paths = [str(p) for p in paths]
    with WriteLock(folder) as lock:
        lock.acquire(timeout)
        check = checking.check_index(folder)
        report = RepairReport(str(folder), check.generation)
        report.damage = [p.to_dict() for p in check.problems]
        if check.ok:
            report.clean_after = True
            return report
        if any(p.kind == "other" and p.problem == "no index here" for p in check.problems):
            raise IndexUnavailable(f"no index at {folder}")
        if all(p.kind == "derived" for p in check.problems):
            # only a feature's files (the alias table): rebuilt from the intact index
            report.generation_after = check.generation
            report.rebuilt = _rebuild_features(folder, check)
            report.repaired = True
            report.clean_after = checking.check_index(folder).ok
            return report
        segments = _segments(folder, check)
        damaged = set(check.damaged_segments)
        intact = [g for g in segments or [] if g.segment_id() not in damaged]
        work = folder / WORK_DIR
        shutil.rmtree(work, ignore_errors=True)
        # the rebuild rewrites the intact segments: about their size, twice at the peak of
        # a merge (a segment's parts, then the one file they are copied into)
        need = 2 * segment_bytes(folder, intact)
        free = free_bytes(folder)
        if free < need:
            raise NotEnoughSpace(
                f"repair needs about {need / 1e6:,.1f} MB of free disk space next to the index "
                f"at {folder}; there are {free / 1e6:,.1f} MB: free some space and run it again"
            )
        survivors = _Survivors(folder, segments or [], damaged)
        stored: dict[str, list[Passage]] = {}

        def surviving() -> Iterator[Article]:
            for article, passages in survivors:
                stored[article.id] = passages
                yield article

        try:
            fresh = WhooshStore(work, lock_timeout=timeout)
            try:
                index_articles(
                    fresh, surviving(), enricher=_StoredPassages(stored), commit_every=commit_every
                )
                damaged |= survivors.unreadable
                lost = (set(check.lost_articles) | survivors.rejected) - survivors.ids
                if paths:
                    from_files = []
                    for item in read_paths(paths):
                        if isinstance(item, ReadFailure):
                            report.failed.append({"path": item.path, "reason": item.reason})
                        elif isinstance(item, Skipped):
                            continue
                        elif item.id not in survivors.ids:
                            from_files.append(item)
                    if from_files:
                        done = index_articles(
                            fresh,
                            from_files,
                            enricher=enricher if enricher is not None else default_enricher(),
                            commit_every=commit_every,
                            on_progress=on_progress,
                        )
                        report.failed.extend(done.failed)
                        written = set(done.added) | set(done.replaced)
                        report.recovered = sorted(written & lost)
                        report.added = sorted(written - lost)
                report.lost = sorted(lost - set(report.recovered))
                report.kept = len(survivors.ids)
                if segments is None:
                    report.unknown = [
                        "(the table of contents and the manifest are both unreadable)"
                    ]
                else:
                    known = {p.segment for p in check.problems if p.articles is not None}
                    report.unknown = sorted(damaged - known)
            finally:
                fresh.close()
            report.generation_after = _install(folder, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        report.rebuilt = _rebuild_features(folder, check)
        report.repaired = True
    after = checking.check_index(folder)
    report.clean_after = after.ok
    return report


def _rebuild_features(folder: Path, check: checking.CheckReport) -> list[str]:
    """Rebuild the feature files ``check`` found damaged from the index as it now stands
    (under the write lock the caller holds); the names of the files rebuilt."""
    if not check.damaged_features:
        return []
    ix = DurableFileStorage(str(folder)).open_index(INDEX_NAME)
    searcher = ix.searcher()
    try:
        for feature in check.damaged_features:
            feature.rebuild(folder, searcher)
    finally:
        searcher.close()
    return sorted({p.file for p in check.problems if p.kind == "derived"})


class _StoredPassages:
    """The "enricher" of surviving articles: their stored passages, entities and quotes."""

    def __init__(self, stored: dict[str, list[Passage]]) -> None:
        self._stored = stored  # filled as surviving articles are read, emptied here

    def enrich(self, items: Iterable[Any]) -> Iterable[Any]:
        for article, _split in items:
            yield article, self._stored.pop(article.id)


def _install(folder: Path, work: Path) -> int:
    """Make the rebuilt index in ``work`` the next generation of the index in ``folder``."""
    work_gen = max(integrity.toc_generations(work))
    toc = TOC.read(FileStorage(str(work)), INDEX_NAME, work_gen)
    moved = []
    for name in sorted(os.listdir(work)):
        if integrity.SEGMENT_FILE_RE.match(name):
            os.replace(work / name, folder / name)
            moved.append(name)
    for name in moved:
        fsync_path(folder / name)
    generation = _next_generation(folder)
    toc.generation = generation
    storage = DurableFileStorage(str(folder))
    toc.write(storage, INDEX_NAME)  # writes the manifest, fsyncs, renames: the commit
    clean_files(storage, INDEX_NAME, generation, toc.segments)
    integrity.remove_other_manifests(folder, generation)
    return generation

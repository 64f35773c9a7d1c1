"""Segment merging: a tiered merge policy with a bounded number of segments.

Every commit writes one new segment. Whoosh's default policy (``MERGE_SMALL``)
sorts segments by size and merges the smallest ones once their total passes a
Fibonacci threshold; segments pile up to 27 during a 1.5-million-document
import (simulated by ``benchmarks/sim_merges.py``), every search visits each of
them, its largest merge rewrites 458,500 documents, and it never looks at
deletions.

``merge_tiered`` is the log-structured policy of Lucene's ``LogMergePolicy``:
segments are put in levels by their live document count (level L holds sizes
from ``floor * factor**L`` up to ``floor * factor**(L+1)``), and when a level
holds ``factor`` segments they are merged into one segment of the next level.
A document is rewritten once per level it climbs, so merge work per document
grows with the logarithm of the index size (1.65 rewrites per document over the
same simulated import, 1.69 for ``MERGE_SMALL``; largest merge 388,500), and
there are at most ``factor - 1`` segments per level (21 at most). Segments larger
than ``max_docs`` are left alone (``newsquarry optimize`` merges everything
into one segment when a user wants it). A segment with more than half of its
documents deleted (replaced articles) is rewritten, so deletions do not pile up.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from whoosh.filedb.filestore import FileStorage
from whoosh.index import LockError
from whoosh.reading import SegmentReader
from whoosh.writing import SegmentWriter

from newsquarry.search.core.background import Coalescing
from newsquarry.search.core.durability import fsync_path
from newsquarry.search.engine import docvalues, dvstore, hooks, keytable, pstore
from newsquarry.search.engine.docvalues import write_key_table

log = logging.getLogger(__name__)

FACTOR = 10  # segments per level before they merge
FLOOR_DOCS = 1_000  # sizes below this all count as level 0
MAX_MERGE_DOCS = 2_000_000  # automatic merges never build segments bigger than this


def level(docs: int, factor: int = FACTOR, floor_docs: int = FLOOR_DOCS) -> int:
    """The level of a segment of ``docs`` live documents (0 for small ones)."""
    if docs <= floor_docs:
        return 0
    return int(math.log(docs / floor_docs, factor))


def plan_merges(
    sizes: list[tuple[int, int]],
    factor: int = FACTOR,
    floor_docs: int = FLOOR_DOCS,
    max_docs: int = MAX_MERGE_DOCS,
) -> list[int]:
    """Which segments to merge into one, given (live docs, all docs) per segment.

    Returns the indexes of the segments to merge (empty: no merge). The lowest
    level holding ``factor`` segments merges (its ``factor`` smallest, so a
    level with more waits for the next commit); failing that, segments more
    than half deleted are rewritten. A merge that would exceed ``max_docs``
    live documents is not planned.
    """
    levels: dict[int, list[int]] = {}
    for i, (live, _all) in enumerate(sizes):
        if live > max_docs:
            continue
        levels.setdefault(level(live, factor, floor_docs), []).append(i)
    for lvl in sorted(levels):
        members = sorted(levels[lvl], key=lambda i: sizes[i][0])
        if len(members) >= factor:
            chosen = members[:factor]
            if sum(sizes[i][0] for i in chosen) <= max_docs:
                return chosen
    dead = [i for i, (live, total) in enumerate(sizes) if total and live * 2 < total]
    return dead


def segment_bytes(folder: str | os.PathLike, segments: list[Any]) -> int:
    """Bytes on disk of the files of ``segments`` (``<segment id>.*`` in ``folder``)."""
    ids = {s.segment_id() for s in segments}
    total = 0
    for name in os.listdir(folder):
        m = re.match(r"^(.+?)\.", name)
        if m and m.group(1) in ids:
            try:
                total += os.stat(Path(folder) / name).st_size
            except FileNotFoundError:
                pass
    return total


def free_bytes(folder: str | os.PathLike) -> int:
    """Free space for this user on the filesystem holding ``folder``."""
    return shutil.disk_usage(folder).free


def merge_tiered(
    factor: int = FACTOR, floor_docs: int = FLOOR_DOCS, max_docs: int = MAX_MERGE_DOCS
) -> Callable[[Any, list[Any]], list[Any]]:
    """A Whoosh ``mergetype`` (``writer.commit(mergetype=...)``) applying ``plan_merges``."""

    def policy(writer: Any, segments: list[Any]) -> list[Any]:
        sizes = [(s.doc_count(), s.doc_count_all()) for s in segments]
        chosen = set(plan_merges(sizes, factor, floor_docs, max_docs))
        if not chosen:
            return list(segments)
        # a merge writes the merged segment's parts, then copies them into one file:
        # about twice the merged segments' size at its peak. Without that much free
        # space the merge is left for a later commit (this one still lands).
        folder = getattr(writer.storage, "folder", None)
        if folder is not None:
            need = 2 * segment_bytes(folder, [segments[i] for i in chosen])
            free = free_bytes(folder)
            if free < need:
                log.warning(
                    "merge of %d segments skipped: it needs about %.1f MB free, %.1f MB left",
                    len(chosen),
                    need / 1e6,
                    free / 1e6,
                )
                return list(segments)
        for i in sorted(chosen):
            reader = SegmentReader(writer.storage, writer.schema, segments[i])
            try:
                writer.add_reader(reader)
            finally:
                reader.close()
        return [s for i, s in enumerate(segments) if i not in chosen]

    policy.plan = lambda sizes: plan_merges(sizes, factor, floor_docs, max_docs)  # type: ignore[attr-defined]
    policy.params = (factor, floor_docs, max_docs)  # type: ignore[attr-defined]
    return policy


def plan_of(policy: Any) -> Callable[[list[tuple[int, int]]], list[int]]:
    """The planning function of a policy made by ``merge_tiered`` (defaults otherwise)."""
    return getattr(policy, "plan", plan_merges)


# -- merging off the write path ------------------------------------------------
#
# A merge rewrites whole segments: seconds for large ones. Run inside a commit
# (Whoosh's way) it held the write lock meanwhile, so the write request that
# triggered it, and every write queued behind it, waited 7-14 s. Here a commit
# only adds its new segment; a background thread then merges like Lucene's
# concurrent merge scheduler:
#
# 1. without the write lock: read the chosen segments (immutable files) and write
#    the merged segment and its doc values into ``.merging/`` in the index folder
#    (Whoosh's cleanup after each commit only looks at the folder's own files);
# 2. with the write lock, briefly: if the chosen segments are all still in the
#    index, apply to the merged segment the deletions they received meanwhile
#    (replaced or deleted articles: old docnum -> new docnum), move its files in
#    and commit a TOC that lists it instead of them.
#
# Readers keep their segments until they move to the new generation. A crash
# at any point loses nothing: before the TOC the old segments stand and the
# leftovers (``.merging/``, or moved files no TOC names, which Whoosh's next
# cleanup removes) are only disk space. One merge at a time per index, across
# processes: the ``<index>_MERGELOCK`` file lock.

MERGE_DIR = ".merging"


def merge_once(store: Any) -> bool:
    """Run one planned merge of a ``WhooshStore``'s segments; False if none was due or possible."""
    ix = store.ix
    lock = ix.storage.lock(f"{ix.indexname}_MERGELOCK")
    if not lock.acquire(blocking=False):
        return False  # another thread or process is merging this index
    try:
        return _merge(store, ix)
    finally:
        lock.release()


def _merge(store: Any, ix: Any) -> bool:
    folder = Path(ix.storage.folder)
    work = folder / MERGE_DIR
    shutil.rmtree(work, ignore_errors=True)  # left by a merge killed midway
    try:
        toc = ix._read_toc()
    except FileNotFoundError:  # a commit replaced the TOC just then; next time
        return False
    segments = toc.segments
    chosen = plan_of(store.merge_policy)([(s.doc_count(), s.doc_count_all()) for s in segments])
    if not chosen:
        return False
    sources = [segments[i] for i in sorted(chosen)]
    # (segment id, deletions at the start, first new docnum, live docnums in order)
    maps: list[tuple[str, set[int], int, list[int]]] = []
    features = hooks.features()
    derived: list[list[Any]] = []  # each source's data of each feature (``engine.hooks``)
    merged = None
    if any(s.doc_count() for s in sources):
        tmp = FileStorage(str(work)).create()
        shim = SimpleNamespace(storage=tmp, indexname=ix.indexname, _read_toc=lambda: toc)
        w = SegmentWriter(shim, _lk=False)
        captured = pstore.capture(w)  # the merged segment's postings, as they are written
        try:
            for seg in sources:
                deleted = set(seg.deleted_docs()) if seg.has_deletions() else set()
                live = [d for d in range(seg.doc_count_all()) if d not in deleted]
                base = w.docnum
                reader = SegmentReader(ix.storage, toc.schema, seg)
                try:
                    w.add_reader(reader)
                    # its features' derived data, read while the segment is surely there
                    derived.append(
                        [f.merge_source(ix.storage.folder, seg, reader) for f in features]
                    )
                finally:
                    reader.close()
                maps.append((seg.segment_id(), deleted, base, live))
            merged = w._finalize_segment()
        except BaseException:
            w.cancel()
            shutil.rmtree(work, ignore_errors=True)
            raise
        w._finish()
        reader = SegmentReader(tmp, toc.schema, merged)
        try:
            # (a module attribute: tests hold a merge here)
            arrays, meta = docvalues.compute_segment(reader)
            if captured is not None and captured.done:  # its decoded postings (search.pstore)
                captured.write(work, merged.segment_id(), merged.doc_count_all())
            else:
                pstore.write_segment(work, reader)
        finally:
            reader.close()
        dvstore.write(work, merged.segment_id(), merged.doc_count_all(), arrays, meta)
        # features' derived data (quotation signatures): carried over from the sources
        for i, f in enumerate(features):
            f.write_merged(work, merged, sources, [d[i] for d in derived], maps)
        names = [n for n in os.listdir(work) if n.startswith(merged.segment_id() + ".")]
        for name in names:
            fsync_path(work / name)
    else:  # every document of the chosen segments is deleted: drop them
        maps = [(s.segment_id(), set(), 0, []) for s in sources]
        names = []
    try:
        writer = ix.writer(timeout=store.lock_timeout, delay=0.05)
    except LockError:
        shutil.rmtree(work, ignore_errors=True)
        return False
    try:
        current = writer.segments
        ids = [s.segment_id() for s in current]
        gone = {sid for sid, _, _, _ in maps}
        if not gone <= set(ids):  # merged meanwhile by someone else (``optimize``)
            writer.cancel()
            shutil.rmtree(work, ignore_errors=True)
            return False
        for sid, before, base, live in maps:
            seg = current[ids.index(sid)]
            now = set(seg.deleted_docs()) if seg.has_deletions() else set()
            if merged is not None and now - before:
                where = {d: base + i for i, d in enumerate(live)}
                for d in now - before:
                    merged.delete_document(where[d])
        for name in names:
            os.replace(work / name, folder / name)
        final = [s for s in current if s.segment_id() not in gone]
        if merged is not None:
            final.append(merged)
        write_key_table(folder, final, current)  # the new list's key table, in the manifest
        writer.commit(mergetype=lambda _w, _segments: final)
        keytable.remove_others(folder, [(s.segment_id(), s.doc_count_all()) for s in final])
    except BaseException:
        try:
            writer.cancel()
        except Exception:  # noqa: BLE001 - already committed or half closed
            pass
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return True


class Merger(Coalescing):
    """Runs a store's merges in the background, started when a commit asks for it.

    ``process=True`` (the default): a background thread starts a separate Python
    process (``python -m newsquarry.search.engine.merging FOLDER``) that runs the due
    merges and exits, and waits for it. Whoosh's writing is pure Python: run in
    a thread of the serving process, a merge held the GIL against every reader
    and commit of that process (write p99 1.6 s, read p99 2.7x under a write a
    second, docs/benchmarks.md). The merge needs nothing of this process but the
    folder, the merge policy's parameters and the lock timeout; it takes the same
    merge lock and write lock as before. A store whose policy was not made by
    ``merge_tiered`` merges in the thread (``process=False`` forces that).
    """

    def __init__(self, store: Any, *, process: bool = True) -> None:
        self.store = store
        self.process = process
        self.merges = 0  # merges done (for tests and diagnostics)
        self.errors: list[str] = []
        super().__init__()

    thread_name = "newsquarry-merge"

    def run_once(self) -> None:
        """Run the merges due now (``request()``: after a commit, returns at once)."""
        try:
            params = getattr(self.store.merge_policy, "params", None)
            if self.process and params is not None:
                if self._due():  # a process costs ~0.3 s of CPU: only when needed
                    self.merges += self._in_process(params)
            else:
                while merge_once(self.store):
                    self.merges += 1
        except Exception as exc:  # noqa: BLE001 - a failed merge loses nothing; say so
            self.errors.append(f"{type(exc).__name__}: {exc}")
            import logging  # lazy: only now, a CLI search should not pay for importing it

            logging.getLogger(__name__).warning("segment merge failed (nothing lost): %s", exc)

    def _due(self) -> bool:
        """Whether the newest commit's segments make a merge due (read from its TOC)."""
        try:
            segments = self.store.ix._read_toc().segments
        except FileNotFoundError:  # replaced just then: let the merge process decide
            return True
        sizes = [(s.doc_count(), s.doc_count_all()) for s in segments]
        return bool(plan_of(self.store.merge_policy)(sizes))

    def _in_process(self, params: tuple[int, int, int]) -> int:
        """Run the due merges in a separate process; the number it made."""
        import subprocess  # lazy: start-up time (only a merge in its own process needs it)

        factor, floor_docs, max_docs = params
        cmd = [sys.executable, "-m", "newsquarry.search.engine.mergeprocess", str(self.store.path), "--factor", str(factor),
               "--floor-docs", str(floor_docs), "--max-docs", str(max_docs),
               "--lock-timeout", str(self.store.lock_timeout),
               "--parent", str(os.getpid())]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise MergeFailed(lines[-1] if lines else f"merge process exited {done.returncode}")
        return int(done.stdout.strip() or 0)


class MergeFailed(Exception):
    """A merge process failed (its last line of output is the message); nothing was lost."""

"""The storage engine behind one narrow interface.

``Store`` is what the rest of newsquarry uses: ``add``, ``delete``,
``search``, ``stats`` (plus ``get_article``/``get_passage`` and
``content_hash`` for idempotent re-indexing). ``WhooshStore`` implements it
on a Whoosh index on disk; a distributed engine can later implement the same
protocol without the API or the CLI changing.

Writes: one writer at a time, in turn (``search.locking``: kernel ``flock``
locks that a killed process releases), acquired with a bounded timeout;
everything put in one ``writer()`` session commits atomically (Whoosh writes
segment files, then swaps the table of contents), so a crash leaves the last
completed commit, and a commit that fails removes what it wrote. Each commit
records the checksums of its files (``search.integrity``), checked when they are
read; ``check_index`` and ``search.repair`` live in their own modules.

Reads: one searcher per thread, replaced by a new one only when a commit has
landed (see ``WhooshStore.searcher``), never reopened per query.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from whoosh.index import EmptyIndexError
from whoosh.query import Term
from whoosh.reading import MultiReader, SegmentReader
from whoosh.writing import NO_MERGE

from newsquarry.search.core.errors import (
    IndexDamaged,
    IndexUnavailable,
    NoIndex,
    NotEnoughSpace,
    NotFound,
)
from newsquarry.search.core.ids import shorten
from newsquarry.search.core.models import Article, Passage, quote_record
from newsquarry.search.engine import (
    dvstore,
    hooks,
    integrity,
    keytable,
    pstore,
    whoosh_fixes,  # noqa: F401  (applies the fixes)
)
from newsquarry.search.engine.documents import passage_documents, stored_document
from newsquarry.search.engine.docvalues import persist_on_commit
from newsquarry.search.engine.locking import WriteLock
from newsquarry.search.engine.merging import Merger, free_bytes, merge_tiered, segment_bytes
from newsquarry.search.engine.schema import FIELD_NAMES, SCHEMA_VERSION, build_schema
from newsquarry.search.engine.storage import INDEX_NAME, DurableFileStorage, reading

log = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT = 30.0
# Postings a commit keeps in memory before Whoosh spills sorted runs to disk. A
# commit of 2,000 news articles holds ~150 MB by Whoosh's estimate; past the limit
# (Whoosh's default is 128) the spill and the merge of the runs cost 40% more
# writing per article (docs/benchmarks.md, "Full Reuters on a quiet machine").
WRITER_MEMORY_MB = 256
# Whoosh writes a TOC as "_<name>_<gen>.toc.<time>" and renames it into place; a
# writer killed between the two leaves this file behind, and Whoosh never removes it
_STALE_TOC = re.compile(rf"^_{INDEX_NAME}_\d+\.toc\.[0-9.]+$")


@dataclass
class WriteReport:
    """What a write did, per article id."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)  # {"id"/"path", "reason"}
    passages: int = 0

    def merge(self, other: WriteReport) -> None:
        for name in ("added", "replaced", "unchanged", "deleted", "failed"):
            getattr(self, name).extend(getattr(other, name))
        self.passages += other.passages

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "failed": self.failed,
            "passages": self.passages,
        }


class Store(Protocol):
    """The interface every storage engine implements."""

    def add(self, items: Iterable[tuple[Article, list[Passage]]]) -> WriteReport: ...
    def delete(self, article_id: str) -> bool: ...
    def search(self, request: Any) -> Any: ...
    def stats(self) -> dict[str, Any]: ...
    def content_hash(self, article_id: str) -> str | None: ...
    def get_article(self, article_id: str) -> dict[str, Any]: ...
    def get_passage(self, passage_id: str) -> dict[str, Any]: ...


class WriteSession:
    """Puts and deletes inside one commit; use ``WhooshStore.writer()``."""

    def __init__(self, store: WhooshStore, writer: Any) -> None:
        self._store = store
        self._writer = writer
        self._searcher = writer.searcher()
        self._seen: set[str] = set()
        self.report = WriteReport()
        self.changed = False  # anything put or deleted: without it, nothing is committed
        # what features keep of this session (``engine.hooks``), by feature name
        self.notes: dict[str, Any] = {}

    def _exists(self, article_id: str) -> bool:
        return stored_document(self._searcher, article_id, "article") is not None

    def put(self, article: Article, passages: list[Passage]) -> str:
        """Add or replace one article (all its passages go); returns "added" or "replaced"."""
        if article.id in self._seen:
            raise ValueError(f"article {article.id!r} given twice in one commit")
        self._seen.add(article.id)
        existed = self._exists(article.id)
        if existed:
            self._writer.delete_by_term("article_id", article.id)
        self.changed = True
        for doc in passage_documents(article, passages):
            self._writer.add_document(**{k: v for k, v in doc.items() if v is not None})
        self.report.passages += len(passages)
        for f in self._store.features:
            f.put(self, article, passages)
        outcome = "replaced" if existed else "added"
        getattr(self.report, outcome).append(article.id)
        return outcome

    def delete(self, article_id: str) -> bool:
        """Delete an article and all its passages and quotes; False if it was not there."""
        if not self._exists(article_id):
            return False
        self._writer.delete_by_term("article_id", article_id)
        self.changed = True
        self.report.deleted.append(article_id)
        for f in self._store.features:
            f.delete(self, article_id)
        return True


MERGE_KEEP_SECONDS = 2.0  # at most this long on the state before a merge (``searcher``)


def generation_of(searcher: Any) -> int:
    """The generation a searcher reads (0 if it cannot say: empty or composite readers)."""
    try:
        return int(searcher.ixreader.generation())
    except (AttributeError, TypeError, ValueError):
        return 0


def _only_merges(searcher: Any, segments: list[Any]) -> bool:
    """Whether ``segments`` (a newer state) hold exactly the live documents ``searcher``
    reads: some of its segments replaced by at most one segment with as many live
    documents, every other segment there with the same deletions, nothing added."""
    old = {}
    for r, _ in searcher.ixreader.leaf_readers():
        seg = r.segment() if hasattr(r, "segment") else None
        if seg is None:
            return False
        old[seg.segment_id()] = seg
    new = {seg.segment_id(): seg for seg in segments}
    removed = [old[k] for k in old.keys() - new.keys()]
    added = [new[k] for k in new.keys() - old.keys()]
    if not removed or len(added) > 1:
        return False
    if any(old[k].deleted_count() != new[k].deleted_count() for k in old.keys() & new.keys()):
        return False
    return sum(x.doc_count() for x in removed) == sum(x.doc_count() for x in added)


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _retrying(fn: Any, tries: int = 20, delay: float = 0.05) -> Any:
    """``fn()``, tried again when a file vanished under it.

    A commit in another process deletes the previous TOC and merged-away
    segment files right after renaming the new TOC; reading the TOC just then
    fails with FileNotFoundError, and reading again finds the new one (Whoosh's
    own ``Index.reader()`` retries the same way; opening an index does not).
    """
    for attempt in range(tries):
        try:
            return fn()
        except FileNotFoundError:
            if attempt == tries - 1:
                raise
            time.sleep(delay)


def _release(w: Any) -> None:
    """Give up a Whoosh writer whose commit failed, whatever state it was left in."""
    try:
        w.cancel()
        return
    except Exception:  # noqa: BLE001 - the writer may be half closed
        pass
    lock = getattr(w, "writelock", None)
    if lock is not None and getattr(lock, "fd", None) is not None:
        try:
            lock.release()
        except Exception:  # noqa: BLE001
            pass


class WhooshStore:
    """A Whoosh index in a folder: the default ``Store``."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        create: bool = True,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        background_merges: bool = True,
        merge_process: bool = True,
    ) -> None:
        self.path = Path(path)
        # the features that keep derived data beside the index (``engine.hooks``), and
        # what they lend the store (``store.aliases`` is the alias feature's table)
        self.features = hooks.features()
        self._lent: dict[str, Any] = {}
        for f in self.features:
            self._lent.update(f.open(self))
        self.lock_timeout = lock_timeout
        self.merge_policy = merge_tiered()  # see search.merging
        # merges run in the background (a separate process unless ``merge_process`` is
        # False: then a thread), not inside the commit that makes them due
        self.merger = Merger(self, process=merge_process) if background_merges else None
        self._local = threading.local()
        # called with the store after each commit this process makes (``writer``), in the
        # writer's thread: a server warms the new state there (``searching.warm_up``)
        self.after_commit: list[Callable[[WhooshStore], Any]] = []
        # called in the writer, before a commit's table of contents is written, with a
        # searcher over the segments it is about to publish (``searching.warm_up``
        # registers a warm): threads that move to the new state as soon as it is
        # committed find it built, instead of building it beside the writer (what Lucene's
        # merged-segment warmer does before a merge is visible to near-real-time readers)
        self.before_publish: list[Callable[[WhooshStore, Any], Any]] = []
        # (generation searched, newest generation) -> (the newest only merges segments of
        # the one searched, when that was first seen): ``_keep_through_merge``
        self._merge_verdicts: dict[tuple[int, int], tuple[bool, float]] = {}
        # warms the states other processes commit (``search.refresh``, started by
        # ``searching.warm_up``); stopped by ``close``
        self.refresher: Any = None
        try:
            if integrity.toc_generations(self.path):
                self.ix = self._open(DurableFileStorage(str(self.path)))
            elif self._has_index_files():
                self.ix = self._open_after_creator()
            elif create:
                self.ix = self._create()
            else:
                raise NoIndex(f"no index at {self.path}", path=str(self.path))
        except IndexUnavailable:
            raise
        except (EmptyIndexError, OSError, ValueError, EOFError) as exc:
            raise IndexUnavailable(f"cannot open the index at {self.path}: {exc}") from None
        with reading(self.path):
            opened = getattr(self.ix, "opened_schema", None)  # the TOC the opening read
            names = set(_retrying(opened if opened is not None else lambda: self.ix.schema).names())
        if not set(FIELD_NAMES) <= names:
            raise IndexUnavailable(
                f"the index at {self.path} was made by another version (schema "
                f"{SCHEMA_VERSION} expected): re-create it: index your articles again into a new folder (`newsquarry --index NEW index FILES`)"
            )
        self._quick_check()

    def _quick_check(self, tries: int = 5) -> Any:
        """``integrity.quick_check`` of the newest generation (returns its manifest). A file
        missing because a commit or a background merge replaced that generation meanwhile
        is no damage: check the newer generation instead (damage stays damage in every
        generation). Every open of a searcher goes through here: under writes with
        background merges, a search that read the generation just before a merge removed
        its segments' files answered "the index is damaged" on a healthy index."""
        for attempt in range(tries):
            generation = self.generation
            try:
                return integrity.quick_check(self.path, generation)
            except IndexDamaged:
                if attempt == tries - 1 or self.ix.latest_generation() == generation:
                    raise
        return None

    def _open(self, storage: DurableFileStorage) -> Any:
        """Open the newest generation; a TOC that cannot be parsed is damage, said so."""
        try:
            return _retrying(lambda: storage.open_index(INDEX_NAME))
        except (IndexUnavailable, FileNotFoundError, EmptyIndexError):
            raise
        except Exception as exc:  # noqa: BLE001 - every way a damaged pickle can fail
            raise integrity.damaged(
                [integrity.toc_name(max(integrity.toc_generations(self.path), default=0))],
                [f"the table of contents cannot be read ({type(exc).__name__})"],
            ) from None

    def _open_after_creator(self) -> Any:
        """Index files but no table of contents: another process may be creating the index
        right now (it writes its files, then the TOC, under the write lock). Wait for that
        lock and look again; a TOC still missing is damage."""
        try:
            with self.write_lock():
                if integrity.toc_generations(self.path):
                    return self._open(DurableFileStorage(str(self.path)))
        except OSError:  # a read-only folder: no lock to take, and nobody creating there
            pass
        raise integrity.damaged(
            [f"_{INDEX_NAME}_N.toc"],
            ["the table of contents is missing (segment files are there)"],
        )

    def _has_index_files(self) -> bool:
        """Segment files or manifests without a TOC: a damaged index, never to be re-created."""
        try:
            names = os.listdir(self.path)
        except OSError:
            return False
        return any(
            integrity.MANIFEST_RE.match(n) or integrity.SEGMENT_FILE_RE.match(n) for n in names
        )

    def _create(self) -> Any:
        """Create the index, or open it if another process just did, under the write lock.

        Two processes creating the same new index at once (two feeds started
        together, two API workers) would both write generation 0: Whoosh then
        fails with NameError or a missing temporary file. The write lock
        (the same one writers take) makes creation one at a time.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        storage = DurableFileStorage(str(self.path))
        with self.write_lock():
            if integrity.toc_generations(self.path):
                return self._open(storage)
            return storage.create_index(build_schema(), indexname=INDEX_NAME)

    # -- writing ---------------------------------------------------------
    @contextmanager
    def write_lock(self, timeout: float | None = None) -> Iterator[WriteLock]:
        """The index's write lock, taken in turn (``search.locking``), for one commit."""
        lock = WriteLock(self.path)
        lock.acquire(self.lock_timeout if timeout is None else timeout)
        try:
            yield lock
        finally:
            lock.release()

    @contextmanager
    def _whoosh_writer(self, timeout: float | None) -> Iterator[Any]:
        """A Whoosh writer under our write lock; whatever a failed commit wrote is removed."""
        with self.write_lock(timeout):
            self._remove_stale_files()
            integrity.require_manifest(self.path, self.generation)
            with reading(self.path):
                w = self.ix.writer(_lk=False, limitmb=WRITER_MEMORY_MB)
            self._warm_before_publishing(w)  # innermost: runs once the files below exist
            persist_on_commit(w)  # new and merged segments get their doc-values file
            for f in self.features:  # ... and every feature's segment files
                f.writer_opened(w)
            try:
                yield w
            except BaseException:
                _release(w)
                self.ix.storage.discard_uncommitted()
                self._remove_orphan_doc_values()
                self._remove_other_key_tables()
                raise
            integrity.remove_other_manifests(self.path, self.generation)
            self._remove_other_key_tables()

    def _warm_before_publishing(self, w: Any) -> None:
        """Run the ``before_publish`` hooks when a Whoosh writer is about to write its table
        of contents: its segments' files (and their doc values, decoded postings and key
        table, written by the wrappers ``persist_on_commit`` adds around this one) are
        complete, and no other thread or process can see the new state yet."""
        original = w._commit_toc

        def commit_toc(segments: list[Any]) -> None:
            if self.before_publish:
                self._warm_unpublished(w, segments)
            original(segments)

        w._commit_toc = commit_toc

    def _warm_unpublished(self, w: Any, segments: list[Any]) -> None:
        """Call the ``before_publish`` hooks with a searcher over ``segments`` (not yet
        committed); a hook that fails costs its optimisation, never the commit."""
        # lazy: start-up time (a writing process may never search)
        from whoosh.searching import Searcher

        readers: list[Any] = []
        try:
            for seg in segments:
                readers.append(SegmentReader(w.storage, w.schema, seg, generation=w.generation))
            if not readers:
                return
            reader = readers[0] if len(readers) == 1 else MultiReader(readers, w.generation)
            searcher = Searcher(reader, fromindex=self.ix)
            for hook in list(self.before_publish):
                hook(self, searcher)
        except Exception:  # noqa: BLE001 - an optimisation: the first searches build it
            log.debug("before-publish hook failed", exc_info=True)
        finally:
            for r in readers:
                try:
                    r.close()
                except Exception:  # noqa: BLE001 - closing a reader of files just written
                    pass

    @contextmanager
    def writer(self, timeout: float | None = None) -> Iterator[WriteSession]:
        """One commit: everything put in the session lands together or not at all.

        A commit that fails (a full disk) leaves nothing behind: the files it
        wrote are removed and the previous commit stands. A session that neither
        put nor deleted anything commits nothing (the generation stays, and with it
        every ETag and cache).
        """
        with self._whoosh_writer(timeout) as w:
            session = WriteSession(self, w)
            yield session
            if not session.changed:
                # nothing to write: no new generation, so ETags and caches stay valid
                w.cancel()
                self.ix.storage.discard_uncommitted()
                return
            # features' per-commit files (the alias table) are written beside the commit,
            # under the same lock, and put in place once the commit succeeded
            installs: list[Callable[[], None]] = []
            try:
                for f in self.features:
                    install = f.prepare_commit(self, session)
                    if install is not None:
                        installs.append(install)
                # merges run in the background (``merging.Merger``), off the write path
                w.commit(mergetype=NO_MERGE if self.merger else self.merge_policy)
            except BaseException:
                for f in self.features:
                    f.abort_commit(self)
                raise
            for install in installs:
                install()
        for f in self.features:
            f.committed(self)
        if self.merger:
            self.merger.request()
        for hook in list(self.after_commit):
            try:
                hook(self)
            except Exception:  # noqa: BLE001 - an optimisation: the commit stands, searches report
                log.debug("after-commit hook failed", exc_info=True)

    def optimize(self, timeout: float | None = None) -> dict[str, Any]:
        """Merge all segments into one; refuses (NotEnoughSpace) without room for the merge."""
        with self._whoosh_writer(timeout) as w:
            segments = w.segments if hasattr(w, "segments") else self.ix._segments()
            before = len(segments)
            if before <= 1 and not any(s.has_deletions() for s in segments):
                w.cancel()
                self.ix.storage.discard_uncommitted()
                return {"segments_before": before, "segments_after": before, "seconds": 0.0}
            need = 2 * segment_bytes(self.path, segments)
            free = free_bytes(self.path)
            if free < need:
                raise NotEnoughSpace(
                    f"optimize needs about {_mb(need)} of free disk space next to the index at "
                    f"{self.path} (twice the {_mb(need // 2)} it rewrites); there are "
                    f"{_mb(free)}: free some space and run it again"
                )
            t0 = time.monotonic()
            w.commit(optimize=True)
        return {
            "segments_before": before,
            "segments_after": len(self.ix._segments()),
            "seconds": round(time.monotonic() - t0, 2),
        }

    def _remove_orphan_doc_values(self) -> None:
        """Remove doc-values files of segments no commit names (a failed commit's: they are
        written straight to the folder before the TOC, not through the storage)."""
        try:
            live = {
                dvstore.file_name(s.segment_id(), ext)
                for s in self.ix._segments()
                for ext in (dvstore.EXT, pstore.EXT, *hooks.segment_exts())
            }
            names = os.listdir(self.path)
        except Exception:  # noqa: BLE001 - best effort: the next commit's cleanup tries again
            return
        for name in names:
            if name.endswith((dvstore.EXT, pstore.EXT, *hooks.segment_exts())) and name not in live:
                try:
                    os.remove(self.path / name)
                except OSError:
                    pass

    def _remove_other_key_tables(self) -> None:
        """Remove the merged key tables (``search.keytable``) of other segment lists than
        the current one's (written by a commit that failed, or of earlier commits)."""
        try:
            segs = [(s.segment_id(), s.doc_count_all()) for s in self.ix._segments()]
        except Exception:  # noqa: BLE001 - best effort: the next commit's cleanup tries again
            return
        keytable.remove_others(self.path, segs)

    def _remove_stale_files(self) -> None:
        """Remove what writers killed mid-commit left (we hold the lock, so none is in use).

        Temporary TOC and manifest files, manifests of a generation that never
        came, Whoosh's temporary posting folder. (A dead writer's segment files
        are removed by Whoosh itself at the next commit: they are in no TOC.)
        """
        try:
            names = os.listdir(self.path)
        except OSError:
            return
        current = max(integrity.toc_generations(self.path), default=-1)
        for name in names:
            m = integrity.MANIFEST_RE.match(name)
            if (
                _STALE_TOC.match(name)
                or (m and int(m.group(1)) > current)
                or (".sums." in name and name.endswith(".tmp"))
            ):
                try:
                    os.remove(self.path / name)
                except OSError:
                    pass
        temp = self.path / f"{INDEX_NAME}.tmp"
        if temp.is_dir():
            shutil.rmtree(temp, ignore_errors=True)

    def add(self, items: Iterable[tuple[Article, list[Passage]]]) -> WriteReport:
        """Add or replace articles in one commit; unchanged articles are skipped."""
        with self.writer() as w:
            for article, passages in items:
                if self.content_hash(article.id) == article.content_hash:
                    w.report.unchanged.append(article.id)
                    continue
                w.put(article, passages)
        return w.report

    def delete(self, article_id: str) -> bool:
        """Delete one article; False if it was not in the index."""
        with self.writer() as w:
            return w.delete(article_id)

    # -- reading ---------------------------------------------------------
    def searcher(self) -> Any:
        """This thread's searcher, moved to the newest commit if there is one.

        Whoosh's ``Searcher.refresh()`` is not used: in whoosh-reloaded 2.7.5 it
        reuses segment readers whose deletions changed and keeps merged-away
        segments, so deleted or replaced passages would stay visible. A new
        searcher is opened only when the generation changed (a cheap check of
        the table of contents), never per query; opening one checks that every
        file of the generation is there with its size, and the checksum of each
        file this process has not verified yet (``search.integrity``).
        """
        s = getattr(self._local, "searcher", None)
        if s is None or not s.up_to_date():
            if s is not None and self._keep_through_merge(s):
                return s
            old = s
            self._local.searcher = None
            with reading(self.path):
                self._quick_check()
                s = self._reopen(old) if old is not None else None
                if s is None:
                    if old is not None:
                        old.close()
                    s = self.ix.searcher()
            self._local.searcher = s
        return s

    def _keep_through_merge(self, s: Any) -> bool:
        """Whether this thread goes on searching ``s`` although a newer state is committed:
        only while that state merely merges some of ``s``'s segments (a background merge:
        the same documents, the same deletions, so every answer is the same) and this
        process's refresher is warming it, for at most ``MERGE_KEEP_SECONDS``.

        A merged segment is new to this process: its first searches built its columns,
        names and postings maps beside the refresher (3-4x a warm search's CPU, in every
        search thread at once). Lucene likewise warms a merged segment before readers see
        it. No write is ever hidden: a state that adds, deletes or replaces anything is
        searched at once."""
        refresher = self.refresher
        if refresher is None or not refresher.alive or refresher.is_current_thread():
            return False
        newest = self.ix.latest_generation()
        if refresher.warmed_generation >= newest:
            return False
        key = (generation_of(s), newest)
        verdict = self._merge_verdicts.get(key)
        if verdict is None:  # the newest TOC is read once per pair of states, not per search
            try:
                toc = self.ix._read_toc()
            except Exception:  # noqa: BLE001 - replaced just then: move on as usual
                return False
            same = toc.generation == newest and _only_merges(s, toc.segments)
            verdict = (same, time.monotonic())
            if len(self._merge_verdicts) > 16:
                self._merge_verdicts.clear()
            self._merge_verdicts[key] = verdict
        if not verdict[0] or time.monotonic() - verdict[1] > MERGE_KEEP_SECONDS:
            return False
        refresher.wake()
        return True

    def _reopen(self, old: Any) -> Any:
        """A searcher on the newest commit that reuses ``old``'s readers of the segments
        that did not change (same segment, same deletions), or None (then open afresh).

        Opening every segment's reader again cost 3-5 ms of CPU per thread per commit on
        Reuters (14 segments); a commit adds one segment. (Whoosh's own ``refresh`` also
        reuses a reader whose deletions changed, and keeps merged-away segments.) The
        readers ``old`` does not pass on are closed; ``old`` must not be used again."""
        # lazy: start-up time (a writing process may never search)
        from whoosh.searching import Searcher

        try:
            toc = self.ix._read_toc()
        except (OSError, EOFError, ValueError):
            return None
        if len(toc.segments) < 2:
            return None
        reusable = {}
        for r, _ in old.ixreader.leaf_readers():
            seg = r.segment() if hasattr(r, "segment") else None
            if seg is None or r.is_closed:
                return None
            reusable[(seg.segment_id(), seg.deleted_count())] = r
        readers = []
        try:
            for seg in toc.segments:
                r = reusable.pop((seg.segment_id(), seg.deleted_count()), None)
                if r is None:
                    r = SegmentReader(self.ix.storage, toc.schema, seg, generation=toc.generation)
                readers.append(r)
        except Exception:
            # a segment merged away meanwhile: close what was opened, open afresh
            mine = [x for x, _ in old.ixreader.leaf_readers()]
            for r in readers:
                if all(r is not x for x in mine):
                    r.close()
            return None
        for r in reusable.values():
            r.close()
        return Searcher(MultiReader(readers, generation=toc.generation), fromindex=self.ix)

    def verify_readable(self) -> None:
        """Raise IndexDamaged if the current generation cannot be read as committed (cheap).

        Presence and size of its files, its searcher opened (each file's
        checksum verified once per process), and each file's identity and times
        unchanged since it was verified. For health checks.
        """
        with reading(self.path):
            manifest = self._quick_check()
            self.searcher()
            for name in manifest.files if manifest else ():
                # derived files (doc values, quotation signatures, decoded postings) are rebuilt
                if not name.endswith(integrity.NOT_READ_EXTS):
                    try:
                        integrity.VERIFIER.verify(str(self.path / name))
                    except FileNotFoundError:
                        pass  # a commit replaced it meanwhile: the next check sees the new one
        for feature in self.features:
            feature.key_resolver(self)  # a damaged alias table is refused (IndexDamaged)

    @property
    def generation(self) -> int:
        """The generation of the newest commit (changes on every commit)."""
        return self.ix.latest_generation()

    def _stored(self, doc_id: str, doctype: str) -> dict[str, Any] | None:
        with reading(self.path):
            return stored_document(self.searcher(), doc_id, doctype)

    def content_hash(self, article_id: str) -> str | None:
        doc = self._stored(article_id, "article")
        return doc.get("content_hash") if doc else None

    def get_article(self, article_id: str) -> dict[str, Any]:
        """An article with its text, metadata and passages (in order)."""
        doc = self._stored(article_id, "article")
        if not doc:
            raise NotFound(f"no article with id {shorten(article_id)!r}")
        data = json.loads(doc["data"])
        s = self.searcher()
        # the article's own postings only (a handful of documents), filtered here:
        # Whoosh's intersection with doctype:passage walked every passage of the index
        with reading(self.path):
            docs = [s.stored_fields(n) for n in s.docs_for_query(Term("article_id", article_id))]
        docs = sorted(
            (d for d in docs if d.get("doctype") == "passage"), key=lambda d: d["position"]
        )
        canon = self._canonical()
        passages = [canon(self._passage_record(d, data)) for d in docs]
        return {"id": article_id, **data, "passages": passages}

    def _canonical(self) -> Any:
        """Puts a passage record's names in their index-wide display form (as hits show them):
        the ``record_view`` service of the query side (``engine.hooks``), else as stored."""
        make = hooks.service("record_view")
        return make(self) if make is not None else (lambda record: record)

    def key_resolver(self) -> Any:
        """The mapping of name keys to canonical keys a feature provides (the alias table),
        or None: doc values count, filter and show names through it."""
        for f in self.features:
            resolver = f.key_resolver(self)
            if resolver is not None:
                return resolver
        return None

    def __getattr__(self, name: str) -> Any:
        # what features lend the store (``engine.hooks``: ``open``)
        lent = self.__dict__.get("_lent")
        if lent is not None and name in lent:
            return lent[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def get_passage(self, passage_id: str) -> dict[str, Any]:
        """One passage with its entities, quotes and its article's metadata."""
        doc = self._stored(passage_id, "passage")
        if not doc:
            raise NotFound(f"no passage with id {shorten(passage_id)!r}")
        art = self._stored(doc["article_id"], "article")
        meta = json.loads(art["data"]) if art else {}
        return self._canonical()(self._passage_record(doc, meta))

    @staticmethod
    def _passage_record(doc: dict[str, Any], article: dict[str, Any]) -> dict[str, Any]:
        data = json.loads(doc.get("data") or "{}")
        quotes = [quote_record(q, doc["start"]) for q in data.get("quotes", [])]
        speakers = list(dict.fromkeys(q["speaker"] for q in quotes if q.get("speaker")))
        return {
            "id": doc["id"],
            "article_id": doc["article_id"],
            "position": doc["position"],
            "start": doc["start"],
            "end": doc["end"],
            "text": doc["text"],
            "title": article.get("title") or doc.get("title"),
            "source": article.get("source"),
            "date": article.get("date"),
            "url": article.get("url"),
            "entities": data.get("entities", []),
            "quotes": quotes,
            "speakers": speakers,
        }

    def stats(self) -> dict[str, Any]:
        """Counts and sizes: articles, passages, quotes, segments, bytes on disk."""
        s = self.searcher()
        # doc_frequency would count deleted documents until a merge: count live ones
        with reading(self.path):
            counts = {
                kind: sum(1 for _ in s.docs_for_query(Term("doctype", kind)))
                for kind in ("article", "passage", "quote")
            }
        size = 0
        for f in self.path.iterdir():
            # the index's data, not the record of which files were checksummed (it grows as
            # each process verifies what it reads) nor a half-written temporary file
            if f.name == integrity.VERIFIED_NAME or f.name.startswith("."):
                continue
            try:
                size += f.stat().st_size if f.is_file() else 0
            except FileNotFoundError:  # deleted by a commit in another process meanwhile
                pass
        extra: dict[str, Any] = {}
        with reading(self.path):
            for f in self.features:
                extra.update(f.stats(self, s))
        return {
            "path": str(self.path),
            "articles": counts["article"],
            "passages": counts["passage"],
            "quotes": counts["quote"],
            "segments": _retrying(lambda: len(self.ix._segments())),
            "generation": self.generation,
            "size_bytes": size,
            "last_modified": time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(_retrying(self.ix.last_modified))
            ),
            **extra,
        }

    def last_modified(self) -> float:
        """When the last commit landed (seconds since the epoch): feeds' Last-Modified."""
        return float(_retrying(self.ix.last_modified))

    def search(self, request: Any) -> Any:
        """Run a search request: the ``search`` service of the query side (``engine.hooks``,
        ``query.searching.run_search``)."""
        run = hooks.service("search")
        if run is None:
            raise RuntimeError("no search service is plugged in (engine.hooks)")
        with reading(self.path):
            return run(self, request)

    def wait_for_merges(self, timeout: float | None = None) -> bool:
        """Wait until no background merge is running or due and every feature's background
        work for past commits is done (the alias table learnt; False: ``timeout`` passed)."""
        t0 = time.monotonic()
        for f in self.features:
            left = None if timeout is None else max(0.0, timeout - (time.monotonic() - t0))
            if not f.wait(self, left):
                return False
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - t0))
        return self.merger.wait(left) if self.merger else True

    def close(self) -> None:
        if self.refresher is not None:
            self.refresher.stop()
            self.refresher = None
        self.wait_for_merges(timeout=60)
        s = getattr(self._local, "searcher", None)
        if s is not None:
            s.close()
        self._local.__dict__.clear()
        self.ix.close()

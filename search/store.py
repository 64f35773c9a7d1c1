"""The storage engine behind one narrow interface.

``Store`` is what the rest of newsquarry uses: ``add``, ``delete``,
``search``, ``stats`` (plus ``get_article``/``get_passage`` and
``content_hash`` for idempotent re-indexing). ``WhooshStore`` implements it
on a Whoosh index on disk; a distributed engine can later implement the same
protocol without the API or the CLI changing.

Writes: one writer at a time (Whoosh's file lock, a kernel ``flock`` that a
killed process releases), acquired with a bounded timeout; everything put in
one ``writer()`` session commits atomically (Whoosh writes segment files, then
swaps the table of contents), so a crash leaves the last completed commit.

Reads: one searcher per thread, replaced by a new one only when a commit has
landed (see ``WhooshStore.searcher``), never reopened per query.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from whoosh import index
from whoosh.filedb.filestore import FileStorage
from whoosh.index import EmptyIndexError, LockError
from whoosh.query import Term
from whoosh.writing import NO_MERGE

from . import whoosh_fixes  # noqa: F401  (applies the fixes)
from .docvalues import persist_on_commit
from .errors import IndexBusy, IndexUnavailable, NotFound
from .merging import Merger, merge_tiered
from .models import Article, Passage
from .schema import SCHEMA_VERSION, build_schema, keyword_value, spelling_words

DEFAULT_LOCK_TIMEOUT = 30.0
# Postings a commit keeps in memory before Whoosh spills sorted runs to disk. A
# commit of 2,000 news articles holds ~150 MB by Whoosh's estimate; past the limit
# (Whoosh's default is 128) the spill and the merge of the runs cost 40% more
# writing per article (docs/benchmarks.md, "Full Reuters on a quiet machine").
WRITER_MEMORY_MB = 256
INDEX_NAME = "newsquarry"
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


def passage_documents(article: Article, passages: list[Passage]) -> Iterator[dict[str, Any]]:
    """The Whoosh documents for one article: the article, its passages, its quotes."""
    common = {"article_id": article.id}
    meta = {"source": keyword_value(article.source) if article.source else None}
    if article.date:
        meta["date"] = article.date
    yield {
        **common,
        "id": article.id,
        "doctype": "article",
        "content_hash": article.content_hash,
        # the article's words, once, for spelling suggestions and wildcard expansion
        "spell": spelling_words(f"{article.title}\n{article.text}"),
        "date": article.date,
        "source": meta["source"],
        "data": json.dumps(
            {
                "title": article.title,
                "text": article.text,
                "source": article.source,
                "date": article.date,
                "url": article.url,
                "author": article.author,
                "path": article.path,
                "passages": len(passages),
            },
            ensure_ascii=False,
        ),
    }
    for p in passages:
        entities = {t: [keyword_value(n) for n in p.names(t)] for t in ("person", "org", "place")}
        speakers = [keyword_value(s) for s in p.speakers]
        kinds = sorted({q.kind for q in p.quotes})
        facet_fields = {k: ",".join(v) for k, v in entities.items() if v}
        doc = {
            **common,
            **{k: v for k, v in meta.items() if v},
            **facet_fields,
            "id": p.id,
            "doctype": "passage",
            "position": p.position,
            "start": p.start,
            "end": p.end,
            "text": p.text,
            "title": article.title,
            "url": article.url,
            "author": article.author,
            "data": json.dumps(
                {
                    "entities": [e.__dict__ for e in p.entities],
                    "quotes": [q.__dict__ for q in p.quotes],
                },
                ensure_ascii=False,
            ),
        }
        if p.quotes:
            doc["quote"] = "\n".join(q.text for q in p.quotes)
        if speakers:
            doc["speaker"] = ",".join(speakers)
        if kinds:
            doc["quote_kind"] = ",".join(kinds)
        yield doc
        for n, q in enumerate(p.quotes, start=1):
            qdoc = {
                **common,
                **{k: v for k, v in meta.items() if v},
                **facet_fields,
                "id": f"{p.id}#q{n}",
                "doctype": "quote",
                "passage_id": p.id,
                "position": p.position,
                "start": q.start,
                "end": q.end,
                "quote": q.text,
                "quote_kind": q.kind,
                "data": json.dumps(q.__dict__, ensure_ascii=False),
            }
            if q.speaker:
                qdoc["speaker"] = keyword_value(q.speaker)
            yield qdoc


class WriteSession:
    """Puts and deletes inside one commit; use ``WhooshStore.writer()``."""

    def __init__(self, store: WhooshStore, writer: Any) -> None:
        self._store = store
        self._writer = writer
        self._searcher = writer.searcher()
        self._seen: set[str] = set()
        self.report = WriteReport()
        self.changed = False  # anything put or deleted: without it, nothing is committed

    def _exists(self, article_id: str) -> bool:
        return self._searcher.document_number(id=article_id) is not None

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
        return True


class DurableFileStorage(FileStorage):
    """Whoosh's file storage, with the writes of a commit on disk before it counts.

    Whoosh writes a commit's segment files, then a new table of contents (TOC)
    under a temporary name, then renames the TOC into place: the rename is the
    commit. It never calls fsync, so after a power cut (unlike a killed
    process) the renamed TOC may be on disk while the data it points to is not.
    Here, just before the TOC rename, every file created since the last one
    that still exists (the segment files, the temporary TOC) and the folder are
    fsynced, and the folder again after the rename. Files Whoosh deletes before
    that (the parts it assembles into one compound segment file) cost nothing.
    """

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self._created: set[str] = set()
        self._created_lock = threading.Lock()

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kw: Any) -> Any:
        with self._created_lock:
            self._created.add(name)
        return super().create_file(name, excl=excl, mode=mode, **kw)

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        toc = newname.endswith(".toc")
        if toc:  # everything the new TOC refers to reaches the disk first
            with self._created_lock:
                created, self._created = self._created, set()
            for name in sorted(created):
                self._sync(self._fpath(name))
            self._sync(self.folder)
        super().rename_file(oldname, newname, safe)
        if toc:
            self._sync(self.folder)  # then the rename itself

    @staticmethod
    def _sync(path: str) -> None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:  # deleted meanwhile (a compound segment's parts)
            return
        try:
            os.fsync(fd)
        except OSError:  # some filesystems cannot fsync a folder
            pass
        finally:
            os.close(fd)


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
    ) -> None:
        self.path = Path(path)
        self.lock_timeout = lock_timeout
        self.merge_policy = merge_tiered()  # see search.merging
        # merges run in a background thread, not inside the commit that makes them due
        self.merger = Merger(self) if background_merges else None
        self._local = threading.local()
        try:
            if index.exists_in(self.path, indexname=INDEX_NAME):
                storage = DurableFileStorage(str(self.path))
                self.ix = _retrying(lambda: storage.open_index(INDEX_NAME))
            elif create:
                self.ix = self._create()
            else:
                raise IndexUnavailable(f"no index at {self.path}")
        except (EmptyIndexError, OSError, ValueError, EOFError) as exc:
            raise IndexUnavailable(f"cannot open the index at {self.path}: {exc}") from None
        names = set(_retrying(lambda: self.ix.schema).names())  # reads the TOC again
        if not set(build_schema().names()) <= names:
            raise IndexUnavailable(
                f"the index at {self.path} was made by another version (schema "
                f"{SCHEMA_VERSION} expected): re-create it with `newsquarry index --rebuild`"
            )

    def _create(self) -> Any:
        """Create the index, or open it if another process just did, under the write lock.

        Two processes creating the same new index at once (two feeds started
        together, two API workers) would both write generation 0: Whoosh then
        fails with NameError or a missing temporary file. The write lock
        (the same flock writers take) makes creation one at a time.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        storage = DurableFileStorage(str(self.path))
        lock = storage.lock(f"{INDEX_NAME}_WRITELOCK")
        deadline = time.monotonic() + self.lock_timeout
        while not lock.acquire():
            if time.monotonic() > deadline:
                raise IndexBusy(
                    f"another process is creating the index at {self.path}; "
                    f"gave up after waiting {self.lock_timeout:g} s"
                )
            time.sleep(0.05)
        try:
            if index.exists_in(self.path, indexname=INDEX_NAME):
                return storage.open_index(INDEX_NAME)
            return storage.create_index(build_schema(), indexname=INDEX_NAME)
        finally:
            lock.release()

    # -- writing ---------------------------------------------------------
    @contextmanager
    def writer(self, timeout: float | None = None) -> Iterator[WriteSession]:
        """One commit: everything put in the session lands together or not at all.

        A session that neither put nor deleted anything commits nothing (the
        generation stays, and with it every ETag and cache).
        """
        wait = self.lock_timeout if timeout is None else timeout
        try:
            w = self.ix.writer(timeout=wait, delay=0.05, limitmb=WRITER_MEMORY_MB)
        except LockError:
            holder = self._lock_holder()
            raise IndexBusy(
                f"another process is writing to the index at {self.path}; "
                f"gave up after waiting {wait:g} s{holder}"
            ) from None
        persist_on_commit(w)  # new and merged segments get their doc-values file
        self._note_lock_holder(w)
        self._remove_stale_files()
        session = WriteSession(self, w)
        try:
            yield session
        except BaseException:
            w.cancel()
            raise
        else:
            if not session.changed:
                # nothing to write: no new generation, so ETags and caches stay valid
                w.cancel()
                return
            try:
                w.commit(mergetype=NO_MERGE if self.merger else self.merge_policy)
            except BaseException:
                # e.g. a full disk: the commit did not happen (the old TOC stands), but
                # Whoosh keeps the lock until the process ends, which in an API worker
                # would refuse every later write; release it
                _release(w)
                raise
            if self.merger:
                self.merger.request()

    def _note_lock_holder(self, w: Any) -> None:
        """Write who holds the lock into the lock file, for the message of a writer kept out.

        The lock itself is the kernel's flock on that file; its content is only
        information (a stale content is overwritten by the next holder).
        """
        fd = getattr(getattr(w, "writelock", None), "fd", None)
        if fd is None:
            return
        import sys

        note = "pid {} since {}: {}\n".format(
            os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S"), " ".join(sys.argv)[:200]
        )
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode("utf-8", "replace"), 0)
        except OSError:
            pass

    def _lock_holder(self) -> str:
        """ " (held by pid N since T: command)" from the lock file, or "" if unknown."""
        try:
            with open(self.path / f"{INDEX_NAME}_WRITELOCK", encoding="utf-8") as fh:
                note = fh.read(300).strip()
        except (OSError, UnicodeDecodeError):
            return ""
        return f" (held by {note})" if note.startswith("pid ") else ""

    def _remove_stale_files(self) -> None:
        """Remove temporary TOC files of writers killed mid-commit (we hold the lock).

        Only the lock holder writes a TOC, so while we hold it any such file is
        left over from a dead writer. (A dead writer's segment files are removed
        by Whoosh itself at the next commit: they are in no TOC.)
        """
        try:
            names = os.listdir(self.path)
        except OSError:
            return
        for name in names:
            if _STALE_TOC.match(name):
                try:
                    os.remove(self.path / name)
                except OSError:
                    pass

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
        the table of contents), never per query.
        """
        s = getattr(self._local, "searcher", None)
        if s is None or not s.up_to_date():
            if s is not None:
                s.close()
            s = self.ix.searcher()
            self._local.searcher = s
        return s

    @property
    def generation(self) -> int:
        """The generation of the newest commit (changes on every commit)."""
        return self.ix.latest_generation()

    def _stored(self, doc_id: str) -> dict[str, Any] | None:
        return self.searcher().document(id=doc_id)

    def content_hash(self, article_id: str) -> str | None:
        doc = self._stored(article_id)
        return doc.get("content_hash") if doc and doc.get("doctype") == "article" else None

    def get_article(self, article_id: str) -> dict[str, Any]:
        """An article with its text, metadata and passages (in order)."""
        doc = self._stored(article_id)
        if not doc or doc.get("doctype") != "article":
            raise NotFound(f"no article with id {article_id!r}")
        data = json.loads(doc["data"])
        s = self.searcher()
        # the article's own postings only (a handful of documents), filtered here:
        # Whoosh's intersection with doctype:passage walked every passage of the index
        docs = [s.stored_fields(n) for n in s.docs_for_query(Term("article_id", article_id))]
        docs = sorted(
            (d for d in docs if d.get("doctype") == "passage"), key=lambda d: d["position"]
        )
        passages = [self._passage_record(d, data) for d in docs]
        return {"id": article_id, **data, "passages": passages}

    def get_passage(self, passage_id: str) -> dict[str, Any]:
        """One passage with its entities, quotes and its article's metadata."""
        doc = self._stored(passage_id)
        if not doc or doc.get("doctype") != "passage":
            raise NotFound(f"no passage with id {passage_id!r}")
        art = self._stored(doc["article_id"])
        meta = json.loads(art["data"]) if art else {}
        return self._passage_record(doc, meta)

    @staticmethod
    def _passage_record(doc: dict[str, Any], article: dict[str, Any]) -> dict[str, Any]:
        data = json.loads(doc.get("data") or "{}")
        quotes = data.get("quotes", [])
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
        counts = {
            kind: sum(1 for _ in s.docs_for_query(Term("doctype", kind)))
            for kind in ("article", "passage", "quote")
        }
        size = 0
        for f in self.path.iterdir():
            try:
                size += f.stat().st_size if f.is_file() else 0
            except FileNotFoundError:  # deleted by a commit in another process meanwhile
                pass
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
        }

    def search(self, request: Any) -> Any:
        """Run a search request (see ``search.searching``)."""
        from .searching import run_search

        return run_search(self, request)

    def wait_for_merges(self, timeout: float | None = None) -> bool:
        """Wait until no background merge is running or due (False: ``timeout`` passed)."""
        return self.merger.wait(timeout) if self.merger else True

    def close(self) -> None:
        self.wait_for_merges(timeout=60)
        s = getattr(self._local, "searcher", None)
        if s is not None:
            s.close()
        self._local.__dict__.clear()
        self.ix.close()

"""Indexing: read -> split into passages -> enrich -> write, streamed in batches.

Articles flow through as a stream, so memory stays bounded whatever the
corpus size: the reader is pulled lazily, the enricher holds at most its
look-ahead (``Enricher.max_ahead``, a few hundred articles), and the writer
holds one commit's postings (Whoosh spills them to disk past ``limitmb``).
Unchanged articles (same ``content_hash`` as in the index) are skipped
*before* enrichment, the expensive step. Each batch is one commit: the first of
``FIRST_COMMIT`` (50) articles, each next twice as large up to ``commit_every``; an
interruption loses at most the batch in progress, and re-running the same command
skips what was committed.

Overlap: with ``n_process > 1`` the enricher's worker processes (or a Dask
cluster's workers: ``search.enrich.executors``) keep parsing the queued
look-ahead while this process writes and commits, so wall time is about NLP
time plus the writer's share of the CPU, not NLP + writing (see
docs/benchmarks.md, "Indexing", and docs/scaling.md).

Progress: ``count_articles`` gives a total up front (one cheap pass counting
the lines of JSON Lines files and the article files elsewhere), from which
``Progress`` derives a recent rate and an ETA.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from newsquarry.search.core import embedding
from newsquarry.search.core.config import SETTINGS_BY_NAME, load_settings
from newsquarry.search.core.errors import EnrichmentFailed
from newsquarry.search.core.ids import shorten
from newsquarry.search.core.models import Article, Passage
from newsquarry.search.core.textnorm import echo_safe
from newsquarry.search.engine.store import WhooshStore, WriteReport
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import (
    JSONL_EXTS,
    SUPPORTED,
    ReadFailure,
    Skipped,
    checked_article,
    iter_files,
    read_paths,
)

RATE_WINDOW = 30.0  # seconds of history behind the rate shown and the ETA
COMMIT_EVERY: int = SETTINGS_BY_NAME["commit_every"].default  # articles per commit
# The first commit comes after this many articles, and each next batch doubles up to
# ``commit_every``: the first results are searchable (and kept by a Ctrl-C) within a
# minute of starting, while a long import still commits in large batches.
FIRST_COMMIT = 50
MAX_DEFAULT_PROCESSES = 4  # each spaCy worker holds ~200 MB: keep the default under 2 GB


@dataclass
class Progress:
    """Running totals, passed to the progress callback after each article and commit.

    ``done`` counts articles dealt with for good (committed, unchanged or
    failed); ``processed`` also counts the enriched ones waiting for their
    commit, so the rate and the ETA move from the first seconds of an import
    (commits are ``commit_every`` articles apart). ``total`` (if known) is the
    expected number of articles, so ``eta`` is the time left at the recent rate.
    """

    read: int = 0
    enriched: int = 0  # articles out of the NLP step (committed or in the batch to commit)
    committed: int = 0  # articles (added or replaced) whose commit completed
    unchanged: int = 0
    failed: int = 0
    words: int = 0  # words of the articles sent to enrichment
    commits: int = 0
    total: int | None = None
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    _samples: deque = field(default_factory=deque, repr=False)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def done(self) -> int:
        return self.committed + self.unchanged + self.failed

    @property
    def processed(self) -> int:
        """Articles past the expensive step: enriched (committed or not), unchanged, failed."""
        return max(self.enriched, self.committed) + self.unchanged + self.failed

    def sample(self, force: bool = False) -> None:
        """Record (time, processed) for the recent rate: at each commit, else at most once a
        second."""
        now = time.monotonic()
        if not force and self._samples and now - self._samples[-1][0] < 1.0:
            return
        self._samples.append((now, self.processed))
        while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW:
            self._samples.popleft()

    @property
    def rate(self) -> float:
        """Articles per second over the last ``RATE_WINDOW`` seconds (since start before that).

        A recent rate, so a resumed run's fast skipping of committed articles
        does not make the ETA of the rest look short.
        """
        if len(self._samples) >= 2 and self._samples[-1][0] - self._samples[0][0] > 0:
            (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
            return (d1 - d0) / (t1 - t0)
        return self.processed / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta(self) -> float | None:
        """Seconds left at the recent rate; None without a total or a rate yet."""
        if self.total is None or self.rate <= 0:
            return None
        return max(self.total - self.processed, 0) / self.rate


def default_enricher(**kw: Any) -> Any:
    """The spaCy enricher (entities, quotes), loaded lazily; with passage and quotation
    vectors under the ``embed`` setting (by default when the semantic extra is installed)."""
    from newsquarry.search.ingest.enrich import Enricher  # lazy: start-up time (spaCy)

    if "embed" not in kw:
        kw["embed"] = embedding.enabled(load_settings()["embed"])
    return Enricher(**kw)


def default_processes() -> int:
    """NLP worker processes by default: one per usable core, at most ``MAX_DEFAULT_PROCESSES``.

    NLP is CPU-bound, so more workers than cores only add memory; the writer
    shares the cores (see docs/benchmarks.md, "Indexing").
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_PROCESSES))


def count_lines(path: Path, chunk: int = 1 << 20) -> int:
    """Lines of a file, counted in 1 MB chunks (about 1 s per GB when cached).

    Blank lines count too, so a total from this is an upper bound.
    """
    n = 0
    last = b"\n"
    with path.open("rb") as fh:
        while buf := fh.read(chunk):
            n += buf.count(b"\n")
            last = buf[-1:]
    return n + (last != b"\n")


def count_articles(paths: Iterable[str | os.PathLike]) -> int:
    """How many articles ``read_paths(paths)`` will yield, cheaply, for an ETA.

    A JSON Lines file counts its lines, any other supported file counts one;
    no JSON is parsed. Unreadable files count zero.
    """
    total = 0
    for p in paths:
        path = Path(p)
        if not path.exists():
            continue
        for f in iter_files(path):
            ext = f.suffix.lower()
            if ext in JSONL_EXTS:
                try:
                    total += count_lines(f)
                except OSError:
                    pass
            elif ext in SUPPORTED:
                total += 1
    return total


def index_articles(
    store: WhooshStore,
    items: Iterable[Article | ReadFailure | Skipped],
    *,
    enricher: Any = None,
    commit_every: int = COMMIT_EVERY,
    on_progress: Callable[[Progress, WriteReport], None] | None = None,
    force: bool = False,
    total: int | None = None,
) -> WriteReport:
    """Index a stream of articles (and read failures, which are reported).

    ``force`` re-indexes articles whose content is unchanged; ``total`` is the
    expected number of items, for the ETA. Returns what was done; on
    KeyboardInterrupt, or an error such as a cluster losing every worker, the
    batch in progress is discarded and the exception re-raised with ``report``
    (what was committed before) attached (``exc.report``).
    """
    report = WriteReport()
    progress = Progress(total=total)
    enricher = enricher if enricher is not None else default_enricher()
    # id -> hash of articles sent on but not committed yet, so a repeated id in
    # the stream is compared with its newest version; pruned at each commit so
    # it stays as small as the look-ahead
    in_flight: dict[str, str] = {}

    def todo() -> Iterator[tuple[Article, list[Passage]]]:
        for item in items:
            if isinstance(item, ReadFailure):
                report.failed.append({"path": item.path, "reason": item.reason})
                progress.failed += 1
                continue
            if isinstance(item, Skipped):
                progress.skipped_files.append({"path": item.path, "reason": item.reason})
                continue
            try:  # an Article from a program is checked as a read one (lone surrogates, ...)
                item = checked_article(item)
            except ValueError as exc:
                ident = echo_safe(shorten(str(item.id)))
                report.failed.append({"id": ident, "path": item.path or ident,
                                      "reason": str(exc)})  # fmt: skip
                progress.failed += 1
                continue
            progress.read += 1
            digest = item.content_hash
            known = in_flight.get(item.id) or store.content_hash(item.id)
            if not force and known == digest:
                report.unchanged.append(item.id)
                progress.unchanged += 1
                progress.sample()
                if on_progress:
                    on_progress(progress, report)
                continue
            in_flight[item.id] = digest
            progress.words += item.text.count(" ") + 1
            yield item, split_passages(item)

    stream = iter(enricher.enrich(todo()))
    pending: tuple[Article, list[Passage]] | None = None
    batch_size = min(commit_every, FIRST_COMMIT)
    progress.sample(force=True)
    try:
        while True:
            # Enrich the whole batch *before* taking the write lock, so the lock
            # is held only while the batch is written: other writers (the API,
            # another `index` run) wait for one batch's write, not for its NLP.
            batch: list[tuple[Article, list[Passage]]] = []
            ids: set[str] = set()
            end = False
            while len(batch) < batch_size:
                item = pending if pending is not None else next(stream, None)
                pending = None
                if item is None:
                    end = True
                    break
                if isinstance(item[1], EnrichmentFailed):
                    # reported, not written: the next run tries this article again
                    report.failed.append(
                        {"id": item[0].id, "path": item[0].path or item[0].id,
                         "reason": item[1].message}
                    )  # fmt: skip
                    in_flight.pop(item[0].id, None)
                    continue
                if item[0].id in ids:
                    # same id twice in one batch: commit, then the later one replaces it
                    pending = item
                    break
                ids.add(item[0].id)
                batch.append(item)
                progress.enriched += 1
                progress.sample()
                if on_progress:
                    on_progress(progress, report)
            if not batch:
                break
            with store.writer() as w:
                for article, passages in batch:
                    w.put(article, passages)
            report.merge(w.report)
            for article, _ in batch:
                if in_flight.get(article.id) == article.content_hash:
                    del in_flight[article.id]  # the index answers for it now
            progress.committed = len(report.added) + len(report.replaced)
            progress.commits += 1
            batch_size = min(commit_every, 2 * batch_size)
            progress.sample(force=True)
            if on_progress:
                on_progress(progress, report)
            if end:
                break
    except BaseException as exc:
        exc.report = report  # type: ignore[attr-defined]
        raise
    finally:
        close = getattr(stream, "close", None)
        if close:
            close()  # stop the enricher's workers now, not at garbage collection
    return report


def index_paths(
    store: WhooshStore, paths: Iterable[str | os.PathLike], *, count: bool = False, **kw: Any
) -> WriteReport:
    """Index files and folders (see ``readers``); see ``index_articles``.

    ``count`` first counts the articles (``count_articles``) so progress has an ETA.
    """
    paths = list(paths)
    if count and kw.get("total") is None:
        kw["total"] = count_articles(paths)
    return index_articles(store, read_paths(paths), **kw)


def optimize(store: WhooshStore, timeout: float | None = None) -> dict[str, Any]:
    """Merge all segments of the index into one, for query speed after large imports.

    The merge policy on each commit (``search.merging``) keeps up to nine
    segments per size class, so a big import leaves tens of segments, and
    every query visits each one.
    Needs the write lock (waits up to ``timeout``, the store's lock timeout by
    default) and about twice the index's size in free disk space (refused with
    ``NotEnoughSpace`` otherwise); returns segment counts and seconds taken.
    """
    return store.optimize(timeout)

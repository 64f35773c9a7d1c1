"""Indexing: read -> split into passages -> enrich -> write, streamed in batches.

Articles flow through as a stream, so memory stays bounded whatever the
corpus size. Unchanged articles (same ``content_hash`` as in the index) are
skipped *before* enrichment, the expensive step. Each batch of
``commit_every`` articles is one commit: an interruption loses at most the
batch in progress, and re-running the same command skips what was committed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .models import Article, Passage
from .passages import split_passages
from .readers import ReadFailure, Skipped, read_paths
from .store import WhooshStore, WriteReport


@dataclass
class Progress:
    """Running totals, passed to the progress callback after each article."""

    read: int = 0
    committed: int = 0  # articles (added or replaced) whose commit completed
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @property
    def rate(self) -> float:
        """Articles read per second."""
        return self.read / self.elapsed if self.elapsed > 0 else 0.0


def default_enricher(**kw: Any) -> Any:
    """The spaCy enricher (entities, quotes), loaded lazily."""
    from .enrich import Enricher

    return Enricher(**kw)


def index_articles(
    store: WhooshStore,
    items: Iterable[Article | ReadFailure | Skipped],
    *,
    enricher: Any = None,
    commit_every: int = 500,
    on_progress: Callable[[Progress, WriteReport], None] | None = None,
    force: bool = False,
) -> WriteReport:
    """Index a stream of articles (and read failures, which are reported).

    ``force`` re-indexes articles whose content is unchanged. Returns what was
    done; on KeyboardInterrupt the batch in progress is discarded and the
    interrupt re-raised with ``report`` attached (``exc.report``).
    """
    report = WriteReport()
    progress = Progress()
    enricher = enricher if enricher is not None else default_enricher()

    def todo() -> Iterator[tuple[Article, list[Passage]]]:
        seen_hashes: dict[str, str] = {}
        for item in items:
            if isinstance(item, ReadFailure):
                report.failed.append({"path": item.path, "reason": item.reason})
                continue
            if isinstance(item, Skipped):
                progress.skipped_files.append({"path": item.path, "reason": item.reason})
                continue
            progress.read += 1
            known = seen_hashes.get(item.id) or store.content_hash(item.id)
            if not force and known == item.content_hash:
                report.unchanged.append(item.id)
                if on_progress:
                    on_progress(progress, report)
                continue
            seen_hashes[item.id] = item.content_hash
            yield item, split_passages(item)

    stream = iter(enricher.enrich(todo()))
    pending: tuple[Article, list[Passage]] | None = None
    try:
        first = True
        while True:
            # Enrich the whole batch *before* taking the write lock, so the lock
            # is held only while the batch is written: other writers (the API,
            # another `index` run) wait for one batch's write, not for its NLP.
            batch: list[tuple[Article, list[Passage]]] = []
            ids: set[str] = set()
            end = False
            while len(batch) < commit_every:
                item = pending if pending is not None else next(stream, None)
                pending = None
                if item is None:
                    end = True
                    break
                if item[0].id in ids:
                    # same id twice in one batch: commit, then the later one replaces it
                    pending = item
                    break
                ids.add(item[0].id)
                batch.append(item)
                if on_progress:
                    on_progress(progress, report)
            if not batch and not first:
                break
            first = False
            with store.writer() as w:
                for article, passages in batch:
                    w.put(article, passages)
            report.merge(w.report)
            progress.committed = len(report.added) + len(report.replaced)
            if on_progress:
                on_progress(progress, report)
            if end:
                break
    except KeyboardInterrupt as exc:
        exc.report = report  # type: ignore[attr-defined]
        raise
    return report


def index_paths(store: WhooshStore, paths: Iterable[str], **kw: Any) -> WriteReport:
    """Index files and folders (see ``readers``); see ``index_articles``."""
    return index_articles(store, read_paths(paths), **kw)

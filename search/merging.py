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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
        from whoosh.reading import SegmentReader

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

    return policy

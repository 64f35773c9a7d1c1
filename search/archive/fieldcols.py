"""The extra fields of each segment's articles, in a file beside the segment (an engine
feature, ``engine.hooks``): the column declared fields are filtered and counted from.

Every extra field of an article (``Article.fields``, declared or not) is in its stored
record; a commit writes, for the segment it adds, the article documents that have extra
fields with their ids and fields (``.xfl``), and a merge carries them over. Declaring a
field (``core.fields``) therefore rewrites nothing: the query side (``query.fieldfacets``)
reads the column and keeps the declared fields. A segment without the file (written
before the feature, or the file lost) is read from its stored fields instead.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsquarry.search.core import fields as fieldspec
from newsquarry.search.engine import dvstore, hooks
from newsquarry.search.engine.blocks import segment_postings

EXT = ".xfl"
VERSION = 1


@dataclass
class SegmentFields:
    """The article documents of one segment that have extra fields (parallel lists)."""

    docs: np.ndarray  # local docnums of the article documents
    ids: list[str]  # their article ids
    fields: list[dict[str, Any]]  # their extra fields, as given


def compute_segment(reader: Any) -> SegmentFields:
    """From a segment's stored article records (deleted ones included: deletions are
    masked by the view)."""
    schema = reader.schema
    found, _ = segment_postings(reader, "doctype", schema["doctype"].to_bytes("article"))
    docs, ids, fields = [], [], []
    for docnum in sorted(set(found.tolist())):
        d = reader.stored_fields(docnum)
        raw = d.get("data") or ""
        if '"fields"' not in raw:  # most articles have none: no JSON parsed for them
            continue
        try:
            extra = json.loads(raw).get("fields")
        except ValueError:
            continue
        if isinstance(extra, dict) and extra:
            docs.append(docnum)
            ids.append(d.get("id") or "")
            fields.append(extra)
    return SegmentFields(np.asarray(docs, dtype=np.int32), ids, fields)


def write_segment_file(folder: Any, segid: str, ndocs: int, data: SegmentFields) -> None:
    strings = json.dumps(
        {"ids": data.ids, "fields": data.fields}, ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8")
    arrays = {"docs": data.docs, "strings": np.frombuffer(strings, dtype=np.uint8)}
    dvstore.write(folder, segid, ndocs, arrays, {"version": VERSION}, ext=EXT)


def _from_file(src: Any) -> SegmentFields | None:
    if src.meta.get("version") != VERSION:
        return None
    strings = src.json("strings")
    return SegmentFields(np.array(src.array("docs")), strings["ids"], strings["fields"])


_segments = dvstore.SegmentCache(EXT, _from_file, compute_segment)


def segment_fields(folder: Any, reader: Any) -> SegmentFields:
    """A committed segment's article fields: kept per segment (segments never change),
    from its file, else from its stored fields through ``reader``."""
    return _segments.get(folder, reader)


def write_merged(
    folder: Any, merged: Any, sources: list[Any], datas: list[SegmentFields], maps: list[Any]
) -> None:
    """A merged segment's file from its sources' (``maps`` as ``merging._merge`` gives
    them: per source, (segment id, deletions, first new docnum, live docnums in order))."""
    docs, ids, fields = [], [], []
    for seg, data, (_sid, _deleted, base, live) in zip(sources, datas, maps, strict=True):
        mapped = dvstore.merge_positions(seg, live, base, data.docs)
        for i in np.flatnonzero(mapped >= 0).tolist():
            docs.append(int(mapped[i]))
            ids.append(data.ids[i])
            fields.append(data.fields[i])
    out = SegmentFields(np.asarray(docs, dtype=np.int32), ids, fields)
    write_segment_file(folder, merged.segment_id(), merged.doc_count_all(), out)


class ArticleFields(dvstore.SegmentFileFeature):
    """The articles' extra fields as an engine feature: a ``.xfl`` file per segment."""

    name = "article-fields"
    ext = EXT

    compute = staticmethod(compute_segment)
    parse = staticmethod(_from_file)
    save = staticmethod(write_segment_file)
    merged = staticmethod(write_merged)

    def stats(self, store: Any, searcher: Any) -> dict[str, Any]:
        """``fields``: the declared fields with the articles holding each, and every other
        extra field of the data (kept in the stored articles, not filterable until
        declared), so nothing a record carried is lost from sight."""
        return {"fields": field_stats(getattr(store, "path", None), searcher)}


def field_stats(folder: Any, searcher: Any) -> dict[str, Any]:
    """{"declared": [{name, kind, articles}], "undeclared": [{name, articles}]}."""
    counts: Counter = Counter()
    for reader, _ in searcher.ixreader.leaf_readers():
        if getattr(reader, "segment", lambda: None)() is None:
            continue
        data = segment_fields(folder, reader)
        for doc, extra in zip(data.docs.tolist(), data.fields, strict=True):
            if not reader.is_deleted(doc):
                counts.update(extra.keys())
    try:
        specs = fieldspec.load(folder) if folder is not None else []
    except fieldspec.FieldError:
        specs = []
    names = {s.name for s in specs}
    return {
        "declared": [{**s.to_dict(), "articles": counts.get(s.name, 0)} for s in specs],
        "undeclared": [
            {"name": n, "articles": c}
            for n, c in sorted(counts.items(), key=lambda p: (-p[1], p[0]))
            if n not in names
        ],
    }


hooks.register(ArticleFields())

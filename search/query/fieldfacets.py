"""Declared fields (``core.fields``) as filters and facets, over one view.

The values come from each segment's field column (``archive.fieldcols``), per article;
a document (passage or quote) has its article's values. A ``FieldTable`` is made once per
view and kept with it: per field, (article key id, value) pairs. Filters become document
masks through ``View.article_of``; counts are the documents of a mask per article, summed
per value, so a declared facet counts what every other facet counts (passages, or quotes)
and honours the same multi-select rule (``facets.FilterSet``).
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from newsquarry.search.archive.fieldcols import segment_fields
from newsquarry.search.core import fields as fieldspec
from newsquarry.search.core.errors import InvalidRequest
from newsquarry.search.core.fields import FieldError, FieldSpec
from newsquarry.search.core.requests import FacetResult, FacetValue
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.views import View, leaves_of
from newsquarry.search.query.facets import bucket_key, date_bounds


@dataclass
class Column:
    """One declared field over a view: (article key id, value) pairs."""

    spec: FieldSpec
    arts: np.ndarray  # article key ids
    values: np.ndarray  # keyword: value ids; number: floats; date: YYYYMMDD ints
    keys: list[str] = field(default_factory=list)  # keyword: folded key per value id
    shown: list[str] = field(default_factory=list)  # keyword: display form per value id
    ids: dict[str, int] = field(default_factory=dict)  # keyword: folded key -> value id


class FieldTable:
    """Every extra field of the live articles of one view."""

    def __init__(self, view: View, searcher: Any, folder: Any) -> None:
        self.view = view
        self.raw: dict[int, dict[str, Any]] = {}  # article key id -> its extra fields
        for reader, off in leaves_of(searcher):
            data = segment_fields(folder, reader)
            for doc, art_id, extra in zip(data.docs.tolist(), data.ids, data.fields, strict=True):
                if not view.live[off + doc]:
                    continue
                gid = view.gid("article_id", art_id)
                if gid is not None:
                    self.raw[gid] = extra
        self._columns: dict[FieldSpec, Column] = {}
        self._lock = threading.Lock()

    def names(self) -> Counter:
        """Every extra field name with the number of live articles holding it."""
        return Counter(name for extra in self.raw.values() for name in extra)

    def column(self, spec: FieldSpec) -> Column:
        with self._lock:
            got = self._columns.get(spec)
            if got is None:
                got = self._columns[spec] = self._make(spec)
        return got

    def _make(self, spec: FieldSpec) -> Column:
        arts: list[int] = []
        if spec.kind == "keyword":
            ids: dict[str, int] = {}
            forms: list[Counter] = []
            vals: list[int] = []
            for gid, extra in self.raw.items():
                for v in fieldspec.keyword_values(extra.get(spec.name)):
                    key = fold(v)
                    vid = ids.get(key)
                    if vid is None:
                        vid = ids[key] = len(ids)
                        forms.append(Counter())
                    forms[vid][v] += 1
                    arts.append(gid)
                    vals.append(vid)
            keys = list(ids)
            shown = [min(c, key=lambda f: (-c[f], f)) for c in forms]
            return Column(
                spec, np.asarray(arts, np.int64), np.asarray(vals, np.int64), keys, shown, ids
            )
        parse = fieldspec.number_value if spec.kind == "number" else fieldspec.date_value
        nums: list[float] = []
        for gid, extra in self.raw.items():
            v = parse(extra.get(spec.name))
            if v is not None:
                arts.append(gid)
                nums.append(v)
        dtype = np.float64 if spec.kind == "number" else np.int64
        return Column(spec, np.asarray(arts, np.int64), np.asarray(nums, dtype))

    def values_of(self, article_gid: int, specs: list[FieldSpec]) -> dict[str, Any]:
        """An article's declared fields as given (the ones it has)."""
        extra = self.raw.get(article_gid) or {}
        return {s.name: extra[s.name] for s in specs if s.name in extra}

    # -- filters ------------------------------------------------------------------
    def _articles_mask(self, arts: np.ndarray) -> np.ndarray:
        n = self.view.nkeys["article_id"]
        wanted = np.zeros(n + 1, dtype=bool)
        wanted[arts] = True
        art = self.view.article_of
        return wanted[np.where(art >= 0, art, n)]

    def filter_mask(self, spec: FieldSpec, values: list[str]) -> np.ndarray:
        """Documents whose article has any of ``values`` in the field."""
        col = self.column(spec)
        what = f"filters.{spec.name}"
        if spec.kind == "keyword":
            vids = [col.ids[k] for k in (fold(v) for v in values) if k in col.ids]
            keep = np.isin(col.values, np.asarray(vids, dtype=np.int64))
        else:
            keep = np.zeros(len(col.values), dtype=bool)
            for v in values:
                lo, hi = _bounds(spec, v, what)
                m = np.ones(len(col.values), dtype=bool)
                if lo is not None:
                    m &= col.values >= lo
                if hi is not None:
                    m &= col.values <= hi
                keep |= m
        return self._articles_mask(col.arts[keep])

    # -- counts -------------------------------------------------------------------
    def facet(
        self,
        spec: FieldSpec,
        mask: np.ndarray,
        size: int,
        selected: list[str],
        interval: str = "month",
        prefix: str | None = None,
    ) -> FacetResult:
        """Top values of a declared field among the documents of ``mask``."""
        col = self.column(spec)
        art = self.view.article_of[mask]
        per_art = np.bincount(art[art >= 0], minlength=self.view.nkeys["article_id"])
        weights = per_art[col.arts] if len(col.arts) else np.zeros(0, np.int64)
        if spec.kind == "keyword":
            counts = np.bincount(col.values, weights=weights, minlength=len(col.keys))
            pairs = [(col.shown[i], int(c)) for i, c in enumerate(counts.tolist()) if c > 0]
        else:
            vals = col.values
            if spec.kind == "date":
                div, fmt = bucket_key(interval)
                vals = vals // div
            else:
                fmt = fieldspec.format_number
            uniq, inv = np.unique(vals, return_inverse=True)
            counts = np.bincount(inv, weights=weights, minlength=len(uniq))
            pairs = [(fmt(u), int(c)) for u, c in zip(uniq.tolist(), counts.tolist(), strict=True)
                     if c > 0]  # fmt: skip
        if prefix is not None:
            want = fold(prefix)
            pairs = [
                p for p in pairs if not want or any(w.startswith(want) for w in fold(p[0]).split())
                or fold(p[0]).startswith(want)
            ]  # fmt: skip
        pairs.sort(key=lambda p: (-p[1], p[0]))
        top = pairs[:size]
        if spec.kind == "date" and prefix is None:
            top.sort(key=lambda p: p[0])  # a histogram is listed in date order
        chosen = {fold(v) for v in selected} if spec.kind == "keyword" else set(selected)
        key = fold if spec.kind == "keyword" else (lambda s: s)
        values = [FacetValue(value=v, count=c, selected=key(v) in chosen) for v, c in top]
        shown = {key(v.value) for v in values}
        for s in selected:
            if key(s) not in shown:
                got = next((c for v, c in pairs if key(v) == key(s)), 0)
                values.append(FacetValue(value=s, count=got, selected=True))
                shown.add(key(s))
        rest = pairs[size:]
        return FacetResult(
            name=spec.name, values=values, other=sum(c for _, c in rest), more=len(rest)
        )


def _bounds(spec: FieldSpec, value: str, what: str) -> tuple[Any, Any]:
    """Inclusive bounds of a number or date filter value (a value or a range a..b)."""
    try:
        if spec.kind == "number":
            return fieldspec.number_range(value, what)
    except FieldError as exc:
        raise InvalidRequest(str(exc), field="filters") from None
    lo_s, sep, hi_s = value.partition("..")
    if not sep:
        return date_bounds(value, what=what)
    lo = date_bounds(lo_s, what=what)[0] if lo_s.strip() else None
    hi = date_bounds(hi_s, what=what)[1] if hi_s.strip() else None
    if lo is None and hi is None:
        raise InvalidRequest(f"{what}: {value!r} is not a date range", field="filters")
    return lo, hi


def check_value(spec: FieldSpec, value: str) -> None:
    """Refuse a filter value the field's kind cannot match (InvalidRequest)."""
    if spec.kind != "keyword":
        _bounds(spec, value, f"filters.{spec.name}")


_tables: weakref.WeakKeyDictionary[View, FieldTable] = weakref.WeakKeyDictionary()
_tables_lock = threading.Lock()


def table_for(view: View, searcher: Any, folder: Any) -> FieldTable:
    """The field table of a view (made once per view)."""
    with _tables_lock:
        got = _tables.get(view)
        if got is None:
            got = _tables[view] = FieldTable(view, searcher, folder)
    return got


def declared(store: Any) -> list[FieldSpec]:
    """The fields declared for a store's index (none for a store without a folder)."""
    path = getattr(store, "path", None)
    if path is None:
        return []
    try:
        return fieldspec.load(path)
    except FieldError:
        return []

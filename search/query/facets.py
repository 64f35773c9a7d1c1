"""Facets: filter masks, multi-select counts and facet value search.

Counting is done over doc values (``docvalues.View``), never through
Whoosh's ``groupedby``. Semantics (DESIGN.md section 3):

- values within one facet are ORed, facets are ANDed;
- multi-select: the counts of facet X are computed with every filter applied
  except X's own, so the other values of X keep their counts after a pick;
- values are grouped by their folded key (``textnorm.fold``) and shown in
  their most common written form; filter values match by folded key;
- each facet returns its top ``size`` values (count descending, then
  alphabetical), ``more`` = distinct values left out, ``other`` = the
  documents counted under them; selected values are always returned, even
  when outside the top or at count 0;
- ``date`` is a histogram by year, month or day ("2019", "2019-02",
  "2019-02-15"): the ``size`` biggest buckets, listed in date order;
- ``article`` values are article ids, with the article title as ``label``.
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from newsquarry.search.core.errors import InvalidRequest
from newsquarry.search.core.requests import FacetResult, FacetValue
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine import hooks
from newsquarry.search.engine.documents import stored_document
from newsquarry.search.engine.schema import FACET_FIELDS
from newsquarry.search.engine.views import View, cache_for

# ASCII digits only (\d and int() also take "٢٠١٩" and "２０１９")
_DATE_VALUE = re.compile(r"^([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?$")


def date_bounds(value: str, *, end: bool = False, what: str = "date") -> tuple[int, int]:
    """ "2019" / "2019-02" / "2019-02-15" -> inclusive (lo, hi) YYYYMMDD ints.

    Strict: a day must exist in its month ("2019-02-30" is refused, like "2019-13").
    """
    m = _DATE_VALUE.match(value.strip())
    if not m:
        raise InvalidRequest(
            f"{what}: {value!r} is not a date; use YYYY, YYYY-MM or YYYY-MM-DD", field=what
        )
    y, mo, d = m.group(1), m.group(2), m.group(3)
    y_ = int(y)
    if (
        y_ < 1
        or mo
        and not 1 <= int(mo) <= 12
        or d
        and not 1 <= int(d) <= calendar.monthrange(y_, int(mo))[1]
    ):
        raise InvalidRequest(f"{what}: {value!r} is not a valid date", field=what)
    if d:
        v = y_ * 10000 + int(mo) * 100 + int(d)
        return v, v
    if mo:
        v = y_ * 10000 + int(mo) * 100
        return v + 1, v + 31
    return y_ * 10000 + 101, y_ * 10000 + 1231


def bucket_key(interval: str) -> tuple[int, Any]:
    """(divisor, formatter) for a date histogram interval."""
    if interval == "year":
        return 10000, lambda b: f"{b:04d}"
    if interval == "month":
        return 100, lambda b: f"{b // 100:04d}-{b % 100:02d}"
    return 1, lambda b: f"{b // 10000:04d}-{b // 100 % 100:02d}-{b % 100:02d}"


@dataclass
class FilterSet:
    """The masks of a request's filters: one per facet, plus the date range."""

    masks: dict[str, np.ndarray] = field(default_factory=dict)  # facet -> docs allowed
    always: np.ndarray | None = None  # date_from/date_to (applies to every facet)
    selected: dict[str, list[str]] = field(default_factory=dict)  # facet -> values as given
    all_of: set[str] = field(default_factory=set)  # facets whose values are ANDed

    def combined(self, base: np.ndarray, without: str | None = None) -> np.ndarray:
        """``base`` AND every filter except facet ``without``'s own.

        A facet counted beside its own "any of" filter is counted without it (the
        other values stay selectable: multi-select faceting); an "all of" facet
        narrows as values are added, so it is counted within its own filter.
        """
        m = base.copy()
        if self.always is not None:
            m &= self.always
        for name, fm in self.masks.items():
            if name != without or name in self.all_of:
                m &= fm
        return m


def filter_mask(view: View, facet: str, values: list[str]) -> np.ndarray:
    """Documents having any of ``values`` in ``facet`` (matched by folded key)."""
    if facet == "date":
        m = view.empty()
        for v in values:
            lo, hi = date_bounds(v, what="filters.date")
            m |= view.date_mask(lo, hi)
        return m
    fname = FACET_FIELDS[facet]
    gids = []
    for v in values:
        key = v if fname == "article_id" else fold(v)
        gid = view.gid(fname, key)
        if gid is not None:
            gids.append(gid)
        elif facet in NAME_FACETS and key:
            gids.extend(partial_name_gids(view, fname, key))
    return view.key_mask(fname, gids)


NAME_FACETS = ("person", "speaker", "org", "place")


def count_per_story(view: View, fname: str, mask: np.ndarray, story: np.ndarray) -> np.ndarray:
    """Per key id, the distinct stories (``story``: per document its story number, -1
    none) among the documents of ``mask`` holding it: a quotation carried by forty
    copies of one wire story counts once."""
    docs = view.docs[fname]
    n = view.nkeys[fname]
    if not len(docs):
        return np.zeros(n, dtype=np.int64)
    held = mask[docs]
    sel = docs[held]
    gids = view.gids[fname][held].astype(np.int64)
    stories = story[sel]
    # a document without a story (none: -1) counts alone, under its own number
    stories = np.where(stories >= 0, stories, -1 - sel)
    pairs = np.unique(np.stack((gids, stories)), axis=1) if len(sel) else np.zeros((2, 0))
    return np.bincount(pairs[0].astype(np.int64), minlength=n)


def display_form(view: View, fname: str, value: str | None) -> str | None:
    """The index-wide display form of a value (``View.display``), or the value if unknown.

    Hits and documents show names in this form, the one the facets show, so a
    name taken from a hit finds that hit as a filter, and one value is spelt
    one way everywhere ("OPEC" in every passage, not "Opec" in some).
    """
    if not value:
        return value
    gid = view.gid(fname, fold(value))
    return value if gid is None else view.display(fname, gid)


def canonical_record(view: View, record: dict[str, Any]) -> dict[str, Any]:
    """A passage record (``store.get_passage``) with its names in display form (in place)."""
    for e in record.get("entities") or []:
        if e.get("type") in ("person", "org", "place"):
            e["name"] = display_form(view, e["type"], e.get("name"))
    for q in record.get("quotes") or []:
        q["speaker"] = display_form(view, "speaker", q.get("speaker"))
    record["speakers"] = list(
        dict.fromkeys(q["speaker"] for q in record.get("quotes") or [] if q.get("speaker"))
    )
    if record.get("source"):
        record["source"] = display_form(view, "source", record["source"])
    return record


def partial_name_gids(view: View, fname: str, key: str) -> list[int]:
    """Values of which ``key`` is a run of whole words: "alvarenga" -> "raul daniel alvarenga".

    Used only when no value equals the filter value, so a surname selects the
    people of that name (as a newsroom user types it) while exact values stay exact.
    """
    padded = f" {key} "
    return [
        gid for gid, k in enumerate(view.keys[fname][: view.nkeys[fname]]) if padded in f" {k} "
    ]


def all_of_mask(one: Callable[[list[str]], np.ndarray], values: list[str]) -> np.ndarray:
    """Documents having every one of ``values``: the AND of ``one([value])`` masks."""
    m = one([values[0]])
    for v in values[1:]:
        m = m & one([v])  # the masks are the view's kept ones: never changed in place
    return m


def build_filters(
    view: View,
    filters: dict[str, list[str]],
    date_from: str | None = None,
    date_to: str | None = None,
    all_of: Iterable[str] = (),
) -> FilterSet:
    """Masks for a request's filters (validated names and values).

    A facet's values are ORed ("any of"), or ANDed for the facets in ``all_of``.
    """
    fs = FilterSet(all_of=set(all_of))
    for facet, values in filters.items():
        values = [str(v) for v in values if v is not None and str(v).strip()]
        if not values:
            continue
        if facet in fs.all_of:
            fs.masks[facet] = all_of_mask(partial(filter_mask, view, facet), values)
        else:
            fs.masks[facet] = filter_mask(view, facet, values)
        fs.selected[facet] = values
    if date_from or date_to:
        lo = date_bounds(date_from, what="date_from")[0] if date_from else None
        hi = date_bounds(date_to, what="date_to")[1] if date_to else None
        if lo is not None and hi is not None and lo > hi:
            raise InvalidRequest("date_from is after date_to", field="date_from")
        fs.always = view.date_mask(lo, hi)
    return fs


class FacetCounter:
    """Computes facet results for one request over one view."""

    def __init__(self, view: View, searcher: Any, base: np.ndarray, filters: FilterSet) -> None:
        self.view = view
        self.searcher = searcher
        self.base = base
        self.filters = filters
        # dedupe="story": per document its story number; a value is then counted once
        # per story that has it, however many copies of the story carry it
        self.per_story: np.ndarray | None = None

    def count(self, fname: str, mask: np.ndarray) -> np.ndarray:
        """Per key id of ``fname``: documents of ``mask`` holding it (or stories)."""
        if self.per_story is None:
            return self.view.count(fname, mask)
        return count_per_story(self.view, fname, mask, self.per_story)

    def mask_for(self, facet: str) -> np.ndarray:
        return self.filters.combined(self.base, without=facet)

    # -- keyword facets ------------------------------------------------------
    def _top(self, fname: str, counts: np.ndarray, nz: np.ndarray, size: int) -> list[int]:
        """The ``size`` key ids of ``nz`` with most counts, ties in alphabetical key order.

        Only keys that can make the cut (count at least the ``size``-th largest)
        are sorted, by (count, key) in Python: sorting every key of the index
        alphabetically cost ~90 ms on each new index state.
        """
        c = counts[nz]
        cand = nz
        if len(nz) > size:
            kth = np.partition(c, len(c) - size)[len(c) - size]
            cand = nz[c >= kth]
        keys = self.view.keys[fname]
        return sorted(cand.tolist(), key=lambda g: (-int(counts[g]), keys[g]))[:size]

    def counts(self, facet: str) -> dict[str, int] | np.ndarray:
        mask = self.mask_for(facet)
        if facet == "date":
            return mask
        return self.count(FACET_FIELDS[facet], mask)

    def facet(self, facet: str, size: int, interval: str = "month") -> FacetResult:
        """Top values of one facet with counts, ``more``/``other`` and ``selected``."""
        if facet == "date":
            return self._date_facet(size, interval)
        fname = FACET_FIELDS[facet]
        counts = self.count(fname, self.mask_for(facet))
        nz = np.flatnonzero(counts)
        top = self._top(fname, counts, nz, size) if len(nz) else []
        selected_keys = self._selected_keys(facet, fname)
        values = [self._value(fname, g, int(counts[g]), selected_keys) for g in top]
        shown = set(top)
        for key, given in selected_keys.items():
            gid = self.view.gid(fname, key)
            if gid is not None and gid in shown:
                continue
            if gid is not None:
                values.append(self._value(fname, gid, int(counts[gid]), selected_keys))
            else:
                values.append(FacetValue(value=given, count=0, selected=True))
        other = int(counts[nz].sum()) - sum(int(counts[g]) for g in top)
        return FacetResult(name=facet, values=values, other=other, more=len(nz) - len(top))

    def _selected_keys(self, facet: str, fname: str) -> dict[str, str]:
        """Key (folded, and canonical for names: ``search.aliases``) -> value as selected.

        A name selected by a run of its words ("Maduro") marks the full names it
        filtered on ("Nicolás Maduro"), as ``filter_mask`` matched them, so the facet
        shows the value selected with its count rather than "Maduro (0)" beside it.
        """
        keys: dict[str, str] = {}
        for v in self.filters.selected.get(facet, []):
            key = v if fname == "article_id" else self.view.canonical_key(fname, fold(v))
            if (
                facet in NAME_FACETS
                and key
                and self.view.gid(fname, key) is None
                and (gids := partial_name_gids(self.view, fname, key))
            ):
                for gid in gids:
                    keys.setdefault(self.view.keys[fname][gid], v)
                continue
            keys[key] = v
        return keys

    def _value(self, fname: str, gid: int, count: int, selected: dict[str, str]) -> FacetValue:
        key = self.view.keys[fname][gid]
        if fname == "article_id":
            return FacetValue(
                value=key, count=count, selected=key in selected, label=self._title(key)
            )
        return FacetValue(
            value=self.view.display(fname, gid), count=count, selected=key in selected
        )

    def _title(self, article_id: str) -> str | None:
        doc = stored_document(self.searcher, article_id, "article")
        if not doc:
            return None
        try:
            return json.loads(doc.get("data") or "{}").get("title")
        except ValueError:
            return None

    # -- date histogram --------------------------------------------------------
    def _date_buckets(self, interval: str) -> tuple[np.ndarray, np.ndarray, Any]:
        div, fmt = bucket_key(interval)
        buckets, counts = self.view.date_buckets(div, self.mask_for("date"))
        return buckets, counts, fmt

    def _date_facet(self, size: int, interval: str) -> FacetResult:
        buckets, counts, fmt = self._date_buckets(interval)
        selected = set(self.filters.selected.get("date", []))
        if len(buckets) > size:
            keep = np.sort(np.argsort(-counts, kind="stable")[:size])
        else:
            keep = np.arange(len(buckets))
        values = []
        for i in keep:
            key = fmt(int(buckets[i]))
            values.append(FacetValue(value=key, count=int(counts[i]), selected=key in selected))
        shown = {v.value for v in values}
        for s in sorted(selected - shown):
            values.append(FacetValue(value=s, count=self._date_count(s), selected=True))
        rest = np.ones(len(buckets), dtype=bool)
        rest[keep] = False
        left = np.flatnonzero(rest)
        return FacetResult(
            name="date",
            values=values,
            other=int(counts[left].sum()) if len(left) else 0,
            more=len(left),
        )

    def _date_count(self, value: str) -> int:
        try:
            lo, hi = date_bounds(value)
        except InvalidRequest:
            return 0
        return int((self.mask_for("date") & self.view.date_mask(lo, hi)).sum())

    # -- facet value search ------------------------------------------------------
    def search_values(self, facet: str, prefix: str, size: int, interval: str) -> FacetResult:
        """Values of ``facet`` whose folded form (or one of its words) starts with ``prefix``."""
        want = fold(prefix)
        if facet == "date":
            buckets, counts, fmt = self._date_buckets(interval)
            pairs = [
                (fmt(int(b)), int(c))
                for b, c in zip(buckets, counts, strict=True)
                if fmt(int(b)).startswith(want)
            ]
            pairs.sort(key=lambda p: (-p[1], p[0]))
            selected = set(self.filters.selected.get("date", []))
            return FacetResult(
                name="date",
                values=[FacetValue(v, c, v in selected) for v, c in pairs[:size]],
                other=sum(c for _, c in pairs[size:]),
                more=max(0, len(pairs) - size),
            )
        fname = FACET_FIELDS[facet]
        counts = self.count(fname, self.mask_for(facet))
        keys = self.view.keys[fname]
        nz = np.flatnonzero(counts)
        hits = []
        for g in nz:
            key = keys[g]
            k = fold(key) if fname == "article_id" else key
            if not want or k.startswith(want) or any(w.startswith(want) for w in k.split()):
                hits.append(int(g))
        hits.sort(key=lambda g: (-int(counts[g]), keys[g]))
        selected_keys = self._selected_keys(facet, fname)
        values = [self._value(fname, g, int(counts[g]), selected_keys) for g in hits[:size]]
        return FacetResult(
            name=facet,
            values=values,
            other=int(sum(int(counts[g]) for g in hits[size:])),
            more=max(0, len(hits) - size),
        )


def record_view(store: Any) -> Any:
    """Puts a passage record's names in their index-wide display form (as hits show them)."""
    view = cache_for(store).view(store.searcher())
    return lambda record: canonical_record(view, record)


hooks.provide("record_view", record_view)

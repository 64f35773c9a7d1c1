"""Validation of search requests: the library checks what the API and the CLI send, so
both report the same errors (``UnknownFacet``, ``InvalidRequest``)."""

from __future__ import annotations

from typing import Any

from newsquarry.search.core.errors import InvalidRequest, UnknownFacet
from newsquarry.search.core.fields import FieldSpec
from newsquarry.search.core.requests import (
    DATE_INTERVALS,
    DEDUPES,
    GROUPS,
    MATCHES,
    MODES,
    SORTS,
    SearchRequest,
)
from newsquarry.search.core.textnorm import text_problem
from newsquarry.search.engine.schema import FACETS
from newsquarry.search.query.facets import date_bounds
from newsquarry.search.query.fieldfacets import check_value


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value))
        except ValueError:
            raise InvalidRequest(
                f"{name} must be a whole number, got {value!r}", field=name
            ) from None
    return value


def validate(
    request: SearchRequest, settings: dict[str, Any], declared: list[FieldSpec] | None = None
) -> SearchRequest:
    """Check a request against the settings; raises UnknownFacet or InvalidRequest.

    ``declared``: the index's own fields (``core.fields``), facets and filters too."""
    r = request
    specs = {s.name: s for s in declared or []}
    known = FACETS + tuple(specs)
    if not isinstance(r.q, str):
        raise InvalidRequest("q must be a string", field="q")
    if problem := text_problem(r.q):  # the word would vanish, and the query with it
        raise InvalidRequest(f"q {problem}", field="q")
    if r.mode not in MODES:
        raise InvalidRequest(
            f"mode must be one of {', '.join(MODES)}, got {r.mode!r}", field="mode"
        )
    if r.match not in MATCHES:
        raise InvalidRequest(
            f"match must be one of {', '.join(MATCHES)}, got {r.match!r}", field="match"
        )
    if r.group not in GROUPS:
        raise InvalidRequest(
            f"group must be one of {', '.join(GROUPS)}, got {r.group!r}", field="group"
        )
    if r.group == "cluster" and r.mode != "quotes":
        raise InvalidRequest(
            "group=cluster groups quotations: it needs mode=quotes (the quote search)",
            field="group",
        )
    if r.dedupe not in DEDUPES:
        raise InvalidRequest(
            f"dedupe must be one of {', '.join(DEDUPES)}, got {r.dedupe!r}", field="dedupe"
        )
    if r.sort not in SORTS:
        raise InvalidRequest(
            f"sort must be one of {', '.join(SORTS)}, got {r.sort!r}", field="sort"
        )
    r.page = _int(r.page, "page")
    r.per_page = _int(r.per_page, "per_page")
    r.facet_size = _int(r.facet_size, "facet_size")
    if r.page < 1:
        raise InvalidRequest(f"page must be 1 or more, got {r.page}", field="page")
    if not 1 <= r.per_page <= settings["max_per_page"]:
        raise InvalidRequest(
            f"per_page must be between 1 and {settings['max_per_page']}, got {r.per_page}",
            field="per_page",
        )
    if r.page * r.per_page > settings["max_page_depth"]:
        raise InvalidRequest(
            f"page {r.page} with per_page {r.per_page} goes past result "
            f"{settings['max_page_depth']}, the deepest reachable: refine the query",
            field="page",
        )
    if not 1 <= r.facet_size <= settings["max_facet_size"]:
        raise InvalidRequest(
            f"facet_size must be between 1 and {settings['max_facet_size']}, got {r.facet_size}",
            field="facet_size",
        )
    if r.date_interval not in DATE_INTERVALS:
        raise InvalidRequest(
            f"date_interval must be one of {', '.join(DATE_INTERVALS)}, got {r.date_interval!r}",
            field="date_interval",
        )
    facets = list(dict.fromkeys(r.facets or []))
    for f in facets:
        if f not in known:
            raise UnknownFacet(
                f"unknown facet {f!r}; facets are: {', '.join(known)}", field="facets"
            )
    if len(facets) > settings["max_facets"]:
        raise InvalidRequest(
            f"at most {settings['max_facets']} facets per search, got {len(facets)}",
            field="facets",
        )
    r.facets = facets
    if not isinstance(r.filters, dict):
        raise InvalidRequest("filters must map facet names to lists of values", field="filters")
    nvalues = 0
    clean: dict[str, list[str]] = {}
    for name, values in r.filters.items():
        if name not in known:
            raise UnknownFacet(
                f"unknown filter {name!r}; filters are: {', '.join(known)}", field="filters"
            )
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
            raise InvalidRequest(f"filter {name!r} must be a list of strings", field="filters")
        for v in values:
            if problem := text_problem(v):
                raise InvalidRequest(f"filter {name!r}: a value {problem}", field="filters")
        if name == "date":
            for v in values:
                date_bounds(v, what="filters.date")
        elif name in specs:
            for v in values:
                check_value(specs[name], v)
        nvalues += len(values)
        clean[name] = list(values)
    if nvalues > settings["max_filter_values"]:
        raise InvalidRequest(
            f"at most {settings['max_filter_values']} filter values per search, got {nvalues}",
            field="filters",
        )
    r.filters = clean
    all_of = r.all_of
    if isinstance(all_of, str):
        all_of = [all_of]
    if not isinstance(all_of, (list, tuple, set)) or not all(isinstance(f, str) for f in all_of):
        raise InvalidRequest("all_of must be a list of facet names", field="all_of")
    for name in all_of:
        if name not in known or name == "date":
            raise UnknownFacet(
                f"all_of takes the facets whose filter values must all hold, not {name!r}; "
                f"facets are: {', '.join(k for k in known if k != 'date')}",
                field="all_of",
            )
    r.all_of = list(dict.fromkeys(all_of))
    for name in ("date_from", "date_to"):
        v = getattr(r, name)
        if v is not None and v != "":
            date_bounds(str(v), what=name)
    if r.time_limit is not None:
        try:
            ok = float(r.time_limit) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InvalidRequest(
                "time_limit must be a positive number of seconds", field="time_limit"
            )
    return r

"""Search results as records for scripts: JSON Lines and CSV, and every hit of a search.

One definition serves the HTTP API (``format=jsonl|csv``, ``export=true``) and the
command line (``--jsonl``, ``--csv``, ``--all``), so the two write the same bytes for
the same index: compact UTF-8 JSON a line (orjson), and CSV (RFC 4180, CRLF line ends)
with the columns below, lists joined with "; " and cells that a spreadsheet would run
as a formula (starting with = + - @) prefixed with a quote.

``Export`` streams every hit of a request, one library page at a time, so memory stays
at one page whatever the number of hits.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import orjson

from newsquarry.search.core.errors import NewsquarryError
from newsquarry.search.core.requests import SearchRequest, SearchResult
from newsquarry.search.query.fieldfacets import declared as declared_fields
from newsquarry.search.query.searching import run_search

PASSAGE_COLUMNS = (
    "id", "article_id", "position", "start", "end", "title", "source", "date", "url",
    "score", "speakers", "people", "orgs", "places", "text",
)  # fmt: skip
QUOTE_COLUMNS = (
    "id", "passage_id", "article_id", "speaker", "kind", "cue", "start", "end", "title",
    "source", "date", "score", "text",
)  # fmt: skip
CSV_LIST_SEP = "; "


def dumps(data: Any) -> bytes:
    """Compact UTF-8 JSON (orjson: about 5x faster than ``json`` on a page of hits)."""
    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS)


def jsonl_lines(hits: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """One compact JSON record a line."""
    for hit in hits:
        yield dumps(hit) + b"\n"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        value = CSV_LIST_SEP.join(str(v) for v in value)
    text = str(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r"):
        text = "'" + text
    return text


def field_columns(hits: Iterable[dict[str, Any]]) -> list[str]:
    """The declared fields the hits of a page carry, in order of first appearance (the
    CSV columns after the built-in ones; a stream uses the index's declared fields)."""
    seen: dict[str, None] = {}
    for hit in hits:
        for name in hit.get("fields") or {}:
            seen.setdefault(name, None)
    return list(seen)


def _field_cells(hit: dict[str, Any], names: Sequence[str]) -> list[str]:
    values = hit.get("fields") or {}
    return [_cell(values.get(n)) for n in names]


def csv_row(hit: dict[str, Any], mode: str, fields: Sequence[str] = ()) -> list[str]:
    """A hit's CSV cells: quotes as they are; passages with people, orgs and places
    (the canonical names of their entities, in order of first mention); then the
    declared ``fields`` of its article."""
    if mode == "quotes":
        return [_cell(hit.get(c)) for c in QUOTE_COLUMNS] + _field_cells(hit, fields)
    ents = hit.get("entities") or []
    derived = {
        t + "s" if t != "person" else "people": list(
            dict.fromkeys(e.get("name") for e in ents if e.get("type") == t)
        )
        for t in ("person", "org", "place")
    }
    return [
        _cell(derived[c] if c in derived else hit.get(c)) for c in PASSAGE_COLUMNS
    ] + _field_cells(hit, fields)


def csv_lines(
    hits: Iterable[dict[str, Any]], mode: str, fields: Sequence[str] | None = None
) -> Iterator[bytes]:
    """A header row, then one row per hit, encoded as UTF-8. ``fields``: the declared
    fields' columns (None: the ones the hits carry, which must then be a list)."""
    if fields is None:
        hits = list(hits)
        fields = field_columns(hits)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow([*(QUOTE_COLUMNS if mode == "quotes" else PASSAGE_COLUMNS), *fields])
    for hit in hits:
        writer.writerow(csv_row(hit, mode, fields))
        yield buf.getvalue().encode("utf-8")
        buf.seek(0)
        buf.truncate()
    if buf.getvalue():
        yield buf.getvalue().encode("utf-8")


def records(
    hits: Iterable[dict[str, Any]], fmt: str, mode: str, fields: Sequence[str] | None = None
) -> Iterator[bytes]:
    """Hits as ``jsonl`` or ``csv`` bytes (``fields``: see ``csv_lines``)."""
    return jsonl_lines(hits) if fmt == "jsonl" else csv_lines(hits, mode, fields)


class Export:
    """Every hit of ``request``, fetched a library page at a time.

    The first page is searched at once, so a bad query fails here (before any
    output) and ``total`` is known; ``hits()`` then streams the rest. It stops at
    ``settings["max_page_depth"]`` hits (the API's protection; the command line
    lifts it) and at a page cut short by the time limit (``partial``).
    """

    def __init__(
        self,
        store: Any,
        request: SearchRequest,
        settings: dict[str, Any],
        search: Callable[[Any, SearchRequest, dict[str, Any]], SearchResult] | None = None,
    ) -> None:
        self._search = search if search is not None else run_search
        self.store = store
        self.settings = settings
        self.per_page = int(settings["max_per_page"])
        self.depth = int(settings["max_page_depth"])
        self.request = replace(request, page=1, per_page=self.per_page, facets=[], suggest=False)
        self.first = self._search(store, self.request, settings)
        self.total = self.first.total
        self.written = 0
        self.partial = False
        # the CSV columns of the index's declared fields (``core.fields``)
        self.fields = [s.name for s in declared_fields(store)]

    def hits(self, on_error: Callable[[Exception, int], None] | None = None) -> Iterator[dict]:
        """The hits as dicts, in the request's order; ``written`` counts them.

        A search error after the first page is raised, or handed to ``on_error``
        (error, page) which ends the stream (a server has sent its status by then).
        """
        req, result = self.request, self.first
        while True:
            for hit in result.hits:
                self.written += 1
                yield dict(vars(hit))
            if result.partial and not result.cut_short:  # hits cut short, not only extras
                self.partial = True
                return
            if len(result.hits) < self.per_page:
                return
            if (req.page + 1) * self.per_page > self.depth or req.page * self.per_page >= (
                result.total
            ):
                return
            req.page += 1
            try:
                result = self._search(self.store, req, self.settings)
            except NewsquarryError as exc:
                if on_error is None:
                    raise
                on_error(exc, req.page)
                return

"""Output formats of search results: JSON, JSON Lines (streamed) and CSV.

``negotiate`` picks the format from ``format=`` or else the Accept header.
JSON Lines writes one hit per line; CSV one hit per row with flat columns: both
are defined in the library (``search.export``), so the command line writes the
same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from flask import Request

from newsquarry.search.core.requests import SearchRequest, SearchResult
from newsquarry.search.query.export import (  # noqa: F401 (the API's formats, from the library)
    PASSAGE_COLUMNS,
    QUOTE_COLUMNS,
    csv_lines,
    dumps,
    jsonl_lines,
)

MIMETYPES = {
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    "csv": "text/csv",
    "atom": "application/atom+xml",
    "jsonfeed": "application/feed+json",
}


def result_dict(result: SearchResult) -> dict[str, Any]:
    """``SearchResult.to_dict()`` without ``dataclasses.asdict``'s deep copy.

    Hits hold only scalars and lists of plain dicts, so a shallow copy of each
    dataclass is enough; this takes about a tenth of the time ``asdict`` takes
    on a page of ten hits with four facets (``tests/test_api_search.py``
    checks that both give the same JSON).
    """
    facets = {
        name: {
            **{k: v for k, v in vars(f).items() if k != "values"},
            "values": [dict(vars(v)) for v in f.values],
        }
        for name, f in result.facets.items()
    }
    body = {
        **vars(result),
        "request": _request_dict(result.request),
        "hits": [dict(vars(h)) for h in result.hits],
        "facets": facets,
        "interpretations": [dict(vars(i)) for i in result.interpretations],
    }
    body.update(page=result.page, per_page=result.per_page, total_pages=result.total_pages)
    return body


HIT_TEXT_CHARS = 1000  # longest hit ``text`` in a page of results (the passage is one GET away)
WORD_SLACK = 20  # how far a cut may move to fall between words


def bounded_window(
    text: str, matches: list[list[int]], size: int = HIT_TEXT_CHARS
) -> tuple[int, int]:
    """[start, end) of at most ``size`` characters of ``text``, around its first match.

    The window starts a quarter of ``size`` before the first match (so the match
    is read in context) and both ends move to a space when one is near.
    """
    if len(text) <= size:
        return 0, len(text)
    first = min((m[0] for m in matches), default=0)
    start = max(0, first - size // 4)
    end = min(len(text), start + size)
    if end == len(text):
        start = end - size
    if start > 0:
        space = text.find(" ", start, start + WORD_SLACK)
        if space != -1:
            start = space + 1
    if end < len(text):
        space = text.rfind(" ", end - WORD_SLACK, end)
        if space > start:
            end = space
    return start, end


def _shifted(items: list[dict[str, Any]], keys: tuple[str, ...], start: int, end: int) -> list:
    """The items whose [start, end) lies inside the window, offsets made window-relative."""
    out = []
    for item in items:
        s, e = item.get("start"), item.get("end")
        if s is None or e is None or s < start or e > end:
            continue
        moved = dict(item)
        for k in keys:
            if moved.get(k) is not None:
                moved[k] -= start
        out.append(moved)
    return out


def bound_hit_text(hit: dict[str, Any], size: int = HIT_TEXT_CHARS) -> dict[str, Any]:
    """Cut a hit's ``text`` to at most ``size`` characters around its first match, in place.

    Adds ``text_length`` (the whole text's length) and ``text_start`` (where the
    returned text starts in it); ``matches`` and, for passages, ``entities`` and
    ``quotes`` keep only what lies inside and index into the returned ``text``.
    """
    text = hit.get("text") or ""
    hit["text_length"] = len(text)
    matches = hit.get("matches") or []
    start, end = bounded_window(text, matches, size)
    hit["text_start"] = start
    if (start, end) == (0, len(text)):
        return hit
    hit["text"] = text[start:end]
    hit["matches"] = [[s - start, n] for s, n in matches if s >= start and s + n <= end]
    if "entities" in hit:
        hit["entities"] = _shifted(hit["entities"] or [], ("start", "end"), start, end)
    if "quotes" in hit:
        keys = ("start", "end", "speaker_start", "speaker_end")
        hit["quotes"] = _shifted(hit["quotes"] or [], keys, start, end)
    return hit


def _request_dict(req: SearchRequest) -> dict[str, Any]:
    """``asdict(req)``: its only containers are ``filters`` (lists by name) and ``facets``."""
    out = dict(vars(req))
    out["filters"] = {name: list(values) for name, values in req.filters.items()}
    out["facets"] = list(req.facets)
    return out


def negotiate(req: Request, given: str | None) -> str:
    """The output format: the ``format`` parameter wins, then the Accept header."""
    if given and given != "json":
        return given
    if "format" in req.args:
        return "json"
    best = req.accept_mimetypes.best_match(
        list(MIMETYPES.values()), default="application/json"
    )
    return {v: k for k, v in MIMETYPES.items()}.get(best or "", "json")


def json_export(total: int, hits: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """``{"total": N, "hits": [...]}``, a hit at a time (``export`` with ``format=json``):
    the shape of a search answer, so the same schema describes both."""
    yield b'{"total": ' + str(int(total)).encode() + b', "hits": ['
    for n, hit in enumerate(hits):
        yield (b",\n" if n else b"\n") + dumps(hit)
    yield b"\n]}\n"

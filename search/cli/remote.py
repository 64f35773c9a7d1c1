"""A client for a running newsquarry API, so ``--url`` gives the same output as local.

It speaks the API's query parameters and returns the same dicts the library's
``to_dict()`` gives locally. HTTP errors (problem+json) become library errors
with the same exit codes as local ones; an answer that is not the API's (an HTML
404 page, another service's JSON) is ``NotNewsquarry``, exit 5 like an
unreachable server, not "not found".
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

from newsquarry.search.core.errors import (
    IndexBusy,
    IndexUnavailable,
    InvalidRequest,
    NewsquarryError,
    NotFound,
    QueryError,
    UnknownFacet,
)
from newsquarry.search.core.ids import url_segment
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.schema import FACETS

API_PREFIX = "/v1"


class RemoteError(NewsquarryError):
    """The API answered with an error this client has no closer class for."""


class NotNewsquarry(IndexUnavailable):
    """The address answers, but not as a newsquarry API does."""


PROBLEM = "application/problem+json"


def request_params(request: SearchRequest, *, facets: bool = True) -> list[tuple[str, str]]:
    """A SearchRequest as the API's query parameters (dates checked here, with the
    library's messages, rather than by the API's pattern)."""
    from newsquarry.search.query.facets import date_bounds  # lazy: start-up time

    for name in ("date_from", "date_to"):
        if getattr(request, name):
            date_bounds(str(getattr(request, name)), what=name)
    params: list[tuple[str, str]] = []
    if request.q:
        params.append(("q", request.q))
    for name, values in request.filters.items():
        params.extend((name, v) for v in values)
    if request.date_from:
        params.append(("date_from", request.date_from))
    if request.date_to:
        params.append(("date_to", request.date_to))
    if facets:
        params.extend(("facet", f) for f in request.facets)
        if request.facets:
            params.append(("facet_size", str(request.facet_size)))
            params.append(("date_interval", request.date_interval))
    params += [
        ("page", str(request.page)),
        ("per_page", str(request.per_page)),
        ("sort", request.sort),
    ]
    if not request.highlight:
        params.append(("highlight", "false"))
    if request.match != "most":
        params.append(("match", request.match))
    if request.group != "none":
        params.append(("group", request.group))
    params.extend(("all_of", name) for name in request.all_of)
    if request.dedupe != "none":
        params.append(("dedupe", request.dedupe))
    if request.retrieval:
        params.append(("retrieval", request.retrieval))
    if request.similar_to:
        params.append(("similar_to", request.similar_to))
    return params


def _drop_api_fields(facet: dict[str, Any]) -> dict[str, Any]:
    """A facet as the library returns it: without the API's ready-made URLs."""
    for value in facet.get("values") or []:
        value.pop("toggle_url", None)
    return facet


def _drop_text_bounds(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit as the library returns it when the API sent its whole text.

    The API cuts a long text to a window (``text_start``, ``text_length``); a cut hit
    keeps both keys, so the output says it is not the whole passage.
    """
    if hit.get("text_start") == 0 and hit.get("text_length") == len(hit.get("text") or ""):
        hit.pop("text_start")
        hit.pop("text_length")
    return hit


class RemoteClient:
    """GET requests against ``base_url`` (e.g. http://127.0.0.1:8080)."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidRequest(f"--url must start with http:// or https://, not {base_url!r}")
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    def _open(
        self, path: str, params: list[tuple[str, str]] | None, accept: str, found: bool = False
    ) -> Any:
        """The open response of a GET; library errors for HTTP errors and odd answers.

        ``found``: the path always exists on a newsquarry API (search, stats), so a
        404 means the address is not one (a wrong prefix, another service).
        """
        url = self.base + API_PREFIX + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, headers={"Accept": accept})
        try:
            resp = urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            if found and exc.code == 404:
                raise self._not_newsquarry("it answered HTTP 404", path) from None
            raise self._error(exc, path) from None
        except urllib.error.URLError as exc:
            raise IndexUnavailable(f"cannot reach {self.base}: {exc.reason}") from None
        except (OSError, ValueError) as exc:  # a reset connection, a malformed answer
            raise IndexUnavailable(f"cannot reach {self.base}: {exc}") from None
        if resp.headers.get_content_type() != accept:
            resp.close()
            raise self._not_newsquarry(f"it answered {resp.headers.get_content_type()}", path)
        return resp

    def _get(
        self,
        path: str,
        params: list[tuple[str, str]] | None = None,
        found: bool = True,
        keys: tuple[str, ...] = (),
    ) -> Any:
        """The JSON answer, which must be an object with ``keys`` (else NotNewsquarry)."""
        with self._open(path, params, "application/json", found) as resp:
            try:
                body = json.loads(resp.read().decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                raise self._not_newsquarry("its answer is not JSON", path) from None
        if not isinstance(body, dict) or not set(keys) <= body.keys():
            raise self._not_newsquarry("its answer is not the one newsquarry gives", path)
        return body

    def _not_newsquarry(self, why: str, path: str) -> NotNewsquarry:
        return NotNewsquarry(
            f"not a newsquarry server at {self.base} ({why} to GET {API_PREFIX}{path})"
        )

    def _error(self, exc: urllib.error.HTTPError, path: str = "") -> NewsquarryError:
        if exc.headers.get_content_type() != PROBLEM:
            if exc.code >= 500:
                return IndexUnavailable(f"the server at {self.base} answered HTTP {exc.code}")
            return self._not_newsquarry(f"it answered HTTP {exc.code}", path)
        try:
            body = json.loads(exc.read().decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            body = {}
        detail = body.get("detail") or body.get("title") or f"HTTP {exc.code}"
        errors = body.get("errors")
        if errors and len(errors) == 1:  # one parameter: its message, named as a field
            ((name, messages),) = errors.items()
            text = "; ".join(messages) if isinstance(messages, list) else str(messages)
            return (QueryError if name == "q" else InvalidRequest)(text, field=name)
        if errors:
            detail += ": " + "; ".join(f"{k}: {v}" for k, v in errors.items())
        if exc.code == 404:
            return NotFound(detail)
        if exc.code == 503:
            return IndexBusy(detail) if "busy" in detail.lower() else IndexUnavailable(detail)
        if body.get("title") == "Invalid query":
            return QueryError(detail, position=body.get("position"))
        if 400 <= exc.code < 500:
            return InvalidRequest(detail)
        err = RemoteError(detail)
        err.exit_code = 5
        return err

    def search(self, request: SearchRequest) -> dict[str, Any]:
        path = "/quotes" if request.mode == "quotes" else "/search"
        body = self._get(path, request_params(request), keys=("hits", "total", "request"))
        body.pop("links", None)  # the API's paging links: the CLI pages with --page
        for facet in (body.get("facets") or {}).values():
            _drop_api_fields(facet)
        for hit in body.get("hits") or []:
            _drop_text_bounds(hit)
        for it in body.get("interpretations") or []:
            it.pop("url", None)  # the API's ready-made URL; the library has none
        return body

    def export(self, request: SearchRequest, fmt: str) -> tuple[int, Iterator[bytes]]:
        """Every hit through the API's export (``export=true``): the total and the bytes.

        The server applies its own page depth limit (``NEWSQUARRY_MAX_PAGE_DEPTH``).
        """
        path = "/quotes" if request.mode == "quotes" else "/search"
        params = request_params(request, facets=False) + [("format", fmt), ("export", "true")]
        mimetype = "text/csv" if fmt == "csv" else "application/x-ndjson"
        resp = self._open(path, params, mimetype, found=True)
        try:
            total = int(resp.headers.get("X-Total-Count", ""))
        except ValueError:
            resp.close()
            raise self._not_newsquarry("no X-Total-Count in its answer", path) from None

        def chunks() -> Iterator[bytes]:
            with resp:
                while data := resp.read(1 << 16):
                    yield data

        return total, chunks()

    def facet_values(
        self, facet: str, prefix: str, request: SearchRequest, size: int
    ) -> dict[str, Any]:
        params = request_params(request, facets=False) + [("prefix", prefix), ("size", str(size))]
        params = [(k, v) for k, v in params if k not in ("page", "per_page", "sort")]
        if request.mode == "quotes":  # counts of quotations (the API's mode=quotes)
            params.append(("mode", "quotes"))
        if facet not in FACETS:  # as locally (the API answers 404 for it)
            raise UnknownFacet(
                f"unknown facet {facet!r}; facets are: {', '.join(FACETS)}", field="facet"
            )
        body = self._get(
            f"/facets/{urllib.parse.quote(facet, safe='')}", params, keys=("name", "values")
        )
        body.pop("prefix", None)
        return _drop_api_fields(body)

    def cooccurrence(self, request: SearchRequest, targets: list[str], size: int) -> dict[str, Any]:
        params = request_params(request, facets=False)
        params = [(k, v) for k, v in params if k not in ("page", "per_page", "sort", "highlight")]
        params += [("facet", t) for t in targets] + [("size", str(size))]
        return self._get("/cooccurrence", params)

    def passage(self, passage_id: str) -> dict[str, Any]:
        return self._get(f"/passages/{url_segment(passage_id)}", found=False, keys=("id", "text"))

    def article(self, article_id: str) -> dict[str, Any]:
        return self._get(f"/articles/{url_segment(article_id)}", found=False,
                         keys=("id", "passages"))  # fmt: skip

    def stats(self) -> dict[str, Any]:
        return self._get("/stats", keys=("articles", "passages"))

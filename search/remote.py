"""A client for a running newsquarry API, so ``--url`` gives the same output as local.

It speaks the API's query parameters and returns the same dicts the library's
``to_dict()`` gives locally. HTTP errors (problem+json) become library errors
with the same exit codes as local ones.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from .errors import (
    IndexBusy,
    IndexUnavailable,
    InvalidRequest,
    NewsquarryError,
    NotFound,
    QueryError,
)
from .ids import url_segment
from .requests import SearchRequest

API_PREFIX = "/v1"


class RemoteError(NewsquarryError):
    """The API answered with an error this client has no closer class for."""


def request_params(request: SearchRequest, *, facets: bool = True) -> list[tuple[str, str]]:
    """A SearchRequest as the API's query parameters."""
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
    return params


def _drop_api_fields(facet: dict[str, Any]) -> dict[str, Any]:
    """A facet as the library returns it: without the API's ready-made URLs."""
    for value in facet.get("values") or []:
        value.pop("toggle_url", None)
    return facet


class RemoteClient:
    """GET requests against ``base_url`` (e.g. http://127.0.0.1:8080)."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise InvalidRequest(f"--url must start with http:// or https://, not {base_url!r}")
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    def _get(self, path: str, params: list[tuple[str, str]] | None = None) -> Any:
        url = self.base + API_PREFIX + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise self._error(exc) from None
        except urllib.error.URLError as exc:
            raise IndexUnavailable(f"cannot reach {self.base}: {exc.reason}") from None

    @staticmethod
    def _error(exc: urllib.error.HTTPError) -> NewsquarryError:
        try:
            body = json.loads(exc.read().decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            body = {}
        detail = body.get("detail") or body.get("title") or f"HTTP {exc.code}"
        errors = body.get("errors")
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
        body = self._get(path, request_params(request))
        body.pop("links", None)  # the API's paging links: the CLI pages with --page
        for facet in (body.get("facets") or {}).values():
            _drop_api_fields(facet)
        return body

    def facet_values(
        self, facet: str, prefix: str, request: SearchRequest, size: int
    ) -> dict[str, Any]:
        params = request_params(request, facets=False) + [("prefix", prefix), ("size", str(size))]
        params = [(k, v) for k, v in params if k not in ("page", "per_page", "sort")]
        body = self._get(f"/facets/{urllib.parse.quote(facet, safe='')}", params)
        body.pop("prefix", None)
        return _drop_api_fields(body)

    def passage(self, passage_id: str) -> dict[str, Any]:
        return self._get(f"/passages/{url_segment(passage_id)}")

    def article(self, article_id: str) -> dict[str, Any]:
        return self._get(f"/articles/{url_segment(article_id)}")

    def stats(self) -> dict[str, Any]:
        return self._get("/stats")

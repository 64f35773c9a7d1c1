"""Scoped read keys on the API's read endpoints.

A key (``search.keys``) travels as the ``X-Newsquarry-Key`` header or the
``key`` query parameter. It is checked before the view runs, on the search,
quote, quotation cluster, facet value, passage and article endpoints: a malformed, tampered or
expired key is a 403 problem (``Invalid key``) whatever the endpoint.

- Searches: the search views pass the library request through
  ``apply_scope`` (``api.views.search.apply_read_key``), so the key's filters
  are ANDed in and values outside them are refused (never silently widened).
  Here, facet values outside the scope are dropped from the counts
  (``restrict_facets``, ``restrict_values``): multi-select counting leaves a
  facet's own filter out, so it would otherwise list what the key hides.
- Passages and articles: readable only when they fall inside the scope (for
  an article, when at least one of its passages does); otherwise 403. An
  article read with a key lists only its passages inside the scope, without
  its full ``text`` (``scoped_article``).
- Quotations: every passage record a key returns (hits, passages, article
  passages, exports) keeps only the quotations inside the key's speaker and
  quote kind scope (``scoped_record``).
- Quotation clusters (``/v1/quotes/{cluster}``, and the ``cluster_articles`` and
  ``first_seen`` of quote hits): only the copies inside the key's filters and
  dates count (``api.views.search.scope_request``); a cluster with none inside
  is a 404, as an unknown id.

Responses that depend on a key say so (``Vary: X-Newsquarry-Key``), and the
response cache keys on the header too (``api.caching.request_key``).
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, g, request

from newsquarry.search.core.textnorm import fold
from newsquarry.search.query.keys import KeyRefused, Scope, _bound, verify_key

from .backend import backend

HEADER = "X-Newsquarry-Key"
SCOPED_ENDPOINTS = {
    "search.search_passages",
    "search.search_quotes",
    "search.quote_cluster",
    "search.facet_value_search",
    "documents.get_passage",
    "documents.get_article",
}
ENTITY_FACETS = ("person", "org", "place")


def given_key() -> str | None:
    """The key sent with this request (``?key=`` first, then the header), if any."""
    key = request.args.get("key") or request.headers.get(HEADER)
    return key.strip() if key and key.strip() else None


def current_scope() -> Scope | None:
    """The verified scope of this request's key (None without a key); KeyRefused if bad."""
    if "nq_scope" in g:
        return g.nq_scope
    key = given_key()
    scope = None
    if key is not None:
        scope = verify_key(str(backend().settings.get("secret") or ""), key)
    g.nq_scope = scope
    return scope


def _allows(scope: Scope, facet: str, value: str) -> bool:
    allowed = scope.filters.get(facet)
    if allowed is None:
        return True
    if facet == "article":
        return value in allowed
    return fold(value) in {fold(v) for v in allowed}


def restrict_facets(facets: dict[str, Any]) -> dict[str, Any]:
    """Drop facet values outside the key's scope from a result body's ``facets``.

    The library counts each facet without its own selection (multi-select),
    so a key's fixed filter on ``source`` would otherwise list, with counts,
    the sources the key hides. ``other``/``more`` are zeroed for those facets.
    """
    scope = current_scope()
    if scope is None:
        return facets
    for name, facet in facets.items():
        if name in scope.filters:
            facet["values"] = [v for v in facet["values"] if _allows(scope, name, v["value"])]
            facet["other"] = facet["more"] = 0
    return facets


def restrict_values(result: Any) -> Any:
    """The same for a facet value search result (``FacetResult``-like, changed in place)."""
    scope = current_scope()
    if scope is not None and result.name in scope.filters:
        result.values = [v for v in result.values if _allows(scope, result.name, v.value)]
        result.other = result.more = 0
    return result


def restrict_cooccurrence(body: dict[str, Any]) -> dict[str, Any]:
    """Drop co-occurring values outside the key's scope (a co-occurrence body, in place)."""
    scope = current_scope()
    if scope is None:
        return body
    for name, facet in body.get("facets", {}).items():
        if name in scope.filters:
            for level in ("passage", "article"):
                facet[level] = [v for v in facet[level] if _allows(scope, name, v["value"])]
    return body


def passage_in_scope(p: dict[str, Any], scope: Scope) -> bool:
    """Whether a passage record (``store.get_passage``) matches every filter of the scope."""
    for name, allowed in scope.filters.items():
        keys = {fold(v) for v in allowed}
        if name in ENTITY_FACETS:
            have = [e.get("name") for e in p.get("entities", []) if e.get("type") == name]
        elif name == "speaker":
            have = list(p.get("speakers") or [])
        elif name == "source":
            have = [p.get("source")]
        elif name == "article":
            have = [p.get("article_id")]
            keys = set(allowed)
        elif name == "quote_kind":
            have = [q.get("kind") for q in p.get("quotes", [])]
        else:
            return False
        have_keys = {(v if name == "article" else fold(v)) for v in have if v}
        if not have_keys & keys:
            return False
    date = p.get("date")
    if scope.date_from or scope.date_to:
        if not date:
            return False
        if scope.date_from and _bound(date, True) < _bound(scope.date_from, False):
            return False
        if scope.date_to and _bound(date, False) > _bound(scope.date_to, True):
            return False
    return True


def _quote_in_scope(q: dict[str, Any], scope: Scope) -> bool:
    """Whether a quotation record passes the key's quote-level filters (speaker, kind)."""
    speakers = scope.filters.get("speaker")
    if speakers is not None and fold(q.get("speaker") or "") not in {fold(v) for v in speakers}:
        return False
    kinds = scope.filters.get("quote_kind")
    return kinds is None or q.get("kind") in kinds


def scoped_record(record: dict[str, Any]) -> dict[str, Any]:
    """A passage record or passage hit as this request's key may see it (changed in place).

    Quotations outside the key's speaker or quote kind scope are removed (so a
    speaker-scoped key never returns another speaker's quote records), and
    ``speakers`` follows. Without a key, the record is unchanged.
    """
    scope = current_scope()
    if scope is None or not ({"speaker", "quote_kind"} & set(scope.filters)):
        return record
    if "quotes" in record:
        record["quotes"] = [q for q in record["quotes"] or [] if _quote_in_scope(q, scope)]
        record["speakers"] = list(
            dict.fromkeys(q["speaker"] for q in record["quotes"] if q.get("speaker"))
        )
    return record


def scoped_article(article: dict[str, Any]) -> dict[str, Any]:
    """An article as this request's key may see it: in-scope passages only, no full text.

    Without a key, unchanged. With one, ``passages`` keeps the passages inside
    the scope (each as ``scoped_record``), ``text`` is null (the full text
    would show the passages left out) and ``scoped`` is true.
    """
    scope = current_scope()
    if scope is None:
        return article
    passages = [scoped_record(p) for p in article.get("passages", []) if passage_in_scope(p, scope)]
    return {**article, "text": None, "passages": passages, "scoped": True}


def _outside() -> KeyRefused:
    return KeyRefused("this key does not allow reading this document (outside its scope)")


def _check_document() -> None:
    """Before a passage or article read: refuse documents outside the key's scope."""
    scope = current_scope()
    if scope is None:
        return
    store = backend().store()
    args = request.view_args or {}
    if request.endpoint == "documents.get_passage":
        if not passage_in_scope(store.get_passage(args["passage_id"]), scope):
            raise _outside()
    elif request.endpoint == "documents.get_article":
        article = store.get_article(args["article_id"])
        if not any(passage_in_scope(p, scope) for p in article.get("passages", [])):
            raise _outside()


def install(app: Flask) -> None:
    """Check keys before the scoped read endpoints; mark their responses ``Vary``."""

    @app.before_request
    def _check_key() -> None:
        if request.endpoint not in SCOPED_ENDPOINTS or request.method == "OPTIONS":
            return
        current_scope()
        _check_document()

    @app.after_request
    def _vary(resp: Response) -> Response:
        if request.endpoint in SCOPED_ENDPOINTS:
            resp.vary.add(HEADER)
        return resp

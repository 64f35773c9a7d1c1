"""Search endpoints: passages, quotations and facet value search.

A thin layer: arguments are validated by marshmallow (with the configured
limits), turned into a ``search.requests.SearchRequest`` and handed to the
library; the result's ``to_dict()`` is the body (built by ``api.formats.result_dict``), plus a ``toggle_url`` on
every facet value and ``links`` to the previous and next pages (also sent
as a ``Link`` header).

Caching: the ETag is known before searching (index generation + request), so
``If-None-Match`` is answered 304 without running the search; repeated
queries are served from a per-process LRU keyed the same way. Partial
results (time limit reached) are neither cached nor given an ETag.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from flask import Response, g, request, stream_with_context, url_for
from marshmallow import RAISE

from newsquarry.search.core.requests import SearchRequest, SearchResult
from newsquarry.search.engine.schema import FACETS
from newsquarry.search.query.clusters import quote_cluster as library_cluster
from newsquarry.search.query.cooccurrence import cooccurrence as library_cooccurrence
from newsquarry.search.query.export import Export, records
from newsquarry.search.query.keys import apply_scope
from newsquarry.search.query.searching import facet_values
from newsquarry.search.query.searching import run_search as library_search

from ..arguments import ApiBlueprint as Blueprint
from ..backend import backend
from ..caching import CACHE_CONTROL, CachedBody, etag_matches, make_etag, not_modified, request_key
from ..errors import ApiError
from ..feeds import FEED_MIMETYPES, atom, feed_request, json_feed
from ..formats import (
    MIMETYPES,
    bound_hit_text,
    csv_lines,
    dumps,
    json_export,
    jsonl_lines,
    negotiate,
    result_dict,
)
from ..links import Toggler, absolute_url, link_header, public_url, request_path, url_with
from ..schemas import (
    ClusterArgs,
    FacetValuesResponse,
    PassageSearchResponse,
    ProblemSchema,
    QuoteClusterSchema,
    QuoteSearchResponse,
    facet_values_args_schema,
    search_args_schema,
)
from ..schemas_cooccur import CooccurrenceResponse, cooccurrence_args_schema
from ..scoping import (
    current_scope,
    restrict_cooccurrence,
    restrict_facets,
    restrict_values,
    scoped_record,
)

log = logging.getLogger("api.search")

# a search by meaning (retrieval semantic or hybrid, similar_to) that cannot run
NO_VECTORS = {"schema": ProblemSchema, "content_type": "application/problem+json",
              "description": "A search by meaning on an index without vectors: run "
              "`newsquarry embed`"}  # fmt: skip
NO_SEMANTIC = {"schema": ProblemSchema, "content_type": "application/problem+json",
               "description": "A search by meaning without the semantic extra installed"}  # fmt: skip

ALT_CONTENT = {
    "responses": {
        200: {
            "content": {
                "application/x-ndjson": {
                    "schema": {"type": "string", "description": "One hit per line"}
                },
                "text/csv": {"schema": {"type": "string", "description": "One hit per row"}},
                "application/atom+xml": {
                    "schema": {"type": "string", "description": "Atom 1.0 feed, newest first"}
                },
                "application/feed+json": {
                    "schema": {"type": "object", "description": "JSON Feed 1.1, newest first"}
                },
            },
            "headers": {
                "ETag": {"schema": {"type": "string"}},
                "Link": {"schema": {"type": "string"}, "description": "rel=next/prev/first"},
                "Last-Modified": {
                    "schema": {"type": "string"},
                    "description": "Feeds: the last commit",
                },
            },
        },
        304: {"description": "Not modified: the If-None-Match ETag is current"},
    }
}


def to_search_request(args: dict[str, Any], mode: str, settings: dict[str, Any]) -> SearchRequest:
    """Validated query arguments -> the library's request."""
    names = FACETS + tuple(f.name for f in settings.get("_declared_fields") or [])
    filters = {name: list(args[name]) for name in names if args.get(name)}
    return SearchRequest(
        q=args.get("q", ""),
        filters=filters,
        date_from=args.get("date_from"),
        date_to=args.get("date_to"),
        facets=list(dict.fromkeys(args.get("facet") or [])),
        facet_size=args.get("facet_size", 10),
        date_interval=args.get("date_interval", "month"),
        page=args.get("page", 1),
        per_page=args.get("per_page", 10),
        sort=args.get("sort", "relevance"),
        highlight=args.get("highlight", True),
        mode=mode,
        suggest=args.get("suggest", True),
        time_limit=float(settings["search_time_limit"]) or None,
        match=args.get("match", "most"),
        group=args.get("group", "none"),
        all_of=list(dict.fromkeys(args.get("all_of") or [])),
        dedupe=args.get("dedupe", "none"),
        retrieval=args.get("retrieval"),
        similar_to=args.get("similar_to") or "",
    )


def search_library(store: Any, req: SearchRequest, settings: dict[str, Any]) -> SearchResult:
    """The library's search (``store.search``), run with this app's settings and limits;
    what hits say about their quotation clusters stays inside a scoped key's scope."""
    return library_search(store, req, settings, within=scope_request())


def scope_request() -> SearchRequest | None:
    """The filters and dates of this request's scoped key, as a request (None: no key)."""
    scope = current_scope()
    if scope is None:
        return None
    return SearchRequest(filters=scope.filters, date_from=scope.date_from, date_to=scope.date_to)


def apply_read_key(req: SearchRequest, given: str | None) -> SearchRequest:
    """Restrict the request to a scoped read key's filters (``?key=`` or X-Newsquarry-Key).

    The parameters were validated by the argument schema, as without a key (a bad
    date is the same 400 with or without one), and ``apply_scope`` checks the
    request's dates again before combining them with the key's; then the
    verified scope (``api.scoping``) is applied.
    """
    scope = current_scope()
    return req if scope is None else apply_scope(req, scope)


def result_body(result: SearchResult, settings: dict[str, Any]) -> tuple[dict[str, Any], dict]:
    """The JSON body of a search result and its page links."""
    body = result_dict(result)
    for hit in body["hits"]:
        bound_hit_text(hit)  # a page carries previews; the whole passage is one GET away
    restrict_facets(body.get("facets", {}))  # api.scoping: no values outside a key's scope
    for hit in body.get("hits", []):
        scoped_record(hit)  # nor quotations outside it
    # relative unless base_url is set (never the Host header); percent-encoded: headers are ASCII
    toggle = Toggler(request, public_url(request_path(request)))
    for name, facet in body.get("facets", {}).items():
        for v in facet.get("values", []):
            v["toggle_url"] = toggle(name, v["value"], bool(v["selected"]))
    page, per_page = result.page, result.per_page
    deepest = max(1, int(settings["max_page_depth"]) // max(1, per_page))
    last = min(max(result.total_pages, 1), deepest)
    links = {
        "self": toggle.page(page),
        "next": toggle.page(page + 1) if page < last else None,
        "prev": toggle.page(min(page - 1, last)) if page > 1 else None,
    }
    body["links"] = links
    for it in body.get("interpretations", []):  # the offered search, ready to follow
        path = "v1/quotes" if it["mode"] == "quotes" else "v1/search"
        pairs = [("q", it["q"]), (it["facet"], it["value"])]
        it["url"] = url_with(public_url(f"{quote(request.script_root)}/{path}"), pairs)
    return body, {"first": toggle.page(1), **links}


def _finish(resp: Response, etag: str | None, cache_state: str | None = None) -> Response:
    if etag:
        resp.headers["ETag"] = etag
        resp.headers["Cache-Control"] = CACHE_CONTROL
    else:
        resp.headers["Cache-Control"] = "no-store"
    if cache_state:
        resp.headers["X-Cache"] = cache_state
    resp.headers["Vary"] = "Accept, X-Newsquarry-Key"
    return resp


def run_search(args: dict[str, Any], mode: str) -> Response:
    """The shared body of the two search endpoints."""
    be = backend()
    settings = be.settings
    fmt = negotiate(request, args.pop("format", None))
    export = args.pop("export", False)
    req = apply_read_key(to_search_request(args, mode, settings), args.pop("key", None))
    store = be.store()
    if export:
        if fmt in FEED_MIMETYPES:  # a feed is the newest page, never every hit
            raise ApiError(
                400,
                "export needs format=json, jsonl or csv",
                title="Invalid parameters",
                slug="invalid-parameters",
                errors={"export": ["export needs format=json, jsonl or csv"]},
            )
        return export_response(store, req, fmt, settings)
    if fmt in FEED_MIMETYPES:
        return feed_response(store, feed_request(req), fmt, settings)

    key = request_key(request, fmt, store)
    generation = int(store.generation)
    etag = make_etag(generation, key)
    if etag_matches(request, etag):
        return not_modified(etag)
    cached = be.cache.get(generation, key)
    if cached is not None:
        resp = Response(cached.body, mimetype=cached.mimetype)
        resp.headers.extend(cached.headers)
        return _finish(resp, etag, "HIT")

    result = search_library(store, req, settings)
    body, links = result_body(result, settings)
    headers: list[tuple[str, str]] = [("Link", link_header(links))]
    if fmt == "json":
        payload = dumps(body)
    elif fmt == "jsonl":
        payload = b"".join(jsonl_lines(body["hits"]))
    else:
        payload = b"".join(csv_lines(body["hits"], mode))
    headers.append(("X-Total-Count", str(result.total)))
    if fmt == "csv":
        headers.append(("Content-Disposition", f'attachment; filename="{mode}.csv"'))
    if result.partial:
        headers.append(("X-Partial-Result", "true"))
    resp = Response(payload, mimetype=MIMETYPES[fmt])
    resp.headers.extend(headers)
    if result.partial:
        return _finish(resp, None)
    if result.generation != generation:  # a commit landed meanwhile: describe what we ran
        generation = int(result.generation)
        etag = make_etag(generation, key)
    be.cache.put(generation, key, CachedBody(payload, MIMETYPES[fmt], tuple(headers)))
    return _finish(resp, etag, "MISS" if be.cache.size else None)


def feed_response(store: Any, req: SearchRequest, fmt: str, settings: dict[str, Any]) -> Response:
    """A search as an Atom or JSON Feed document, with ETag and Last-Modified."""
    key = request_key(request, fmt, store)
    generation = int(store.generation)
    etag = make_etag(generation, key)
    modified = datetime.fromtimestamp(int(store.last_modified()), tz=UTC)
    since = request.if_modified_since
    if etag_matches(request, etag) or (
        "If-None-Match" not in request.headers and since is not None and modified <= since
    ):
        resp = not_modified(etag)
        resp.last_modified = modified
        return resp
    result = search_library(store, req, settings)
    hits = [scoped_record(dict(vars(h))) for h in result.hits]  # a key's quotes only
    links = [
        absolute_url(request, url_for("pages.passage", article_id=aid, n=int(n)))
        for aid, _, n in (str(h.get("passage_id") or h["id"]).rpartition("#p") for h in hits)
    ]
    query = [(k, v) for k, v in request.args.items(multi=True) if k not in ("format", "key")]
    # feeds are read away from this server: absolute URLs, on base_url or the bound
    # address (never the Host header)
    html_url = absolute_url(request, url_for("pages.search_page")) + (
        "?" + urlencode(query) if query else ""
    )
    render = atom if fmt == "atom" else json_feed
    qs = request.query_string.decode("latin-1")
    self_url = absolute_url(request, request_path(request)) + (f"?{qs}" if qs else "")
    body = render(hits, req, self_url=self_url, html_url=html_url, links=links,
                  updated=modified)  # fmt: skip
    resp = Response(body, mimetype=FEED_MIMETYPES[fmt])
    resp.last_modified = modified
    return _finish(resp, None if result.partial else etag)


def export_response(store: Any, req: SearchRequest, fmt: str, settings: dict[str, Any]) -> Response:
    """Stream every hit up to the page depth limit, one library page at a time."""
    export = Export(store, req, settings, search_library)  # query errors surface here
    request_id = g.get("request_id")

    def stopped(exc: Exception, page: int) -> None:  # the status is sent: X-Total-Count tells
        log.warning("export %s stopped at page %d: %s", request_id, page, exc)

    hits = (scoped_record(hit) for hit in export.hits(on_error=stopped))  # a key's quotes only
    if fmt == "json":  # {"total", "hits"} with every hit, streamed
        lines = json_export(export.total, hits)
    else:
        lines = records(hits, fmt, req.mode, export.fields)
    resp = Response(stream_with_context(lines), mimetype=MIMETYPES[fmt])
    resp.headers["X-Total-Count"] = str(export.total)
    resp.headers["Cache-Control"] = "no-store"
    if fmt == "csv":
        resp.headers["Content-Disposition"] = f'attachment; filename="{req.mode}.csv"'
    return resp


def make_blueprint(settings: dict[str, Any]) -> Blueprint:
    """The search blueprint, its argument schemas carrying ``settings``' limits."""
    blp = Blueprint(
        "search", __name__, url_prefix="/v1", description="Search passages and quotations"
    )
    # schema instances, not classes: webargs would instantiate a class (deep-copying
    # every field) on each request; a marshmallow schema's load() keeps no state
    passage_args = search_args_schema(settings, "passages")()
    quote_args = search_args_schema(settings, "quotes")()
    facet_args = facet_values_args_schema(settings)()
    co_args = cooccurrence_args_schema(settings)()
    cluster_args = ClusterArgs()

    @blp.route("/search", methods=["GET"])
    @blp.arguments(passage_args, location="query", error_status_code=400, unknown=RAISE)
    @blp.response(200, PassageSearchResponse)
    @blp.doc(**ALT_CONTENT)
    @blp.alt_response(409, **NO_VECTORS)
    @blp.alt_response(501, **NO_SEMANTIC)
    def search_passages(args: dict[str, Any]) -> Response:
        """Search passages.

        Full-text query with filters (repeat a facet parameter to OR values;
        different facets are ANDed), facet counts (multi-select: each facet
        is counted without its own selection), pages, sort and highlights.
        """
        return run_search(args, "passages")

    @blp.route("/quotes", methods=["GET"])
    @blp.arguments(quote_args, location="query", error_status_code=400, unknown=RAISE)
    @blp.response(200, QuoteSearchResponse)
    @blp.doc(**ALT_CONTENT)
    @blp.alt_response(409, **NO_VECTORS)
    @blp.alt_response(501, **NO_SEMANTIC)
    def search_quotes(args: dict[str, Any]) -> Response:
        """Search quotations: "what did X say about Y" (speaker=X&q=Y)."""
        return run_search(args, "quotes")

    @blp.route("/quotes/<string:cluster>", methods=["GET"])
    @blp.arguments(cluster_args, location="query", error_status_code=400, unknown=RAISE)
    @blp.response(200, QuoteClusterSchema)
    @blp.alt_response(404, schema=ProblemSchema, content_type="application/problem+json",
                      description="No cluster with this id (or none of its copies in the "
                      "key's scope)")  # fmt: skip
    @blp.alt_response(403, schema=ProblemSchema, content_type="application/problem+json",
                      description="Invalid, tampered or expired key")  # fmt: skip
    def quote_cluster(args: dict[str, Any], cluster: str) -> Response:
        """A quotation cluster: the same quotation carried by several articles.

        ``cluster`` is a quote hit's ``cluster``. The answer has the canonical
        text, the speakers, the first-seen copy (article and date), and every copy
        with its article and source. Read with a scoped key, only the copies inside
        the key's scope are listed; none inside it is a 404, as an unknown id.
        """
        store = backend().store()
        key = request_key(request, "json")
        etag = make_etag(int(store.generation), key)
        if etag_matches(request, etag):
            return not_modified(etag)
        body = library_cluster(store, cluster, within=scope_request())
        return _finish(Response(dumps(body), mimetype="application/json"), etag)

    @blp.route("/facets/<facet:facet>", methods=["GET"])
    @blp.arguments(facet_args, location="query", error_status_code=400, unknown=RAISE)
    @blp.response(200, FacetValuesResponse)
    def facet_value_search(args: dict[str, Any], facet: str) -> Response:
        """Values of one facet starting with a prefix, with counts (type-ahead).

        The other parameters give the search context (query and filters), so
        counts match what the search would show.
        """
        known = FACETS + tuple(f.name for f in settings.get("_declared_fields") or [])
        if facet not in known:
            raise ApiError(404, f"no facet named {facet!r}; facets are: {', '.join(known)}")
        be = backend()
        store = be.store()
        mode = args.pop("mode", "passages")
        prefix = args.pop("prefix", "")
        size = args.pop("size", 10)
        req = apply_read_key(to_search_request(args, mode, be.settings), args.pop("key", None))
        req.facets, req.facet_size, req.highlight, req.suggest = [facet], size, False, False
        req.page, req.per_page, req.sort = 1, 10, "relevance"
        key = request_key(request, "json", store)
        generation = int(store.generation)
        etag = make_etag(generation, key)
        if etag_matches(request, etag):
            return not_modified(etag)
        result = restrict_values(facet_values(store, facet, prefix, req, size, be.settings))
        endpoint = "search.search_quotes" if mode == "quotes" else "search.search_passages"
        toggle = Toggler(request, public_url(url_for(endpoint)),
                         drop=("prefix", "size", "mode", "page"))  # fmt: skip
        values = [
            {**asdict(v), "toggle_url": toggle(facet, v.value, v.selected)} for v in result.values
        ]
        body = {
            "name": facet,
            "prefix": prefix,
            "values": values,
            "other": result.other,
            "more": result.more,
        }
        resp = Response(dumps(body), mimetype="application/json")
        return _finish(resp, etag)

    @blp.route("/cooccurrence", methods=["GET"])
    @blp.arguments(co_args, location="query", error_status_code=400, unknown=RAISE)
    @blp.response(200, CooccurrenceResponse)
    def cooccurrence(args: dict[str, Any]) -> Response:
        """Who and what appears with a selection: values by passage and by article.

        Select with any filters and query (``person=Juan Guaidó``, ``q=aid``); the
        answer lists, for each requested facet, the values most often in the same
        passages and in the same articles, with counts (the selection itself left out).
        """
        be = backend()
        store = be.store()
        targets = args.pop("facet")
        size = args.pop("size")
        req = apply_read_key(
            to_search_request(args, "passages", be.settings), args.pop("key", None)
        )
        key = request_key(request, "json", store)
        generation = int(store.generation)
        etag = make_etag(generation, key)
        if etag_matches(request, etag):
            return not_modified(etag)
        result = library_cooccurrence(
            store, req, targets, size, be.settings, within=scope_request()
        )
        body = result.to_dict()
        body.pop("request", None)
        restrict_cooccurrence(body)
        resp = Response(dumps(body), mimetype="application/json")
        return _finish(resp, etag)

    return blp

"""Documents: one passage, one article with its passages; adding and deleting articles.

Reads carry an ETag (index generation + path) and answer 304 on a match.
Writes need the write token (see ``api.auth``) and go through the library's
``index_articles``: idempotent by content hash, one writer at a time, a
bounded wait for the index lock (503 ``Index busy`` with ``Retry-After``).
Each article of a batch is validated on its own: bad ones are reported in
``failed`` with their reason and the others are still written; a batch in
which every article fails is answered 422.
"""

from __future__ import annotations

from typing import Any

from flask import Response, request
from marshmallow import ValidationError

from newsquarry.search.core.errors import NotFound
from newsquarry.search.core.ids import id_problem, shorten
from newsquarry.search.core.models import Article
from newsquarry.search.core.textnorm import echo_safe
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.readers import article_from_mapping
from newsquarry.search.query.storygroups import article_copies

from ..arguments import ApiBlueprint as Blueprint
from ..auth import require_write_token
from ..backend import backend
from ..caching import etag_matches, make_etag, not_modified, request_key
from ..errors import ApiError, flatten_messages
from ..formats import dumps
from ..schemas import ArticleSchema, PassageSchema, ProblemSchema
from ..scoping import current_scope, scoped_article, scoped_record
from ..writeschemas import ArticleIn, ArticleInNoId, ArticlesIn, WriteReportSchema
from .search import _finish

MAX_ARTICLES_DOCUMENTED = 1000  # ArticlesIn's maxItems (a lower max_articles_per_write: 413)
blp = Blueprint("documents", __name__, url_prefix="/v1", description="Passages and articles")

WRITE_RESPONSES = {
    "responses": {
        "401": {
            "description": "Missing write token",
            "content": {"application/problem+json": {"schema": ProblemSchema}},
        },
        "403": {
            "description": "Wrong write token, or writes disabled",
            "content": {"application/problem+json": {"schema": ProblemSchema}},
        },
        "413": {
            "description": "Body larger than the limit, or more articles than max_articles_per_write",
            "content": {"application/problem+json": {"schema": ProblemSchema}},
        },
        "415": {
            "description": "Body is not JSON",
            "content": {"application/problem+json": {"schema": ProblemSchema}},
        },
        "503": {
            "description": "Index busy (Retry-After) or unavailable",
            "content": {"application/problem+json": {"schema": ProblemSchema}},
        },
    },
    "security": [{"bearerAuth": []}],
}


def _read(loader: Any) -> Response:
    """Run a store getter with ETag handling."""
    store = backend().store()
    key = request_key(request, "json", store)
    generation = int(store.generation)
    etag = make_etag(generation, key)
    body = None
    if request.if_none_match.star_tag:
        # "*" matches only a representation that exists (RFC 9110 13.1.2): a missing
        # document is its 404, so look it up first
        body = loader(store)
    if etag_matches(request, etag):
        return not_modified(etag)
    body = loader(store) if body is None else body
    return _finish(Response(dumps(body), mimetype="application/json"), etag)


@blp.route("/passages/<id(extra=24):passage_id>", methods=["GET"])
@blp.response(200, PassageSchema)
def get_passage(passage_id: str) -> Response:
    """One passage with its entities, quotations and article metadata.

    Passage ids hold a ``#``: send it as ``%23`` (``/v1/passages/abc%23p2``).
    """
    return _read(lambda store: scoped_record(store.get_passage(passage_id)))


@blp.route("/articles/<id:article_id>", methods=["GET"])
@blp.response(200, ArticleSchema)
def get_article(article_id: str) -> Response:
    """One article with its text, metadata and passages in order.

    Read with a scoped key: only the passages inside the key's scope, and
    ``text`` null (``scoped`` true); 403 when no passage is inside it.
    """
    return _read(lambda store: scoped_article(with_copies(store, store.get_article(article_id))))


def with_copies(store: Any, article: dict[str, Any]) -> dict[str, Any]:
    """The article with ``copies``: the articles carrying its story (syndication). Read with
    a scoped key, none: the other copies may lie outside the key's scope."""
    if current_scope() is not None:
        return {**article, "copies": []}
    return {**article, "copies": article_copies(store, article["id"])}


# ------------------------------------------------------------------ writes
def _json_body() -> Any:
    if not request.is_json:
        raise ApiError(
            415,
            "the request body must be JSON (Content-Type: application/json)",
        )
    _check_chunked_size()
    try:
        data = request.get_json(silent=True)
    except RecursionError:  # not a ValueError, so `silent` lets it through: it was a 500
        raise ApiError(
            400, "the request body is JSON nested too deeply", title="Invalid JSON"
        ) from None
    if data is None:
        raise ApiError(400, "the request body is not valid JSON", title="Invalid JSON")
    return data


def _check_chunked_size() -> None:
    """413 for a chunked body (no Content-Length) longer than ``max_body_bytes``.

    Flask refuses a declared Content-Length over the limit, but reads a chunked
    body only up to the limit and stops there, silently: the JSON then looked
    cut ("not valid JSON", 400). Bytes left in the input after the limit mean
    the body was too large.
    """
    limit = request.max_content_length
    if request.content_length is not None or limit is None:
        return
    data = request.get_data(cache=True)
    if len(data) >= limit and request.environ["wsgi.input"].read(1):
        raise ApiError(413, f"the request body is larger than the limit of {limit} bytes")


def _validate(item: Any, index: int | None, path_id: str | None = None) -> Article | dict:
    """One article body -> Article, or a failure record {index, id, reason}."""
    raw_id = item.get("id") if isinstance(item, dict) else None
    # echoed in the report: a lone surrogate (refused below) cannot be put in JSON
    ident = echo_safe(str(raw_id)) if raw_id is not None else path_id
    if not isinstance(item, dict):
        return {
            "index": index,
            "id": None,
            "reason": f"expected a JSON object, got {type(item).__name__}",
        }
    # the index's declared fields (core.fields) travel beside the schema's own keys
    declared = {f.name for f in backend().settings.get("_declared_fields") or []}
    extras = {k: item[k] for k in declared if k in item}
    try:
        loaded = ArticleIn().load({k: v for k, v in item.items() if k not in extras})
        loaded.update(extras)
    except ValidationError as exc:
        msgs = flatten_messages(exc.messages)
        reason = "; ".join(f"{k}: {' '.join(v)}" for k, v in msgs.items())
        return {"index": index, "id": ident, "reason": reason}
    if path_id is not None:
        if loaded.get("id") not in (None, path_id):
            return {
                "index": index,
                "id": ident,
                "reason": f"id: the body's id {loaded['id']!r} differs from the URL's",
            }
        loaded["id"] = path_id
    try:
        return article_from_mapping(loaded)
    except ValueError as exc:
        return {"index": index, "id": ident, "reason": str(exc)}


def _write(articles: list[Article], failed: list[dict]) -> dict[str, Any]:
    """Index through the library (its lock and timeout serialise writers)."""
    be = backend()
    store = be.store()
    report = index_articles(
        store, articles, enricher=be.enricher(), commit_every=int(be.settings["commit_every"])
    )
    body = report.to_dict()
    body["failed"] = failed + [{"index": None, "id": f.get("id"), **f} for f in body["failed"]]
    body["generation"] = int(store.generation)
    return body


def _all_failed(failed: list[dict]) -> ApiError:
    errors: dict[str, list[str]] = {}
    for f in failed:
        name = "articles" if f["index"] is None else f"articles.{f['index']}"
        errors.setdefault(name, []).append(f["reason"])
    return ApiError(
        422,
        "no article in the body could be indexed",
        title="Invalid article",
        slug="invalid-article",
        errors=errors,
    )


@blp.route("/articles", methods=["POST"])
@blp.doc(
    requestBody={"required": True, "content": {"application/json": {"schema": ArticlesIn}}},
    **WRITE_RESPONSES,
)
@blp.response(200, WriteReportSchema)
def add_articles() -> Response:
    """Add or replace articles: ``{"articles": [...]}`` (a bare list or one article works too).

    Unchanged articles (same content hash) are skipped. Articles that fail
    validation are listed in ``failed`` with the reason; the rest are written.
    """
    require_write_token()
    data = _json_body()
    if isinstance(data, dict) and "articles" in data:
        if set(data) != {"articles"}:
            extra = sorted(set(data) - {"articles"})
            raise ApiError(
                422,
                "unknown fields in the body",
                title="Invalid body",
                slug="invalid-body",
                errors={k: ["Unknown field."] for k in extra},
            )
        items = data["articles"]
    elif isinstance(data, list):
        items = data
    elif isinstance(data, dict):
        items = [data]
    else:
        items = None
    if not isinstance(items, list) or not items:
        raise ApiError(
            422,
            "the body must hold a non-empty list of articles",
            title="Invalid body",
            slug="invalid-body",
            errors={"articles": ["Must be a non-empty list of article objects."]},
        )
    limit = int(backend().settings["max_articles_per_write"])
    if len(items) > MAX_ARTICLES_DOCUMENTED:  # beyond the documented maxItems: invalid body
        raise ApiError(422, f"at most {MAX_ARTICLES_DOCUMENTED} articles per request, got "
                       f"{len(items)}", title="Invalid body", slug="invalid-body",
                       errors={"articles": [f"Longer than maximum length "
                                            f"{MAX_ARTICLES_DOCUMENTED}."]})  # fmt: skip
    if len(items) > limit:
        # each article costs NLP time under the write lock: a bounded request stays a
        # request, a bulk import belongs to `newsquarry index`
        raise ApiError(
            413,
            f"at most {limit} articles per request, got {len(items)}",
            title="Too many articles",
            slug="too-many-articles",
            errors={"articles": [f"Longer than the limit of {limit}."]},
        )
    articles: list[Article] = []
    failed: list[dict] = []
    for i, item in enumerate(items):
        outcome = _validate(item, i)
        (articles if isinstance(outcome, Article) else failed).append(outcome)
    if not articles:
        raise _all_failed(failed)
    return Response(dumps(_write(articles, failed)), mimetype="application/json")


@blp.route("/articles/<id:article_id>", methods=["PUT"])
@blp.doc(
    # the id is the URL's (a body id, if sent, must be the same: it is not documented)
    requestBody={"required": True, "content": {"application/json": {"schema": ArticleInNoId}}},
    **WRITE_RESPONSES,
)
@blp.response(200, WriteReportSchema)
def put_article(article_id: str) -> Response:
    """Add or replace the article with this id (the body's ``id`` may be left out)."""
    require_write_token()
    problem = id_problem(article_id)
    if problem:  # ids are data: refused when invalid, never rewritten (search.ids)
        raise ApiError(
            422,
            f"article id: {problem}",
            title="Invalid article",
            slug="invalid-article",
            errors={"article_id": [problem]},
        )
    data = _json_body()
    if not isinstance(data, dict):
        raise ApiError(
            422,
            "the body must be one article object",
            title="Invalid body",
            slug="invalid-body",
            errors={"_schema": ["Must be a JSON object."]},
        )
    outcome = _validate(data, None, path_id=article_id)
    if not isinstance(outcome, Article):
        raise ApiError(
            422,
            outcome["reason"],
            title="Invalid article",
            slug="invalid-article",
            errors={"article": [outcome["reason"]]},
        )
    return Response(dumps(_write([outcome], [])), mimetype="application/json")


@blp.route("/articles/<id:article_id>", methods=["DELETE"])
@blp.doc(**WRITE_RESPONSES)
@blp.response(200, WriteReportSchema)
def delete_article(article_id: str) -> Response:
    """Delete an article with all its passages and quotations (404 if absent)."""
    require_write_token()
    store = backend().store()
    if not store.delete(article_id):
        raise NotFound(f"no article with id {shorten(article_id)!r}")
    body = {
        "added": [],
        "replaced": [],
        "unchanged": [],
        "deleted": [article_id],
        "failed": [],
        "passages": 0,
        "generation": int(store.generation),
    }
    return Response(dumps(body), mimetype="application/json")

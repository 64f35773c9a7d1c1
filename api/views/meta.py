"""About the server: index statistics, health, settings, the docs page.

Health follows the usual split: ``/health/live`` says the process answers
(always 200); ``/health/ready`` says it can serve searches (200, or 503 while
the index cannot be opened). ``/v1/health`` gives both in one body.
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app

from newsquarry.search.core.config import SETTINGS

from ..arguments import ApiBlueprint as Blueprint
from ..backend import backend
from ..formats import dumps
from ..schemas import HealthSchema, SettingsSchema, StatsSchema
from .search import _finish

blp = Blueprint("meta", __name__, description="Statistics, health and settings")

LIMITS = (
    "max_query_length",
    "max_per_page",
    "max_page_depth",
    "max_facets",
    "max_facet_size",
    "max_filter_values",
    "search_time_limit",
    "max_body_bytes",
    "lock_timeout",
)
SECRET_SETTINGS = {"write_token", "secret"}


def limits() -> dict[str, Any]:
    settings = backend().settings
    return {name: settings[name] for name in LIMITS}


@blp.route("/v1/stats", methods=["GET"])
@blp.response(200, StatsSchema)
def stats() -> Response:
    """Index statistics: articles, passages, quotations, size, generation, limits."""
    store = backend().store()
    body = dict(store.stats())
    body.pop("path", None)  # where the index lives on disk is not the client's business
    body["limits"] = limits()
    return _finish(Response(dumps(body), mimetype="application/json"), None)


def _health() -> tuple[dict[str, Any], bool]:
    ready, detail, generation = backend().readiness()
    return {"live": True, "ready": ready, "detail": detail, "generation": generation}, ready


@blp.route("/v1/health", methods=["GET"])
@blp.response(200, HealthSchema)
def health() -> Response:
    """Liveness and readiness in one body (always 200: read ``ready``)."""
    body, _ = _health()
    return _finish(Response(dumps(body), mimetype="application/json"), None)


@blp.route("/health/live", methods=["GET"])
@blp.response(200, HealthSchema)
def live() -> Response:
    """Liveness: 200 whenever the process answers."""
    body = {"live": True, "ready": backend().readiness()[0], "detail": None, "generation": None}
    return _finish(Response(dumps(body), mimetype="application/json"), None)


@blp.route("/health/ready", methods=["GET"])
@blp.response(200, HealthSchema)
@blp.alt_response(503, schema=HealthSchema, description="The index cannot be opened")
def ready() -> Response:
    """Readiness: 200 when the index can be searched, 503 (with the reason) when not."""
    body, ok = _health()
    resp = Response(dumps(body), status=200 if ok else 503, mimetype="application/json")
    if not ok:
        resp.headers["Retry-After"] = "5"
    return _finish(resp, None)


@blp.route("/v1/settings", methods=["GET"])
@blp.response(200, SettingsSchema)
def settings_page() -> Response:
    """The server's settings (secrets shown only as set or not), with their help text."""
    settings = backend().settings
    body: dict[str, Any] = {}
    for s in SETTINGS:
        value = settings.get(s.name)
        if s.name in SECRET_SETTINGS:
            value = bool(value)
        elif s.name == "index":
            value = None
        body[s.name] = {
            "value": value,
            "default": s.default if s.name not in SECRET_SETTINGS else None,
            "env": s.env,
            "help": s.help,
        }
    return _finish(Response(dumps({"settings": body}), mimetype="application/json"), None)


@blp.route("/docs", methods=["GET"])
@blp.doc(responses={"200": {"description": "HTML page", "content": {"text/html": {}}}})
def docs() -> Response:
    """API documentation rendered from /openapi.json, with no external assets."""
    return current_app.send_static_file("docs.html")

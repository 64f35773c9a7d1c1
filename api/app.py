"""The Flask app factory.

``create_app(config)`` builds the app from the settings table
(``search.config``: defaults, then ``NEWSQUARRY_*`` environment variables,
then ``config``). ``store`` and ``enricher`` may be injected (tests, or a
caller that already opened the index); otherwise the store is opened lazily
from ``settings["index"]`` and writes use the library's default enricher.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import time
import uuid
from typing import Any

from flask import Flask, Response, g, request
from flask_cors import CORS
from flask_smorest import Api

from newsquarry.search.core.config import load_settings
from newsquarry.search.query.keys import check_secret

from . import errors, scoping
from .backend import Backend
from .concurrency import gate_reads
from .routing import (
    FacetConverter,
    IdConverter,
    facet_param_schema,
    id_param_schema,
    path_problem,
    query_problem,
)
from .schemas import ProblemSchema, declared_fields, document_fields
from .views import documents, meta, pages
from .views import search as search_views

API_VERSION = "1"
MAX_QUERY_STRING = 256 * 1024  # bytes; far above what the parameter limits allow
# one header field, as gunicorn's default limit; gunicorn_conf lets up to 64 KiB through so
# that this answer is problem+json, not gunicorn's HTML page
MAX_HEADER_BYTES = 8190
_REQUEST_ID_OK = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
log = logging.getLogger("api.access")


class ProblemApi(Api):
    """flask-smorest's Api, documenting and answering errors as problem+json."""

    ERROR_SCHEMA = ProblemSchema
    DEFAULT_ERROR_RESPONSE_NAME = "DEFAULT_ERROR"

    def _register_responses(self) -> None:
        saved = self.DEFAULT_RESPONSE_CONTENT_TYPE
        self.DEFAULT_RESPONSE_CONTENT_TYPE = errors.PROBLEM_MIMETYPE
        try:
            super()._register_responses()
        finally:
            self.DEFAULT_RESPONSE_CONTENT_TYPE = saved

    def handle_http_exception(self, error: Any) -> Response:
        return errors.from_http_exception(error)


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to log records made while handling a request."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.request_id = getattr(g, "request_id", "-")
        except RuntimeError:  # outside a request
            record.request_id = "-"
        return True


def _settings(config: dict[str, Any] | None) -> dict[str, Any]:
    config = dict(config or {})
    extra = {k: config.pop(k) for k in list(config) if k.isupper()}  # Flask config keys
    settings = load_settings(**config)
    settings["_flask"] = extra
    return settings


def create_app(
    config: dict[str, Any] | None = None,
    *,
    store: Any = None,
    enricher: Any = None,
) -> Flask:
    """Build the newsquarry API app."""
    settings = _settings(config)
    if settings.get("secret"):  # refused at start, not when the first key is checked
        check_secret(str(settings["secret"]))
    app = Flask(__name__, static_folder="static", static_url_path="/static")
    app.config.update(
        API_TITLE="newsquarry",
        API_VERSION=API_VERSION,
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        MAX_CONTENT_LENGTH=int(settings["max_body_bytes"]),
        JSON_SORT_KEYS=False,
        API_SPEC_OPTIONS={
            "info": {
                "description": "Passage-level news search: who is mentioned, who said what. "
                "Errors are application/problem+json (RFC 9457).",
            },
            "components": {
                "securitySchemes": {
                    "bearerAuth": {
                        "type": "http",
                        "scheme": "bearer",
                        "description": "The write token (NEWSQUARRY_WRITE_TOKEN)",
                    }
                }
            },
        },
    )
    app.config.update(settings.pop("_flask"))
    app.extensions["newsquarry"] = Backend(settings, store=store, enricher=enricher)
    # the index's own fields (core.fields), read once at start: the parameters, the
    # schemas and the OpenAPI document list them (a field declared later: restart)
    declared = declared_fields(getattr(store, "path", None) or settings.get("index"))
    settings["_declared_fields"] = declared

    app.url_map.converters["id"] = IdConverter  # ids whole, "/" included (api.routing)
    app.url_map.converters["facet"] = FacetConverter
    app.url_map.merge_slashes = False  # "a//b" is an id, not "a/b"
    api = ProblemApi(app)
    api.register_converter(IdConverter, id_param_schema)
    api.register_converter(FacetConverter, facet_param_schema)
    api.register_blueprint(search_views.make_blueprint(settings))
    api.register_blueprint(documents.blp)
    api.register_blueprint(meta.blp)
    errors.register_error_handlers(app)
    document_fields(api.spec, declared)

    _install_request_id(app)  # before CORS: after_request hooks run in reverse order
    origins = [o.strip() for o in str(settings.get("cors_origins") or "*").split(",") if o.strip()]
    cors_read = {
        "origins": "*" if origins in ([], ["*"]) else origins,
        "send_wildcard": origins in ([], ["*"]),
        "methods": ["GET", "HEAD", "OPTIONS"],
        "allow_headers": ["If-None-Match", "Accept", "X-Request-Id", "X-Newsquarry-Key"],
        "expose_headers": [
            "ETag",
            "Link",
            "X-Request-Id",
            "X-Total-Count",
            "X-Partial-Result",
            "Retry-After",
        ],
        "max_age": 600,
        "supports_credentials": False,
    }
    CORS(app, resources={r"/v1/*": cors_read, r"/health/*": cors_read, r"/openapi.json": cors_read})
    scoping.install(app)  # scoped read keys: early 403, documents, Vary (web)
    app.register_blueprint(pages.blp)  # search page, permalinks, oEmbed, /embed, widget (web)
    gate_reads(app, int(settings["read_concurrency"]))  # one read at a time per worker
    return app


_ID_RANDOM = uuid.uuid4().hex[:8]
_ID_COUNTER = itertools.count(1)


def _new_request_id() -> str:
    """A unique id without a syscall per request: random start, process id, counter (32 hex)."""
    count = next(_ID_COUNTER) & 0xFFFFFFFFFFFFFFFF
    return f"{_ID_RANDOM}{os.getpid() & 0xFFFFFFFF:08x}{count:016x}"


def _install_request_id(app: Flask) -> None:
    """A request id on every request: the client's X-Request-Id if sane, else a new one."""

    @app.before_request
    def _start() -> None:
        given = request.headers.get("X-Request-Id", "")
        g.request_id = given if _REQUEST_ID_OK.match(given) else _new_request_id()
        g.started = time.perf_counter()
        problem = path_problem(request.environ)
        if problem:  # never rewritten to U+FFFD: "%FF" and "%FE" are not one id
            raise errors.ApiError(400, problem, title="Invalid path", slug="invalid-path")
        if len(request.query_string) > MAX_QUERY_STRING:
            raise errors.ApiError(414, f"the query string is longer than {MAX_QUERY_STRING} bytes")
        bad = query_problem(request.query_string)
        if bad:  # never rewritten to U+FFFD: "q=%FF" is not a search for everything
            name, why = bad
            raise errors.ApiError(
                400, f"{name}: {why}", title="Invalid parameters", slug="invalid-parameters",
                errors={name: [why]},
            )  # fmt: skip
        for name, value in request.headers.items():
            if len(name) + len(value) > MAX_HEADER_BYTES:
                raise errors.ApiError(
                    431,
                    f"the {name[:40]} header is longer than {MAX_HEADER_BYTES} bytes",
                    title="Request Header Fields Too Large",
                )

    @app.after_request
    def _finish(resp: Response) -> Response:
        rid = getattr(g, "request_id", None) or _new_request_id()
        resp.headers["X-Request-Id"] = rid
        if request.path.startswith("/v1/") and request.method in ("POST", "PUT", "DELETE"):
            resp.headers.pop("Access-Control-Allow-Origin", None)
        elapsed = (time.perf_counter() - getattr(g, "started", time.perf_counter())) * 1000
        resp.headers["Server-Timing"] = f"app;dur={elapsed:.1f}"
        return resp

    for handler in logging.getLogger().handlers:
        handler.addFilter(RequestIdFilter())
    logging.getLogger("api").addFilter(RequestIdFilter())

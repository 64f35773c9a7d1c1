"""Errors as ``application/problem+json`` (RFC 9457).

Every error response has ``type``, ``title``, ``status``, ``detail``,
``instance`` (the request path) and ``request_id``; invalid parameters add
``errors``, a mapping of field name to messages. Library errors
(``search.errors.NewsquarryError``) keep their status and title; HTTP errors
(404, 405, 413, 415, ...) use the status phrase; anything unexpected becomes a
500 with no traceback in the body (the traceback goes to the log only).
"""

from __future__ import annotations

import errno
import json
import logging
import re
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from flask import Flask, Response, g, request
from werkzeug.exceptions import HTTPException, InternalServerError

from newsquarry.search.core.errors import (
    READ_DAMAGE,
    IndexBusy,
    IndexDamaged,
    IndexUnavailable,
    NewsquarryError,
    QueryError,
)
from newsquarry.search.core.ids import shorten

PROBLEM_MIMETYPE = "application/problem+json"
MAX_ECHO = 200  # characters of a request path echoed in an error (a 100,000-character id is not)
TYPE_PREFIX = "urn:newsquarry:problem:"
log = logging.getLogger("api.errors")


class ApiError(Exception):
    """An error raised by the API layer itself (not the library)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        title: str | None = None,
        slug: str | None = None,
        errors: Mapping[str, list[str]] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.title = title or HTTPStatus(status).phrase
        self.slug = slug
        self.errors = dict(errors or {})
        self.headers = dict(headers or {})


def slug_of(title: str) -> str:
    """ "Invalid query" -> "invalid-query"."""
    return "-".join(title.lower().replace("/", " ").split())


def flatten_messages(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    """webargs/marshmallow nested messages -> {"field.sub": ["message", ...]}.

    The outer location key ("query", "json", "view_args") is dropped.
    """
    out: dict[str, list[str]] = {}
    if isinstance(messages, Mapping):
        for key, value in messages.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            out.update(flatten_messages(value, name))
    elif isinstance(messages, (list, tuple)):
        if all(isinstance(m, str) for m in messages):
            out[prefix or "_schema"] = [str(m) for m in messages]
        else:
            for m in messages:
                for k, v in flatten_messages(m, prefix).items():
                    out.setdefault(k, []).extend(v)
    else:
        out[prefix or "_schema"] = [str(messages)]
    return out


def _strip_location(messages: Any) -> Any:
    if isinstance(messages, Mapping) and set(messages) <= {
        "query",
        "json",
        "view_args",
        "headers",
        "form",
        "files",
        "cookies",
        "querystring",
    }:
        merged: dict[str, Any] = {}
        for value in messages.values():
            if isinstance(value, Mapping):
                merged.update(value)
        return merged
    return messages


def _collapse_indices(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """Query parameters are named without list positions: "facet.0" -> "facet"."""
    out: dict[str, list[str]] = {}
    for name, msgs in errors.items():
        key = ".".join(p for p in name.split(".") if not p.isdigit()) or name
        for m in msgs:
            if m not in out.setdefault(key, []):
                out[key].append(m)
    return out


def problem_response(
    status: int,
    title: str,
    detail: str,
    *,
    slug: str | None = None,
    errors: Mapping[str, list[str]] | None = None,
    headers: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Response:
    """Build a problem+json response."""
    body: dict[str, Any] = {
        "type": TYPE_PREFIX + (slug or slug_of(title)) if status != 500 else "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "instance": quote(request.path)[:MAX_ECHO] if request else None,
        "request_id": getattr(g, "request_id", None),
    }
    if errors:
        body["errors"] = {k: list(v) for k, v in errors.items()}
    if extra:
        body.update({k: v for k, v in extra.items() if k not in body})
    resp = Response(
        json.dumps(body, ensure_ascii=False, default=str) + "\n",
        status=status,
        mimetype=PROBLEM_MIMETYPE,
    )
    for name, value in (headers or {}).items():
        resp.headers[name] = value
    resp.headers.setdefault("Cache-Control", "no-store")
    return resp


def from_library_error(exc: NewsquarryError) -> Response:
    """A library error (its own status, title, field and details) as a problem."""
    # IndexBusy's message names the index folder and the holder's pid and command: for
    # the command line and the logs, not for clients
    message = getattr(exc, "public_message", None) or exc.message
    errors = {exc.field: [message]} if exc.field else None
    extra: dict[str, Any] = {}
    if isinstance(exc, QueryError) and exc.position is not None:
        extra["position"] = exc.position
    details = {k: v for k, v in (exc.details or {}).items() if _json_safe(v)}
    if details:
        extra["details"] = details
    headers = {}
    message = exc.message
    if exc.status == 503:
        headers["Retry-After"] = "5" if isinstance(exc, IndexBusy) else "10"
        message = public_message(exc)
        # the full story (path, lock holder, damaged files) is for the log
        log.warning("%s: %s (request id %s)", exc.title, exc.message, getattr(g, "request_id", "-"))
    return problem_response(
        exc.status, exc.title, message, errors=errors, headers=headers, extra=extra
    )


def public_message(exc: NewsquarryError) -> str:
    """What a client is told of a 503: never the index path, the lock holder's pid or command."""
    if isinstance(exc, IndexBusy):
        waited = re.search(r"gave up after waiting [0-9.]+ s", exc.message)
        return "another writer is using the index; {}try again in a few seconds".format(
            f"{waited.group(0)}; " if waited else ""
        )
    if isinstance(exc, IndexDamaged):
        return (
            "the index is damaged: `newsquarry check` on the server names the files and "
            "`newsquarry repair` rebuilds them; the server log says more"
        )
    if isinstance(exc, IndexUnavailable):
        return "the index cannot be opened; the server log says why"
    return exc.message


def _json_safe(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def from_http_exception(exc: HTTPException) -> Response:
    """A werkzeug/flask-smorest HTTP error (including argument validation) as a problem."""
    status = exc.code or 500
    if isinstance(exc, InternalServerError) and exc.original_exception is not None:
        return internal_error(exc.original_exception)
    data = getattr(exc, "data", None) or {}
    errors = None
    messages = data.get("errors") or data.get("messages")
    if messages:
        errors = flatten_messages(_strip_location(messages))
        if isinstance(messages, Mapping) and set(messages) <= {"query", "querystring"}:
            errors = _collapse_indices(errors)
    title = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else exc.name
    detail = data.get("message") or (
        "some parameters are invalid: see errors" if errors else _detail_for(status, exc)
    )
    headers = {}
    if status == 405 and hasattr(exc, "valid_methods") and exc.valid_methods:
        headers["Allow"] = ", ".join(sorted(exc.valid_methods))
    elif status == 405:
        for key, value in exc.get_headers():
            if key.lower() == "allow":
                headers["Allow"] = value
    headers.update(data.get("headers") or {})
    slug = "invalid-parameters" if errors else None
    if errors:
        title = "Invalid parameters"
    return problem_response(status, title, detail, slug=slug, errors=errors, headers=headers)


def _detail_for(status: int, exc: HTTPException) -> str:
    if status == 404:
        return f"no resource at {shorten(request.path)}"
    if status == 405:
        return f"method {request.method} is not allowed on {shorten(request.path)}"
    if status == 413:
        limit = request.max_content_length
        return f"the request body is larger than the limit of {limit} bytes"
    if status == 415:
        return "the request body must be JSON (Content-Type: application/json)"
    return exc.description or HTTPStatus(status).phrase


def internal_error(exc: BaseException) -> Response:
    """Unexpected failure: logged with its traceback, answered without one."""
    log.error(
        "unhandled error on %s %s (request id %s)",
        request.method,
        request.path,
        getattr(g, "request_id", "-"),
        exc_info=exc,
    )
    return problem_response(
        500,
        "Internal Server Error",
        "the server failed to answer this request; the error was logged with its request id",
    )


def register_error_handlers(app: Flask) -> None:
    """Route every error through problem+json."""

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> Response:
        return problem_response(
            exc.status,
            exc.title,
            exc.detail,
            slug=exc.slug,
            errors=exc.errors,
            headers=exc.headers,
        )

    @app.errorhandler(NewsquarryError)
    def _library_error(exc: NewsquarryError) -> Response:
        return from_library_error(exc)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        return from_http_exception(exc)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        if isinstance(exc, READ_DAMAGE):  # a damaged file no checksum caught (an old index)
            return from_library_error(
                IndexDamaged(
                    f"the index could not be read ({type(exc).__name__}): it may be damaged; "
                    "the server's operator can run `newsquarry check`"
                )
            )
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            log.error("a write failed for lack of disk space: %s", exc)
            return problem_response(
                507,
                "Not enough disk space",
                "the disk holding the index is full: this write was abandoned and nothing of it "
                "was kept (the index holds its last commit); retry once space is freed",
            )
        return internal_error(exc)

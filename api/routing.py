"""Ids in URLs: matched whole, encoded on the way out, never rewritten.

Article ids are any Unicode text (``search.ids``): slashes, ``#``, spaces,
accents. The ``id`` converter matches the rest of the path including ``/``
(so ``/v1/articles/news/2024/a`` and ``/v1/articles/news%2F2024%2Fa`` both
name article ``news/2024/a``) and builds URLs with every character outside
the path-segment set percent-encoded, ``/`` included, and the dot-only ids
``.``/``..`` as ``%2E`` so no client or proxy normalises them away.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from werkzeug.routing import BaseConverter

from newsquarry.search.core.ids import MAX_ID_LENGTH, url_segment
from newsquarry.search.engine.schema import FACETS


class IdConverter(BaseConverter):
    """``<id:name>``: any non-empty rest of the path, slashes included.

    ``<id(extra=N):name>`` documents ids N characters longer than an article id
    (a passage id is ``<article id>#p<n>``). Invalid ids still reach the view,
    which refuses them with the reason (422) or does not find them (404).
    """

    part_isolating = False
    regex = r"[\s\S]+"  # "." would not match a newline: such ids get a clear 422
    weight = 200

    def __init__(self, map: Any, extra: int = 0) -> None:  # noqa: A002 - werkzeug's name
        super().__init__(map)
        self.max_length = MAX_ID_LENGTH + int(extra)

    def to_url(self, value: Any) -> str:
        return url_segment(str(value))


# no control characters or line separators, not only whitespace (search.ids)
_NO_CONTROL = r"[^\x00-\x1f\x7f-\x9f\u2028\u2029]"
_VISIBLE = r"[^\s\x00-\x1f\x7f-\x9f\u2028\u2029]"
ID_PATTERN = f"^{_NO_CONTROL}*{_VISIBLE}{_NO_CONTROL}*$"


def id_param_schema(converter: Any) -> dict[str, Any]:
    """The OpenAPI schema of an ``id`` path parameter: the rules of ``search.ids``."""
    return {"type": "string", "minLength": 1, "maxLength": converter.max_length,
            "pattern": ID_PATTERN}  # fmt: skip


class FacetConverter(BaseConverter):
    """``<facet:name>``: one path segment, documented as the facet names.

    Any segment reaches the view, which answers an unknown name with a 404
    listing the facets (a routing 404 would not say which names exist).
    """


def facet_param_schema(converter: Any) -> dict[str, Any]:
    return {"type": "string", "enum": list(FACETS)}


def path_problem(environ: dict[str, Any]) -> str | None:
    """Why the request's path is not a path of text (invalid UTF-8, where), or None.

    The WSGI server and werkzeug decode the path with errors replaced, so ``%FF`` and
    ``%ED%A0%80`` (an encoded surrogate) would reach a view as U+FFFD: two URLs, one id.
    The bytes are checked here: the raw request target when the server gives it
    (``RAW_URI``, ``REQUEST_URI``: gunicorn, werkzeug), else ``PATH_INFO``, which WSGI
    carries as one character per byte.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if isinstance(raw, str) and raw:
        target = raw if raw.startswith("/") else urlsplit(raw).path  # absolute-form target
        data = unquote_to_bytes(target.split("?", 1)[0].encode("latin-1", "replace"))
    else:
        try:
            data = str(environ.get("PATH_INFO") or "").encode("latin-1")
        except UnicodeEncodeError:
            return None  # already text (not a WSGI server's str): nothing was replaced
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the path is not valid UTF-8 (byte 0x{data[exc.start]:02X} at byte {exc.start} "
            "once percent-decoded): ids in URLs are UTF-8, percent-encoded"
        )
    return None


def query_problem(query_string: bytes) -> tuple[str, str] | None:
    """(parameter, why) when a query-string parameter is not valid UTF-8, else None.

    Decoded with errors replaced, ``q=%FF`` (or ``%ED%A0%80``, an encoded surrogate)
    would reach the search as U+FFFD, a word that matches nothing, and the query would
    silently become another one (or none: every passage). Checked on the raw bytes.
    """
    for part in query_string.split(b"&"):
        name, _, value = part.partition(b"=")
        if name == b"key":
            continue  # a scoped key is bytes it checks itself: any bad one is 403 Invalid key
        for what, data in ((name, name), (name, value)):
            try:
                unquote_to_bytes(data.replace(b"+", b" ")).decode("utf-8")
            except UnicodeDecodeError as exc:
                raw = unquote_to_bytes(data.replace(b"+", b" "))
                label = unquote_to_bytes(what).decode("utf-8", "replace")[:40]
                return label, (
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02X} at byte {exc.start} once "
                    "percent-decoded): parameters are UTF-8, percent-encoded"
                )
    return None

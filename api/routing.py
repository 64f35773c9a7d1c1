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

from werkzeug.routing import BaseConverter

from search.ids import url_segment


class IdConverter(BaseConverter):
    """``<id:name>``: any non-empty rest of the path, slashes included."""

    part_isolating = False
    regex = r"[\s\S]+"  # "." would not match a newline: such ids get a clear 422
    weight = 200

    def to_url(self, value: Any) -> str:
        return url_segment(str(value))


def id_param_schema(converter: Any) -> dict[str, Any]:
    """The OpenAPI schema of an ``id`` path parameter."""
    return {"type": "string", "minLength": 1, "maxLength": 2000}

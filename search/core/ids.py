"""Article ids: data, kept exactly as given.

An id a user gives (JSON ``id``, front matter ``id:``, an API path, a CLI
argument) is stored, returned and matched exactly: never trimmed, folded or
rewritten, so two different ids always name two different articles and a
user's own ids join with their data. ``check_id`` refuses what cannot be an id
with a clear reason (``InvalidArticle``); there is no silent repair.

An id is any Unicode string of 1 to ``MAX_ID_LENGTH`` characters that

- is not only whitespace,
- holds no control characters (Unicode category Cc: C0, DEL, C1) and no line
  or paragraph separators (U+2028, U+2029), which would break line-oriented
  output, and no lone surrogates (not encodable as UTF-8).

Everything else is allowed: accents, spaces, slashes, ``#``, quotes, RTL marks,
emoji. URLs carry ids percent-encoded (``/v1/articles/news%2F2024%2Fa``).

Articles read from files without an id get ``derived_id`` of their path, the
same id as in earlier versions (letters, digits, ``.``, ``_``, ``-``), so
re-indexing a folder replaces rather than duplicates its articles.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote

from newsquarry.search.core.errors import InvalidArticle

MAX_ID_LENGTH = 512
_FORBIDDEN_CATEGORIES = ("Cc", "Cs", "Zl", "Zp")
_DERIVED_BAD = re.compile(r"[^A-Za-z0-9._-]+")
_SEGMENT_SAFE = "!$&'()*+,:;=@"  # RFC 3986 path-segment characters kept as they are


def id_problem(value: object) -> str | None:
    """Why ``value`` is not a valid article id, or None when it is."""
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_LENGTH:
        return f"longer than {MAX_ID_LENGTH} characters ({len(value)})"
    if not value.strip():
        return "must not be only whitespace"
    for i, ch in enumerate(value):
        category = unicodedata.category(ch)
        if category == "Cs":
            return f"holds a lone surrogate (U+{ord(ch):04X}) at position {i}: not valid Unicode"
        if category in _FORBIDDEN_CATEGORIES:
            return f"holds a control character (U+{ord(ch):04X}) at position {i}"
    return None


def check_id(value: object, what: str = "id") -> str:
    """``value`` itself if it is a valid id; ``InvalidArticle`` naming the reason if not."""
    problem = id_problem(value)
    if problem:
        raise InvalidArticle(f"{what}: {problem}", field=what)
    return value  # type: ignore[return-value]


def derived_id(raw: str) -> str:
    """The id of an article read from a file without one: its path made URL-safe.

    The rule of earlier versions, kept so re-indexing finds the same ids:
    runs of characters outside ``[A-Za-z0-9._-]`` become ``-``, leading and
    trailing ``-``/``.`` go, at most 200 characters.
    """
    cleaned = _DERIVED_BAD.sub("-", raw.strip()).strip("-.")
    return cleaned[:200]


def shorten(value: str, limit: int = 80) -> str:
    """An id cut for echoing in a message (a 100,000-character id is not repeated)."""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def url_segment(value: str) -> str:
    """An id as one percent-encoded URL path segment (``/`` and ``#`` encoded).

    The dot-only ids ``.`` and ``..`` become ``%2E``s, so that no client or
    proxy removes them as dot-segments.
    """
    if value and set(value) == {"."}:
        return "%2E" * len(value)
    return quote(value, safe=_SEGMENT_SAFE)

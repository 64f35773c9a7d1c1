"""URLs the API hands out: facet toggles and previous/next pages.

Built from the request's own query string, so a client follows them without
knowing the parameter names (Datasette's ``toggle_url``). Relative unless the
``base_url`` setting gives the public origin (``public_url``).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import quote, quote_plus, urlencode

from flask import Request

from newsquarry.search.core.textnorm import fold


def public_url(path: str) -> str:
    """``path`` (already percent-encoded, from the app root) as the API hands it out.

    With the ``base_url`` setting, an absolute URL on that origin; without it, the
    path itself (a relative reference): the client's ``Host`` header is never copied
    into links, so a forged Host cannot poison cached answers or make ``http:///``
    links.
    """
    from .backend import backend

    base = str(backend().settings.get("base_url") or "").rstrip("/")
    return f"{base}{path}" if base else path


def request_path(req: Request) -> str:
    """This request's path from the app root (script root included), percent-encoded."""
    return quote(req.script_root + req.path)


def _pairs(req: Request, drop: Iterable[str] = ()) -> list[tuple[str, str]]:
    dropped = set(drop)
    return [(k, v) for k, v in req.args.items(multi=True) if k not in dropped]


def url_with(base: str, pairs: list[tuple[str, str]]) -> str:
    return f"{base}?{urlencode(pairs)}" if pairs else base


def toggle_url(
    req: Request, base: str, facet: str, value: str, selected: bool, drop: Iterable[str] = ()
) -> str:
    """``base`` with this request's parameters and ``facet=value`` toggled, back to page 1.

    Unselecting removes every given value that folds to the same key
    (``Guaido`` selects ``Guaidó``), so the link always does what it says.
    """
    pairs = _pairs(req, drop=("page", *drop))
    if selected:
        key = fold(value)
        pairs = [(k, v) for k, v in pairs if not (k == facet and fold(v) == key)]
    else:
        pairs.append((facet, value))
    return url_with(base, pairs)


def link_header(links: dict[str, str | None]) -> str:
    """RFC 8288 ``Link`` header from {rel: url}."""
    return ", ".join(f'<{url}>; rel="{rel}"' for rel, url in links.items() if url)


# facet values repeat from one answer to the next: encode each once per process
_quoted = lru_cache(maxsize=8192)(quote_plus)


class Toggler:
    """Toggle and page URLs for one request: the query string they share is encoded once.

    Calling it gives ``toggle_url(req, base, facet, value, selected, drop)``;
    ``page(n)`` gives the request's URL at page ``n``. Both append to one encoded
    prefix: the request's parameters without ``page`` (and ``drop``).
    """

    def __init__(self, req: Request, base: str, drop: Iterable[str] = ()) -> None:
        self.req, self.base, self.drop = req, base, tuple(drop)
        self.prefix = url_with(base, _pairs(req, drop=("page", *self.drop)))
        self.joiner = "&" if "?" in self.prefix else "?"

    def __call__(self, facet: str, value: str, selected: bool) -> str:
        if selected:  # rare: rebuild without the value
            return toggle_url(self.req, self.base, facet, value, True, drop=self.drop)
        return f"{self.prefix}{self.joiner}{_quoted(facet)}={_quoted(value)}"

    def page(self, page: int) -> str:
        """The request's URL (from ``base``) at another page."""
        return self.prefix if page == 1 else f"{self.prefix}{self.joiner}page={page}"

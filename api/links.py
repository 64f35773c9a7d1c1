"""URLs the API hands out: facet toggles and previous/next pages.

Built from the request's own query string, so a client follows them without
knowing the parameter names (Datasette's ``toggle_url``). Relative unless the
``base_url`` setting gives the public origin (``public_url``).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import quote, quote_plus, urlencode

from flask import Request

from newsquarry.search.core.textnorm import fold
from newsquarry.search.query.facets import NAME_FACETS

from .backend import backend

_HOST_OK = re.compile(r"^[A-Za-z0-9._:\[\]-]+$")  # a host name or an IP address, nothing else


def public_url(path: str) -> str:
    """``path`` (already percent-encoded, from the app root) as the API hands it out.

    With the ``base_url`` setting, an absolute URL on that origin; without it, the
    path itself (a relative reference): the client's ``Host`` header is never copied
    into links, so a forged Host cannot poison cached answers or make ``http:///``
    links.
    """
    base = str(backend().settings.get("base_url") or "").rstrip("/")
    return f"{base}{path}" if base else path


def public_origin(req: Request) -> str:
    """The origin of the absolute URLs the server must hand out (oEmbed, feeds, permalinks).

    The ``base_url`` setting when set. Otherwise the address the server is bound to, as
    the WSGI server reports it (``SERVER_NAME``/``SERVER_PORT``: gunicorn's and werkzeug's
    listening socket, e.g. ``http://127.0.0.1:8080``), never the ``Host`` header: a
    forged Host would otherwise go into pages, embeds and feeds that caches and
    consumers keep. On a Unix socket gunicorn fills ``SERVER_NAME`` from the Host
    header, so there the default is ``http://localhost``; behind a proxy, set
    ``base_url`` (docs/web.md).
    """
    base = str(backend().settings.get("base_url") or "").rstrip("/")
    if base:
        return base
    env = req.environ
    scheme = (
        env.get("wsgi.url_scheme") if env.get("wsgi.url_scheme") in ("http", "https") else "http"
    )
    sock = env.get("gunicorn.socket")
    if sock is not None and getattr(sock, "family", None) == getattr(socket, "AF_UNIX", None):
        return f"{scheme}://localhost"
    host = str(env.get("SERVER_NAME") or "localhost")
    port = str(env.get("SERVER_PORT") or "")
    if not _HOST_OK.match(host) or not (port == "" or port.isdigit()):
        return f"{scheme}://localhost"
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    default = {"http": "80", "https": "443"}[scheme]
    return f"{scheme}://{host}" + (f":{port}" if port and port != default else "")


def absolute_url(req: Request, path: str) -> str:
    """``path`` (from ``url_for``: script root included, percent-encoded) on the public
    origin (``public_origin``)."""
    return public_origin(req) + path


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
        # a name selected by some of its words ("Maduro" selects "Nicolás Maduro")
        words = facet in NAME_FACETS

        def selects(v: str) -> bool:
            return fold(v) == key or (words and bool(fold(v)) and f" {fold(v)} " in f" {key} ")

        pairs = [(k, v) for k, v in pairs if not (k == facet and selects(v))]
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

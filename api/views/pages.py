"""HTML pages and embedding: the search page, passage permalinks, oEmbed, /embed, the widget.

- ``/`` is the search page: a static shell; ``static/search.js`` talks to
  ``/v1/search``, ``/v1/quotes`` and ``/v1/facets/<facet>`` and keeps the
  state in the URL (shareable, back/forward work).
- ``/passages/<article_id>/<n>`` is the permalink of passage ``<article_id>#p<n>``:
  the passage in its article context, its entities and quotations, with
  oEmbed discovery links. Rendered on the server by Jinja (autoescaped).
- ``/oembed?url=<permalink>`` answers a ``rich`` oEmbed whose html is an
  iframe of ``/embed/passages/<article_id>/<n>`` (no script, escaped text).
- ``/embed`` is the widget in a page of its own, for those who prefer an
  iframe; ``/widget.js`` is the ``<newsquarry-results>`` web component.

Every article string reaches the page as text: Jinja escapes it here, and the
scripts build DOM with ``textContent``. HTML pages carry a strict
Content-Security-Policy (``script-src 'self'``, no inline code), so even a
mistake in escaping would not run injected script.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from flask import Blueprint, Response, current_app, render_template, request, url_for
from markupsafe import Markup

from newsquarry.search.core.errors import NotFound
from newsquarry.search.engine.schema import FACETS

from .. import cardsize
from ..backend import backend
from ..errors import ApiError
from ..formats import dumps
from ..links import absolute_url, public_origin, public_url

blp = Blueprint("pages", __name__)  # templates: api/templates, assets: api/static

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors {ancestors}"
)
EMBED_ENDPOINTS = {"pages.embed", "pages.embed_passage"}
PERMALINK = re.compile(r"^/passages/(.+)/(\d+)/?$")  # the id percent-encoded (api.routing)


def _loopback(host: str | None) -> bool:
    h = (host or "").lower().rstrip(".")
    return h in ("localhost", "::1") or h.endswith(".localhost") or h.startswith("127.")


def _same_server(url: Any, origin: Any) -> bool:
    """``url`` (split) is on this server's public origin (split).

    A server on the loopback interface is one server under all its loopback names: a
    permalink copied from a browser on ``http://localhost:8080`` is the same page as
    ``http://127.0.0.1:8080`` (same scheme and port). Other names must match exactly: the
    ``Host`` header is never trusted (``links.public_origin``).
    """
    if url.netloc == origin.netloc:
        return True
    try:
        ports = [u.port or {"http": 80, "https": 443}[u.scheme] for u in (url, origin)]
    except (ValueError, KeyError):  # a port that is not a number, an odd scheme
        return False
    return (
        url.scheme == origin.scheme
        and ports[0] == ports[1]
        and _loopback(url.hostname)
        and _loopback(origin.hostname)
    )
OEMBED_WIDTH = 560  # default width of the oEmbed iframe, in CSS pixels
MIN_WIDTH = 200
WIDGET_ATTRS = ("q", "mode", "sort", "per_page", "key", "title")
FILTER_PARAMS = (*FACETS, "date_from", "date_to")


@blp.after_app_request
def _headers(resp: Response) -> Response:
    """On every response of the app: ``nosniff``; on every HTML page (``/docs`` and error
    pages included) a strict CSP, framed only by this site except the embed pages; the
    oEmbed endpoint open to any origin, its errors too."""
    if resp.mimetype == "text/html":
        ancestors = "*" if request.endpoint in EMBED_ENDPOINTS else "'self'"
        resp.headers["Content-Security-Policy"] = CSP.format(ancestors=ancestors)
        resp.headers["Referrer-Policy"] = "strict-origin-when-cross-origin"
        if request.endpoint not in EMBED_ENDPOINTS:
            resp.headers["X-Frame-Options"] = "SAMEORIGIN"
    if request.endpoint == "pages.oembed":
        resp.headers["Access-Control-Allow-Origin"] = "*"
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp


FSI, PDI = "\u2068", "\u2069"  # first-strong isolate ... pop directional isolate


def isolate(text: str) -> str:
    """Article text for places without markup (``<title>``, attributes): wrapped in FSI/PDI
    so a right-to-left override inside it cannot reorder the words around it."""
    return f"{FSI}{text}{PDI}"


blp.add_app_template_filter(isolate, "isolate")


def passage_path(passage_id: str) -> str:
    """``abc#p3`` -> ``/passages/abc/3`` (the permalink path)."""
    article_id, _, n = passage_id.rpartition("#p")
    return url_for("pages.passage", article_id=article_id, n=int(n))


def safe_href(url: str | None) -> str | None:
    """An article's URL if it is http(s), else None (no ``javascript:`` links)."""
    if not url:
        return None
    return url if urlsplit(url.strip()).scheme.lower() in ("http", "https") else None


def marked_segments(text: str, entities: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    """Split ``text`` into (piece, entity type or None), entity spans marked, no overlaps."""
    out: list[tuple[str, str | None]] = []
    pos = 0
    for e in sorted(entities, key=lambda e: (e.get("start", 0), -e.get("end", 0))):
        s, t = int(e.get("start", 0)), int(e.get("end", 0))
        if s < pos or t <= s or t > len(text):
            continue
        if s > pos:
            out.append((text[pos:s], None))
        out.append((text[s:t], e.get("type")))
        pos = t
    if pos < len(text):
        out.append((text[pos:], None))
    return out


def entity_groups(entities: list[dict[str, Any]]) -> dict[str, list[str]]:
    """{type: [canonical names, first-seen order]} for the chips of a passage."""
    groups: dict[str, list[str]] = {}
    for e in entities:
        name = e.get("name") or e.get("text")
        if name and name not in groups.setdefault(e.get("type") or "other", []):
            groups[e["type"]].append(name)
    return groups


def search_url(**params: str) -> str:
    """A search page URL with these parameters."""
    return url_for("pages.search_page") + "?" + urlencode(params)


def _load_passage(article_id: str, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(article, passage) for a permalink; NotFound (404) when either is missing."""
    store = backend().store()
    article = store.get_article(article_id)
    pid = f"{article_id}#p{n}"
    for p in article.get("passages", []):
        if p["id"] == pid:
            return article, p
    raise NotFound(f"no passage with id {pid!r}")


def _page_error(status: int, title: str, detail: str) -> Response:
    html = render_template("error.html", status=status, title=title, detail=detail)
    return Response(html, status=status, mimetype="text/html")


@blp.route("/", methods=["GET"])
def search_page() -> Response:
    """The search page (rendered by ``static/search.js`` from the URL's parameters)."""
    html = render_template(
        "search.html",
        q=request.args.get("q", ""),
        max_q=int(backend().settings["max_query_length"]),  # the box takes what a search may
    )
    return Response(html, mimetype="text/html")


@blp.route("/passages/<id:article_id>/<int:n>", methods=["GET"])
def passage(article_id: str, n: int) -> Response:
    """A passage's permalink: the passage in its article, its entities and quotations."""
    try:
        article, p = _load_passage(article_id, n)
    except NotFound as exc:
        return _page_error(404, "Passage not found", exc.message)
    passages = article.get("passages", [])
    i = passages.index(p)
    # the permalink (canonical link) is relative unless base_url is set: the browser
    # resolves it against the address it used. oEmbed consumers read the discovery link
    # away from the page, so it is absolute, on base_url or the bound address. Never the
    # Host header: a forged one would be kept by caches and consumers (api.links)
    path = url_for("pages.passage", article_id=article_id, n=n)
    permalink = public_url(path)
    absolute = absolute_url(request, path)
    oembed = absolute_url(request, url_for("pages.oembed", url=absolute, format="json"))
    html = render_template(
        "passage.html",
        article=article,
        passage=p,
        before=passages[max(0, i - 1) : i],
        after=passages[i + 1 : i + 3],
        segments=marked_segments(p["text"], p.get("entities", [])),
        groups=entity_groups(p.get("entities", [])),
        href=safe_href(article.get("url")),
        permalink=permalink,
        oembed_json=oembed,
        search_url=search_url,
        passage_path=passage_path,
        article_search=search_url(article=article_id),
        total=len(passages),
    )
    return Response(html, mimetype="text/html")


@blp.route("/embed/passages/<id:article_id>/<int:n>", methods=["GET"])
def embed_passage(article_id: str, n: int) -> Response:
    """The card an oEmbed iframe shows: one passage, its source, a link back. No script."""
    try:
        article, p = _load_passage(article_id, n)
    except NotFound as exc:
        return _page_error(404, "Passage not found", exc.message)
    text = p["text"].strip()
    chars = _int_arg("chars") or cardsize.PREVIEW_CHARS
    html = render_template(
        "embed_passage.html",
        article=article,
        passage=p,
        shown=cardsize.preview(text, chars),
        cut=chars < len(text),
        more=cardsize.more_label(len(text)),
        # absolute like the oEmbed answer: the card lives inside other sites' pages
        permalink=absolute_url(request, url_for("pages.passage", article_id=article_id, n=n)),
    )
    return Response(html, mimetype="text/html")


@blp.route("/embed", methods=["GET"])
def embed() -> Response:
    """The widget alone in a page, for iframes: ``/embed?q=...&speaker=...&key=...``."""
    attrs = {
        name.replace("_", "-"): request.args[name]
        for name in WIDGET_ATTRS
        if request.args.get(name)
    }
    filters = [(k, v) for k, v in request.args.items(multi=True) if k in FILTER_PARAMS and v]
    if filters:
        attrs["params"] = urlencode(filters)
    page = [
        (k, v)
        for k, v in request.args.items(multi=True)
        if k in ("q", "mode", "sort", *FILTER_PARAMS) and v
    ]
    search_href = public_url(url_for("pages.search_page")) + ("?" + urlencode(page) if page else "")
    html = render_template("embed.html", attrs=attrs, search_href=search_href)
    return Response(html, mimetype="text/html")


@blp.route("/widget.js", methods=["GET"])
def widget_script() -> Response:
    """The ``<newsquarry-results>`` web component (a classic script, loadable cross-origin)."""
    resp = current_app.send_static_file("widget.js")
    resp.headers["Access-Control-Allow-Origin"] = "*"
    resp.headers["Cross-Origin-Resource-Policy"] = "cross-origin"
    resp.headers["Cache-Control"] = "public, max-age=300"
    return resp


def _int_arg(name: str) -> int | None:
    raw = request.args.get(name)
    if raw in (None, ""):
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise ApiError(
            400,
            f"{name} must be a positive integer",
            title="Invalid parameters",
            slug="invalid-parameters",
            errors={name: ["Must be a positive integer."]},
        )
    return int(raw)


def card_caption(article: dict[str, Any]) -> str:
    """The card's caption as text (what ``embed_passage.html`` shows under the passage)."""
    bits = [article.get("title") or article["id"], article.get("source"), article.get("date")]
    return " · ".join(b for b in bits if b) + " · newsquarry"


@blp.route("/oembed", methods=["GET"])
def oembed() -> Response:
    """oEmbed for passage permalinks: ``{type: "rich", version: "1.0", html, width, height}``.

    ``url`` must be a permalink of this server (404 otherwise); ``maxwidth`` and
    ``maxheight`` are honoured; ``format`` must be ``json`` (501 for xml).
    """
    fmt = request.args.get("format", "json")
    if fmt != "json":
        raise ApiError(501, "only format=json is supported", title="Not Implemented")
    url = request.args.get("url", "")
    if not url:
        raise ApiError(
            400,
            "the url parameter is required",
            title="Invalid parameters",
            slug="invalid-parameters",
            errors={"url": ["Missing data for required field."]},
        )
    maxwidth, maxheight = _int_arg("maxwidth"), _int_arg("maxheight")
    parts = urlsplit(url)
    match = PERMALINK.match(parts.path)
    origin = urlsplit(public_origin(request))  # this server's: never the Host header
    if parts.scheme not in ("http", "https") or not _same_server(parts, origin) or not match:
        raise NotFound(f"{url} is not a passage permalink of this server")
    article_id, n = unquote(match.group(1)), int(match.group(2))
    article, p = _load_passage(article_id, n)
    width = OEMBED_WIDTH if maxwidth is None else min(OEMBED_WIDTH, max(1, maxwidth))
    chars, height = cardsize.fit(p["text"], card_caption(article), max(width, MIN_WIDTH), maxheight)
    if maxheight is not None:
        height = min(height, maxheight)
    src = absolute_url(request, url_for(
        "pages.embed_passage",
        article_id=article_id,
        n=n,
        **({"chars": chars} if chars < len(p["text"].strip()) else {}),
    ))  # fmt: skip
    title = article.get("title") or article_id
    # allow-scripts: the card's own script (CSP script-src 'self') posts its height to the
    # host (the resize protocol); the frame stays in an opaque origin (no allow-same-origin)
    html = Markup(
        '<iframe src="{src}" width="{w}" height="{h}" title="{title}" loading="lazy" '
        'style="border:0;max-width:100%" sandbox="allow-scripts allow-popups '
        'allow-popups-to-escape-sandbox"></iframe>'
    ).format(src=src, w=width, h=height, title=isolate(f"{title}") + " (newsquarry)")
    body = {
        "type": "rich",
        "version": "1.0",
        "title": title,
        "author_name": article.get("source"),
        "provider_name": "newsquarry",
        "provider_url": absolute_url(request, url_for("pages.search_page")),
        "cache_age": 3600,
        "html": str(html),
        "width": width,
        "height": height,
    }
    resp = Response(dumps(body), mimetype="application/json")
    resp.headers["Access-Control-Allow-Origin"] = "*"
    return resp

"""Feeds of a search: Atom (RFC 4287) and JSON Feed 1.1, to follow a search in a reader.

Every search and quote-search URL has a feed form (``format=atom`` or
``format=jsonfeed``): the same query and filters, newest articles first, the first page
only. Entry ids are tag URIs built from the passage or quotation id, so they stay the
same whatever host or port the server is reached on and however often the feed is
fetched; a feed reader shows an entry once. Conditional GET works as for every search
(``ETag`` from the index generation, plus ``Last-Modified`` from the index's last commit
and ``If-Modified-Since``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlsplit
from xml.sax.saxutils import escape, quoteattr

from newsquarry.search.core.requests import SearchRequest

from .formats import dumps

FEED_MIMETYPES = {
    "atom": "application/atom+xml; charset=utf-8",
    "jsonfeed": "application/feed+json",
}
TAG_AUTHORITY = "newsquarry.invalid,2026"  # tag URIs (RFC 4151): stable, host-independent
JSONFEED_VERSION = "https://jsonfeed.org/version/1.1"
SUMMARY_CHARS = 280


def feed_request(req: SearchRequest) -> SearchRequest:
    """The request a feed runs: newest first, first page, no facets or highlights."""
    req.sort, req.page, req.facets, req.suggest, req.highlight = "-date", 1, [], False, False
    return req


def entry_id(hit: dict[str, Any], mode: str) -> str:
    kind = "quote" if mode == "quotes" else "passage"
    return f"tag:{TAG_AUTHORITY}:{kind}:{quote(hit['id'], safe='')}"


def feed_id(self_url: str) -> str:
    """The feed's own id: its path and query as a tag URI (the same on every host)."""
    parts = urlsplit(self_url)
    where = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"tag:{TAG_AUTHORITY}:feed:{quote(where, safe='/?=&%+')}"


def _iso(date: str | None, fallback: datetime) -> str:
    """An RFC 3339 timestamp from an article date (``YYYY-MM-DD`` or a full timestamp)."""
    if date:
        try:
            parsed = datetime.fromisoformat(date.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.isoformat().replace("+00:00", "Z")
    return fallback.isoformat().replace("+00:00", "Z")


def _short(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _entry(hit: dict[str, Any], mode: str, link: str, updated: datetime) -> dict[str, Any]:
    """The fields both feed formats share."""
    if mode == "quotes":
        who = hit.get("speaker") or hit.get("speaker_mention") or "Unattributed"
        title = f"{who}: “{_short(hit['text'], 120)}”"
        author = hit.get("speaker")
        text = hit["text"]
    else:
        title = hit.get("title") or hit["article_id"]
        author = hit.get("source")
        text = hit["text"]
    return {
        "id": entry_id(hit, mode),
        "title": title,
        "link": link,
        "author": author,
        "date": _iso(hit.get("date"), updated),
        "text": text,
        "summary": _short(text),
        "source": hit.get("source"),
        "article": hit.get("title"),
    }


def feed_title(req: SearchRequest) -> str:
    """A human title naming the query and filters: what the reader shows for the feed."""
    what = "Quotations" if req.mode == "quotes" else "Passages"
    parts = [f"matching “{req.q}”"] if req.q else []
    for name, values in sorted(req.filters.items()):
        parts.append(f"{name}: {' or '.join(values)}")
    return f"newsquarry · {what} " + (", ".join(parts) if parts else "(all)")


def atom(
    hits: list[dict[str, Any]], req: SearchRequest, *, self_url: str, html_url: str,
    links: list[str], updated: datetime,
) -> bytes:  # fmt: skip
    """An Atom 1.0 document (RFC 4287); text content, escaped."""
    entries = [_entry(h, req.mode, link, updated) for h, link in zip(hits, links, strict=True)]
    newest = max((e["date"] for e in entries), default=None) or _iso(None, updated)
    out = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        f"<id>{escape(feed_id(self_url))}</id>",
        f"<title>{escape(feed_title(req))}</title>",
        f"<updated>{newest}</updated>",
        f"<link rel=\"self\" type=\"application/atom+xml\" href={quoteattr(self_url)}/>",
        f"<link rel=\"alternate\" type=\"text/html\" href={quoteattr(html_url)}/>",
        "<author><name>newsquarry</name></author>",
        "<generator>newsquarry</generator>",
    ]
    for e in entries:
        out += [
            "<entry>",
            f"<id>{escape(e['id'])}</id>",
            f"<title>{escape(e['title'])}</title>",
            f"<link rel=\"alternate\" type=\"text/html\" href={quoteattr(e['link'])}/>",
            f"<updated>{e['date']}</updated>",
            f"<published>{e['date']}</published>",
        ]
        if e["author"]:
            out.append(f"<author><name>{escape(e['author'])}</name></author>")
        out += [
            f"<summary>{escape(e['summary'])}</summary>",
            f"<content type=\"text\">{escape(e['text'])}</content>",
            "</entry>",
        ]
    out.append("</feed>")
    return ("\n".join(out) + "\n").encode("utf-8")


def json_feed(
    hits: list[dict[str, Any]], req: SearchRequest, *, self_url: str, html_url: str,
    links: list[str], updated: datetime,
) -> bytes:  # fmt: skip
    """A JSON Feed 1.1 document."""
    items = []
    for hit, link in zip(hits, links, strict=True):
        e = _entry(hit, req.mode, link, updated)
        item: dict[str, Any] = {
            "id": e["id"],
            "url": e["link"],
            "title": e["title"],
            "content_text": e["text"],
            "summary": e["summary"],
            "date_published": e["date"],
        }
        if e["author"]:
            item["authors"] = [{"name": e["author"]}]
        tags = [t for t in (e["source"],) if t]
        if tags:
            item["tags"] = tags
        items.append(item)
    return dumps(
        {
            "version": JSONFEED_VERSION,
            "title": feed_title(req),
            "home_page_url": html_url,
            "feed_url": self_url,
            "description": "Newest first; entries keep their ids across fetches.",
            "authors": [{"name": "newsquarry"}],
            "items": items,
        }
    )

"""What a followed address holds: a feed (RSS, Atom, RDF), a sitemap (or a sitemap index),
or an HTML page from which feeds and sitemaps are discovered; and what an article page
says of itself (its ``rel=canonical``).

``read_source`` turns a fetched body into a ``Parsed``: the entries it lists (an entry's
GUID, link, title, dates) and the further sources it names (a sitemap index's sitemaps,
a home page's feeds). A body that is not what it claims (broken XML, an HTML error page
served as a feed) is a ``SourceError`` for that source alone; feedparser's recovery of
a malformed feed is kept, with the error recorded (``Parsed.problem``).
"""

from __future__ import annotations

import calendar
import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field

from newsquarry.search.ingest.follow.urls import BadURL, canonical_url

MAX_ENTRIES = 5000  # entries read from one feed or sitemap
MAX_CHILDREN = 50  # sitemaps of a sitemap index, feeds of a home page
FEED_TYPES = ("application/rss+xml", "application/atom+xml", "application/rdf+xml",
              "application/feed+json", "application/xml", "text/xml")  # fmt: skip
_XML_START = re.compile(rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*|<\?[^>]*>\s*)*<", re.S)


class SourceError(Exception):
    """A followed address whose body cannot be read as a feed, a sitemap or a page."""


@dataclass
class Entry:
    """One item of a feed or sitemap: what identifies it and what says it changed."""

    link: str  # canonical URL of the article
    guid: str | None = None
    title: str | None = None
    published: str | None = None  # ISO 8601 as given (a date or a datetime)
    updated: str | None = None
    summary_hash: str | None = None  # a feed's summary changing is a change too

    @property
    def signature(self) -> str:
        """What the listing says of the entry's version: equal -> the page is not fetched."""
        return "|".join(x or "" for x in (self.updated, self.published, self.title,
                                          self.summary_hash))  # fmt: skip


@dataclass
class Parsed:
    kind: str  # "feed", "sitemap", "sitemapindex", "page"
    title: str | None = None
    entries: list[Entry] = field(default_factory=list)
    children: list[str] = field(default_factory=list)  # further sources it names
    problem: str | None = None  # a recovered error (malformed XML with entries read)
    bad_links: int = 0


def looks_like_xml(body: bytes) -> bool:
    head = body[:2048].lstrip(b"\xef\xbb\xbf")
    return bool(_XML_START.match(head)) and not re.match(rb"\s*<!doctype\s+html|\s*<html",
                                                         head, re.I)  # fmt: skip


def read_source(body: bytes, url: str) -> Parsed:
    """A fetched source body -> ``Parsed``; SourceError when it is none of the three."""
    if not body.strip():
        raise SourceError("empty body")
    # by what the body is, not by what the server calls it: many servers send feeds as
    # text/html or text/plain
    if not looks_like_xml(body) and re.search(rb"<html|<!doctype html", body[:4096], re.I):
        return _read_page(body, url)
    root = _sitemap_root(body)
    if root is not None:
        return _read_sitemap(root, url)
    return _read_feed(body, url)


def _xml_parser():  # noqa: ANN202 - lxml's parser type
    from lxml import etree  # lazy: start-up time (lxml)

    # no entities resolved, no network, no huge trees: a hostile sitemap stays small
    return etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False,
                           recover=False)  # fmt: skip


def _sitemap_root(body: bytes):  # noqa: ANN202
    """The root element when ``body`` is a sitemap (urlset, sitemapindex), else None; a
    body that names itself a sitemap but is broken XML is a SourceError."""
    from lxml import etree  # lazy: start-up time (lxml)

    head = body[:4096]
    if b"urlset" not in head and b"sitemapindex" not in head:
        return None
    try:
        root = etree.fromstring(body, parser=_xml_parser())
    except etree.XMLSyntaxError as exc:
        raise SourceError(f"malformed sitemap XML: {exc}") from None
    name = etree.QName(root).localname if isinstance(root.tag, str) else ""
    return root if name in ("urlset", "sitemapindex") else None


def _text(el, name: str) -> str | None:  # noqa: ANN001
    for child in el.iter():
        if isinstance(child.tag, str) and child.tag.rsplit("}", 1)[-1] == name:
            value = (child.text or "").strip()
            if value:
                return value
    return None


def _read_sitemap(root, url: str) -> Parsed:  # noqa: ANN001
    from lxml import etree  # lazy: start-up time (lxml)

    index = etree.QName(root).localname == "sitemapindex"
    out = Parsed("sitemapindex" if index else "sitemap")
    for item in root:
        if not isinstance(item.tag, str):
            continue
        loc = _text(item, "loc")
        if not loc:
            continue
        try:
            link = canonical_url(loc, url)
        except BadURL:
            out.bad_links += 1
            continue
        if index:
            if len(out.children) < MAX_CHILDREN:
                out.children.append(link)
            continue
        if len(out.entries) >= MAX_ENTRIES:
            break
        out.entries.append(
            Entry(
                link,
                title=_text(item, "title"),
                published=_text(item, "publication_date"),
                updated=_text(item, "lastmod"),
            )  # fmt: skip
        )
    return out


def _struct_iso(value) -> str | None:  # noqa: ANN001 - feedparser's time.struct_time
    if not value:
        return None
    try:
        return dt.datetime.fromtimestamp(calendar.timegm(value), dt.UTC).isoformat()
    except (OverflowError, ValueError, TypeError):
        return None


def _read_feed(body: bytes, url: str) -> Parsed:
    import feedparser  # lazy: start-up time (only feeds need it)

    parsed = feedparser.parse(body, response_headers={"content-location": url})
    version = parsed.get("version") or ""
    entries = parsed.get("entries") or []
    problem = None
    if parsed.get("bozo"):
        exc = parsed.get("bozo_exception")
        name = type(exc).__name__
        if name not in ("CharacterEncodingOverride", "NonXMLContentType"):
            line = getattr(exc, "getLineNumber", lambda: None)()
            where = f" (line {line})" if line else ""
            problem = f"malformed feed XML{where}: {exc}"
    if not version and not entries:
        raise SourceError(problem or "neither a feed nor a sitemap nor an HTML page")
    out = Parsed("feed", title=(parsed.get("feed") or {}).get("title"), problem=problem)
    for item in entries[:MAX_ENTRIES]:
        link = item.get("link")
        guid = item.get("id") or None
        if not link and guid and str(guid).startswith(("http://", "https://")):
            link = guid
        try:
            canon = canonical_url(link or "", url)
        except BadURL:
            out.bad_links += 1
            continue
        summary = item.get("summary") or ""
        out.entries.append(
            Entry(
                canon,
                guid=str(guid)[:2000] if guid else None,
                title=item.get("title"),
                # dict.get: feedparser's own get maps a missing "updated" to "published"
                published=_struct_iso(dict.get(item, "published_parsed"))
                or dict.get(item, "published"),
                updated=_struct_iso(dict.get(item, "updated_parsed")) or dict.get(item, "updated"),
                summary_hash=hashlib.sha256(summary.encode("utf-8", "replace")).hexdigest()[:16]
                if summary
                else None,
            )
        )
    if problem and out.entries:
        out.problem = f"{problem}; {len(out.entries)} entries recovered"
    return out


def _html(body: bytes):  # noqa: ANN202
    import lxml.html  # lazy: start-up time (lxml)

    try:
        return lxml.html.document_fromstring(body)
    except Exception as exc:  # noqa: BLE001 - lxml raises several kinds on garbage
        raise SourceError(f"unreadable HTML: {exc}") from None


def _read_page(body: bytes, url: str) -> Parsed:
    """A home page: the feeds its ``<link rel="alternate">`` elements name."""
    doc = _html(body)
    out = Parsed("page", title=(doc.findtext(".//title") or "").strip() or None)
    for link in doc.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        kind = (link.get("type") or "").lower().split(";")[0].strip()
        href = link.get("href")
        if "alternate" in rel and kind in FEED_TYPES and href:
            try:
                child = canonical_url(href, url)
            except BadURL:
                continue
            if child not in out.children and len(out.children) < MAX_CHILDREN:
                out.children.append(child)
    return out


def page_canonical(html: str, url: str) -> str | None:
    """The page's ``<link rel="canonical">`` as a canonical URL, or None."""
    try:
        doc = _html(html.encode("utf-8", "replace"))
    except SourceError:
        return None
    for link in doc.iter("link"):
        if "canonical" in (link.get("rel") or "").lower().split() and link.get("href"):
            try:
                return canonical_url(link.get("href"), url)
            except BadURL:
                return None
    return None

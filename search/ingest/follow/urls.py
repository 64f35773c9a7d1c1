"""URLs as identities: one canonical form per article address, tracking parameters removed.

The same story reached from three feeds, from a sitemap and from a newsletter differs in
its address only by tracking parameters (``utm_*``, ``fbclid``, ``gclid``...), the case
of the host, a default port or a ``#fragment``: ``canonical_url`` removes those, so each
form is one key. It never guesses beyond that (``/a`` and ``/a/`` stay two addresses: a
site may serve different pages there); the page's own ``<link rel="canonical">`` joins
the rest (``follow.sources.page_canonical``).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urljoin, urlsplit, urlunsplit

# query parameters that say how a reader arrived, never which page they read
TRACKING_PREFIXES = ("utm_", "mtm_", "pk_", "at_", "_hs", "hsa_", "oly_", "vero_")
TRACKING_NAMES = frozenset(
    """fbclid gclid gclsrc dclid gbraid wbraid msclkid yclid twclid ttclid li_fat_id igshid
    mc_cid mc_eid mkt_tok _ga _gl _ke s_cid cmpid ocid ncid sr_share ref_src ref_url
    rss rss_id cmp campaign_id spm""".split()
)
DEFAULT_PORTS = {"http": 80, "https": 443}
_ID_SAFE = re.compile(r"[^A-Za-z0-9.-]+")


class BadURL(ValueError):
    """Not an http(s) address a follower can fetch."""


def is_tracking(name: str) -> bool:
    """Whether a query parameter only tracks the reader (``utm_source``, ``fbclid``...)."""
    low = name.lower()
    return low in TRACKING_NAMES or low.startswith(TRACKING_PREFIXES)


def canonical_url(url: str, base: str | None = None) -> str:
    """``url`` (relative to ``base`` when given) in one form: scheme and host lower-case,
    default port, fragment and tracking parameters removed, the other parameters sorted,
    an empty path as ``/``. BadURL when it is not http(s) with a host."""
    raw = (url or "").strip()
    if not raw:  # never the base itself: an entry without a link is no article
        raise BadURL("no URL")
    if base:
        raw = urljoin(base, raw)
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise BadURL(f"not a URL: {raw[:200]!r} ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise BadURL(f"not an http(s) URL: {raw[:200]!r}")
    host = parts.hostname.lower().rstrip(".")
    try:
        host = host.encode("idna").decode("ascii")
    except UnicodeError:
        pass  # kept as written: still one form
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = quote(unquote(parts.path or "/"), safe="/:@!$&'()*+,;=-._~%")
    query = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not is_tracking(k)
    ]
    return urlunsplit((scheme, netloc, path, urlencode(sorted(query)), ""))


def host_of(url: str) -> str:
    """The host (and a port other than the default) of an http(s) URL: the unit of
    robots.txt and of the rate limit."""
    parts = urlsplit(url)
    port = parts.port
    host = (parts.hostname or "").lower()
    scheme = parts.scheme.lower()
    return host if port in (None, DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"


def article_id(key: str, url: str) -> str:
    """A stable article id for the identity ``key`` first seen at ``url``: the host, for
    readers, and a hash of the key (an id never changes once given)."""
    host = _ID_SAFE.sub("-", host_of(url)).strip("-") or "feed"
    return f"{host}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:16]}"

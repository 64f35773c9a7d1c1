"""HTTP for the follower: conditional requests, robots.txt, a per-host rate limit and the
server's own requests to slow down (429/503 with ``Retry-After``).

One ``Fetcher`` serves a poll round. Every request goes through ``get``:

- robots.txt first (``urllib.robotparser``; fetched once per host and kept a day, as
  RFC 9309 allows; a missing file allows everything, a server error on it disallows the
  host until it answers, as RFC 9309 asks); a disallowed address is never requested
  (``Disallowed``);
- the host's turn: at most ``rate`` requests per second to one host (and no faster than
  its robots.txt ``Crawl-delay``), waiting with the injected ``sleep``;
- ``If-None-Match`` / ``If-Modified-Since`` from the validators given: a 304 comes back
  as ``Response.not_modified``;
- redirects are followed (urllib's handler: 301, 302, 303, 307, 308, at most 10), and
  ``Response.url`` is where the body came from;
- 429 and 503 raise ``SlowDown`` with the seconds the server asked for (``Retry-After``:
  seconds or an HTTP date), and the host is left alone until then (``blocked``).

The clock and the sleep are injected, so tests drive time instead of waiting for it.
"""

from __future__ import annotations

import email.utils
import gzip
import http.client
import io
import time
import urllib.error
import urllib.request
import urllib.robotparser
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from newsquarry.search.ingest.follow.urls import host_of

USER_AGENT = "newsquarry-follow/0.1"  # what robots.txt rules name, and servers log
TIMEOUT = 30.0  # seconds for a connection or a read
MAX_BYTES = 10 * 1024 * 1024  # a feed, sitemap or page larger than this is refused
MAX_RETRY_AFTER = 24 * 3600.0  # a Retry-After past a day is read as a day
DEFAULT_RETRY_AFTER = 60.0  # a 429/503 that names no time
ROBOTS_TTL = 24 * 3600.0  # a robots.txt is used this long before it is fetched again


class FetchError(Exception):
    """A request that gave nothing usable: the message says why (status, network, size)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Disallowed(FetchError):
    """robots.txt forbids the address: it was not requested."""


class SlowDown(FetchError):
    """The server asked to wait (429 or 503): ``retry_after`` seconds."""

    def __init__(self, message: str, status: int, retry_after: float) -> None:
        super().__init__(message, status)
        self.retry_after = retry_after


@dataclass
class Response:
    """A fetched body (``not_modified`` when the validators still hold)."""

    url: str  # the address requested
    final_url: str  # where the body came from, after redirects
    status: int
    body: bytes = b""
    etag: str | None = None
    last_modified: str | None = None
    content_type: str = ""

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    def text(self, guess: bool = False) -> str:
        """The body as text: the charset the server named, else (``guess``) the one the
        page declares or trafilatura detects, else UTF-8; undecodable bytes replaced."""
        charset = None
        for part in self.content_type.split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                charset = value.strip("\"' ")
        if charset is None and guess:
            from trafilatura.utils import decode_file  # lazy: start-up time (trafilatura)

            return decode_file(self.body)
        try:
            return self.body.decode(charset or "utf-8", errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


def retry_after_seconds(value: str | None, now: float) -> float:
    """A ``Retry-After`` header (seconds or an HTTP date) as seconds from ``now``."""
    if not value:
        return DEFAULT_RETRY_AFTER
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return DEFAULT_RETRY_AFTER
    return min(max(when - now, 0.0), MAX_RETRY_AFTER)


class _HTTPOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirects, to http(s) addresses only (urllib would follow one to ftp)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201
        if urlsplit(urljoin(req.full_url, newurl)).scheme.lower() not in ("http", "https"):
            raise urllib.error.HTTPError(newurl, code, f"redirect to {newurl[:100]} refused",
                                         headers, fp)  # fmt: skip
        return super().redirect_request(req, fp, code, msg, headers, newurl)


@dataclass
class Host:
    """What the fetcher knows of one host during a round."""

    robots: urllib.robotparser.RobotFileParser | None = None
    robots_error: str | None = None  # the host is disallowed for the round (robots.txt 5xx)
    last_request: float | None = None
    blocked_until: float = 0.0


@dataclass
class Fetcher:
    """Requests for one poll round (see the module docstring)."""

    rate: float = 1.0  # requests per second to one host; 0 = no limit
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    user_agent: str = USER_AGENT
    timeout: float = TIMEOUT
    blocked: dict[str, float] = field(default_factory=dict)  # host -> until (from state)
    # host -> (robots.txt body, when fetched): the state's copies, and the ones fetched now
    robots_cache: dict[str, tuple[str, float]] = field(default_factory=dict)
    fresh_robots: dict[str, tuple[str, float]] = field(default_factory=dict)
    hosts: dict[str, Host] = field(default_factory=dict)
    requests: int = 0

    def __post_init__(self) -> None:
        self._opener = urllib.request.build_opener(_HTTPOnlyRedirects())

    def host(self, url: str) -> Host:
        name = host_of(url)
        h = self.hosts.get(name)
        if h is None:
            h = self.hosts[name] = Host(blocked_until=self.blocked.get(name, 0.0))
        return h

    def blocked_for(self, url: str) -> float:
        """Seconds the host of ``url`` is still to be left alone (0: not blocked)."""
        return max(0.0, self.host(url).blocked_until - self.clock())

    def allowed(self, url: str) -> bool:
        """Whether robots.txt lets this follower fetch ``url`` (fetched once per host)."""
        h = self.host(url)
        if h.robots is None and h.robots_error is None:
            self._load_robots(url, h)
        if h.robots_error is not None:
            return False
        return h.robots.can_fetch(self.user_agent, url)  # type: ignore[union-attr]

    def _load_robots(self, url: str, h: Host) -> None:
        parts = urlsplit(url)
        robots_url = f"{parts.scheme}://{parts.netloc}/robots.txt"
        parser = urllib.robotparser.RobotFileParser(robots_url)
        cached = self.robots_cache.get(host_of(url))
        if cached is not None and 0 <= self.clock() - cached[1] < ROBOTS_TTL:
            parser.parse(cached[0].splitlines())
            h.robots = parser
            return
        try:
            resp = self._request(robots_url, {}, h)
        except SlowDown as exc:
            h.robots_error = str(exc)
            return
        except FetchError as exc:
            if exc.status is not None and 400 <= exc.status < 500:
                parser.parse([])  # no robots.txt: everything is allowed
                h.robots = parser
                self.fresh_robots[host_of(url)] = ("", self.clock())
                return
            h.robots_error = f"robots.txt unavailable ({exc}): the host is skipped this round"
            return
        text = resp.text()
        parser.parse(text.splitlines())
        h.robots = parser
        self.fresh_robots[host_of(url)] = (text[:500_000], self.clock())

    def robots_sitemaps(self, url: str) -> list[str]:
        """The ``Sitemap:`` lines of the host's robots.txt (discovery)."""
        h = self.host(url)
        if h.robots is None and h.robots_error is None:
            self._load_robots(url, h)
        return list((h.robots.site_maps() if h.robots else None) or [])

    def get(self, url: str, etag: str | None = None, last_modified: str | None = None) -> Response:
        """GET ``url`` as the module docstring says; raises FetchError (Disallowed, SlowDown)."""
        wait = self.blocked_for(url)
        if wait > 0:  # before robots.txt too: the host asked to be left alone
            raise SlowDown(f"the server asked to wait {wait:.0f} s more", 429, wait)
        if not self.allowed(url):
            h = self.host(url)
            raise Disallowed(h.robots_error or "disallowed by robots.txt")
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return self._request(url, headers, self.host(url))

    def _wait_turn(self, h: Host) -> None:
        now = self.clock()
        if h.blocked_until > now:
            raise SlowDown(
                f"the server asked to wait {h.blocked_until - now:.0f} s more", 429,
                h.blocked_until - now,
            )  # fmt: skip
        gap = 1.0 / self.rate if self.rate > 0 else 0.0
        delay = h.robots.crawl_delay(self.user_agent) if h.robots else None
        if delay:
            try:
                gap = max(gap, float(delay))
            except (TypeError, ValueError):
                pass
        if h.last_request is not None and gap > 0:
            wait = h.last_request + gap - now
            if wait > 0:
                self.sleep(wait)
        h.last_request = self.clock()

    def _request(self, url: str, headers: dict[str, str], h: Host) -> Response:
        self._wait_turn(h)
        request = urllib.request.Request(url, headers={"User-Agent": self.user_agent, **headers})
        self.requests += 1
        try:
            with self._opener.open(request, timeout=self.timeout) as resp:
                body = resp.read(MAX_BYTES + 1)
                status, final, info = resp.status, resp.geturl(), resp.headers
        except urllib.error.HTTPError as exc:
            with exc:
                if exc.code == 304:
                    return Response(url, exc.geturl() or url, 304,
                                    etag=exc.headers.get("ETag") or headers.get("If-None-Match"),
                                    last_modified=exc.headers.get("Last-Modified")
                                    or headers.get("If-Modified-Since"))  # fmt: skip
                if exc.code in (429, 503):
                    wait = retry_after_seconds(exc.headers.get("Retry-After"), self.clock())
                    h.blocked_until = max(h.blocked_until, self.clock() + wait)
                    raise SlowDown(f"HTTP {exc.code}: retry after {wait:.0f} s", exc.code,
                                   wait) from None  # fmt: skip
                raise FetchError(f"HTTP {exc.code} {exc.reason}", exc.code) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FetchError(f"cannot fetch: {reason}") from None
        except http.client.HTTPException as exc:  # a broken response: cut short, bad lines
            raise FetchError(f"broken response: {type(exc).__name__} {exc}"[:300]) from None
        except (ValueError, OSError) as exc:  # a bad redirect target, a reset connection
            raise FetchError(f"cannot fetch: {exc}") from None
        if len(body) > MAX_BYTES:
            raise FetchError(f"larger than {MAX_BYTES // (1024 * 1024)} MB")
        length = info.get("Content-Length")
        if length and length.strip().isdigit() and len(body) < int(length):
            # the connection closed early: a truncated page would be indexed as shorter
            raise FetchError(f"cut short: {len(body)} of {int(length)} bytes")
        if body[:2] == b"\x1f\x8b":  # a .xml.gz sitemap, or a server that gzips anyway
            body = _gunzip(body)
        return Response(url, final or url, status, body, info.get("ETag"),
                        info.get("Last-Modified"), info.get("Content-Type") or "")  # fmt: skip


def _gunzip(body: bytes) -> bytes:
    """A gzip body, decompressed up to ``MAX_BYTES`` (a small bomb cannot fill memory)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(body)) as gz:
            out = gz.read(MAX_BYTES + 1)
    except (OSError, EOFError) as exc:
        raise FetchError(f"broken gzip body: {exc}") from None
    if len(out) > MAX_BYTES:
        raise FetchError(f"larger than {MAX_BYTES // (1024 * 1024)} MB once decompressed")
    return out

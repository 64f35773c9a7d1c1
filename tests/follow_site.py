"""A news site on loopback for the follower's tests: pages, feeds, a sitemap, robots.txt.

``Site`` is a real HTTP server (``http.server`` in a thread, 127.0.0.1, a free port)
whose content the test writes and changes between poll rounds: each resource answers
``ETag`` / ``Last-Modified`` and 304 to a request that names them; ``fail`` makes a path
answer an error (500, 429 with ``Retry-After``...) for a number of requests; ``redirect``
moves a path; ``hold`` makes a request wait until the test releases it (so a process can
be killed while it is mid-round, without guessing when). Every request is logged.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.server
import random
import threading
from dataclasses import dataclass, field
from html import escape
from urllib.parse import urlsplit

WORDS = (
    "harbour council budget minister river election court strike vaccine bridge festival "
    "drought tariff museum railway senate protest hospital wildfire pension airport treaty "
    "factory reservoir orchestra stadium refinery glacier embassy lottery satellite harvest "
    "tunnel ferry cathedral archive mayor coalition verdict inquiry parliament summit "
    "monsoon census laboratory vineyard pipeline"
).split()
FILLER = (
    "officials said on Tuesday that the plan would be reviewed again next month, while "
    "residents who spoke to reporters described the week as difficult but hopeful"
).split()


def article_text(n: int, version: int = 1) -> list[str]:
    """Three paragraphs of story ``n`` (version > 1: an edited story)."""
    rng = random.Random(n * 1000 + version)
    paras = []
    for p in range(3):
        words = [rng.choice(WORDS) for _ in range(12)] + FILLER
        rng.shuffle(words)
        paras.append(f"Story {n} paragraph {p + 1} version {version}: " + " ".join(words) + ".")
    return paras


def article_page(n: int, canonical: str, version: int = 1, title: str | None = None) -> bytes:
    paras = "\n".join(f"<p>{escape(p)}</p>" for p in article_text(n, version))
    title = title or f"Story number {n}"
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{escape(title)}</title>
<link rel="canonical" href="{escape(canonical)}">
<meta property="og:site_name" content="Loopback Times">
</head><body><nav><a href="/">Home</a> <a href="/news/">News</a></nav>
<article><h1>{escape(title)}</h1>
{paras}
</article><footer>Copyright Loopback Times</footer></body></html>""".encode()


def rss(title: str, items: list[dict]) -> bytes:
    parts = []
    for it in items:
        guid = ""
        if it.get("guid"):
            perma = "true" if it.get("guid_is_link") else "false"
            guid = f'<guid isPermaLink="{perma}">{escape(it["guid"])}</guid>'
        parts.append(
            f"<item><title>{escape(it['title'])}</title><link>{escape(it['link'])}</link>"
            f"{guid}<pubDate>{it.get('date', 'Mon, 01 Jan 2024 10:00:00 GMT')}</pubDate>"
            "</item>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>'
        f"<title>{escape(title)}</title><link>http://example.invalid/</link>"
        f"<description>d</description>{''.join(parts)}</channel></rss>"
    ).encode()


def atom(title: str, items: list[dict]) -> bytes:
    parts = []
    for it in items:
        parts.append(
            f"<entry><title>{escape(it['title'])}</title>"
            f'<link rel="alternate" href="{escape(it["link"])}"/>'
            f"<id>{escape(it.get('guid') or it['link'])}</id>"
            f"<updated>{it.get('updated', '2024-01-01T10:00:00Z')}</updated></entry>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>{escape(title)}</title><id>urn:feed:{escape(title)}</id>"
        f"<updated>2024-01-01T10:00:00Z</updated>{''.join(parts)}</feed>"
    ).encode()


def sitemap(urls: list[tuple[str, str | None]]) -> bytes:
    parts = []
    for loc, lastmod in urls:
        mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
        parts.append(f"<url><loc>{escape(loc)}</loc>{mod}</url>")
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"{''.join(parts)}</urlset>"
    ).encode()


@dataclass
class Resource:
    body: bytes
    ctype: str
    etag: str
    last_modified: str


@dataclass
class Failure:
    status: int
    times: int | None  # None: until cleared
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"error"


class Site:
    """The server and its content (see the module docstring)."""

    def __init__(self) -> None:
        self.resources: dict[str, Resource] = {}
        self.failures: dict[str, Failure] = {}
        self.redirects: dict[str, tuple[int, str]] = {}
        self.holds: dict[str, tuple[threading.Event, threading.Event]] = {}
        self.log: list[tuple[str, int, bool]] = []  # (path with query, status, conditional)
        self._lock = threading.Lock()
        self._version = 0
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site._serve(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        for _arrived, release in self.holds.values():
            release.set()
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str) -> str:
        return self.base + path

    # -- content ------------------------------------------------------------
    def put(self, path: str, body: bytes, ctype: str = "text/html; charset=utf-8") -> None:
        with self._lock:
            self._version += 1
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            modified = email.utils.formatdate(1_700_000_000 + self._version, usegmt=True)
            self.resources[path] = Resource(body, ctype, etag, modified)

    def fail(self, path: str, status: int, times: int | None = None, **headers: str) -> None:
        self.failures[path] = Failure(status, times, {k.replace("_", "-"): v
                                                      for k, v in headers.items()})  # fmt: skip

    def clear(self, path: str) -> None:
        self.failures.pop(path, None)

    def redirect(self, path: str, target: str, status: int = 301) -> None:
        self.redirects[path] = (status, target)

    def hold(self, path: str) -> threading.Event:
        """Requests of ``path`` wait until ``release(path)``; returns the event set when
        the first one arrives."""
        arrived, release = threading.Event(), threading.Event()
        self.holds[path] = (arrived, release)
        return arrived

    def release(self, path: str) -> None:
        self.holds.pop(path)[1].set()

    # -- what was asked -----------------------------------------------------
    def requests(self, path: str | None = None) -> list[tuple[str, int, bool]]:
        with self._lock:
            return [r for r in self.log if path is None or urlsplit(r[0]).path == path]

    def count(self, status: int, path: str | None = None) -> int:
        return sum(1 for r in self.requests(path) if r[1] == status)

    # -- serving ------------------------------------------------------------
    def _serve(self, h: http.server.BaseHTTPRequestHandler) -> None:
        full = h.path
        path = urlsplit(full).path
        conditional = bool(h.headers.get("If-None-Match") or h.headers.get("If-Modified-Since"))
        hold = self.holds.get(path)
        if hold is not None:
            hold[0].set()
            hold[1].wait()
        status, headers, body = self._answer(path, h)
        with self._lock:
            self.log.append((full, status, conditional))
        h.send_response(status)
        for name, value in headers.items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _answer(self, path: str, h: http.server.BaseHTTPRequestHandler):  # noqa: ANN202
        failure = self.failures.get(path)
        if failure is not None:
            if failure.times is not None:
                failure.times -= 1
                if failure.times <= 0:
                    self.failures.pop(path, None)
            return failure.status, {"Content-Type": "text/plain", **failure.headers}, failure.body
        if path in self.redirects:
            status, target = self.redirects[path]
            return status, {"Location": target}, b""
        res = self.resources.get(path)
        if res is None:
            return 404, {"Content-Type": "text/plain"}, b"not found"
        headers = {"Content-Type": res.ctype, "ETag": res.etag, "Last-Modified": res.last_modified}
        inm = h.headers.get("If-None-Match")
        ims = h.headers.get("If-Modified-Since")
        if (inm and inm == res.etag) or (not inm and ims and ims == res.last_modified):
            return 304, headers, b""
        return 200, headers, res.body

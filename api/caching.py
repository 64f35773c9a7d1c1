"""HTTP caching: ETags from the index generation, 304s, and a response cache.

A read response depends only on the index generation (which changes on every
commit), the alias table's override file and on the request (path, query string, negotiated format, host for
the absolute URLs inside). The ETag is a hash of both, so it is known before
the search runs: a matching ``If-None-Match`` is answered 304 without
searching. ``ResponseCache`` keeps recent response bodies per process, keyed
the same way, so a repeated query costs one dictionary lookup; a new commit
changes the generation and so every key (old entries age out of the LRU).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from flask import Request, Response

CACHE_CONTROL = "public, no-cache"  # cache, but revalidate with the ETag each time


def request_key(req: Request, fmt: str, store: Any = None) -> str:
    """The parts of a request that decide its response body.

    With ``store``, also the version of its alias table: the override file can
    change names without a commit (``newsquarry.search.archive.aliases``).
    """
    query = "&".join(sorted(req.query_string.decode("latin-1").split("&")))
    key = req.headers.get("X-Newsquarry-Key", "")
    resolver = getattr(store, "alias_resolver", None)
    aliases = resolver().version if resolver is not None else ""
    return f"{req.host}|{req.path}|{query}|{fmt}|{key}|{aliases}"


def make_etag(generation: int, key: str) -> str:
    """A strong ETag: the generation plus a hash of the request key."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()
    return f'"g{generation}-{digest}"'


def etag_matches(req: Request, etag: str) -> bool:
    """True when the client's If-None-Match holds this ETag (or ``*``)."""
    inm = req.if_none_match
    if not inm:
        return False
    return inm.star_tag or inm.contains_weak(etag.strip('"'))


def not_modified(etag: str) -> Response:
    resp = Response(status=304)
    resp.headers["ETag"] = etag
    resp.headers["Cache-Control"] = CACHE_CONTROL
    return resp


@dataclass
class CachedBody:
    body: bytes
    mimetype: str
    headers: tuple[tuple[str, str], ...]


class ResponseCache:
    """A thread-safe LRU of response bodies keyed by (generation, request key)."""

    def __init__(self, size: int) -> None:
        self.size = max(0, int(size))
        self._data: OrderedDict[tuple[int, str], CachedBody] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, generation: int, key: str) -> CachedBody | None:
        if not self.size:
            return None
        with self._lock:
            item = self._data.get((generation, key))
            if item is None:
                self.misses += 1
                return None
            self._data.move_to_end((generation, key))
            self.hits += 1
            return item

    def put(self, generation: int, key: str, item: CachedBody) -> None:
        if not self.size:
            return
        with self._lock:
            self._data[(generation, key)] = item
            self._data.move_to_end((generation, key))
            while len(self._data) > self.size:
                self._data.popitem(last=False)

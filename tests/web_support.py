"""Shared helpers of the web tests: one real index per session, servers on loopback ports.

The index holds the bundled seed article plus a few hand-written ones
(different sources and dates, one whose text carries ``<script>`` and
``<img onerror>``), enriched by the real spaCy enricher. It is built once per
test session (``web_index()`` caches it) and only read by the tests.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from werkzeug.serving import make_server

from newsquarry.search.corpus import bundled_corpus_path
from newsquarry.search.models import Article
from newsquarry.search.readers import article_from_mapping, read_paths

SECRET = "web-tests-secret-0123456789abcdef"
SEED_ID = "000_e23b3335c9472580"
XSS_ID = "xss-probe"
XSS_TEXT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(1)>"

ARTICLES = [
    {
        "id": "caracas-market",
        "title": "Caracas traders count the cost of the blackout",
        "source": "Daily Ledger",
        "date": "2019-03-12",
        "url": "https://example.org/caracas-market",
        "text": (
            "Traders in Caracas said the blackout cost them a week of sales. Maria Perez, who "
            "sells fruit near the Plaza Bolivar, said the National Guard closed the market twice.\n\n"
            '"We lost everything in the freezers," Perez said. "Nobody came to help us."\n\n'
            "Nicolás Maduro blamed sabotage for the blackout, while Juan Guaidó said years of "
            "neglect had ruined the grid."
        ),
    },
    {
        "id": "bogota-border",
        "title": "At the Colombian border, soldiers wait for news",
        "source": "Andean Post",
        "date": "2019-04-02",
        "url": "https://example.org/bogota-border",
        "text": (
            "In Cúcuta, former soldiers of the National Guard wait in cheap hotels for news from "
            "Venezuela. Carlos Mendez, a former lieutenant, said the torture of deserters is "
            "common.\n\n"
            '"They will hunt us down," Mendez said. Juan Guaidó has promised an amnesty, but '
            "few trust it.\n\n"
            "Colombia has registered more than a thousand deserters since February, officials "
            "in Bogotá said."
        ),
    },
    {
        "id": XSS_ID,
        "title": "Markup probe <b>bold</b> & co",
        "source": "Daily Ledger",
        "date": "2020-01-15",
        "url": "javascript:alert(1)",
        "text": (
            f"A reader wrote {XSS_TEXT} into the comments and also {XSS_IMG} to test the site. "
            "The editor Ana Ruiz said the probe was harmless.\n\n"
            f'"Nothing ran, and {XSS_TEXT} stayed text," Ruiz said.'
        ),
    },
]


def articles() -> list[Article]:
    """The seed article and the hand-written ones."""
    seed = list(read_paths([bundled_corpus_path() / f"{SEED_ID}.txt"]))
    return seed + [article_from_mapping(a) for a in ARTICLES]


@lru_cache(maxsize=1)
def web_index() -> Any:
    """A real index of ``articles()``, built once per session (spaCy enricher)."""
    from newsquarry.search.indexer import default_enricher, index_articles
    from newsquarry.search.store import WhooshStore

    path = tempfile.mkdtemp(prefix="nq-web-index-")
    atexit.register(shutil.rmtree, path, True)
    store = WhooshStore(path)
    index_articles(store, articles(), enricher=default_enricher())
    return store


def make_app(store: Any = None, **config: Any) -> Any:
    """The API app over the shared index, with the test secret."""
    from newsquarry.api.app import create_app

    settings = {"secret": SECRET, **config}
    return create_app(settings, store=store if store is not None else web_index())


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve a WSGI app on a free loopback port in a thread; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)

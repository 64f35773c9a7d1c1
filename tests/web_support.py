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

from newsquarry.search.core.models import Article
from newsquarry.search.ingest.corpus import bundled_corpus_path
from newsquarry.search.ingest.readers import article_from_mapping, read_paths

SECRET = "web-tests-secret-0123456789abcdef"
SEED_ID = "000_e23b3335c9472580"
XSS_ID = "xss-probe"
XSS_TEXT = "<script>alert(1)</script>"
XSS_IMG = "<img src=x onerror=alert(1)>"

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE, unpaired
RTL_ID = "rtl-probe"
RTL_SOURCE = f"{RLO}Reversed Source"
RTL_DATE = "2024-03-09"
LONG_ID = "council-minutes"
# one paragraph with no sentence break: one passage of about 30,000 characters
LONG_TEXT = (
    "The council minutes record, "
    + ", ".join(
        f"item {i} on the drains of ward {i % 17} tabled by councillor Okafor" for i in range(480)
    )
    + " and nothing else."
)
ODD_ID = "odd-shapes"

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


ARTICLES += [
    {
        "id": RTL_ID,
        "title": f"Council budget {RLO}override in the title",
        "source": RTL_SOURCE,
        "date": RTL_DATE,
        "author": f"{RLO}Nadia Haddad",
        "text": (
            f"The city council approved the budget {RLO}after a long night of debate. "
            "The mayor, Nadia Haddad, said the vote was close.\n\n"
            "Residents of حي الزيتون asked the council for new street lights."
        ),
    },
    {
        "id": LONG_ID,
        "title": "Council minutes, in full",
        "source": "Municipal Record",
        "date": "2023-11-02",
        "text": LONG_TEXT,
    },
    {
        "id": ODD_ID,
        "title": "A council notice with a very long unbroken word and many short lines",
        "source": "Notice Board",
        "date": "2023-05-05",
        "text": (
            "Council notice: "
            + "Donaudampfschifffahrtsgesellschaftskapitän" * 4
            + " posted.\n"
            + "\n".join(f"line {i} of the council notice" for i in range(1, 9))
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
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import default_enricher, index_articles

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

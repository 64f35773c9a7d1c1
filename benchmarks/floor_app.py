"""The floor of the HTTP stack: Flask under the same gunicorn settings, no work of ours.

With ``NQ_FLOOR_SEARCH=1`` each request also runs the library's search (``q`` and
``facet`` taken from the query string as they are, no validation) before sending
the recorded answer: gunicorn + Flask + the library, without our layer. Like the
API, it runs one read at a time per worker unless ``NEWSQUARRY_READ_CONCURRENCY=0``
(``api.concurrency.gate_reads``, a lock around the app).

``bench_api`` serves this app with ``api/gunicorn_conf.py`` to measure what
gunicorn + Flask cost to answer a request with a body of the same size as a
real search answer (read from ``NQ_FLOOR_BODY``, a file holding one recorded
answer): HTTP parsing, WSGI, Flask's dispatch, the access log and writing the
bytes. No validation, no search, no serialisation. Whatever the API costs
beyond the library and this floor is the cost of our own layer.
"""

from __future__ import annotations

import os
from pathlib import Path

from flask import Flask, Response, request

from newsquarry.api.concurrency import gate_reads
from newsquarry.search.core.config import load_settings
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query.searching import run_search

_BODY_FILE = os.environ.get("NQ_FLOOR_BODY")
BODY = Path(_BODY_FILE).read_bytes() if _BODY_FILE else b"{}"
SEARCH = os.environ.get("NQ_FLOOR_SEARCH") == "1"
SETTINGS = load_settings()  # once, as the API does at start
_store: WhooshStore | None = None

app = Flask(__name__)


@app.get("/v1/search")
def search() -> Response:
    """The recorded answer, as is (after running the search, with ``NQ_FLOOR_SEARCH=1``)."""
    if SEARCH:
        global _store
        if _store is None:
            _store = WhooshStore(SETTINGS["index"], create=False)
        req = SearchRequest(
            q=request.args.get("q", ""),
            facets=request.args.getlist("facet"),
            time_limit=float(SETTINGS["search_time_limit"]),
        )
        run_search(_store, req, SETTINGS)
    return Response(BODY, mimetype="application/json")


@app.get("/health/ready")
def ready() -> Response:
    return Response(b'{"ready":true}', mimetype="application/json")


# the API's one-read-at-a-time gate (``read_concurrency``), so that floor + search runs its
# searches under the same discipline as the API it is compared with
gate_reads(app, int(SETTINGS["read_concurrency"]))

"""The floor of the HTTP stack: Flask under the same gunicorn settings, no work of ours.

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

from flask import Flask, Response

BODY = Path(os.environ.get("NQ_FLOOR_BODY", "")).read_bytes() if os.environ.get(
    "NQ_FLOOR_BODY"
) else b"{}"

app = Flask(__name__)


@app.get("/v1/search")
def search() -> Response:
    """The recorded answer, as is."""
    return Response(BODY, mimetype="application/json")


@app.get("/health/ready")
def ready() -> Response:
    return Response(b'{"ready":true}', mimetype="application/json")

"""gunicorn settings for ``newsquarry serve`` (``gunicorn -c api/gunicorn_conf.py api.wsgi:app``).

Defaults suit a small machine (2 cores): 2 worker processes x 4 threads.
Searches are CPU-bound Python, so processes give the parallelism and threads
cover waiting (slow clients, the write lock). Command-line flags
(``--workers``, ``--threads``, ``--bind``) override these; so do
``NEWSQUARRY_WORKERS`` / ``NEWSQUARRY_THREADS`` / ``NEWSQUARRY_BIND``.
The access log carries the request id of every response (``X-Request-Id``).
"""

from __future__ import annotations

import os

bind = os.environ.get("NEWSQUARRY_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("NEWSQUARRY_WORKERS", "2"))
threads = int(os.environ.get("NEWSQUARRY_THREADS", "4"))
worker_class = "gthread"
timeout = 120  # writes may wait for the index lock and run enrichment
graceful_timeout = 30
keepalive = 5
preload_app = False  # every worker opens its own index reader after the fork
accesslog = os.environ.get("NEWSQUARRY_ACCESS_LOG", "-")  # "-" = stdout
errorlog = "-"
loglevel = os.environ.get("NEWSQUARRY_LOG_LEVEL", "info")
access_log_format = (
    '%(h)s "%(r)s" %(s)s %(B)s %(M)sms rid=%({x-request-id}o)s "%(a)s"'
)
limit_request_line = 8190  # longest request line (query strings are bounded by the app)

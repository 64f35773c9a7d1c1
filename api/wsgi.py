"""The WSGI entry point: ``gunicorn newsquarry.api.wsgi:app``.

Settings come from the environment (``NEWSQUARRY_INDEX``,
``NEWSQUARRY_WRITE_TOKEN``, ...; see ``search.config``). Each gunicorn worker
imports this module after forking, so each opens its own index reader. Under
gunicorn, the app's own log records (``api.*``) go to gunicorn's error log.
"""

from __future__ import annotations

import logging

from .app import create_app

_gunicorn = logging.getLogger("gunicorn.error")
if _gunicorn.handlers:
    _api_log = logging.getLogger("api")
    _api_log.handlers = list(_gunicorn.handlers)
    _api_log.setLevel(_gunicorn.level)
    _api_log.propagate = False

app = create_app()

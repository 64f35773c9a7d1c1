"""The WSGI entry point: ``gunicorn api.wsgi:app``.

Settings come from the environment (``NEWSQUARRY_INDEX``,
``NEWSQUARRY_WRITE_TOKEN``, ...; see ``search.config``). Each gunicorn worker
imports this module after forking, so each opens its own index reader.
"""

from __future__ import annotations

from .app import create_app

app = create_app()

"""The newsquarry HTTP API: a thin Flask layer over the ``search`` library."""

from .app import create_app

__all__ = ["create_app"]

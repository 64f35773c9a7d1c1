"""The write token: ``Authorization: Bearer <token>``, compared in constant time.

Writes are disabled entirely (403) when no token is configured; a missing
token is 401 (with ``WWW-Authenticate``), a wrong one 403.
"""

from __future__ import annotations

import hmac

from flask import request

from .backend import backend
from .errors import ApiError


def require_write_token() -> None:
    """Raise an ApiError unless the request carries the configured write token."""
    token = backend().settings.get("write_token")
    if not token:
        raise ApiError(
            403,
            "writes are disabled on this server: no write token is configured "
            "(set NEWSQUARRY_WRITE_TOKEN)",
            title="Writes disabled",
        )
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        raise ApiError(
            401,
            "this endpoint needs the write token: send 'Authorization: Bearer <token>'",
            title="Missing write token",
            headers={"WWW-Authenticate": 'Bearer realm="newsquarry"'},
        )
    if not hmac.compare_digest(given.strip().encode("utf-8"), str(token).encode("utf-8")):
        raise ApiError(403, "the write token is wrong", title="Wrong write token")

"""Scoped read keys for embedders (like Typesense scoped keys or Meilisearch tenant tokens).

A key is ``nqk_<payload>.<signature>``: the payload (base64url JSON) carries
fixed filters, an optional date range and an expiry; the signature is
HMAC-SHA256 of the payload with the server secret. Anyone can read a key's
scope, nobody can change it without the secret.

A request made with a key can narrow the key's filters but never widen them:
``apply_scope`` ANDs the key's filters into the request (a value outside the
scope is refused, not silently dropped, so an embedder sees the mistake).
"""

from __future__ import annotations

import base64
import calendar
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass, field, replace

from newsquarry.search.core.errors import InvalidRequest, NewsquarryError
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.schema import FACETS
from newsquarry.search.query.facets import date_bounds

PREFIX = "nqk_"
MAX_KEY_LENGTH = 4000  # characters (the API refuses longer ``key`` parameters too)
_KEY_SHAPE = re.compile(r"^nqk_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$")


class KeyRefused(NewsquarryError):
    """A scoped key that is malformed, tampered with, expired, or asked to widen its scope."""

    status = 403
    title = "Invalid key"


@dataclass
class Scope:
    """What a key allows: fixed filters, a date range, an expiry (Unix seconds)."""

    filters: dict[str, list[str]] = field(default_factory=dict)
    date_from: str | None = None
    date_to: str | None = None
    expires: int | None = None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: str, payload: str) -> str:
    return _b64(hmac.new(secret.encode("utf-8"), payload.encode("ascii"), hashlib.sha256).digest())


MIN_SECRET_LENGTH = 16


def check_secret(secret: str | None) -> str:
    """The server secret, if long enough to sign keys; KeyRefused (naming why) otherwise.

    The server checks it when it starts and ``newsquarry key`` before signing, so a
    short secret is refused at once, with the same message, by both.
    """
    if not secret:
        raise KeyRefused(
            "no server secret: set NEWSQUARRY_SECRET (the server's secret)", field="secret"
        )
    if len(secret) < MIN_SECRET_LENGTH:
        raise KeyRefused(
            f"the server secret (NEWSQUARRY_SECRET) must be at least {MIN_SECRET_LENGTH} "
            f"characters long, not {len(secret)}",
            field="secret",
        )
    return secret


def make_key(secret: str, scope: Scope) -> str:
    """A signed key for ``scope``; the secret must be at least 16 characters."""
    check_secret(secret)
    for name in scope.filters:
        if name not in FACETS or name == "date":
            raise KeyRefused(f"a key cannot filter on {name!r}", field=name)
    for name, value in (("date_from", scope.date_from), ("date_to", scope.date_to)):
        if value:
            _check_date(value, name)
    body = {"v": 1, "f": scope.filters}
    if scope.date_from:
        body["df"] = scope.date_from
    if scope.date_to:
        body["dt"] = scope.date_to
    if scope.expires is not None:
        body["exp"] = int(scope.expires)
    payload = _b64(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    return f"{PREFIX}{payload}.{_sign(secret, payload)}"


def verify_key(secret: str, key: str, now: float | None = None) -> Scope:
    """The scope of a valid key; KeyRefused for a malformed, tampered or expired one."""
    if not secret:
        raise KeyRefused("scoped keys are not enabled on this server")
    # keys travel in URLs and headers: anything but base64url text is malformed, before
    # any decoding or signing (a non-ASCII key once crashed the signature check)
    if (
        not isinstance(key, str)
        or len(key) > MAX_KEY_LENGTH
        or not key.startswith(PREFIX)
        or not _KEY_SHAPE.match(key)
    ):
        raise KeyRefused("malformed key")
    payload, signature = key[len(PREFIX) :].split(".")
    if not hmac.compare_digest(_sign(secret, payload), signature):
        raise KeyRefused("invalid key signature (the key was altered or made for another server)")
    try:
        body = json.loads(_unb64(payload))
        if not isinstance(body, dict) or not isinstance(body.get("f", {}), dict):
            raise TypeError
        filters = {str(k): [str(v) for v in vs] for k, vs in body.get("f", {}).items()}
        exp = body.get("exp")
        if exp is not None and (isinstance(exp, bool) or not isinstance(exp, (int, float))):
            raise TypeError
        dates = {}
        for name, short in (("date_from", "df"), ("date_to", "dt")):
            value = body.get(short)
            if value is not None:
                if not isinstance(value, str):
                    raise TypeError
                _check_date(value, name)
            dates[name] = value
    except (ValueError, AttributeError, TypeError, KeyRefused):
        raise KeyRefused("malformed key") from None
    if exp is not None and (time.time() if now is None else now) >= exp:
        raise KeyRefused("the key has expired")
    return Scope(filters=filters, expires=exp, **dates)


def _check_date(value: str, name: str) -> None:
    """A key's date bound: YYYY, YYYY-MM or YYYY-MM-DD, a real date (KeyRefused if not)."""
    try:
        date_bounds(value, what=name)
    except InvalidRequest as exc:
        raise KeyRefused(exc.message, field=name) from None


def _bound(date: str, upper: bool) -> str:
    """ "2019" -> "2019-01-01" (or "2019-12-31" as an upper bound), so bounds compare."""
    parts = date.split("-")
    if len(parts) == 1:
        return f"{date}-12-31" if upper else f"{date}-01-01"
    if len(parts) == 2:
        if not upper:
            return f"{date}-01"
        year, month = int(parts[0]), int(parts[1])
        return f"{date}-{calendar.monthrange(year, month)[1]:02d}"
    return date


def _later(a: str | None, b: str | None) -> str | None:
    return max((_bound(x, False) for x in (a, b) if x), default=None)


def _earlier(a: str | None, b: str | None) -> str | None:
    return min((_bound(x, True) for x in (a, b) if x), default=None)


def _exact(value: str) -> str:
    return value


def apply_scope(request: SearchRequest, scope: Scope) -> SearchRequest:
    """The request restricted to the key's scope; refuses values outside it.

    The request's own dates are checked first (``InvalidRequest``, as without
    a key): callers validate the whole request before applying a scope.
    """
    for name in ("date_from", "date_to"):
        value = getattr(request, name)
        if value:
            date_bounds(str(value), what=name)
    filters = {k: list(v) for k, v in request.filters.items()}
    for name, allowed in scope.filters.items():
        asked = filters.get(name)
        if not asked:
            filters[name] = list(allowed)
            continue
        key = _exact if name == "article" else fold  # article ids are exact
        allowed_keys = {key(v) for v in allowed}
        outside = [v for v in asked if key(v) not in allowed_keys]
        if outside:
            raise KeyRefused(
                f"this key only allows {name} = {', '.join(allowed)}; "
                f"it cannot search {name} = {', '.join(outside)}",
                field=name,
            )
    return replace(
        request,
        filters=filters,
        date_from=_later(request.date_from, scope.date_from),
        date_to=_earlier(request.date_to, scope.date_to),
    )

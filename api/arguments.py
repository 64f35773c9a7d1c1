"""Reading request arguments for marshmallow: query strings as plain dicts.

webargs hands a schema a ``MultiDictProxy`` over ``request.args``: each of the
schema's fields is looked up through werkzeug's ``MultiDict.get``, which
raises and catches a ``BadRequestKeyError`` for every parameter the request
does not send (about twenty on a search), and the proxy collects the schema's
list fields again on every request. ``QueryParser`` gives marshmallow the
same data as a plain dict built in one pass: a list field gets every value
given, any other field the first, as webargs does. Validation, unknown
parameters (``unknown=RAISE``) and error messages are marshmallow's, unchanged.
"""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask import Request
from flask_smorest import Blueprint
from webargs.flaskparser import FlaskParser

_MULTI = (ma.fields.List, ma.fields.Tuple)


def multi_keys(schema: ma.Schema) -> frozenset[str]:
    """The parameter names of ``schema``'s fields that take repeated values."""
    keys = schema.__dict__.get("_nq_multi_keys")
    if keys is None:
        keys = frozenset(
            field.data_key or name
            for name, field in schema.fields.items()
            if getattr(field, "is_multiple", None) or isinstance(field, _MULTI)
        )
        schema.__dict__["_nq_multi_keys"] = keys  # fields are fixed once the schema is built
    return keys


class QueryParser(FlaskParser):
    """webargs' Flask parser, reading the query string into a plain dict."""

    def load_querystring(self, req: Request, schema: ma.Schema) -> Any:
        multi = multi_keys(schema)
        return {k: (v if k in multi else v[0]) for k, v in req.args.lists()}


class ApiBlueprint(Blueprint):
    """flask-smorest's Blueprint with ``QueryParser`` for ``location="query"``."""

    ARGUMENTS_PARSER = QueryParser()

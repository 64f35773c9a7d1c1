"""Schemas of co-occurrence (``GET /v1/cooccurrence``): who else appears with a selection."""

from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from newsquarry.search.query.cooccurrence import DEFAULT_TARGETS, TARGETS

from .schemas import Out, search_args_schema


def cooccurrence_args_schema(settings: dict[str, Any]) -> type[Schema]:
    """Query parameters of co-occurrence: a search's query and filters, targets, size."""
    base = search_args_schema(settings, "passages")
    max_fsize = int(settings["max_facet_size"])

    class CooccurrenceArgs(base):  # type: ignore[valid-type, misc]
        facet = fields.List(
            fields.String(validate=validate.OneOf(TARGETS)),
            load_default=lambda: list(DEFAULT_TARGETS),
            validate=validate.Length(min=1, max=len(TARGETS)),
            metadata={
                "description": "Facets whose values to count with the selection (repeatable; "
                f"default {', '.join(DEFAULT_TARGETS)})"
            },
        )
        size = fields.Integer(
            load_default=10,
            validate=validate.Range(min=1, max=max_fsize),
            metadata={"description": "Values returned per facet and level"},
        )

    for name in ("facet_size", "date_interval", "page", "per_page", "sort", "highlight",
                 "suggest", "format", "export"):  # fmt: skip
        CooccurrenceArgs._declared_fields.pop(name, None)
    return CooccurrenceArgs


class CoValueSchema(Out):
    value = fields.String(required=True)
    count = fields.Integer(required=True)


class CoFacetSchema(Out):
    name = fields.String(required=True)
    passage = fields.List(
        fields.Nested(CoValueSchema),
        metadata={"description": "Values most often in the same passage, with passage counts"},
    )
    article = fields.List(
        fields.Nested(CoValueSchema),
        metadata={"description": "Values most often in the same article, with article counts"},
    )


class CooccurrenceResponse(Out):
    passages = fields.Integer(
        required=True, metadata={"description": "Passages matching the query and every filter"}
    )
    articles = fields.Integer(
        required=True, metadata={"description": "Articles holding at least one of them"}
    )
    facets = fields.Dict(keys=fields.String(), values=fields.Nested(CoFacetSchema))
    took_ms = fields.Float()
    generation = fields.Integer()

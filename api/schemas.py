"""Marshmallow schemas: every request and response body of the API.

The OpenAPI document is generated from these (flask-smorest + apispec).
Argument schemas carry the configured limits (``maximum``, ``maxLength``,
``maxItems``), so they are built per app by ``search_args_schema(settings)``;
response schemas are plain classes. Response schemas leave unknown keys
allowed (``EXCLUDE``), so the library may add fields without breaking
clients; argument schemas reject unknown parameters (``RAISE``) so typos get a
clear error instead of being silently ignored.
"""

from __future__ import annotations

from typing import Any

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate, validates_schema

from newsquarry.search.models import ENTITY_TYPES, QUOTE_KINDS
from newsquarry.search.requests import DATE_INTERVALS, SORTS
from newsquarry.search.schema import FACETS

FILTER_DOC = {
    "person": "People mentioned (canonical names). Repeat to select several: values are ORed.",
    "org": "Organisations mentioned. Repeat to OR several values.",
    "place": "Places mentioned. Repeat to OR several values.",
    "speaker": "Speakers of quotations. Repeat to OR several values.",
    "source": "Publication or section. Repeat to OR several values.",
    "quote_kind": "Kind of quotation: direct, partial or indirect.",
    "article": "Article ids. Repeat to OR several values.",
    "date": "Date buckets as the date facet shows them (YYYY, YYYY-MM or YYYY-MM-DD).",
}
FORMATS = ("json", "jsonl", "csv")


class Out(Schema):
    """Base of response schemas: extra keys are allowed (forward compatible)."""

    class Meta:
        unknown = EXCLUDE


class In(Schema):
    """Base of argument schemas: unknown parameters are an error."""

    class Meta:
        unknown = RAISE


# --------------------------------------------------------------------- errors
class ProblemSchema(Out):
    """RFC 9457 problem details (``application/problem+json``)."""

    type = fields.String(required=True, metadata={"description": "Problem type URI"})
    title = fields.String(required=True)
    status = fields.Integer(required=True)
    detail = fields.String(required=True)
    instance = fields.String(allow_none=True, metadata={"description": "Request path"})
    request_id = fields.String(allow_none=True)
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "Per-field messages for invalid parameters or body fields"},
    )
    position = fields.Integer(metadata={"description": "Character position of a query error"})
    details = fields.Dict()


# ------------------------------------------------------------- search inputs
def search_args_schema(settings: dict[str, Any], mode: str) -> type[Schema]:
    """The query parameters of a search, with the configured limits."""
    max_q = int(settings["max_query_length"])
    max_pp = int(settings["max_per_page"])
    depth = int(settings["max_page_depth"])
    max_facets = int(settings["max_facets"])
    max_fsize = int(settings["max_facet_size"])
    max_filters = int(settings["max_filter_values"])
    filter_fields = {
        name: fields.List(
            fields.String(validate=validate.Length(min=1, max=200)),
            load_default=list,
            validate=validate.Length(max=max_filters),
            metadata={"description": FILTER_DOC.get(name, name)},
        )
        for name in FACETS
    }

    class Base(In):
        q = fields.String(
            load_default="",
            validate=validate.Length(max=max_q),
            metadata={
                "description": "Query: words, \"phrases\", AND/OR/NOT, field:value, prefix*, "
                "fuzzy~. Empty matches everything."
            },
        )
        date_from = fields.String(
            validate=validate.Regexp(r"^\d{4}(-\d{2}(-\d{2})?)?$"),
            metadata={"description": "Inclusive lower date bound (YYYY, YYYY-MM or YYYY-MM-DD)"},
        )
        date_to = fields.String(
            validate=validate.Regexp(r"^\d{4}(-\d{2}(-\d{2})?)?$"),
            metadata={"description": "Inclusive upper date bound"},
        )
        facet = fields.List(
            fields.String(validate=validate.OneOf(FACETS)),
            load_default=list,
            validate=validate.Length(max=max_facets),
            metadata={"description": f"Facets to count (repeatable, at most {max_facets})"},
        )
        facet_size = fields.Integer(
            load_default=10,
            validate=validate.Range(min=1, max=max_fsize),
            metadata={"description": "Values returned per facet"},
        )
        date_interval = fields.String(
            load_default="month",
            validate=validate.OneOf(DATE_INTERVALS),
            metadata={"description": "Bucket size of the date facet"},
        )
        page = fields.Integer(load_default=1, validate=validate.Range(min=1, max=depth))
        per_page = fields.Integer(load_default=10, validate=validate.Range(min=1, max=max_pp))
        sort = fields.String(
            load_default="relevance",
            validate=validate.OneOf(SORTS),
            metadata={"description": "relevance, date (oldest first) or -date (newest first)"},
        )
        highlight = fields.Boolean(
            load_default=True, metadata={"description": "Return snippets and match offsets"}
        )
        suggest = fields.Boolean(
            load_default=True, metadata={"description": "Suggest a spelling (did you mean)"}
        )
        format = fields.String(
            load_default="json",
            validate=validate.OneOf(FORMATS),
            metadata={
                "description": "json (default), jsonl (one hit per line, streamed) or csv. "
                "The Accept header (application/x-ndjson, text/csv) works too."
            },
        )
        key = fields.String(
            validate=validate.Length(max=4000),
            metadata={
                "description": "Scoped read key (or header X-Newsquarry-Key): the search is "
                "restricted to the key's filters"
            },
        )
        export = fields.Boolean(
            load_default=False,
            metadata={
                "description": "With format=jsonl or csv: stream every hit up to the page "
                "depth limit, page after page, instead of one page"
            },
        )

        @validates_schema
        def _limits(self, data: dict[str, Any], **kw: Any) -> None:
            if data.get("page", 1) * data.get("per_page", 10) > depth:
                raise ValidationError(
                    f"page * per_page must be at most {depth} (the page depth limit)", "page"
                )
            n = sum(len(data.get(name) or []) for name in FACETS)
            if n > max_filters:
                raise ValidationError(
                    f"at most {max_filters} filter values in all, got {n}", "_schema"
                )

    name = "PassageSearchArgs" if mode == "passages" else "QuoteSearchArgs"
    return type(name, (Base,), dict(filter_fields))


def facet_values_args_schema(settings: dict[str, Any]) -> type[Schema]:
    """Query parameters of facet value search: the search context plus a prefix."""
    base = search_args_schema(settings, "passages")
    max_fsize = int(settings["max_facet_size"])

    class FacetValuesArgs(base):  # type: ignore[valid-type, misc]
        prefix = fields.String(
            load_default="",
            validate=validate.Length(max=200),
            metadata={"description": "Values starting with this (case and accents ignored)"},
        )
        size = fields.Integer(load_default=10, validate=validate.Range(min=1, max=max_fsize))
        mode = fields.String(
            load_default="passages",
            validate=validate.OneOf(("passages", "quotes")),
            metadata={"description": "Count passages or quotations"},
        )

    # The search's own parameters are accepted (paging and display ones are ignored), so a
    # search URL's query string can be reused as the context; these make no sense here:
    for name in ("facet", "facet_size", "format", "export"):
        FacetValuesArgs._declared_fields.pop(name, None)
    return FacetValuesArgs


# ------------------------------------------------------------ search outputs
class EntitySchema(Out):
    text = fields.String()
    name = fields.String()
    type = fields.String(metadata={"enum": list(ENTITY_TYPES)})
    start = fields.Integer()
    end = fields.Integer()


class QuoteSchema(Out):
    text = fields.String()
    start = fields.Integer()
    end = fields.Integer()
    kind = fields.String(metadata={"enum": list(QUOTE_KINDS)})
    speaker = fields.String(allow_none=True)
    speaker_mention = fields.String(allow_none=True)
    speaker_start = fields.Integer(allow_none=True)
    speaker_end = fields.Integer(allow_none=True)
    cue = fields.String(allow_none=True)


class HitSchema(Out):
    """A passage hit."""

    id = fields.String(required=True, metadata={"description": "<article_id>#p<n>"})
    article_id = fields.String(required=True)
    position = fields.Integer()
    start = fields.Integer(metadata={"description": "Offset of the passage in the article"})
    end = fields.Integer()
    text = fields.String()
    title = fields.String(allow_none=True)
    score = fields.Float()
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    snippet = fields.String(
        allow_none=True, metadata={"description": "Safe HTML: escaped text, matches in <mark>"}
    )
    matches = fields.List(
        fields.List(fields.Integer()),
        metadata={"description": "[start, length] of each match in text"},
    )
    entities = fields.List(fields.Nested(EntitySchema))
    quotes = fields.List(fields.Nested(QuoteSchema))
    speakers = fields.List(fields.String())


class QuoteHitSchema(Out):
    """A quotation hit."""

    id = fields.String(required=True, metadata={"description": "<passage_id>#q<n>"})
    passage_id = fields.String(required=True)
    article_id = fields.String(required=True)
    text = fields.String()
    kind = fields.String(metadata={"enum": list(QUOTE_KINDS)})
    score = fields.Float()
    speaker = fields.String(allow_none=True)
    speaker_mention = fields.String(allow_none=True)
    cue = fields.String(allow_none=True)
    start = fields.Integer(metadata={"description": "Offset of the quote in its passage"})
    end = fields.Integer()
    title = fields.String(allow_none=True)
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    snippet = fields.String(allow_none=True)
    matches = fields.List(fields.List(fields.Integer()))


class FacetValueSchema(Out):
    value = fields.String(required=True)
    count = fields.Integer(required=True)
    selected = fields.Boolean(required=True)
    label = fields.String(
        allow_none=True, metadata={"description": "Human label where the value is an id"}
    )
    toggle_url = fields.String(
        required=True,
        metadata={"description": "This search with the value selected or unselected (page 1)"},
    )


class FacetSchema(Out):
    name = fields.String(required=True)
    values = fields.List(fields.Nested(FacetValueSchema), required=True)
    other = fields.Integer(metadata={"description": "Count under the values left out"})
    more = fields.Integer(metadata={"description": "Number of distinct values left out"})


class SearchRequestEcho(Out):
    """The request as the library ran it."""

    q = fields.String()
    filters = fields.Dict(keys=fields.String(), values=fields.List(fields.String()))
    date_from = fields.String(allow_none=True)
    date_to = fields.String(allow_none=True)
    facets = fields.List(fields.String())
    facet_size = fields.Integer()
    date_interval = fields.String()
    page = fields.Integer()
    per_page = fields.Integer()
    sort = fields.String()
    highlight = fields.Boolean()
    mode = fields.String()
    suggest = fields.Boolean()
    time_limit = fields.Float(allow_none=True)


class LinksSchema(Out):
    self = fields.String(required=True)
    next = fields.String(allow_none=True)
    prev = fields.String(allow_none=True)


class SearchResponseBase(Out):
    request = fields.Nested(SearchRequestEcho)
    total = fields.Integer(required=True, metadata={"description": "Exact number of hits"})
    facets = fields.Dict(keys=fields.String(), values=fields.Nested(FacetSchema))
    suggestion = fields.String(allow_none=True, metadata={"description": "Did you mean"})
    took_ms = fields.Float()
    partial = fields.Boolean(
        metadata={"description": "True when the time limit cut the search short"}
    )
    generation = fields.Integer(metadata={"description": "Index generation searched"})
    page = fields.Integer()
    per_page = fields.Integer()
    total_pages = fields.Integer()
    links = fields.Nested(LinksSchema)


class PassageSearchResponse(SearchResponseBase):
    hits = fields.List(fields.Nested(HitSchema), required=True)


class QuoteSearchResponse(SearchResponseBase):
    hits = fields.List(fields.Nested(QuoteHitSchema), required=True)


class FacetValuesResponse(Out):
    name = fields.String(required=True)
    prefix = fields.String()
    values = fields.List(fields.Nested(FacetValueSchema), required=True)
    other = fields.Integer()
    more = fields.Integer()


# ---------------------------------------------------------- documents, stats
class PassageSchema(Out):
    id = fields.String(required=True)
    article_id = fields.String(required=True)
    position = fields.Integer()
    start = fields.Integer()
    end = fields.Integer()
    text = fields.String()
    title = fields.String(allow_none=True)
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    entities = fields.List(fields.Nested(EntitySchema))
    quotes = fields.List(fields.Nested(QuoteSchema))
    speakers = fields.List(fields.String())


class ArticleSchema(Out):
    id = fields.String(required=True)
    title = fields.String(allow_none=True)
    text = fields.String()
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    author = fields.String(allow_none=True)
    path = fields.String(allow_none=True)
    passages = fields.List(fields.Nested(PassageSchema))


class StatsSchema(Out):
    articles = fields.Integer()
    passages = fields.Integer()
    quotes = fields.Integer()
    segments = fields.Integer()
    generation = fields.Integer()
    size_bytes = fields.Integer()
    last_modified = fields.String()
    limits = fields.Dict(metadata={"description": "The limits this server applies"})


class SettingSchema(Out):
    value = fields.Raw(allow_none=True, metadata={"description": "Secrets: only whether set"})
    default = fields.Raw(allow_none=True)
    env = fields.String(required=True, metadata={"description": "Environment variable"})
    help = fields.String(required=True)


class SettingsSchema(Out):
    """Every setting by name (the settings table of ``search.config``)."""

    settings = fields.Dict(keys=fields.String(), values=fields.Nested(SettingSchema))


class HealthSchema(Out):
    live = fields.Boolean(required=True)
    ready = fields.Boolean(required=True)
    detail = fields.String(allow_none=True)
    generation = fields.Integer(allow_none=True)


# ---------------------------------------------------------------- writes
class ArticleIn(In):
    """One article to add or replace (the JSON Lines format of ``newsquarry index``)."""

    id = fields.String(
        validate=validate.Length(max=200),
        metadata={"description": "Stable id; derived from the content when absent"},
    )
    title = fields.String(validate=validate.Length(max=2000))
    text = fields.String(required=True, validate=validate.Length(min=1))
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True, metadata={"description": "ISO 8601 date"})
    url = fields.String(allow_none=True)
    author = fields.String(allow_none=True)


class ArticleInNoId(ArticleIn):
    """An article whose id is given by the URL."""

    class Meta:
        exclude = ("id",)


class ArticlesIn(In):
    articles = fields.List(
        fields.Nested(ArticleIn),
        required=True,
        validate=validate.Length(min=1, max=1000),
        metadata={"description": "At most max_articles_per_write (default 1000) articles"},
    )


class FailureSchema(Out):
    index = fields.Integer(allow_none=True, metadata={"description": "Position in the body"})
    id = fields.String(allow_none=True)
    reason = fields.String(required=True)


class WriteReportSchema(Out):
    added = fields.List(fields.String(), required=True)
    replaced = fields.List(fields.String(), required=True)
    unchanged = fields.List(fields.String(), required=True)
    deleted = fields.List(fields.String(), required=True)
    failed = fields.List(fields.Nested(FailureSchema), required=True)
    passages = fields.Integer(metadata={"description": "Passages written"})
    generation = fields.Integer()

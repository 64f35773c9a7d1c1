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

from newsquarry.search.core import fields as fieldspec
from newsquarry.search.core.errors import InvalidRequest
from newsquarry.search.core.fields import FieldSpec
from newsquarry.search.core.ids import id_problem
from newsquarry.search.core.models import ENTITY_TYPES, QUOTE_KINDS
from newsquarry.search.core.requests import (
    DATE_INTERVALS,
    DEDUPES,
    GROUPS,
    MATCHES,
    RETRIEVALS,
    SORTS,
)
from newsquarry.search.engine.schema import FACETS
from newsquarry.search.query.facets import date_bounds

from .routing import ID_PATTERN

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
FORMATS = ("json", "jsonl", "csv", "atom", "jsonfeed")


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
# YYYY, YYYY-MM or YYYY-MM-DD, exactly the dates ``DateValue`` accepts (years 0001-9999,
# real months and days, 29 February in leap years only), so that the OpenAPI document
# describes the parameter precisely: a generated date that matches is a date we accept
_YEAR = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    "|02-(0[1-9]|1[0-9]|2[0-8]))"
)
DATE_PATTERN = f"^({_YEAR}|{_YEAR}-(0[1-9]|1[0-2])|{_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)$"
MAX_FILTER_VALUE = 1000  # characters; ids (search.ids) and names are shorter
# an article's date: a real calendar date, then nothing or a time ("T..." / " ...")
# ([0-9], not \d: Python's \d matches every Unicode digit, "1٣:00", which the date's
# parser refuses: the schema admitted a PUT body the server refused, issue 33)
_TIME = (
    r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{3}|\.[0-9]{6})?)?"
    r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?"
)
ARTICLE_DATE_PATTERN = f"^({_YEAR}-{_MONTH_DAY}|{_LEAP}-02-29)([T ]{_TIME})?$"
# an id in a body: empty (derived from the content) or valid by search.ids' rules
BODY_ID_PATTERN = f"^({ID_PATTERN[1:-1]})?$"


class IdValue(validate.Validator):
    """An article id in a body: empty (derived) or valid by ``search.ids`` (with its reason)."""

    def __call__(self, value: str) -> str:
        problem = id_problem(value) if value else None
        if problem:
            raise ValidationError(problem)
        return value


class DateValue(validate.Validator):
    """A date parameter checked by the library's own rule (``facets.date_bounds``).

    So ``date_from``, ``date_to`` and ``date`` refuse the same values (month 13,
    February 30) with the same problem (400 ``invalid-parameters``) and name
    the parameter as sent.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, value: str) -> str:
        try:
            date_bounds(value, what=self.name)
        except InvalidRequest:
            raise ValidationError(
                f"{value[:40]!r} is not a date: use YYYY, YYYY-MM or YYYY-MM-DD "
                "with a real month and day"
            ) from None
        return value


class QueryLength(validate.Length):
    """``q``'s cap: ``maxLength`` in the OpenAPI schema, the library's words when refused
    (``QueryTooLong``: "the query is 401 characters long; the limit is 400")."""

    def __call__(self, value: str) -> str:
        if self.max is not None and len(value) > self.max:
            raise ValidationError(
                f"the query is {len(value)} characters long; the limit is {self.max}"
            )
        return value


def declared_fields(folder: Any) -> list[FieldSpec]:
    """The fields declared for the index in ``folder`` (``core.fields``; none if unset or
    unreadable: a server still starts)."""
    if not folder:
        return []
    try:
        return fieldspec.load(folder)
    except fieldspec.FieldError:
        return []


FIELD_KIND_DOC = {
    "keyword": "a value or a list of values",
    "date": "an ISO 8601 date (YYYY-MM-DD)",
    "number": "a number",
}
FIELD_FILTER_DOC = {
    "keyword": "Only articles with this {name} (repeat to OR values; case and accents "
    "ignored). A field of the index's data (declared with --field {name}:keyword)",
    "date": "Only articles whose {name} is in this YYYY, YYYY-MM or YYYY-MM-DD (or a range "
    "FROM..TO). A field of the index's data (declared with --field {name}:date)",
    "number": "Only articles whose {name} is this number or in this range (a..b, ..b, a..). "
    "A field of the index's data (declared with --field {name}:number)",
}


def _field_value_schema(spec: FieldSpec) -> dict[str, Any]:
    if spec.kind == "number":
        return {"type": "number"}
    if spec.kind == "date":
        return {"type": "string", "pattern": ARTICLE_DATE_PATTERN}
    return {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
    }


def document_fields(spec: Any, declared: list[FieldSpec]) -> None:
    """Name the declared fields in the OpenAPI document: each hit's ``fields`` object and
    the article bodies of writes list them (the query parameters do by their schemas)."""
    schemas = spec.components.schemas
    props = {
        s.name: {**_field_value_schema(s), "description": f"{s.kind}: {FIELD_KIND_DOC[s.kind]}"}
        for s in declared
    }
    for name in ("Hit", "QuoteHit"):
        if name in schemas:
            schemas[name].setdefault("properties", {})["fields"] = {
                "type": "object",
                "description": "The article's declared fields (the index's own: "
                + (", ".join(s.name for s in declared) or "none declared")
                + "), the ones it has, as given",
                "properties": props,
            }
    for name in ("ArticleIn", "ArticleInNoId"):
        if name in schemas:
            body = schemas[name].setdefault("properties", {})
            for s in declared:
                body[s.name] = {
                    **_field_value_schema(s),
                    "description": f"A declared field of the index ({s.kind})",
                }


def search_args_schema(settings: dict[str, Any], mode: str) -> type[Schema]:
    """The query parameters of a search, with the configured limits."""
    declared: list[FieldSpec] = list(settings.get("_declared_fields") or [])
    facet_names = FACETS + tuple(s.name for s in declared)
    max_q = int(settings["max_query_length"])
    max_pp = int(settings["max_per_page"])
    depth = int(settings["max_page_depth"])
    max_facets = int(settings["max_facets"])
    max_fsize = int(settings["max_facet_size"])
    max_filters = int(settings["max_filter_values"])
    filter_fields = {
        name: fields.List(
            fields.String(
                validate=DateValue("date")
                if name == "date"
                else validate.Length(min=1, max=MAX_FILTER_VALUE),
                metadata={"pattern": DATE_PATTERN} if name == "date" else {},
            ),
            load_default=list,
            validate=validate.Length(max=max_filters),
            metadata={"description": FILTER_DOC.get(name, name)},
        )
        for name in FACETS
    }
    for s in declared:
        filter_fields[s.name] = fields.List(
            fields.String(validate=validate.Length(min=1, max=MAX_FILTER_VALUE)),
            load_default=list,
            validate=validate.Length(max=max_filters),
            metadata={"description": FIELD_FILTER_DOC[s.kind].format(name=s.name)},
        )

    anded = tuple(n for n in facet_names if n != "date")

    class Base(In):
        all_of = fields.List(
            fields.String(validate=validate.OneOf(anded)),
            load_default=list,
            validate=validate.Length(max=len(anded)),
            metadata={"description": "Facets whose filter values must all hold (repeatable): "
                      "org=A&org=B&all_of=org finds passages naming both, not either"},
        )  # fmt: skip
        q = fields.String(
            load_default="",
            validate=QueryLength(max=max_q),
            metadata={
                "description": 'Query: words, "phrases", AND/OR/NOT, field:value, prefix*, '
                "fuzzy~. Empty matches everything."
            },
        )
        date_from = fields.String(
            validate=DateValue("date_from"),
            metadata={
                "description": "Inclusive lower date bound (YYYY, YYYY-MM or YYYY-MM-DD)",
                "pattern": DATE_PATTERN,
            },
        )
        date_to = fields.String(
            validate=DateValue("date_to"),
            metadata={"description": "Inclusive upper date bound", "pattern": DATE_PATTERN},
        )
        facet = fields.List(
            fields.String(validate=validate.OneOf(facet_names)),
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
        match = fields.String(
            load_default="most",
            validate=validate.OneOf(MATCHES),
            metadata={
                "description": "How plain words combine. most (default): a hit needs one "
                "word that is not a stop word, and hits with more of the words rank first, "
                "so a question typed as a sentence finds answers; all: every word (stop "
                "words too); any: one word (stop words too). Operators, +word, -word, "
                '"phrases" and field:value stay strict in every mode.'
            },
        )
        group = fields.String(
            load_default="none",
            # "cluster" groups quotations: the quote search only
            validate=validate.OneOf(GROUPS if mode == "quotes" else ("none", "article", "story")),
            metadata={
                "description": "article: one hit per article (its best), with more_count "
                "and more_ids of its other hits; by relevance, articles are ordered by the "
                "article's own score (its whole text and title); paging counts articles "
                "(total_articles). cluster (quote search only): one hit per quotation "
                "cluster, the same way; paging counts clusters (total_clusters). story: one "
                "hit per story (an article and its syndicated copies); total_stories"
            },
        )
        dedupe = fields.String(
            load_default="none",
            validate=validate.OneOf(DEDUPES),
            metadata={"description": "story: facet values counted once per story, however "
                      "many syndicated copies carry them (who is quoted most, not how often "
                      "one wire story was reprinted)"},
        )  # fmt: skip
        retrieval = fields.String(  # absent: the server's ``retrieval`` setting
            validate=validate.OneOf(RETRIEVALS),
            metadata={
                "description": "How hits are found: keyword (their words), semantic (by "
                "meaning: the passages whose vector's cosine similarity to the query's is at "
                "least the semantic_floor setting), hybrid (the keyword matches plus those "
                "neighbours, ranked by reciprocal rank fusion), auto (default: hybrid when "
                "the semantic extra is installed and the index has vectors, else keyword). "
                "Filters and facets apply to what matches; each hit says matched_by. "
                "semantic or hybrid without the extra: 501; on an index without vectors: 409"
            },
        )
        similar_to = fields.String(
            load_default="",
            validate=QueryLength(max=max_q),
            metadata={
                "description": "By meaning: hits near this text (a claim, a paraphrase), "
                "most similar first; with q, they must match q too. Implies semantic "
                "retrieval (501 without the semantic extra)"
            },
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
                "description": "json (default), jsonl (one hit per line, streamed), csv, or a "
                "feed to follow the search: atom (Atom 1.0) or jsonfeed (JSON Feed 1.1), newest "
                "first. The Accept header (application/x-ndjson, text/csv, "
                "application/atom+xml, application/feed+json) works too."
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
                "description": "Stream every hit up to the page depth limit, page after "
                "page, instead of one page (a JSON array, JSON Lines or CSV, by format). "
                "Only with format=json, jsonl or csv: a feed (format=atom or jsonfeed, or "
                "their Accept types) is the newest page, and export=true with one is a 400 "
                "naming export"
            },
        )

        _ignores_paging = False

        @validates_schema
        def _limits(self, data: dict[str, Any], **kw: Any) -> None:
            if not self._ignores_paging and data.get("page", 1) * data.get("per_page", 10) > depth:
                raise ValidationError(
                    f"page * per_page must be at most {depth} (the page depth limit)", "page"
                )
            n = sum(len(data.get(name) or []) for name in facet_names)
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

    # The search's own parameters are accepted (paging and display ones are ignored, so
    # the page depth limit does not apply), so a search URL's query string can be reused
    # as the context; these make no sense here:
    for name in ("facet", "facet_size", "format", "export"):
        FacetValuesArgs._declared_fields.pop(name, None)
    FacetValuesArgs._ignores_paging = True
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
    start = fields.Integer(metadata={"description": "Offset of the quote in its passage"})
    end = fields.Integer()
    article_start = fields.Integer(metadata={"description": "Offset of the quote in the article"})
    article_end = fields.Integer()
    kind = fields.String(metadata={"enum": list(QUOTE_KINDS)})
    speaker = fields.String(allow_none=True)
    speaker_mention = fields.String(allow_none=True)
    speaker_start = fields.Integer(allow_none=True)
    speaker_end = fields.Integer(allow_none=True)
    article_speaker_start = fields.Integer(allow_none=True)
    article_speaker_end = fields.Integer(allow_none=True)
    cue = fields.String(allow_none=True)


TEXT_DOC = (
    "At most 1000 characters: a long text is cut around its first match (fetch the passage "
    "for all of it); matches, entities and quotes index into this text"
)
TEXT_LENGTH_DOC = "Length of the whole text, in characters"
TEXT_START_DOC = "Where the returned text starts in the whole text (0 when it is whole)"


def matched_by_field() -> fields.String:
    """``matched_by`` of a hit (passage or quotation) found by meaning."""
    return fields.String(
        allow_none=True,
        metadata={
            "enum": ["words", "meaning", "both", None],
            "description": "A search by meaning (retrieval semantic or hybrid): whether "
            "the hit matched by its words, by meaning (similarity at least the floor), or "
            "both; null for a keyword search",
        },
    )


def similarity_field() -> fields.Float:
    """``similarity`` of a hit found by meaning."""
    return fields.Float(
        allow_none=True,
        metadata={"description": "Cosine similarity to the query (a search by meaning)"},
    )


STORY_DOC = "The hit's story: the id of the first article of it (itself if not syndicated)"
COPIES_DOC = "Other articles carrying the same story (syndicated copies, lightly edited or not)"


class HitSchema(Out):
    """A passage hit."""

    id = fields.String(required=True, metadata={"description": "<article_id>#p<n>"})
    article_id = fields.String(required=True)
    position = fields.Integer()
    start = fields.Integer(metadata={"description": "Offset of the passage in the article"})
    end = fields.Integer()
    text = fields.String(metadata={"description": TEXT_DOC})
    text_length = fields.Integer(metadata={"description": TEXT_LENGTH_DOC})
    text_start = fields.Integer(metadata={"description": TEXT_START_DOC})
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
    more_count = fields.Integer(
        metadata={"description": "group=article: other matching passages of the article"}
    )
    more_ids = fields.List(fields.String(), metadata={"description": "Their ids, best first"})
    story = fields.String(allow_none=True, metadata={"description": STORY_DOC})
    copies = fields.Integer(metadata={"description": COPIES_DOC})
    matched_by = matched_by_field()
    similarity = similarity_field()
    # "fields" in JSON (a Schema's own ``fields`` attribute is taken)
    article_fields = fields.Dict(
        data_key="fields",
        attribute="fields",
        metadata={"description": "The article's declared fields (the index's own)"},
    )


class QuoteHitSchema(Out):
    """A quotation hit."""

    id = fields.String(required=True, metadata={"description": "<passage_id>#q<n>"})
    passage_id = fields.String(required=True)
    article_id = fields.String(required=True)
    text = fields.String(metadata={"description": TEXT_DOC})
    text_length = fields.Integer(metadata={"description": TEXT_LENGTH_DOC})
    text_start = fields.Integer(metadata={"description": TEXT_START_DOC})
    kind = fields.String(metadata={"enum": list(QUOTE_KINDS)})
    score = fields.Float()
    speaker = fields.String(allow_none=True)
    speaker_mention = fields.String(allow_none=True)
    cue = fields.String(allow_none=True)
    start = fields.Integer(metadata={"description": "Offset of the quote in its passage"})
    end = fields.Integer()
    article_start = fields.Integer(
        allow_none=True, metadata={"description": "Offset of the quote in the article"}
    )
    article_end = fields.Integer(allow_none=True)
    title = fields.String(allow_none=True)
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    snippet = fields.String(allow_none=True)
    matches = fields.List(fields.List(fields.Integer()))
    more_count = fields.Integer(
        metadata={
            "description": "group=article (group=cluster): other matching quotes of the "
            "article (of the quotation cluster)"
        }
    )
    more_ids = fields.List(fields.String(), metadata={"description": "Their ids, best first"})
    story = fields.String(allow_none=True, metadata={"description": STORY_DOC})
    copies = fields.Integer(metadata={"description": COPIES_DOC})
    matched_by = matched_by_field()
    similarity = similarity_field()
    cluster = fields.String(
        allow_none=True,
        metadata={"description": "Its quotation cluster: GET /v1/quotes/{cluster}"},
    )
    cluster_articles = fields.Integer(
        metadata={"description": "Articles carrying this quotation or a near-duplicate of it"}
    )
    # "fields" in JSON (a Schema's own ``fields`` attribute is taken)
    article_fields = fields.Dict(
        data_key="fields",
        attribute="fields",
        metadata={"description": "The article's declared fields (the index's own)"},
    )
    first_seen = fields.Nested(
        "FirstSeenSchema",
        allow_none=True,
        metadata={"description": "The cluster's first-seen quotation (when in 2+ articles)"},
    )


class FirstSeenSchema(Out):
    id = fields.String(required=True, metadata={"description": "The quotation's id"})
    article_id = fields.String(required=True)
    date = fields.String(allow_none=True)
    source = fields.String(allow_none=True)
    title = fields.String(allow_none=True)


class ClusterQuoteSchema(FirstSeenSchema):
    passage_id = fields.String()
    text = fields.String()
    speaker = fields.String(allow_none=True)
    kind = fields.String(metadata={"enum": list(QUOTE_KINDS)})


class NameCountSchema(Out):
    name = fields.String(required=True)
    count = fields.Integer(required=True)


class SourceCountSchema(Out):
    source = fields.String(required=True)
    count = fields.Integer(required=True)


class ClusterArgs(In):
    key = fields.String(
        validate=validate.Length(max=4000),
        metadata={
            "description": "Scoped read key (or header X-Newsquarry-Key): only the copies "
            "inside the key's filters"
        },
    )


class QuoteClusterSchema(Out):
    """Near-duplicate copies of one quotation across articles."""

    id = fields.String(required=True)
    text = fields.String(
        required=True, metadata={"description": "Canonical text: the wording most copies carry"}
    )
    speakers = fields.List(fields.Nested(NameCountSchema))
    first_seen = fields.Nested(ClusterQuoteSchema)
    article_count = fields.Integer()
    quote_count = fields.Integer()
    sources = fields.List(fields.Nested(SourceCountSchema))
    quotes = fields.List(
        fields.Nested(ClusterQuoteSchema), metadata={"description": "Every copy, first seen first"}
    )


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
    match = fields.String()
    group = fields.String()
    all_of = fields.List(fields.String(), metadata={"description": "Facets whose values are ANDed"})
    dedupe = fields.String()
    retrieval = fields.String(allow_none=True)
    similar_to = fields.String()


class LinksSchema(Out):
    self = fields.String(required=True)
    next = fields.String(allow_none=True)
    prev = fields.String(allow_none=True)


class InterpretationSchema(Out):
    """A reading of the query offered, never applied silently."""

    kind = fields.String(
        required=True,
        metadata={
            "enum": ["filter", "quotes"],
            "description": "filter: the query names a facet value; quotes: it asks what "
            "a speaker said (the quotes view)",
        },
    )
    facet = fields.String(required=True, metadata={"enum": ["person", "org", "place", "speaker"]})
    value = fields.String(required=True, metadata={"description": "The value (canonical name)"})
    matched = fields.String(metadata={"description": "The words of the query naming it"})
    q = fields.String(metadata={"description": "The query to run with the filter"})
    mode = fields.String(metadata={"enum": ["passages", "quotes"]})
    count = fields.Integer(metadata={"description": "Hits of that search"})
    label = fields.String(metadata={"description": "A sentence to show"})
    url = fields.String(metadata={"description": "That search (this API)"})


class SearchResponseBase(Out):
    request = fields.Nested(SearchRequestEcho)
    total = fields.Integer(required=True, metadata={"description": "Exact number of hits"})
    total_articles = fields.Integer(
        metadata={"description": "Exact number of distinct articles among the hits"}
    )
    total_clusters = fields.Integer(
        metadata={"description": "group=cluster: exact number of quotation clusters among the hits"}
    )
    total_stories = fields.Integer(
        metadata={"description": "group=story: exact number of stories among the hits"}
    )
    facets = fields.Dict(keys=fields.String(), values=fields.Nested(FacetSchema))
    retrieval = fields.String(
        metadata={
            "enum": ["keyword", "semantic", "hybrid"],
            "description": "How the hits were found (the request's retrieval, auto resolved)",
        }
    )
    suggestion = fields.String(allow_none=True, metadata={"description": "Did you mean"})
    suggestion_total = fields.Integer(
        allow_none=True, metadata={"description": "Hits of the suggested query"}
    )
    interpretations = fields.List(fields.Nested(InterpretationSchema))
    took_ms = fields.Float()
    partial = fields.Boolean(
        metadata={"description": "True when the time limit cut the search short"}
    )
    cut_short = fields.List(
        fields.String(validate=validate.OneOf(["highlights", "suggestion", "interpretations"])),
        metadata={
            "description": "What the time limit left out when partial: highlights (the hits "
            "left have unmarked snippets and no matches), suggestion, interpretations. The "
            "hits and totals are whole."
        },
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
    more_count = fields.Integer(
        metadata={"description": "group=article: other matching passages of the article"}
    )
    more_ids = fields.List(fields.String(), metadata={"description": "Their ids, best first"})


COPIES_LIST_DOC = "The articles carrying this story, first publication first (empty: none)"


class CopySchema(Out):
    id = fields.String(required=True)
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    first = fields.Boolean(metadata={"description": "The story's first publication"})
    similarity = fields.Float(metadata={"description": "Share of word runs in common with "
                                        "the first (estimated, over both texts)"})  # fmt: skip
    changed = fields.Float(metadata={"description": "Share of its word runs not in the first "
                                     "(0: as published, or only cut short)"})  # fmt: skip


class ArticleSchema(Out):
    id = fields.String(required=True)
    title = fields.String(allow_none=True)
    text = fields.String(
        allow_none=True, metadata={"description": "The full text; null when read with a key"}
    )
    scoped = fields.Boolean(
        metadata={"description": "True when read with a scoped key: in-scope passages only"}
    )
    source = fields.String(allow_none=True)
    date = fields.String(allow_none=True)
    url = fields.String(allow_none=True)
    author = fields.String(allow_none=True)
    path = fields.String(allow_none=True)
    passages = fields.List(fields.Nested(PassageSchema))
    copies = fields.List(fields.Nested(CopySchema), metadata={"description": COPIES_LIST_DOC})


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

"""The shapes of API writes (``POST /v1/articles``, ``PUT /v1/articles/{id}``): the
articles a body carries and the report a write returns (the search shapes are in
``schemas``)."""

from __future__ import annotations

from marshmallow import fields, validate

from newsquarry.search.core.ids import MAX_ID_LENGTH
from newsquarry.search.ingest.readers import MAX_ARTICLE_CHARS

from .schemas import ARTICLE_DATE_PATTERN, BODY_ID_PATTERN, MAX_FILTER_VALUE, IdValue, In, Out

# a character an article's text must hold: not blank, not a control character (the
# library removes those, textnorm.clean_text); \u escapes read the same in ECMA 262 and Python
TEXT_CHAR = r"[^\s\u0000-\u001f\u007f-\u009f]"


class ArticleIn(In):
    """One article to add or replace (the JSON Lines format of ``newsquarry index``)."""

    id = fields.String(
        validate=IdValue(),
        metadata={
            "description": "Stable id, kept exactly as given: any Unicode text without "
            f"control characters, at most {MAX_ID_LENGTH} characters; derived from "
            "the content when absent or empty",
            "pattern": BODY_ID_PATTERN,
            "maxLength": MAX_ID_LENGTH,
        },
    )
    title = fields.String(validate=validate.Length(max=2000))
    text = fields.String(
        required=True,
        validate=[
            validate.Length(min=1, max=MAX_ARTICLE_CHARS),
            validate.Regexp(
                r"[\s\S]*" + TEXT_CHAR,
                error="empty: no character but blanks and control characters",
            ),
        ],
        metadata={
            "pattern": TEXT_CHAR,
            "description": "Paragraphs separated by blank lines; at least one character "
            "that is neither blank nor a control character (control characters are removed)",
        },
    )
    source = fields.String(allow_none=True, validate=validate.Length(max=MAX_FILTER_VALUE))
    date = fields.String(
        allow_none=True,
        validate=validate.Regexp(
            ARTICLE_DATE_PATTERN,
            error="not an ISO 8601 date: use YYYY-MM-DD, optionally followed by a time",
        ),
        metadata={
            "description": "ISO 8601 date (YYYY-MM-DD), optionally followed by a time "
            "(2019-02-23T10:00:00Z)",
            "pattern": ARTICLE_DATE_PATTERN,
        },
    )
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

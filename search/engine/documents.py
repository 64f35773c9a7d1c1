"""Articles and passages as the Whoosh documents of the index, and stored documents by id:
one article document, one per passage and one per quotation (``engine.schema``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.query import Term

from newsquarry.search.core.models import Article, Passage, quote_record
from newsquarry.search.engine import (
    whoosh_fixes,  # noqa: F401  (applies the fixes)
)
from newsquarry.search.engine.schema import spelling_words


def facet_terms(values: Iterable[str | None]) -> list[str]:
    """Facet values as indexed: each one a term, verbatim, empty ones left out.

    A list given to a KEYWORD field is indexed item by item without its
    analyzer, so commas, quotes, brackets and any Unicode survive and a value
    shown in a hit is a value that can be filtered on (``facets``). (Before
    schema 2's values were comma-joined, commas inside a value were lost:
    an index written then keeps those values until its articles are re-indexed.)
    """
    return [v for v in dict.fromkeys(values) if v and v.strip()]


def passage_documents(article: Article, passages: list[Passage]) -> Iterator[dict[str, Any]]:
    """The Whoosh documents for one article: the article, its passages, its quotes."""
    common = {"article_id": article.id}
    source = facet_terms([article.source])
    # the stored value stays the string as given (hits and old readers expect a string)
    meta: dict[str, Any] = {"source": source or None, "_stored_source": article.source}
    if article.date:
        meta["date"] = article.date
    yield {
        **common,
        "id": article.id,
        "doctype": "article",
        "content_hash": article.content_hash,
        # the article's words, once, for spelling suggestions and wildcard expansion
        "spell": spelling_words(f"{article.title}\n{article.text}"),
        **meta,
        "data": json.dumps(
            {
                "title": article.title,
                "text": article.text,
                "source": article.source,
                "date": article.date,
                "url": article.url,
                "author": article.author,
                "path": article.path,
                "synthetic_title": article.synthetic_title,
                "passages": len(passages),
                # extra fields (``core.fields``), and the hash of the rest, so that a
                # change of fields alone keeps the passages (``indexer``)
                **(
                    {"fields": article.fields, "core_hash": article.core_hash}
                    if article.fields
                    else {}
                ),
            },
            ensure_ascii=False,
        ),
    }
    # a title made from the text's first line is shown but not indexed: it would
    # rank the article's opening words on every passage (the passage holding them
    # matches by its own text anyway)
    title_field = {"title": article.title}
    if article.synthetic_title:  # Whoosh stores ``_stored_title`` and indexes ""
        title_field = {"title": "", "_stored_title": article.title}
    for p in passages:
        entities = {t: facet_terms(p.names(t)) for t in ("person", "org", "place")}
        speakers = facet_terms(p.speakers)
        kinds = sorted({q.kind for q in p.quotes})
        facet_fields = {k: v for k, v in entities.items() if v}
        doc = {
            **common,
            **meta,
            **facet_fields,
            "id": p.id,
            "doctype": "passage",
            "position": p.position,
            "start": p.start,
            "end": p.end,
            "text": p.text,
            **title_field,
            "url": article.url,
            "author": article.author,
            "data": json.dumps(
                {
                    "entities": [e.__dict__ for e in p.entities],
                    "quotes": [quote_record(dict(q.__dict__), p.start) for q in p.quotes],
                },
                ensure_ascii=False,
            ),
        }
        if p.quotes:
            doc["quote"] = "\n".join(q.text for q in p.quotes)
        if speakers:
            doc["speaker"] = speakers
            doc["_stored_speaker"] = ",".join(speakers)
        if kinds:
            doc["quote_kind"] = kinds
            doc["_stored_quote_kind"] = ",".join(kinds)
        yield doc
        for n, q in enumerate(p.quotes, start=1):
            qdoc = {
                **common,
                **meta,
                **facet_fields,
                "id": f"{p.id}#q{n}",
                "doctype": "quote",
                "passage_id": p.id,
                "position": p.position,
                "start": q.start,
                "end": q.end,
                "quote": q.text,
                "quote_kind": [q.kind],
                "_stored_quote_kind": q.kind,
                "data": json.dumps(quote_record(dict(q.__dict__), p.start), ensure_ascii=False),
            }
            if q.speaker and q.speaker.strip():
                qdoc["speaker"] = [q.speaker]
                qdoc["_stored_speaker"] = q.speaker
            yield qdoc


def stored_document(searcher: Any, doc_id: str, doctype: str) -> dict[str, Any] | None:
    """The stored fields of the live document of ``doctype`` with this id, or None.

    Ids are unique per doctype only: an article may be called ``x#p1`` while
    article ``x`` has a passage ``x#p1`` (ids are data, see ``search.ids``),
    so every lookup by id names the doctype it wants.
    """
    for docnum in searcher.docs_for_query(Term("id", doc_id)):
        doc = searcher.stored_fields(docnum)
        if doc.get("doctype") == doctype:
            return doc
    return None

"""Quotations and speakers of a text written for a test, enriched as an article."""

from __future__ import annotations

from newsquarry.search.core.models import Article, Quote
from newsquarry.search.ingest.enrich import enrich_article
from newsquarry.search.ingest.passages import split_passages


def quotes_of(text: str) -> list[Quote]:
    """The direct and partial quotations enrichment finds in ``text``."""
    article = Article(id="t", title="t", text=text)
    passages = enrich_article(article, split_passages(article, min_chars=1))
    return [q for p in passages for q in p.quotes if q.kind != "indirect"]


def speaker_of(text: str, fragment: str) -> str | None:
    """The speaker of the first quotation holding ``fragment`` (which must be found)."""
    found = [q for q in quotes_of(text) if fragment in q.text]
    assert found, f"no quote with {fragment!r}: {[q.text for q in quotes_of(text)]}"
    return found[0].speaker

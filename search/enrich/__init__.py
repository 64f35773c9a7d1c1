"""Enrichment: named entities with canonical names, and quotations with speakers.

Public interface::

    load_nlp() -> spacy.Language            # cached per process, loaded by path
    Enricher(n_process=1, batch_size=16).enrich(items) -> iterator
    enrich_article(article, passages) -> passages

Each article's whole text is parsed once (pronouns and canonical names need the
article as context); entities and quotations are found with article offsets
(``entities.py``, ``quotes.py``, ``pronouns.py``) and then handed to the
passage that holds their start, with passage-relative offsets (``assign.py``).
"""

from __future__ import annotations

from newsquarry.search.enrich.assign import assign
from newsquarry.search.enrich.nlp import load_nlp
from newsquarry.search.enrich.pipeline import Enricher, _parse, enrich_doc
from newsquarry.search.models import Article, Passage

__all__ = ["Enricher", "assign", "enrich_article", "enrich_doc", "load_nlp"]


def enrich_article(article: Article, passages: list[Passage]) -> list[Passage]:
    """Fill ``entities`` and ``quotes`` of one article's passages (in place) and return them."""
    doc = next(_parse(load_nlp(), [article.text], 1))  # by windows when long
    return enrich_doc(doc, passages, article.source)

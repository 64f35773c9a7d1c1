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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from newsquarry.search.core.models import Article, Passage
    from newsquarry.search.ingest.enrich.assign import assign
    from newsquarry.search.ingest.enrich.nlp import load_nlp  # lazy: start-up time (spaCy)
    from newsquarry.search.ingest.enrich.pipeline import Enricher, enrich_doc

__all__ = ["Enricher", "assign", "enrich_article", "enrich_doc", "load_nlp"]

# Imported on first use (PEP 562), so that importing one submodule (the Dask job
# runner in ``cluster.py``, which a Dask scheduler imports to read a task) does not
# import spaCy: the package's own names come from these modules.
_LAZY = {
    "assign": "newsquarry.search.ingest.enrich.assign",
    "load_nlp": "newsquarry.search.ingest.enrich.nlp",
    "Enricher": "newsquarry.search.ingest.enrich.pipeline",
    "enrich_doc": "newsquarry.search.ingest.enrich.pipeline",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def enrich_article(article: Article, passages: list[Passage]) -> list[Passage]:
    """Fill ``entities`` and ``quotes`` of one article's passages (in place) and return them."""
    from newsquarry.search.ingest.enrich.nlp import load_nlp  # lazy: start-up time (spaCy)
    from newsquarry.search.ingest.enrich.pipeline import (
        _parse,
        enrich_doc,
    )  # lazy: start-up time (spaCy)

    doc = next(_parse(load_nlp(), [article.text], 1))  # by windows when long
    return enrich_doc(doc, passages, article.source)

"""newsquarry's library: passage-level news search that knows who said what.

The public Python API (docs/python.md) is the names in ``__all__``::

    from newsquarry.search import Index

    with Index("news-index") as ix:
        ix.add_files(["articles/"])
        for hit in ix.search("torture", facets=["person"]).hits:
            print(hit.id, hit.title)

Names are imported on first use, so ``import newsquarry.search.cli.app`` (the
command-line tool) does not pay for modules it does not need.
"""

from __future__ import annotations

import importlib
from typing import Any

from newsquarry.search.engine import hooks as _hooks

# The composition root: the one place that knows every layer. The engine calls the
# features and services these modules register (``engine.hooks``) when a store opens.
_hooks.plug(
    "newsquarry.search.archive.aliasfiles",  # the alias table, learnt from each commit
    "newsquarry.search.archive.quotesigs",  # quotation signatures per segment
    "newsquarry.search.archive.fieldcols",  # the articles' extra fields per segment
    "newsquarry.search.archive.storysigs",  # article signatures per segment (syndication)
    "newsquarry.search.archive.vectors",  # passage and quotation vectors per segment
    "newsquarry.search.archive.tokenoffsets",  # token offsets per segment (highlights)
    "newsquarry.search.query.searching",  # the search and stored records' display form
)

_EXPORTS = {
    "Index": "library",
    "SearchRequest": "core.requests",
    "SearchResult": "core.requests",
    "Hit": "core.requests",
    "QuoteHit": "core.requests",
    "FacetResult": "core.requests",
    "FacetValue": "core.requests",
    "Article": "core.models",
    "WriteReport": "engine.store",
    "NewsquarryError": "core.errors",
    "QueryError": "core.errors",
    "QueryTooLong": "core.errors",
    "UnknownFacet": "core.errors",
    "InvalidRequest": "core.errors",
    "InvalidArticle": "core.errors",
    "NotFound": "core.errors",
    "IndexBusy": "core.errors",
    "IndexUnavailable": "core.errors",
    "SearchTimeout": "core.errors",
    "SemanticUnavailable": "core.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

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

_EXPORTS = {
    "Index": "library",
    "SearchRequest": "requests",
    "SearchResult": "requests",
    "Hit": "requests",
    "QuoteHit": "requests",
    "FacetResult": "requests",
    "FacetValue": "requests",
    "Article": "models",
    "WriteReport": "store",
    "NewsquarryError": "errors",
    "QueryError": "errors",
    "UnknownFacet": "errors",
    "InvalidRequest": "errors",
    "InvalidArticle": "errors",
    "NotFound": "errors",
    "IndexBusy": "errors",
    "IndexUnavailable": "errors",
    "SearchTimeout": "errors",
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

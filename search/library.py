"""newsquarry from Python: one object for an index on disk.

``Index`` is the documented entry point for Python programs (docs/python.md). It
wraps the same pieces the CLI and the HTTP API use, so a search from Python returns
the very ``SearchResult`` that ``newsquarry search --json`` prints and ``/v1/search``
sends (``result.to_dict()``):

    from newsquarry.search import Index

    with Index("news-index") as ix:
        ix.add_files(["articles/"])
        result = ix.search("torture", facets=["person"])

Articles are enriched (entities, quotations) with spaCy when they are added; searching
never loads spaCy.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from newsquarry.search.core.config import default_index_dir, load_settings
from newsquarry.search.core.errors import InvalidRequest
from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import FacetResult, SearchRequest, SearchResult
from newsquarry.search.engine.store import WhooshStore, WriteReport
from newsquarry.search.ingest.indexer import index_articles, index_paths, optimize
from newsquarry.search.ingest.readers import article_from_mapping, checked_article
from newsquarry.search.query.clusters import quote_cluster
from newsquarry.search.query.searching import facet_values, run_search
from newsquarry.search.query.storygroups import article_copies

_REQUEST_FIELDS = {f.name for f in fields(SearchRequest)}


def _request(q: str | SearchRequest, mode: str, options: dict[str, Any]) -> SearchRequest:
    """A ``SearchRequest`` from a query and keyword options (or a ready request)."""
    if isinstance(q, SearchRequest):
        if options:
            raise InvalidRequest("pass either a SearchRequest or keyword options, not both")
        return q
    unknown = sorted(set(options) - _REQUEST_FIELDS)
    if unknown:
        raise InvalidRequest(
            f"unknown search option {unknown[0]!r} "
            f"(known: {', '.join(sorted(_REQUEST_FIELDS - {'q', 'mode'}))})",
            field=unknown[0],
        )
    options = dict(options)
    filters = options.pop("filters", None) or {}
    return SearchRequest(
        q=q or "", mode=mode, filters={k: list(v) for k, v in filters.items()}, **options
    )


class Index:
    """An index folder: add, search, list facet values, delete, describe.

    ``path`` defaults to the CLI's index (``NEWSQUARRY_INDEX``, else
    ``~/.local/share/newsquarry/index``). ``create=False`` raises
    ``IndexUnavailable`` when there is no index there instead of creating one.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, create: bool = True) -> None:
        self.settings = load_settings(index=str(path) if path is not None else None)
        self.path = self.settings["index"] or default_index_dir()
        self.store = WhooshStore(
            self.path, create=create, lock_timeout=self.settings["lock_timeout"]
        )

    # writing ---------------------------------------------------------------

    def add_files(
        self, paths: Iterable[str | os.PathLike], *, force: bool = False, **options: Any
    ) -> WriteReport:
        """Read, enrich and index files and folders (.txt, .md, .jsonl, .html).

        Unchanged articles are skipped unless ``force``; unreadable files are
        reported in ``report.failed``, never raised. ``options`` go to
        ``indexer.index_articles`` (``commit_every``, ``on_progress``).
        """
        return index_paths(self.store, [str(p) for p in paths], force=force, **options)

    def add(
        self, articles: Iterable[Mapping[str, Any] | Article], *, force: bool = False,
        **options: Any,
    ) -> WriteReport:  # fmt: skip
        """Enrich and index article records: mappings with ``text`` and optional
        ``id``, ``title``, ``source``, ``date``, ``url``, ``author`` (the JSON Lines
        and API shape), or ``Article`` objects. A record that is not valid raises
        ``InvalidRequest`` before anything is written."""
        items: list[Article] = []
        for n, record in enumerate(articles):
            try:  # an Article is checked as a record is (lone surrogates, empty text, ...)
                if isinstance(record, Article):
                    items.append(checked_article(record))
                else:
                    items.append(article_from_mapping(dict(record)))
            except (ValueError, TypeError) as exc:
                raise InvalidRequest(f"article {n}: {exc}", field=f"articles[{n}]") from None
        return index_articles(self.store, items, force=force, **options)

    def embed(self, on_progress: Any = None) -> Any:
        """Add vectors (search by meaning) to every passage and quotation that has none,
        segment by segment, each committed (resumable); raises ``SemanticUnavailable``
        without the ``semantic`` extra. Returns ``archive.vectors.EmbedProgress``."""
        from newsquarry.search.archive.vectors import embed  # lazy: torch on use

        return embed(self.store, on_progress)

    def delete(self, article_id: str) -> bool:
        """Remove an article and its passages; False when there was no such article."""
        return self.store.delete(article_id)

    def optimize(self) -> dict[str, Any]:
        """Merge all segments into one (after a large import)."""
        return optimize(self.store)

    # reading ---------------------------------------------------------------

    def search(self, q: str | SearchRequest = "", **options: Any) -> SearchResult:
        """Passages matching ``q``; ``options`` are ``SearchRequest`` fields
        (``filters={"person": ["Juan Guaidó"]}``, ``facets=["speaker"]``, ``page``,
        ``per_page``, ``sort``, ``date_from``, ...)."""
        return run_search(self.store, _request(q, "passages", options), self.settings)

    def quotes(self, q: str | SearchRequest = "", **options: Any) -> SearchResult:
        """Quotations matching ``q`` (``filters={"speaker": [...]}`` for one speaker).

        Each hit names its quotation cluster (``cluster``, ``cluster_articles``,
        ``first_seen``); ``group="cluster"`` lists the best copy of each quotation,
        with ``more_ids`` of its other matching copies and ``total_clusters``."""
        return run_search(self.store, _request(q, "quotes", options), self.settings)

    def quote_cluster(self, cluster: str) -> dict[str, Any]:
        """One quotation cluster (a quote hit's ``cluster``): its canonical text,
        speakers, first-seen copy, articles and sources, every copy first seen first
        (raises ``NotFound``)."""
        return quote_cluster(self.store, cluster)

    def facet_values(
        self, facet: str, prefix: str = "", *, size: int = 10, **options: Any
    ) -> FacetResult:
        """Values of one facet starting with ``prefix`` (folded), with their counts
        under the query and filters given in ``options`` (``q``, ``filters``, ...)."""
        q = options.pop("q", "")
        request = _request(q, options.pop("mode", "passages"), options)
        return facet_values(self.store, facet, prefix, request, size=size,
                            settings=self.settings)  # fmt: skip

    def article(self, article_id: str) -> dict[str, Any]:
        """An article with its passages (raises ``NotFound``), and ``copies``: the articles
        carrying the same story (syndicated copies), first publication first, if any."""
        record = self.store.get_article(article_id)
        return {**record, "copies": article_copies(self.store, article_id)}

    def passage(self, passage_id: str) -> dict[str, Any]:
        """One passage with its entities and quotations (raises ``NotFound``)."""
        return self.store.get_passage(passage_id)

    def stats(self) -> dict[str, Any]:
        """Counts of articles, passages and quotations, segments, generation."""
        return self.store.stats()

    # lifetime --------------------------------------------------------------

    def close(self) -> None:
        """Release the index's files (searchers)."""
        self.store.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Index({self.path!r})"

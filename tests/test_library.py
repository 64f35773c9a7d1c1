"""The public Python API (newsquarry.search.Index), as docs/python.md documents it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import newsquarry.search as library
from newsquarry.search import Index, IndexUnavailable, InvalidRequest, NotFound, SearchRequest

DOC = Path(__file__).resolve().parents[1] / "docs" / "python.md"


def _doc_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)


def test_the_documented_example_runs_and_prints_what_the_doc_says(tmp_path: Path) -> None:
    (code,) = _doc_blocks("python")
    printed = _doc_blocks("text")[0]
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout == printed


def test_every_public_name_is_documented_and_importable() -> None:
    doc = DOC.read_text()
    for name in library.__all__:
        assert getattr(library, name) is not None
        assert f"`{name}" in doc, f"{name} is exported but not in docs/python.md"
    with pytest.raises(AttributeError):
        library.no_such_name  # noqa: B018


def test_add_search_quotes_facets_delete(tmp_path: Path, seed_file: Path) -> None:
    with Index(tmp_path / "ix") as ix:
        report = ix.add_files([seed_file])
        assert report.added and report.passages > 10
        assert ix.add_files([seed_file]).unchanged == report.added  # idempotent
        result = ix.search("torture", facets=["speaker"], per_page=3)
        assert result.total >= 3 and len(result.hits) == 3
        assert result.to_dict()["total"] == result.total
        speakers = {v.value for v in result.facets["speaker"].values}
        assert "Harry Solano" in speakers
        quotes = ix.quotes(filters={"speaker": ["Harry Solano"]})
        assert quotes.total and {q.speaker for q in quotes.hits} == {"Harry Solano"}
        same = ix.search(SearchRequest(q="torture", per_page=3))
        assert [h.id for h in same.hits] == [h.id for h in result.hits]
        values = ix.facet_values("person", "guai")
        assert any("Guaid" in v.value for v in values.values)
        article_id = report.added[0]
        assert ix.article(article_id)["id"] == article_id
        assert ix.passage(result.hits[0].id)["id"] == result.hits[0].id
        assert ix.stats()["articles"] == 1
        assert ix.delete(article_id) is True
        assert ix.delete(article_id) is False
        assert ix.search("torture").total == 0
        with pytest.raises(NotFound):
            ix.article(article_id)


def test_bad_records_and_options_raise_library_errors_and_write_nothing(tmp_path: Path) -> None:
    with Index(tmp_path / "ix") as ix:
        good = {"id": "ok", "text": "A paragraph about the harbour."}
        with pytest.raises(InvalidRequest) as err:
            ix.add([good, {"id": "bad", "title": "no text"}])
        assert "articles[1]" == err.value.field
        assert ix.stats()["articles"] == 0
        with pytest.raises(InvalidRequest) as err:
            ix.search("harbour", per_pages=3)
        assert err.value.field == "per_pages"
        with pytest.raises(InvalidRequest):
            ix.search(SearchRequest(q="x"), per_page=3)


def test_open_without_create_refuses_a_missing_index(tmp_path: Path) -> None:
    with pytest.raises(IndexUnavailable):
        Index(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()


def test_quote_clusters_through_the_index(tmp_path: Path) -> None:
    try:
        from tests.api_support import TagEnricher, cluster_articles
    except ModuleNotFoundError:
        from api_support import TagEnricher, cluster_articles
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import article_from_mapping

    with Index(tmp_path / "ix") as ix:
        index_articles(ix.store, [article_from_mapping(a) for a in cluster_articles()],
                       enricher=TagEnricher())  # fmt: skip
        result = ix.quotes("farmers wheat", group="cluster")
        assert result.total == 4 and result.total_clusters == 1
        hit = result.hits[0]
        assert hit.more_count == 3 and hit.first_seen["article_id"] == "wheat-first"
        cluster = ix.quote_cluster(hit.cluster)
        assert cluster["article_count"] == 4 and cluster["first_seen"]["date"] == "2020-03-01"
        with pytest.raises(NotFound):
            ix.quote_cluster("c0")

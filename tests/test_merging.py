"""The tiered merge policy: which segments merge, and a real index kept small and correct."""

from __future__ import annotations

from conftest import PassThrough

from newsquarry.search.indexer import index_articles
from newsquarry.search.merging import level, merge_tiered, plan_merges
from newsquarry.search.models import Article
from newsquarry.search.passages import split_passages
from newsquarry.search.requests import SearchRequest
from newsquarry.search.store import WhooshStore


def test_levels_grow_by_factor():
    assert [level(n, factor=10, floor_docs=1000) for n in (1, 1000, 9999, 10_000, 99_999)] == [
        0, 0, 0, 1, 1
    ]  # fmt: skip
    assert level(100_000, factor=10, floor_docs=1000) == 2


def test_nine_similar_segments_wait_and_the_tenth_merges_them():
    nine = [(3500, 3500)] * 9
    assert plan_merges(nine, factor=10) == []
    assert sorted(plan_merges(nine + [(3400, 3400)], factor=10)) == list(range(10))


def test_a_big_segment_is_not_rewritten_with_the_small_ones():
    # the fault of Whoosh's default policy: the big segment joins every merge
    sizes = [(500_000, 500_000)] + [(3500, 3500)] * 10
    assert sorted(plan_merges(sizes, factor=10)) == list(range(1, 11))


def test_the_lowest_full_level_merges_first_and_only_factor_segments():
    sizes = [(40_000, 40_000)] * 10 + [(3500, 3500)] * 12
    chosen = plan_merges(sizes, factor=10)
    assert len(chosen) == 10 and all(sizes[i][0] == 3500 for i in chosen)


def test_max_docs_caps_automatic_merges():
    sizes = [(300_000, 300_000)] * 10
    assert plan_merges(sizes, factor=10, max_docs=2_000_000) == []
    assert len(plan_merges(sizes, factor=10, max_docs=5_000_000)) == 10


def test_a_mostly_deleted_segment_is_rewritten():
    sizes = [(100, 1000), (900, 1000), (5000, 5000)]
    assert plan_merges(sizes, factor=10) == [0]


def _article(i: int, version: int = 0) -> Article:
    text = (
        f"Report {i} version {version}. The council met on the harbor budget.\n\n"
        f"Officials discussed item{i} and the railway for an hour."
    )
    return Article(id=f"a{i:04d}", title=f"Item {i}", text=text, source="Wire")


def _index(store: WhooshStore, ids: range, version: int = 0) -> None:
    articles = (_article(i, version) for i in ids)
    index_articles(store, articles, enricher=PassThrough(), commit_every=5)


def test_segments_stay_bounded_and_every_document_stays_findable(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    store.merge_policy = merge_tiered(factor=3, floor_docs=5)
    counts = []
    for start in range(0, 120, 5):  # 24 commits of 5 articles
        _index(store, range(start, start + 5))
        counts.append(len(store.ix._segments()))
    # never more than (factor - 1) segments per level plus the new one; the default
    # policy would have let them pile up to its Fibonacci threshold
    assert max(counts) <= 2 * 4 + 1
    assert counts[-1] < 24
    stats = store.stats()
    per_article = len(split_passages(_article(0)))
    assert stats["articles"] == 120 and stats["passages"] == 120 * per_article
    for i in (0, 59, 119):
        hits = store.search(SearchRequest(q=f"item{i}")).hits
        assert [h.article_id for h in hits] == [f"a{i:04d}"]


def test_replaced_articles_never_come_back_after_merges(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    store.merge_policy = merge_tiered(factor=3, floor_docs=5)
    _index(store, range(60))
    for version in (1, 2):
        _index(store, range(0, 60, 2), version=version)  # replace every other article
    per_article = len(split_passages(_article(0)))
    assert store.stats()["articles"] == 60 and store.stats()["passages"] == 60 * per_article
    hits = store.search(SearchRequest(q="version", per_page=100)).hits
    versions = {h.article_id: h.text.split("version ")[1][0] for h in hits if "version" in h.text}
    assert len(versions) == 60
    assert all(v == ("2" if int(a[1:]) % 2 == 0 else "0") for a, v in versions.items())
    # no segment keeps more than half of its documents deleted
    for seg in store.ix._segments():
        assert seg.doc_count() * 2 >= seg.doc_count_all()

"""Article-level term statistics (``query.scoring``): taken run by run when an article's
documents are contiguous, they equal the sums over all articles, on any postings and on a
real index through replacements and merges."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import PassThrough
from hypothesis import given
from hypothesis import strategies as st

from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.engine.views import View, cache_for
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.query.scoring import per_article_tf

# per article (in docnum order): its key id's position and the weights of its postings
_ARTICLES = st.lists(
    st.lists(st.floats(0.5, 40, width=32), min_size=1, max_size=6), min_size=0, max_size=30
)


@given(_ARTICLES, st.randoms(use_true_random=False), st.booleans())
def test_runs_give_the_sums_over_all_articles(articles, rnd, summed):
    nkeys = len(articles) + 5
    ids = list(range(nkeys))
    rnd.shuffle(ids)  # key ids are not in docnum order
    a = np.array([ids[i] for i, ws in enumerate(articles) for _ in ws], dtype=np.int64)
    tf = np.array([w for ws in articles for w in ws] if articles else [], dtype=np.float32)
    if not summed:  # a title: the same weight on every passage of an article
        tf = np.array([ws[0] for ws in articles for _ in ws] if articles else [], np.float32)
    held, t = per_article_tf(a, tf, summed, nkeys, contiguous=True)
    want_held, want_t = per_article_tf(a, tf, summed, nkeys, contiguous=False)
    order = np.argsort(held)
    assert held[order].tolist() == want_held.tolist()
    assert t[order].tolist() == want_t.tolist()  # the same float64 sums, bit for bit


def _article(i: int, version: int) -> Article:
    text = "\n\n".join(
        f"Paragraph {p} of report {i} version {version}: the harbor budget and the railway "
        + "budget " * ((i + p) % 4)
        for p in range(1 + i % 3)
    )
    return Article(id=f"a{i:03d}", title=f"Budget item {i}", text=text, source="Wire")


def test_an_index_with_replacements_and_merges_ranks_articles_alike_either_way(
    tmp_path, monkeypatch
):
    store = WhooshStore(tmp_path / "ix", background_merges=False)
    requests = [SearchRequest(q=q, group=g, per_page=50, retrieval="keyword")
                for q in ("budget railway", "harbor budget report", "version")
                for g in ("none", "article")]  # fmt: skip

    def answers():
        out = []
        for r in requests:
            d = store.search(r).to_dict()
            d.pop("took_ms", None)
            out.append(d)
        return out

    def both_ways():
        runs = answers()
        with monkeypatch.context() as m:
            m.setattr(View, "articles_contiguous", property(lambda self: False))
            assert answers() == runs
        assert sum(len(d["hits"]) for d in runs) > 40

    try:
        index_articles(store, (_article(i, 0) for i in range(40)), enricher=PassThrough(),
                       commit_every=5)  # fmt: skip
        for version in (1, 2):  # replace every third article: old documents deleted
            index_articles(store, (_article(i, version) for i in range(0, 40, 3)),
                           enricher=PassThrough(), commit_every=4)  # fmt: skip
        view = cache_for(store).view(store.searcher())
        assert not view.live.all()  # the replaced articles' documents are still there
        assert view.articles_contiguous
        both_ways()
        store.optimize()  # one segment, the deleted documents gone
        view = cache_for(store).view(store.searcher())
        assert view.live.all() and view.articles_contiguous
        both_ways()
    finally:
        store.close()


def _budget_store(tmp_path) -> WhooshStore:
    store = WhooshStore(tmp_path / "ix", background_merges=False)
    for start in (0, 20):  # two segments
        index_articles(store, (_article(i, 0) for i in range(start, start + 20)),
                       enricher=PassThrough())  # fmt: skip
    return store


@pytest.mark.parametrize("list_side", [0, 8])  # searched from the documents or the lists
@pytest.mark.parametrize("budget", [0, 4_000_000])  # the segments' mapped lists, or decoded
def test_scores_of_some_articles_are_those_of_all_articles(tmp_path, monkeypatch, list_side,
                                                          budget):  # fmt: skip
    from newsquarry.search.engine import pstore
    from newsquarry.search.query.postings import Deadline, Postings
    from newsquarry.search.query.scoring import article_scores, article_scores_at

    monkeypatch.setattr(pstore, "LIST_SIDE", list_side)
    store = _budget_store(tmp_path)
    try:
        searcher = store.searcher()
        view = cache_for(store).view(searcher)
        view.postings_budget = budget
        assert all(c.postings is not None for c in view.cols)  # the mapped lists exist
        terms = {("text", "budget"): 1.0, ("text", "railwai"): 0.7, ("text", "harbor"): 0.2,
                 ("text", "absent"): 1.0}  # fmt: skip
        full = article_scores(view, Postings(searcher, view), terms, Deadline(None))
        assert np.count_nonzero(full) >= 30
        rng = np.random.default_rng(7)
        for size in (1, 5, 17, view.nkeys["article_id"]):
            some = np.sort(rng.choice(view.nkeys["article_id"], size, replace=False))
            # a fresh request each time: the idf counts come from the view or are made
            got = article_scores_at(view, Postings(searcher, view), terms, some, Deadline(None))
            assert got.tolist() == full[some].tolist()  # bit for bit
    finally:
        store.close()


def test_rm3_reorders_only_the_first_ranking_s_best_articles(tmp_path, monkeypatch):
    from newsquarry.search.query import feedback

    store = _budget_store(tmp_path)
    request = SearchRequest(q="budget railway", group="article", per_page=50,
                            retrieval="keyword")  # fmt: skip
    try:
        monkeypatch.setattr(feedback, "ENABLED", False)
        first = [h.article_id for h in store.search(request).hits]
        monkeypatch.setattr(feedback, "ENABLED", True)
        everything = [h.article_id for h in store.search(request).hits]
        assert len(first) == 40 and sorted(first) == sorted(everything)
        assert everything != first  # the feedback words moved articles
        monkeypatch.setattr(feedback, "RESCORED", 8)
        store.close()
        store = WhooshStore(tmp_path / "ix", create=False)  # a new view: nothing kept
        eight = [h.article_id for h in store.search(request).hits]
        # the first ranking's best eight, reordered among themselves, then the rest as
        # the first ranking has them
        assert sorted(eight[:8]) == sorted(first[:8])
        assert eight[8:] == first[8:]
        assert eight[:8] == [a for a in everything if a in set(first[:8])]
    finally:
        store.close()


def test_facet_counts_of_few_documents_read_their_own_pairs_alike(tmp_path):
    """``View.count``: the pass over every pair (first count of a field in a view) and the
    read of the mask's own pairs (later counts of few documents) give the same counts."""
    store = _budget_store(tmp_path)
    try:
        view = cache_for(store).view(store.searcher())
        docs, gids = view.docs["article_id"], view.gids["article_id"]
        rng = np.random.default_rng(3)
        masks = [rng.random(view.size) < p for p in (0.0, 0.02, 0.05, 0.5, 1.0)]
        want = [np.bincount(gids[m[docs]], minlength=view.nkeys["article_id"]) for m in masks]
        for _ in range(3):  # the first round passes over the pairs, the next read them
            got = [view.count("article_id", m) for m in masks]
            assert [g.tolist() for g in got] == [w.tolist() for w in want]
        assert view._pair_starts("article_id", docs) is not None
    finally:
        store.close()


def test_date_buckets_made_once_count_as_a_sort_of_the_matches_does(tmp_path):
    from newsquarry.search.core import npsets

    store = WhooshStore(tmp_path / "ix", background_merges=False)
    try:
        articles = [Article(id=f"d{i}", title=f"T {i}", text=f"Budget report {i}.",
                            source="Wire", date=f"{2019 + i % 3}-{i % 12 + 1:02d}-{i % 27 + 1:02d}")
                    for i in range(60)] + [Article(id="nodate", title="T", text="Budget.",
                                                   source="Wire")]  # fmt: skip
        index_articles(store, articles, enricher=PassThrough())
        view = cache_for(store).view(store.searcher())
        rng = np.random.default_rng(5)
        masks = [rng.random(view.size) < p for p in (0.0, 0.1, 0.6, 1.0)]
        for div in (10000, 100, 1):
            want = []
            for m in masks:
                d = view.date[m]
                want.append([a.tolist() for a in npsets.unique_counts(d[d > 0] // div)])
            for _ in range(3):  # the first call sorts, the next read the buckets made once
                got = [[a.tolist() for a in view.date_buckets(div, m)] for m in masks]
                assert got == want
        assert sum(want[-1][1]) == 2 * 60  # each dated article and its passage; not "nodate"
    finally:
        store.close()

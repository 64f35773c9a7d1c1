"""Readers follow new commits: merges and deletions never give stale or doubled counts."""

from __future__ import annotations

from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.searching import run_search


def article(n: int) -> tuple[Article, list]:
    a = Article(
        id=f"art-{n}",
        title=f"Report {n}",
        text=f"Harbour report number {n} about shipping.\n\nSecond paragraph of report {n}.",
        date=f"2020-01-{n + 1:02d}",
    )
    return a, split_passages(a, min_chars=5)


def test_merge_after_refresh_does_not_double_documents(fresh_store):
    store = fresh_store
    for n in range(3):
        with store.writer() as w:
            w.put(*article(n))
    before = run_search(store, SearchRequest(q="harbour", facets=["article"]))
    assert before.total == 3
    store.ix.optimize()  # merges the three segments into one
    after = run_search(store, SearchRequest(q="harbour", facets=["article"]))
    assert after.total == 3
    assert {v.value: v.count for v in after.facets["article"].values} == {
        f"art-{n}": 1 for n in range(3)
    }
    assert store.stats()["passages"] == 6
    # a new commit after the query: the same query sees it (no stale cached postings)
    with store.writer() as w:
        w.put(*article(7))
    assert run_search(store, SearchRequest(q="harbour")).total == 4


def test_deletion_in_a_kept_segment_is_seen(fresh_store):
    store = fresh_store
    with store.writer() as w:
        for n in range(3):
            w.put(*article(n))
    assert run_search(store, SearchRequest(q="harbour")).total == 3
    assert store.delete("art-1")
    r = run_search(store, SearchRequest(q="harbour", facets=["date"], date_interval="day"))
    assert r.total == 2
    assert {h.article_id for h in r.hits} == {"art-0", "art-2"}
    assert [v.value for v in r.facets["date"].values] == ["2020-01-01", "2020-01-03"]


def test_warm_up_builds_what_a_filtered_faceted_search_reads(fresh_store):
    """A server's first search after ``warm_up`` finds every field's keys and its
    documents-by-key (what a filter reads) built, and answers as a cold store does."""
    from newsquarry.search.engine.docvalues import VALUE_FIELDS
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.searching import warm_up

    store = fresh_store
    for n in range(3):
        with store.writer() as w:
            w.put(*article(n))
    request = SearchRequest(q="report", filters={"article": ["art-1"]}, facets=["article"])
    cold = run_search(store, request)
    warm_up(store)
    view = cache_for(store).view(store.searcher())
    for fname in VALUE_FIELDS:
        assert fname in view._field_data and ("key_docs", fname) in view._stats
    warm = run_search(store, request)
    assert warm.total == cold.total == 2  # the two passages of art-1
    assert [h.id for h in warm.hits] == [h.id for h in cold.hits]


def test_warm_up_is_not_cut_short_by_the_users_search_deadline(fresh_store, monkeypatch):
    """The search deadline protects users; a worker's warm-up (which may link quotation
    clusters on a loaded machine) runs to the end and leaves the view warm."""
    import pytest

    from newsquarry.search.core.errors import SearchTimeout
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.searching import warm_up

    store = fresh_store
    for n in range(3):
        with store.writer() as w:
            w.put(*article(n))
    monkeypatch.setenv("NEWSQUARRY_SEARCH_TIME_LIMIT", "0.000001")
    with pytest.raises(SearchTimeout):  # a user's search with that deadline is cut short
        run_search(store, SearchRequest(q="report", facets=["article"]))
    assert warm_up(store) > 0
    view = cache_for(store).view(store.searcher())
    assert "article_id" in view._field_data


def test_a_warmed_store_warms_each_state_it_commits_before_the_writer_returns(fresh_store):
    """After ``warm_up``, a commit of this process builds the new state's view (keys,
    filters' documents by key) in the writer: the first search after it finds them built
    and answers as a store that was never warmed. A store never warmed (the CLI) does not."""
    from newsquarry.search.engine.docvalues import VALUE_FIELDS
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.searching import warm_up

    store = fresh_store
    with store.writer() as w:
        w.put(*article(0))
    warm_up(store)
    for n in (1, 2):
        with store.writer() as w:
            w.put(*article(n))
        view = cache_for(store).view(store.searcher())
        for fname in VALUE_FIELDS:
            assert fname in view._field_data and ("key_docs", fname) in view._stats
    request = SearchRequest(q="report", filters={"article": ["art-1"]}, facets=["article"])
    warm = run_search(store, request)
    cold_store = WhooshStore(store.path, background_merges=False)
    try:
        assert cold_store.after_commit == []
        cold = run_search(cold_store, request)
    finally:
        cold_store.close()
    assert warm.total == cold.total == 2
    assert [h.id for h in warm.hits] == [h.id for h in cold.hits]


def test_a_warmed_store_builds_a_states_view_before_the_commit_is_published(fresh_store):
    """A thread that searches the new state the moment it is committed (before the writer
    returns) finds its view built, with every segment's columns, and gets the answer a
    store that was never warmed gives: the view is made while the commit's files are
    complete but its table of contents is not written yet (``before_publish``)."""
    import threading

    from newsquarry.search.engine.docvalues import VALUE_FIELDS
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.searching import warm_up

    store = fresh_store
    with store.writer() as w:
        w.put(*article(0))
    warm_up(store, refresh=False)
    cache = cache_for(store)
    request = SearchRequest(q="report", facets=["article"])
    seen: list = []

    def search_at_once(s) -> None:  # another thread, as a server's request thread
        loads, views = cache.loads, list(cache.views.values())

        def search() -> None:
            view = cache.view(s.searcher())
            built = all(("key_docs", f) in view._stats for f in VALUE_FIELDS)
            seen.append((view in views, built, cache.loads == loads, run_search(s, request).total))

        t = threading.Thread(target=search)
        t.start()
        t.join()

    store.after_commit.insert(0, search_at_once)  # before the writer's own warm
    with store.writer() as w:
        w.put(*article(1))
    assert seen == [(True, True, True, 4)]
    cold_store = WhooshStore(store.path, background_merges=False)
    try:
        assert run_search(cold_store, request).total == 4
    finally:
        cold_store.close()


def test_searches_stay_on_the_state_before_a_merge_until_it_is_warm_never_before_a_write(
    tmp_path,
):
    """A background merge (another process) changes no answer: while this worker's
    refresher warms the merged state, its search threads go on searching the state before
    it. A write by another process is searched at once, refresher or not."""
    import queue
    import threading
    import time

    from newsquarry.search.query.searching import warm_up

    path = tmp_path / "ix"
    store = WhooshStore(path, background_merges=False)
    for n in range(3):
        with store.writer() as w:
            w.put(*article(n))
    warm_up(store)  # starts the refresher
    gate = threading.Event()
    warm = store.refresher._warm
    store.refresher._warm = lambda s: (gate.wait(30), warm(s))[1]  # a warm still going on
    request = SearchRequest(q="report")

    asks: queue.Queue = queue.Queue()
    answers: queue.Queue = queue.Queue()

    def request_thread() -> None:  # one long-lived thread, as a server's
        while asks.get():
            total = run_search(store, request).total
            answers.put((store.searcher().ixreader.generation(), total))

    thread = threading.Thread(target=request_thread)
    thread.start()

    def search() -> tuple[int, int]:  # (generation searched, total)
        asks.put(True)
        return answers.get(timeout=30)

    before = search()
    other = WhooshStore(path, background_merges=False)  # as the merge process
    other.optimize()
    merged = other.generation
    assert search() == before  # the merged state is not warm yet: the state before it
    gate.set()
    deadline = time.monotonic() + 30
    while store.refresher.warmed_generation < merged and time.monotonic() < deadline:
        time.sleep(0.05)
    assert search() == (merged, before[1])  # warm: searched
    gate.clear()
    with other.writer() as w:  # a write: new documents, searched at once
        w.put(*article(7))
    assert search() == (other.generation, before[1] + 2)
    assert other.delete("art-0")  # a deletion only: searched at once too
    assert search() == (other.generation, before[1])
    gate.set()
    asks.put(False)
    thread.join()
    other.close()


def test_a_warmed_store_warms_the_states_other_processes_commit_in_the_background(tmp_path):
    """A server worker that did not commit (another worker did, or a background merge) has
    the new state's view built by its refresher before any of its searches asks for it,
    and answers from it as a store that was never warmed does."""
    import time

    from whoosh.writing import NO_MERGE

    from newsquarry.search.engine.docvalues import VALUE_FIELDS
    from newsquarry.search.engine.views import cache_for, leaves_of
    from newsquarry.search.query.searching import warm_up

    store = WhooshStore(tmp_path / "ix", background_merges=False)
    store.merge_policy = NO_MERGE  # the states are the commits' (no merge in between)
    with store.writer() as w:
        w.put(*article(0))
    warm_up(store)
    assert store.refresher is not None and store.refresher.alive
    other = WhooshStore(store.path, background_merges=False)  # another worker's store
    other.merge_policy = NO_MERGE
    try:
        for n in (1, 2):
            with other.writer() as w:
                w.put(*article(n))
            generation = other.generation
            started = time.monotonic()
            while store.refresher.warmed_generation < generation:
                assert time.monotonic() - started < 10, "the new state was not warmed"
                time.sleep(0.02)
            # the view of the new state was built without a search of this thread
            cache = cache_for(store)
            fresh = other.searcher()
            segkey = tuple(
                (r.segment().segment_id(), r.segment().deleted_count(), off)
                for r, off in leaves_of(fresh)
            )
            views = [v for k, v in list(cache.views.items()) if k[0] == segkey]
            assert views, "no view of the new state"
            for fname in VALUE_FIELDS:
                assert fname in views[0]._field_data and ("key_docs", fname) in views[0]._stats
        request = SearchRequest(q="report", filters={"article": ["art-2"]}, facets=["article"])
        warm = run_search(store, request)
        cold = run_search(other, request)
    finally:
        other.close()
    assert warm.total == cold.total == 2
    assert [h.id for h in warm.hits] == [h.id for h in cold.hits]
    store.close()
    assert store.refresher is None


def test_a_refresher_stops_with_its_store_and_never_outlives_it(tmp_path):
    import gc

    from newsquarry.search.query.searching import warm_up

    store = WhooshStore(tmp_path / "ix", background_merges=False)
    with store.writer() as w:
        w.put(*article(0))
    warm_up(store)
    refresher = store.refresher
    store.close()
    assert not refresher.alive
    dropped = WhooshStore(tmp_path / "ix", background_merges=False)
    warm_up(dropped)
    refresher = dropped.refresher
    del dropped
    gc.collect()
    refresher._thread.join(5)
    assert not refresher.alive  # a store dropped without close: its thread ends


def test_a_threads_new_searcher_reuses_the_readers_of_unchanged_segments_only(tmp_path):
    """After a commit, a thread's searcher is opened again with the readers of segments
    that did not change (same segment, same deletions); a segment whose deletions grew
    gets a new reader, so a deleted article is never seen; results equal a fresh store's."""
    from whoosh.writing import NO_MERGE

    store = WhooshStore(tmp_path / "ix", background_merges=False)
    store.merge_policy = NO_MERGE  # no merge in between: one segment per commit
    for n in range(3):
        with store.writer() as w:
            w.put(*article(n))
    before = {r.segment().segment_id(): r for r, _ in store.searcher().ixreader.leaf_readers()}
    assert len(before) == 3
    with store.writer() as w:  # a new segment; art-1's segment gets deletions
        w.put(*article(1))
        w.put(*article(5))
    after = {r.segment().segment_id(): r for r, _ in store.searcher().ixreader.leaf_readers()}
    assert len(after) == 4
    changed = [s for s, r in before.items() if r.segment().deleted_count() == 0 and s in after
               and after[s].segment().deleted_count() > 0]  # fmt: skip
    assert len(changed) == 1
    for segid, r in before.items():
        if segid in changed:
            assert after[segid] is not r and r.is_closed
        else:
            assert after[segid] is r and not r.is_closed
    request = SearchRequest(q="harbour", facets=["article"], per_page=20)
    got = run_search(store, request)
    cold_store = WhooshStore(store.path, background_merges=False)
    try:
        cold = run_search(cold_store, request)
    finally:
        cold_store.close()
    assert got.total == cold.total == 4
    assert [(h.id, h.score) for h in got.hits] == [(h.id, h.score) for h in cold.hits]
    assert got.facets == cold.facets
    store.close()


def test_a_store_warmed_for_writes_has_read_the_alias_evidence_its_first_commit_reads(tmp_path):
    from newsquarry.search.query.searching import warm_up

    store = WhooshStore(tmp_path / "ix", background_merges=False)
    with store.writer() as w:
        w.put(*article(0))
    reader = WhooshStore(store.path, background_merges=False)
    warm_up(reader, refresh=False)  # a worker that does not write: nothing read for writes
    assert reader.aliases._evidence is None
    writer = WhooshStore(store.path, background_merges=False)
    warm_up(writer, refresh=False, writes=True)
    assert writer.aliases._evidence is not None
    assert writer.aliases.evidence() is writer.aliases._evidence[1]  # what a commit reads
    for s in (store, reader, writer):
        s.close()

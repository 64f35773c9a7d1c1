"""The tiered merge policy: which segments merge, and a real index kept small and correct."""

from __future__ import annotations

import threading

import pytest
from conftest import PassThrough

from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine import docvalues
from newsquarry.search.engine.merging import MERGE_DIR, level, merge_tiered, plan_merges
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.passages import split_passages


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
    store.wait_for_merges()  # merges run in the background after the commits


def test_segments_stay_bounded_and_every_document_stays_findable(tmp_path):
    store = WhooshStore(tmp_path / "ix", merge_process=False)
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


def _segment_count(store: WhooshStore) -> int:
    return len(store.ix._segments())


def test_a_commit_returns_before_its_merge_and_the_merge_follows(tmp_path):
    store = WhooshStore(tmp_path / "ix", merge_process=False)
    store.merge_policy = merge_tiered(factor=3, floor_docs=5)
    release = threading.Event()
    started = threading.Event()
    real = docvalues.compute_segment

    def slow(reader):  # the merge's doc values: hold the merge here
        if threading.current_thread().name == "newsquarry-merge":
            started.set()
            assert release.wait(30)
        return real(reader)

    for start in (0, 5):
        _index(store, range(start, start + 5))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(docvalues, "compute_segment", slow)
        index_articles(store, (_article(i) for i in range(10, 15)), enricher=PassThrough())
        assert started.wait(30)  # the third segment made a merge due; it is running
        assert _segment_count(store) == 3  # the commit did not wait for it
        # writes and reads go on while it runs; the merge keeps their deletions
        store.delete("a0001")
        index_articles(store, [_article(2, version=1)], enricher=PassThrough())
        r = store.search(SearchRequest(q="version", per_page=50))
        assert r.total == 14 * len(split_passages(_article(0)))
        release.set()
        assert store.wait_for_merges(30)
    assert store.merger.merges >= 1 and store.merger.errors == []
    assert _segment_count(store) == 2  # the merged one and the last commit's
    assert not (tmp_path / "ix" / MERGE_DIR).exists()
    hits = store.search(SearchRequest(q="version", per_page=50)).hits
    versions = {h.article_id: h.text.split("version ")[1][0] for h in hits if "version" in h.text}
    assert "a0001" not in versions and versions["a0002"] == "1" and len(versions) == 14


def test_a_failed_merge_loses_nothing_and_its_leftovers_go(tmp_path):
    store = WhooshStore(tmp_path / "ix", merge_process=False)
    store.merge_policy = merge_tiered(factor=3, floor_docs=5)

    real = docvalues.compute_segment

    def broken(reader):  # the merge fails after writing its segment, before its TOC
        if threading.current_thread().name == "newsquarry-merge":
            raise OSError("disk full (simulated)")
        return real(reader)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(docvalues, "compute_segment", broken)
        for start in (0, 5, 10):
            index_articles(store, (_article(i) for i in range(start, start + 5)),
                           enricher=PassThrough())  # fmt: skip
        assert store.wait_for_merges(30)
    assert store.merger.errors and "disk full" in store.merger.errors[0]
    assert _segment_count(store) == 3  # no merge landed
    assert store.stats()["articles"] == 15
    # the next merge clears what the failed one left and does the work
    store.merger.request()
    assert store.wait_for_merges(30)
    assert _segment_count(store) == 1
    assert not (tmp_path / "ix" / MERGE_DIR).exists()
    assert store.stats()["articles"] == 15
    assert store.search(SearchRequest(q="item7")).hits[0].article_id == "a0007"


def test_merges_run_in_a_separate_process_and_a_failed_one_loses_nothing(tmp_path):
    """The default: a merge is another Python process (the serving process's GIL stays
    free for its readers); its failure is reported, and the next one does the work."""
    ix = tmp_path / "ix"
    store = WhooshStore(ix)
    store.merge_policy = merge_tiered(factor=3, floor_docs=5)
    (ix / MERGE_DIR).write_text("not a folder")  # the merge process cannot make its work dir
    for start in (0, 5, 10):
        index_articles(store, (_article(i) for i in range(start, start + 5)),
                       enricher=PassThrough())  # fmt: skip
    assert store.wait_for_merges(60)
    failed = list(store.merger.errors)
    assert failed and all(e.startswith("MergeFailed: OSError: ") for e in failed)
    assert store.merger.merges == 0
    assert _segment_count(store) == 3 and store.stats()["articles"] == 15
    (ix / MERGE_DIR).unlink()
    store.merger.request()
    assert store.wait_for_merges(60)
    assert store.merger.merges == 1 and store.merger.errors == failed
    assert _segment_count(store) == 1 and not (ix / MERGE_DIR).exists()
    assert store.stats()["articles"] == 15
    assert store.search(SearchRequest(q="item7")).hits[0].article_id == "a0007"


def test_a_merge_process_stops_when_the_process_that_started_it_is_gone(tmp_path):
    """A server stopped or killed mid-merge leaves no merge process behind."""
    import os
    import subprocess
    import sys
    import time

    child = (
        "import sys, time\n"
        "from newsquarry.search.core.background import exit_with_parent\n"
        "exit_with_parent(int(sys.argv[1]), every=0.05)\n"  # as `--parent PID` does
        "time.sleep(60)\n"
    )
    parent = (
        "import os, subprocess, sys\n"
        f"p = subprocess.Popen([sys.executable, '-c', {child!r}, str(os.getpid())],\n"
        "                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(p.pid, flush=True)\n"
    )  # the parent exits at once, leaving its child running
    out = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)  # fmt: skip
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return  # gone (reaped by init)
        if open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z"):
            return  # exited, not yet reaped
        time.sleep(0.1)
    os.kill(pid, 9)
    raise AssertionError("the merge process outlived its parent")

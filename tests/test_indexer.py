"""Indexing at scale: resume after an interrupt, commit cadence, bounded look-ahead, optimize.

Real Whoosh indexes under tmp_path. Most tests use a pass-through enricher
(the enricher protocol without NLP) so they run in a fraction of a second;
one runs the real spaCy pool enricher with two worker processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import pytest

from newsquarry.search.core.models import Article, Passage
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import (
    Progress,
    count_articles,
    index_articles,
    index_paths,
    optimize,
)
from tests._signals import default_sigint

WORDS = "harbour grain tariff cocoa bond steel copper shipping ministry strike".split()


def make_article(i: int) -> Article:
    """A small synthetic article with two paragraphs (two passages)."""
    w = WORDS[i % len(WORDS)]
    text = (
        f"Article {i} reports that the {w} market moved sharply this week, traders said, "
        f"as officials in the capital discussed new measures for the {w} sector.\n\n"
        f"A second paragraph of article {i} gives more detail on {w} prices, volumes and "
        "the outlook for the coming months according to several analysts."
    )
    return Article(id=f"art-{i:04d}", title=f"Report {i} on {w}", text=text, source="Test")


class CountingEnricher:
    """The enricher protocol without NLP: passes items through, recording their ids."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    def enrich(self, items: Iterable[tuple[Article, list[Passage]]]) -> Iterator:
        for article, passages in items:
            self.ids.append(article.id)
            yield article, passages


def article_ids(store: WhooshStore) -> list[str]:
    """Ids of all live article documents (duplicates would show twice)."""
    from whoosh.query import Term

    s = store.searcher()
    return sorted(s.stored_fields(n)["id"] for n in s.docs_for_query(Term("doctype", "article")))


def test_resume_after_interrupt_skips_committed_articles(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    articles = [make_article(i) for i in range(50)]

    def stop_mid_batch(progress: Progress, report) -> None:
        # 2 commits of 10 done, then 3 articles into the third batch
        if progress.committed == 20 and len(report.added) == 20 and progress.read >= 23:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        index_articles(
            store, iter(articles), enricher=CountingEnricher(), commit_every=10,
            on_progress=stop_mid_batch,
        )  # fmt: skip
    assert len(info.value.report.added) == 20
    assert article_ids(store) == [a.id for a in articles[:20]]  # the open batch was discarded

    again = CountingEnricher()
    report = index_articles(store, iter(articles), enricher=again, commit_every=10)
    assert again.ids == [a.id for a in articles[20:]]  # committed ones never re-enriched
    assert len(report.unchanged) == 20 and len(report.added) == 30
    assert article_ids(store) == sorted(a.id for a in articles)  # all there, no duplicates
    assert store.stats()["passages"] == 2 * 50


def test_commits_every_n_articles(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    at_commit: list[int] = []
    gen0 = store.generation

    def record(progress: Progress, report) -> None:
        if progress.commits > len(at_commit):
            at_commit.append(progress.committed)

    index_articles(
        store, (make_article(i) for i in range(25)), enricher=CountingEnricher(),
        commit_every=10, on_progress=record,
    )  # fmt: skip
    assert at_commit == [10, 20, 25]
    assert store.generation - gen0 == 3


def test_input_is_consumed_lazily_and_look_ahead_is_bounded(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    consumed = 0
    enricher = CountingEnricher()
    worst = 0

    def source() -> Iterator[Article]:
        nonlocal consumed
        for i in range(200):
            consumed += 1
            yield make_article(i)

    def check(progress: Progress, report) -> None:
        nonlocal worst
        worst = max(worst, consumed - len(enricher.ids))

    index_articles(store, source(), enricher=enricher, commit_every=20, on_progress=check)
    assert consumed == 200
    assert worst <= 1  # a lazy enricher: the indexer itself reads no further ahead


def test_spacy_pool_look_ahead_is_bounded(tmp_path):
    from newsquarry.search.ingest.enrich import Enricher

    enricher = Enricher(n_process=2, batch_size=2, prefetch=2)
    consumed = 0
    worst = 0

    def source() -> Iterator[Article]:
        nonlocal consumed
        for i in range(24):
            consumed += 1
            yield make_article(i)

    def check(progress: Progress, report) -> None:
        nonlocal worst
        worst = max(worst, consumed - progress.committed)

    store = WhooshStore(tmp_path / "ix")
    report = index_articles(store, source(), enricher=enricher, commit_every=5, on_progress=check)
    assert len(report.added) == 24
    # read but not yet committed: the pool's queue plus at most one open batch
    assert worst <= enricher.max_ahead + 5


def test_optimize_merges_segments_and_search_still_works(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    for start in range(0, 40, 10):  # separate imports: several segments
        index_articles(
            store, (make_article(i) for i in range(start, start + 10)),
            enricher=CountingEnricher(), commit_every=10,
        )  # fmt: skip
    before = store.stats()
    assert before["segments"] > 1
    result = optimize(store)
    after = store.stats()
    assert result["segments_before"] == before["segments"]
    assert after["segments"] == result["segments_after"] == 1
    assert after["articles"] == before["articles"] == 40
    assert after["passages"] == before["passages"]
    from whoosh.qparser import QueryParser

    s = store.searcher()
    hits = s.search(QueryParser("text", store.ix.schema).parse("cocoa"), limit=None)
    assert len(hits) == 2 * 4  # 4 articles about cocoa, 2 passages each


def test_count_articles_gives_progress_a_total_and_eta(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    with (corpus / "a.jsonl").open("w") as fh:
        for i in range(30):
            a = make_article(i)
            fh.write(json.dumps({"id": a.id, "title": a.title, "text": a.text}) + "\n")
    (corpus / "b.txt").write_text("A title\n\nSome text of a plain text article, long enough.\n")
    (corpus / "notes.csv").write_text("not,an,article\n")
    assert count_articles([corpus]) == 31

    seen: list[Progress] = []
    report = index_paths(
        WhooshStore(tmp_path / "ix"), [corpus], count=True, enricher=CountingEnricher(),
        commit_every=8, on_progress=lambda p, r: seen.append(p),
    )  # fmt: skip
    assert len(report.added) == 31
    last = seen[-1]
    assert last.total == 31 and last.done == 31
    assert last.eta == 0.0
    assert last.words > 31 * 20


def test_repeated_id_in_stream_is_enriched_once_per_version(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    a = make_article(1)
    b = Article(id=a.id, title=a.title, text=a.text + "\n\nA correction.", source="Test")
    enricher = CountingEnricher()
    report = index_articles(store, [a, a, b], enricher=enricher, commit_every=10)
    assert enricher.ids == [a.id, a.id]  # the identical copy skipped, the new version taken
    assert article_ids(store) == [a.id]
    assert len(report.unchanged) == 1


def test_cli_index_shows_eta_and_optimize_merges(tmp_path):
    from click.testing import CliRunner

    from newsquarry.search.cli.app import cli

    src = tmp_path / "a.jsonl"
    with src.open("w") as fh:
        for i in range(12):
            a = make_article(i)
            fh.write(json.dumps({"id": a.id, "title": a.title, "text": a.text}) + "\n")
    ix = str(tmp_path / "ix")
    runner = CliRunner()
    args = ["--index", ix, "index", str(src), "--processes", "1", "--commit-every", "4"]
    r = runner.invoke(cli, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "12 added" in r.stdout and "ETA" in r.stderr and "/12 ·" in r.stderr
    r = runner.invoke(cli, [*args, "--optimize"], catch_exceptions=False)
    assert "12 unchanged" in r.stdout and "-> 1 segments" in r.stdout
    r = runner.invoke(cli, ["--index", ix, "optimize"], catch_exceptions=False)
    assert r.exit_code == 0 and "1 -> 1 segments" in r.stdout
    r = runner.invoke(cli, ["--index", ix, "stats", "--json"], catch_exceptions=False)
    stats = json.loads(r.stdout)
    assert stats["articles"] == 12 and stats["segments"] == 1


@pytest.mark.slow
def test_ctrl_c_on_the_process_group_then_resume(tmp_path):
    """Ctrl-C as a terminal sends it (SIGINT to the whole group, workers included), then resume."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    src = tmp_path / "a.jsonl"
    with src.open("w") as fh:
        for i in range(300):
            a = make_article(i)
            text = "\n\n".join([a.text] * 3)
            fh.write(json.dumps({"id": a.id, "title": a.title, "text": text}) + "\n")
    from tests._writegate import FirstCommitGate

    ix = str(tmp_path / "ix")
    cmd = [sys.executable, "-m", "newsquarry.search.cli", "--index", ix, "index", str(src),
           "--processes", "2", "--commit-every", "50"]  # fmt: skip
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, NEWSQUARRY_LOCK_TIMEOUT="600")
    # by state: the run commits once, then waits for the lock until the signal is sent
    with FirstCommitGate(ix) as gate:
        with default_sigint():
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True, cwd=root, env=env)  # fmt: skip
        gate.let_one_commit_through(p)
        for line in p.stderr:
            if " committed" in line and " 0 committed" not in line:
                break
        assert p.poll() is None
        os.killpg(p.pid, signal.SIGINT)
        err = p.stderr.read()
        assert p.wait(timeout=60) == 130
    assert "Traceback" not in err and "Run the same command again" in err
    store = WhooshStore(ix, create=False)
    done = store.stats()["articles"]
    assert 50 <= done < 300 and done % 50 == 0
    store.close()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=root, timeout=300)
    assert r.returncode == 0
    assert f"{300 - done} added" in r.stdout and f"{done} unchanged" in r.stdout
    assert article_ids(WhooshStore(ix, create=False)) == [f"art-{i:04d}" for i in range(300)]


def test_an_article_the_rules_fail_on_is_reported_and_the_rest_indexed(tmp_path, monkeypatch):
    """Fault injection: the quote rules raise on one article (as a bug on an odd text would)."""
    import newsquarry.search.ingest.enrich.pipeline as pipeline
    from newsquarry.search.core.models import Article
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.enrich import Enricher

    real = pipeline.extract_quotes

    def breaks_on_one(doc, mentions, text=None):
        if "BOOM" in doc.text:
            raise IndexError("list index out of range")
        return real(doc, mentions, text)

    monkeypatch.setattr(pipeline, "extract_quotes", breaks_on_one)
    arts = [
        Article(id=f"a{i}", title="t", text=f'"We will win," said Ana Ruiz in town {i}.')
        for i in range(3)
    ]
    arts.insert(1, Article(id="bad", title="t", text='BOOM "It broke," said Ana Ruiz.'))
    store = WhooshStore(tmp_path / "ix")
    report = index_articles(store, arts, enricher=Enricher(n_process=1))
    assert report.added == ["a0", "a1", "a2"]
    assert [(f["id"], f["reason"]) for f in report.failed] == [
        ("bad", "enrichment failed: IndexError: list index out of range")
    ]
    assert store.stats()["articles"] == 3
    # the failed article was not written, so the next run tries it again
    monkeypatch.setattr(pipeline, "extract_quotes", real)
    again = index_articles(store, arts, enricher=Enricher(n_process=1))
    assert again.added == ["bad"] and sorted(again.unchanged) == ["a0", "a1", "a2"]


def test_the_first_commit_comes_early_and_batches_grow_to_commit_every(tmp_path):
    """A Ctrl-C a minute into a large import keeps work: the first commit holds 50
    articles, then each batch doubles up to ``commit_every``."""
    from newsquarry.search.core.models import Article
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import index_articles

    class Plain:
        def enrich(self, items):
            yield from items

    arts = [Article(id=f"a{i}", title=f"T{i}", text=f"Paragraph number {i}.") for i in range(420)]
    sizes: list[int] = []

    def on_progress(progress, report):
        if progress.commits > len(sizes):
            sizes.append(progress.committed - sum(sizes))

    store = WhooshStore(tmp_path / "ix")
    try:
        index_articles(store, arts, enricher=Plain(), commit_every=150, on_progress=on_progress)
        assert sizes == [50, 100, 150, 120]
        assert store.stats()["articles"] == 420
    finally:
        store.close()

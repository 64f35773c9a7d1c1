"""The store and the indexer on a real Whoosh index under tmp_path."""

import pytest
from conftest import fill_disk

from newsquarry.search.core.errors import IndexBusy, IndexUnavailable, NotFound
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_paths

SEED_ID = "000_e23b3335c9472580"


@pytest.fixture()
def store(tmp_path):
    return WhooshStore(tmp_path / "index")


def test_index_then_reindex_same_folder_changes_nothing(store, corpus_dir, enricher):
    first = index_paths(store, [corpus_dir], enricher=enricher)
    assert first.added == [SEED_ID] and first.passages == 19
    stats = store.stats()
    ids = [p["id"] for p in store.get_article(SEED_ID)["passages"]]
    generation = store.generation
    second = index_paths(store, [corpus_dir], enricher=enricher)
    assert second.added == [] and second.replaced == [] and second.unchanged == [SEED_ID]
    assert store.stats()["passages"] == stats["passages"]
    assert [p["id"] for p in store.get_article(SEED_ID)["passages"]] == ids
    assert store.generation == generation  # nothing changed: no commit at all


def test_ids_identical_across_two_fresh_indexing_runs(tmp_path, corpus_dir, enricher):
    runs = []
    for name in ("a", "b"):
        s = WhooshStore(tmp_path / name)
        index_paths(s, [corpus_dir], enricher=enricher)
        runs.append([(p["id"], p["start"], p["end"]) for p in s.get_article(SEED_ID)["passages"]])
    assert runs[0] == runs[1]


def test_editing_one_paragraph_leaves_no_stale_passage(store, corpus_dir, enricher):
    index_paths(store, [corpus_dir], enricher=enricher)
    f = corpus_dir / f"{SEED_ID}.txt"
    text = f.read_text(encoding="utf-8")
    f.write_text(text.replace("Cucuta, the Colombian border town", "Cúcuta, a frontier city"))
    report = index_paths(store, [corpus_dir], enricher=enricher)
    assert report.replaced == [SEED_ID]
    article = store.get_article(SEED_ID)
    texts = [p["text"] for p in article["passages"]]
    assert any(t.startswith("Cúcuta, a frontier city") for t in texts)
    assert not any("Colombian border town" in t for t in texts)
    assert store.stats()["passages"] == 19 and store.stats()["articles"] == 1
    for p in article["passages"]:
        assert article["text"][p["start"] : p["end"]] == p["text"]


def test_delete_removes_article_passages_and_quotes(store, corpus_dir, enricher):
    index_paths(store, [corpus_dir], enricher=enricher)
    assert store.stats()["quotes"] > 0
    assert store.delete(SEED_ID) is True
    assert store.stats() | {"size_bytes": 0} == store.stats() | {
        "articles": 0, "passages": 0, "quotes": 0, "size_bytes": 0
    }  # fmt: skip
    with pytest.raises(NotFound):
        store.get_article(SEED_ID)
    assert store.delete(SEED_ID) is False


def test_passage_record_has_offsets_entities_and_quotes(store, corpus_dir, enricher):
    index_paths(store, [corpus_dir], enricher=enricher)
    p = store.get_passage(f"{SEED_ID}#p4")
    assert p["text"].startswith('"Normal soldiers')
    assert p["title"].startswith('"They will torture you"')
    assert p["source"] == "News from the world"
    assert p["speakers"] == ["Harry Solano"]
    for q in p["quotes"]:
        assert p["text"][q["start"] : q["end"]] == q["text"]
    for e in p["entities"]:
        assert p["text"][e["start"] : e["end"]] == e["text"]
    with pytest.raises(NotFound):
        store.get_passage(f"{SEED_ID}#p99")


def test_a_second_writer_gets_index_busy_not_lock_error(store):
    with store.writer():
        other = WhooshStore(store.path, lock_timeout=0.2)
        with pytest.raises(IndexBusy, match="another process is writing"), other.writer():
            pass


def test_missing_index_is_unavailable(tmp_path):
    with pytest.raises(IndexUnavailable):
        WhooshStore(tmp_path / "none", create=False)


def test_bad_files_reported_good_ones_indexed(store, corpus_dir, enricher):
    (corpus_dir / "bin.txt").write_bytes(b"\x00\x01\x02binary")
    (corpus_dir / "empty.md").write_bytes(b"")
    (corpus_dir / "bad.txt").write_bytes(b"Title\n\n\xff\xfe bad bytes")
    report = index_paths(store, [corpus_dir], enricher=enricher)
    assert report.added == [SEED_ID]
    reasons = {f["path"].rsplit("/", 1)[1]: f["reason"] for f in report.failed}
    assert set(reasons) == {"bin.txt", "empty.md", "bad.txt"}


def test_writes_after_the_same_random_seed_do_not_collide(store):
    # Whoosh names segments with the `random` module; a program that seeds it must
    # not make two commits pick the same segment name
    import random

    from newsquarry.search.core.models import Article
    from newsquarry.search.ingest.passages import split_passages

    for n in range(3):
        random.seed(42)
        art = Article(id=f"a{n}", title="t", text=f"Paragraph number {n}.")
        report = store.add([(art, split_passages(art))])
        assert report.added == [f"a{n}"]
    assert store.stats()["articles"] == 3


# --- a full disk: failed commits leave nothing behind; merges check free space first ---------


def _synthetic(n, seed, prefix):
    from _synthetic import articles

    from newsquarry.search.ingest.readers import article_from_mapping

    return articles(n, seed=seed, prefix=prefix), [
        article_from_mapping(a) for a in articles(n, seed=seed, prefix=prefix)
    ]


class _NoNLP:
    def enrich(self, items):
        yield from items


def _data_files(ix) -> list[str]:
    """The index's files but its lock files (the background merger makes its lock when it
    first runs, which may be after the listing)."""
    import os

    return sorted(n for n in os.listdir(ix) if not n.endswith(("LOCK", "TURNSTILE")))


def test_a_full_disk_mid_commit_keeps_committed_work_and_leaves_no_file(small_disk, tmp_path):
    import errno

    from _integrity import assert_exact, expected_passage_ids, index_contents
    from click.testing import CliRunner

    from newsquarry.search.cli.app import cli
    from newsquarry.search.ingest.indexer import index_articles

    ix = small_disk / "ix"
    raw, arts = _synthetic(60, seed=9, prefix="d")
    store = WhooshStore(ix)
    index_articles(store, arts[:3], enricher=_NoNLP())
    before = _data_files(ix)
    filler = fill_disk(small_disk, leave=96 * 1024)  # room for a few articles, not for 57
    with pytest.raises(OSError) as failure:
        index_articles(store, arts[3:], enricher=_NoNLP())
    assert failure.value.errno == errno.ENOSPC
    assert _data_files(ix) == before  # the failed commit's files are gone
    assert_exact(index_contents(ix), expected_passage_ids(raw), {"d-0000", "d-0001", "d-0002"})
    # from the command line: one line, exit 7, nothing left behind either
    source = tmp_path / "more.jsonl"
    source.write_text("".join(__import__("json").dumps(a) + "\n" for a in raw[3:]))
    monkey = pytest.MonkeyPatch()
    monkey.setattr("newsquarry.search.ingest.indexer.default_enricher", lambda **kw: _NoNLP())
    try:
        r = CliRunner().invoke(cli, ["--index", str(ix), "index", str(source)])
    finally:
        monkey.undo()
    assert r.exit_code == 7, r.output
    assert r.stderr.strip().splitlines()[-1].startswith("Error: the disk is full: the write was")
    assert _data_files(ix) == before
    filler.unlink()  # space freed: the next write succeeds
    index_articles(store, arts[3:], enricher=_NoNLP())
    assert_exact(index_contents(ix), expected_passage_ids(raw), {a["id"] for a in raw})
    store.close()


def test_optimize_refuses_without_twice_the_space_and_says_how_much(small_disk):
    from click.testing import CliRunner

    from newsquarry.search.cli.app import cli
    from newsquarry.search.core.errors import NotEnoughSpace
    from newsquarry.search.ingest.indexer import index_articles

    ix = small_disk / "ix"
    _, arts = _synthetic(40, seed=10, prefix="o")
    store = WhooshStore(ix)
    for i in range(0, 40, 10):
        index_articles(store, arts[i : i + 10], enricher=_NoNLP())
    segments = len(store.ix._segments())
    filler = fill_disk(small_disk, leave=64 * 1024)
    with pytest.raises(NotEnoughSpace, match=r"optimize needs about [0-9.]+ MB of free disk"):
        store.optimize()
    r = CliRunner().invoke(cli, ["--index", str(ix), "optimize"])
    assert r.exit_code == 7
    assert r.stderr.startswith("Error: optimize needs about") and r.stderr.count("\n") == 1
    assert len(store.ix._segments()) == segments  # nothing done
    filler.unlink()
    assert store.optimize()["segments_after"] == 1
    store.close()


def test_an_automatic_merge_waits_for_space_while_the_commit_lands(small_disk):
    from newsquarry.search.ingest.indexer import index_articles

    ix = small_disk / "ix"
    _, arts = _synthetic(11, seed=11, prefix="m")
    store = WhooshStore(ix)
    for art in arts[:9]:
        index_articles(store, [art], enricher=_NoNLP())
    assert len(store.ix._segments()) == 9
    filler = fill_disk(small_disk, leave=160 * 1024)  # a commit fits, a merge of ten does not
    index_articles(store, [arts[9]], enricher=_NoNLP())  # the tenth segment: merge due
    store.wait_for_merges(timeout=60)  # merges run in the background: it finds no room
    assert len(store.ix._segments()) == 10 and store.stats()["articles"] == 10
    filler.unlink()
    index_articles(store, [arts[10]], enricher=_NoNLP())
    assert store.wait_for_merges(timeout=60)
    assert len(store.ix._segments()) < 10 and store.stats()["articles"] == 11
    store.close()


def _put(w, aid: str, text: str) -> None:
    from newsquarry.search.core.models import Article
    from newsquarry.search.ingest.passages import split_passages

    art = Article(id=aid, title=aid, text=text, source="Wire", date="2020-01-01")
    w.put(art, split_passages(art))


def test_a_search_racing_a_merge_that_removes_files_is_no_damage(tmp_path, monkeypatch):
    """A search reads the newest generation; a background merge (another process) then
    commits and removes that generation's merged-away segment files before the search
    checks them. That is a newer state, not damage: the search answers from it."""
    from newsquarry.search.core.requests import SearchRequest
    from newsquarry.search.engine import integrity

    path = tmp_path / "ix"
    store = WhooshStore(path, background_merges=False)
    for aid in ("a", "b", "c"):
        with store.writer() as w:
            _put(w, aid, f"Zebras crossed the road {aid}.")
    merger = WhooshStore(path, background_merges=False)  # as the merge process
    real = integrity.read_manifest
    raced: list[int] = []

    def merged_after_reading(folder, generation):
        manifest = real(folder, generation)
        if not raced:
            raced.append(generation)
            merger.optimize()  # lands between reading the manifest and checking its files
        return manifest

    monkeypatch.setattr(integrity, "read_manifest", merged_after_reading)
    assert store.search(SearchRequest(q="zebras")).total == 3
    assert raced and store.generation > raced[0]
    merger.close()
    store.close()


def test_a_fresh_store_reads_its_table_of_contents_once_and_sees_later_commits(
    tmp_path, monkeypatch
):
    """Opening, the schema check and the first search read the newest TOC once
    (``storage.KeptTocIndex``); a commit another store makes between the opening and the
    first search is seen by it (the kept TOC is not the newest then), and so is every
    later one."""
    from whoosh import index as whoosh_index

    from newsquarry.search.core.requests import SearchRequest

    path = tmp_path / "ix"
    writer = WhooshStore(path, background_merges=False)
    with writer.writer() as w:
        _put(w, "a", "Zebras crossed the road.")
    reads: list[int] = []
    real = whoosh_index.TOC.read.__func__

    def counted(cls, *args, **kw):
        reads.append(1)
        return real(cls, *args, **kw)

    monkeypatch.setattr(whoosh_index.TOC, "read", classmethod(counted))
    fresh = WhooshStore(path, create=False)
    assert fresh.search(SearchRequest(q="zebras")).total == 1
    assert len(reads) == 1
    fresh.close()

    stale = WhooshStore(path, create=False)
    with writer.writer() as w:  # lands after the opening read its TOC
        _put(w, "b", "More zebras crossed the road.")
    assert stale.search(SearchRequest(q="zebras")).total == 2
    with writer.writer() as w:
        _put(w, "c", "Zebras again.")
    assert stale.search(SearchRequest(q="zebras")).total == 3
    stale.close()
    writer.close()

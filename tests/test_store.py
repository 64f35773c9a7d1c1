"""The store and the indexer on a real Whoosh index under tmp_path."""

import pytest

from newsquarry.search.errors import IndexBusy, IndexUnavailable, NotFound
from newsquarry.search.indexer import index_paths
from newsquarry.search.store import WhooshStore

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
    assert store.generation == generation + 1  # an empty commit, nothing written


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

    from newsquarry.search.models import Article
    from newsquarry.search.passages import split_passages

    for n in range(3):
        random.seed(42)
        art = Article(id=f"a{n}", title="t", text=f"Paragraph number {n}.")
        report = store.add([(art, split_passages(art))])
        assert report.added == [f"a{n}"]
    assert store.stats()["articles"] == 3

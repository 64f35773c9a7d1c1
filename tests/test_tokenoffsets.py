"""Highlights from the tokens each segment keeps (``archive.tokenoffsets``) are the
highlights the analyzer finds: the same hits, scores, snippets, matches and facets with the
files and without them, through commits, deletions and merges; a segment without its file
is highlighted by analysis and gains the file at a merge or by ``backfill``."""

from __future__ import annotations

import os

import pytest

from newsquarry.search.archive import tokenoffsets
from newsquarry.search.core.models import Article, Passage, Quote
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine import integrity, merging
from newsquarry.search.engine.check import check_index
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query import highlight as hl
from newsquarry.search.query.searching import run_search

TEXTS = [
    "Guaidó's supporters marched in Caracas; Guaido said the oil minister's plan failed.",
    "Oil prices fell again. OIL exporters, tortured by debt, cut prices in Zürich's markets.",
    "The central bank raised interest rates; the bank's governor said rates would rise.",
    "Exports of coffee and cocoa rose; exporters said the export quota talks collapsed.",
    "Naïve traders bought the dollar while the yen fell against the dollar in Tokyo.",
    "",
]
QUERIES = ["oil", "guaido", "export*", "rates bank", '"oil prices"', "dollar~", "tortures",
           "zurich", "naive", "coffee OR cocoa", "minister NOT bank", "nothingmatches",
           "the central bank raised interest rates", "oil minister plan failed"]  # fmt: skip
MODES = ("passages", "quotes")


def _article(n: int, text: str) -> tuple[Article, list[Passage]]:
    aid = f"a{n}"
    a = Article(
        id=aid, title=f"Story {n}", text=text, source="Wire", date=f"2020-01-{n % 28 + 1:02d}"
    )
    p = Passage(id=f"{aid}#p1", article_id=aid, position=1, start=0, end=len(text), text=text)
    if len(text) > 20:
        words = text[: text.index(" ", 20)]
        p.quotes.append(Quote(words, 0, len(words), "direct", speaker="Juan Guaido", cue="say"))
    return a, [p]


def _fill(store: WhooshStore, start: int, count: int) -> None:
    with store.writer() as w:
        for n in range(start, start + count):
            a, ps = _article(n, TEXTS[n % len(TEXTS)] + f" Report {n}.")
            w.put(a, ps)


def _answers(store: WhooshStore) -> list:
    out = []
    for q in QUERIES:
        for mode in MODES:
            r = run_search(store, SearchRequest(q=q, mode=mode, facets=["person", "date"],
                                                per_page=50, retrieval="keyword"))  # fmt: skip
            d = r.to_dict()
            d.pop("took_ms", None)
            out.append(d)
    return out


def _both(path) -> tuple[list, list, WhooshStore]:
    """Answers read with the kept tokens and with every text analysed (one store each)."""
    kept = WhooshStore(path, create=False)
    analysed = WhooshStore(path, create=False)
    analysed.token_offsets.enabled = False
    try:
        return _answers(kept), _answers(analysed), kept
    finally:
        analysed.close()


def _tok_files(path) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.endswith(tokenoffsets.EXT))


@pytest.fixture
def store(tmp_path):
    s = WhooshStore(tmp_path / "ix", background_merges=False)
    for start in (0, 30, 60):
        _fill(s, start, 30)
    yield s
    s.close()


def test_every_segment_gets_its_file_in_the_manifest(store):
    files = _tok_files(store.path)
    segments = [r.segment().segment_id() for r, _ in store.searcher().ixreader.leaf_readers()]
    assert len(files) == len(segments) == 3
    manifest = integrity.read_manifest(store.path, store.generation)
    assert set(files) <= set(manifest.files)
    assert check_index(store.path).ok


def test_highlights_from_kept_tokens_equal_the_analysed_ones(store):
    kept, analysed, s = _both(store.path)
    try:
        assert kept == analysed
        marked = [h for r in kept for h in r["hits"] if h["matches"]]
        assert len(marked) > 50  # the comparison covers real highlights
        # and the kept tokens were used: each segment's file is read
        for reader, _ in s.searcher().ixreader.leaf_readers():
            seg = reader.segment()
            assert tokenoffsets.segment_tokens(s.path, seg.segment_id(), seg.doc_count_all())
    finally:
        s.close()


def test_possessives_accents_and_stems_are_marked_as_the_analyzer_marks_them(store):
    r = run_search(
        store, SearchRequest(q="guaido zurich tortures", per_page=50, retrieval="keyword")
    )
    hit = next(h for h in r.hits if h.text.startswith("Guaidó"))
    assert [hit.text[s : s + n] for s, n in hit.matches][:2] == ["Guaidó", "Guaido"]
    other = next(h for h in r.hits if "Zürich" in h.text)
    assert {other.text[s : s + n] for s, n in other.matches} == {"tortured", "Zürich"}


def test_the_kept_tokens_are_the_analyzer_s(store):
    searcher = store.searcher()
    for reader, _ in searcher.ixreader.leaf_readers():
        seg = reader.segment()
        kept = tokenoffsets.segment_tokens(store.path, seg.segment_id(), seg.doc_count_all())
        words = kept.vocab.words()
        for doc, code, text in tokenoffsets.segment_texts(reader):
            tid, start, end = kept.tokens(doc, tokenoffsets.FIELDS[code])
            assert ([words[i] for i in tid.tolist()], start.tolist(), end.tolist()) == (
                tokenoffsets.analyse(text)
            )


def test_tokens_that_do_not_fit_the_text_fall_back_to_analysis():
    tokens = tokenoffsets.compute(1, [(0, 1, "oil prices and more oil")])
    ids = tokens.term_ids({"oil"})
    assert hl.indexed_spans("oil prices and more oil", tokens.tokens(0, "text"), ids) == [
        [0, 3], [20, 3],
    ]  # fmt: skip
    assert hl.indexed_spans("oil", tokens.tokens(0, "text"), ids) is None
    assert tokens.tokens(0, "quote") is None


def test_merges_carry_the_tokens_through_deletions(store):
    with store.writer() as w:
        for n in (3, 31, 32, 65):
            w.delete(f"a{n}")
    _fill(store, 90, 5)
    store.merge_policy = merging.merge_tiered(factor=3, floor_docs=5)
    merged = 0
    while merging.merge_once(store):
        merged += 1
    assert merged  # carried by ``write_merged``: the file a fresh computation makes
    tokenoffsets.forget(store.path)
    for reader, _ in store.searcher().ixreader.leaf_readers():
        seg = reader.segment()
        kept = tokenoffsets.segment_tokens(store.path, seg.segment_id(), seg.doc_count_all())
        fresh = tokenoffsets.compute_segment(reader)
        assert kept.vocab.words() == fresh.vocab.words()
        for name in ("field", "ptr", "tid", "start", "end"):
            assert getattr(kept, name).tolist() == getattr(fresh, name).tolist(), name
    store.optimize()
    assert len(_tok_files(store.path)) == 1
    kept, analysed, s = _both(store.path)
    try:
        assert kept == analysed  # (scores moved: the deleted documents' lengths are gone)
        assert sum(len(h["matches"]) for r in kept for h in r["hits"]) > 100
    finally:
        s.close()


def test_an_index_without_the_files_answers_the_same_and_gains_them(store):
    expected = _answers(store)
    for name in _tok_files(store.path):
        os.remove(store.path / name)
    tokenoffsets.forget(store.path)
    plain = WhooshStore(store.path, create=False)
    try:
        assert _answers(plain) == expected  # analysed, as before the feature
        assert tokenoffsets.backfill(plain) == 3
        assert tokenoffsets.backfill(plain) == 0
        assert _answers(plain) == expected
    finally:
        plain.close()
    assert check_index(store.path).ok
    manifest = integrity.read_manifest(store.path, store.generation)
    assert set(_tok_files(store.path)) <= set(manifest.files)


def test_a_damaged_file_is_not_read(store):
    expected = _answers(store)
    name = _tok_files(store.path)[0]
    with open(store.path / name, "r+b") as fh:
        fh.seek(200)
        fh.write(b"\xff" * 64)
    tokenoffsets.forget(store.path)
    integrity.VERIFIER._verified.clear()
    fresh = WhooshStore(store.path, create=False)
    try:
        assert _answers(fresh) == expected
    finally:
        fresh.close()


def test_the_proximity_rerank_reads_the_kept_tokens(store, monkeypatch):
    from newsquarry.search.query import proximity

    q = SearchRequest(q="the central bank raised interest rates", per_page=30,
                      retrieval="keyword")  # fmt: skip
    expected = run_search(store, q).to_dict()
    calls = []
    monkeypatch.setattr(proximity, "pair_share", lambda *a: calls.append(a) or 0.0)
    got = run_search(store, q).to_dict()
    assert calls == []  # no text was stemmed again
    assert [(h["id"], h["score"]) for h in got["hits"]] == [
        (h["id"], h["score"]) for h in expected["hits"]
    ]


def test_the_feedback_words_are_read_from_the_kept_tokens(store, monkeypatch):
    """RM3 (``query.feedback``) counts the best articles' words from the kept tokens: the
    same relevance model as reading and analysing their texts, and no text analysed."""
    from newsquarry.search.query import feedback

    seen: dict[str, list] = {}
    real = feedback.feedback_terms

    def spy(prep, rank):
        terms = real(prep, rank)
        seen.setdefault("kept" if prep.highlighter.source.enabled else "analysed", []).append(terms)
        return terms

    monkeypatch.setattr(feedback, "feedback_terms", spy)
    kept, analysed, s = _both(store.path)
    s.close()
    assert kept == analysed
    # the same words in the same order, their weights equal but for the order of sums
    assert [list(t) for t in seen["kept"]] == [list(t) for t in seen["analysed"]]
    for k, a in zip(seen["kept"], seen["analysed"], strict=True):
        assert k == pytest.approx(a, rel=1e-9)
    assert sum(1 for t in seen["kept"] if t) >= 5  # models were made, with words
    calls = []
    monkeypatch.setattr(feedback, "analyse", lambda text: calls.append(text))
    again = WhooshStore(store.path, create=False)
    try:
        _answers(again)
    finally:
        again.close()
    assert calls == []  # no stored text was split and analysed

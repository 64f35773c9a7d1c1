"""Decoded postings on disk (search/pstore.py): exact lists and weights, found through the hash
directory, written with each segment, rebuilt when missing or damaged.

The randomised comparison with Whoosh's own postings through writes, deletes and merges is
``test_docvalues.py::test_saved_doc_values_agree_with_postings``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine import pstore
from newsquarry.search.engine.blocks import segment_postings
from newsquarry.search.engine.schema import build_schema
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.engine.views import cache_for, leaves_of
from newsquarry.search.query.searching import run_search

from .test_docvalues import make_article

SCHEMA = build_schema()


def build(keys: list[bytes], lists: list[tuple[list[int], list[float]]], ndocs: int = 100):
    """A postings file's arrays from term keys and their (docs, weights), via a mapped file."""
    starts = np.cumsum([0] + [len(d) for d, _ in lists])
    docs = [d for ds, _ in lists for d in ds]
    weights = [w for _, ws in lists for w in ws]
    return pstore._arrays(SCHEMA, ndocs, keys, starts, docs, weights)


def mapped(tmp_path, arrays, meta, ndocs: int = 100) -> pstore.PostingsFile:
    from newsquarry.search.engine import dvstore

    dvstore.write(tmp_path, "newsquarry_t", ndocs, arrays, meta, ext=pstore.EXT)
    got = pstore.read(tmp_path, "newsquarry_t", ndocs)
    assert got is not None
    return got


def test_weights_are_stored_narrow_only_when_exact(tmp_path):
    k = pstore.term_key
    # term frequencies times the fields' boosts (title 2, quote 1.5): one byte per weight
    arrays, meta = build(
        [k("text", b"oil"), k("quote", b"oil"), k("title", b"oil")],
        [([1, 5], [1.0, 3.0]), ([2], [4.5]), ([7, 9], [2.0, 6.0])],
    )
    assert arrays["weights"].dtype == np.uint8 and arrays["docs"].dtype == np.uint16
    f = mapped(tmp_path, arrays, meta)
    assert f.get("quote", b"oil")[1].tolist() == [4.5]
    assert f.get("title", b"oil")[1].tolist() == [2.0, 6.0]
    # a weight no code gives back: every weight kept as float32
    arrays, _ = build([k("text", b"oil"), k("text", b"gas")], [([1], [0.3]), ([2], [2.0])])
    assert arrays["weights"].dtype == np.float32 and arrays["scale"].tolist() == [1.0, 1.0]
    # large frequencies: two bytes; many documents: 32-bit docnums
    arrays, _ = build([k("text", b"the")], [([70_000], [300.0])], ndocs=70_001)
    assert arrays["weights"].dtype == np.uint16 and arrays["docs"].dtype == np.uint32
    assert arrays["docs"].tolist() == [70_000]


def test_equal_hashes_are_told_apart_by_the_term_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(pstore, "term_hash", lambda key: 7)  # every term collides
    k = pstore.term_key
    arrays, meta = build(
        [k("text", b"b"), k("text", b"a"), k("person", b"a")],
        [([1], [1.0]), ([2, 3], [1.0, 2.0]), ([4], [1.0])],
    )
    f = mapped(tmp_path, arrays, meta)
    assert f.get("text", b"a")[0].tolist() == [2, 3]
    assert f.get("text", b"b")[0].tolist() == [1]
    assert f.get("person", b"a")[0].tolist() == [4]
    assert f.get("text", b"c")[0].tolist() == []
    assert f.covers("text") and not f.covers("spell")


def pst_files(folder) -> set[str]:
    return {n for n in os.listdir(folder) if n.endswith(pstore.EXT)}


def small_index(path) -> WhooshStore:
    store = WhooshStore(path)
    for v in range(2):
        with store.writer() as w:
            for n in range(3):
                w.put(*make_article(3 * v + n, v, ["Li Wei"], ["OPEC"], ["Oslo"]))
    return store


REQUEST = SearchRequest(q="talks story version", facets=["person"], per_page=20)


def answer(store: WhooshStore) -> list:
    r = run_search(store, REQUEST)
    return [r.total, [(h.id, h.score) for h in r.hits], r.facets]


def test_each_commit_writes_the_file_of_its_segment(tmp_path):
    store = small_index(tmp_path)
    segs = {s.segment_id() for s in store.ix._segments()}
    assert pst_files(tmp_path) == {pstore.file_name(s) for s in segs} and len(segs) == 2
    searcher = store.searcher()
    for reader, _ in leaves_of(searcher):
        f = pstore.read(tmp_path, reader.segment().segment_id(), reader.doc_count_all())
        ids, w = segment_postings(reader, "text", b"talks")
        got = f.get("text", b"talks")
        assert got[0].tolist() == ids.tolist() and got[1].tolist() == w.tolist()
    assert cache_for(store).postings_builds == 0


def test_an_index_without_files_builds_them_once(tmp_path):
    store = small_index(tmp_path)
    expected = answer(store)
    saved = {n: (tmp_path / n).read_bytes() for n in pst_files(tmp_path)}
    for name in saved:  # as an index written before these files
        os.remove(tmp_path / name)
    store.close()

    first = WhooshStore(tmp_path)
    assert answer(first) == expected
    assert cache_for(first).postings_builds == 2
    # saved for the next process, the very bytes the commits wrote
    assert {n: (tmp_path / n).read_bytes() for n in pst_files(tmp_path)} == saved
    second = WhooshStore(tmp_path)
    assert answer(second) == expected
    assert cache_for(second).postings_builds == 0


@pytest.mark.parametrize("damage", ["truncated", "garbled", "another segment's"])
def test_a_damaged_file_is_rebuilt_not_trusted(tmp_path, damage):
    store = small_index(tmp_path)
    expected = answer(store)
    names = sorted(pst_files(tmp_path))
    path = tmp_path / names[0]
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbled":  # the header stays valid: only the checksum can tell
        path.write_bytes(data[:-64] + bytes(b ^ 0xFF for b in data[-64:]))
    else:
        path.write_bytes((tmp_path / names[1]).read_bytes())
    store.close()
    again = WhooshStore(tmp_path)
    assert answer(again) == expected
    assert cache_for(again).postings_builds == 1
    assert path.read_bytes() == data  # rewritten whole


def test_files_follow_segments_through_merges(tmp_path):
    from newsquarry.search.ingest.indexer import optimize

    store = small_index(tmp_path)
    expected = answer(store)
    optimize(store)
    (only,) = store.ix._segments()
    # the merged segment got its file; the files of merged-away segments went with them
    assert pst_files(tmp_path) == {pstore.file_name(only.segment_id())}
    fresh = WhooshStore(tmp_path)
    assert answer(fresh) == expected
    assert cache_for(fresh).postings_builds == 0


def test_fuzzy_and_prefix_terms_read_the_files_like_any_term(tmp_path):
    # fuzzy terms come from Whoosh's expansion as text, not bytes
    store = small_index(tmp_path)
    bare = WhooshStore(tmp_path)
    cache_for(bare).postings_files = False
    for q in ("storx~", "tal*", "storx~ OR versoin~2"):
        a = run_search(store, SearchRequest(q=q, per_page=20))
        b = run_search(bare, SearchRequest(q=q, per_page=20))
        assert a.total == b.total > 0
        assert [(h.id, h.score) for h in a.hits] == [(h.id, h.score) for h in b.hits]

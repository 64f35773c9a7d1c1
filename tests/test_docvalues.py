"""Doc values: the saved per-segment files agree with the postings, through writes,
deletes, merges and old indexes without files."""

from __future__ import annotations

import os
import tempfile
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newsquarry.search.core.models import Article, Entity
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine import dvstore, integrity, keytable, pstore
from newsquarry.search.engine.blocks import segment_postings
from newsquarry.search.engine.docvalues import VALUE_FIELDS, _Computed, compute_segment
from newsquarry.search.engine.merging import merge_tiered
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.engine.views import DocValuesCache, cache_for, leaves_of
from newsquarry.search.ingest.indexer import optimize
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.facets import display_form
from newsquarry.search.query.searching import run_search

from .conftest import seed_items

# written forms: accented and plain spellings fold to one key
PEOPLE = ["Juan Guaidó", "Juan Guaido", "Nicolás Maduro", "Ana Pérez", "Li Wei"]
ORGS = ["PDVSA", "National Guard", "OPEC"]
PLACES = ["Bogotá", "Bogota", "Caracas", "Oslo"]


def make_article(n: int, version: int, people: list[str], orgs: list[str], places: list[str]):
    """An article of two passages whose entities are the given names (in the first passage)."""
    names = people + orgs + places
    first = "Talks: " + ", ".join(names) + "." if names else "Talks were held."
    text = f"{first}\n\nVersion {version} of story {n} ends here with no names."
    art = Article(
        id=f"a{n}",
        title=f"Story {n}",
        text=text,
        source="Wire" if n % 2 else "Post",
        date=f"2019-0{1 + n % 9}-1{version % 10}",
    )
    passages = split_passages(art)
    p = passages[0]
    for kind, group in (("person", people), ("org", orgs), ("place", places)):
        for name in group:
            start = p.text.index(name)
            p.entities.append(Entity(name, name, kind, start, start + len(name)))
    return art, passages


article_args = st.tuples(
    st.integers(0, 7),
    st.lists(st.sampled_from(PEOPLE), max_size=3, unique=True),
    st.lists(st.sampled_from(ORGS), max_size=2, unique=True),
    st.lists(st.sampled_from(PLACES), max_size=2, unique=True),
)
operation = st.one_of(
    st.tuples(st.just("put"), st.lists(article_args, min_size=1, max_size=4)),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("optimize")),
)


def check_files_match_postings(store: WhooshStore) -> None:
    """Every segment of the index has a file whose arrays equal those read from its postings."""
    searcher = store.searcher()
    for reader, _ in leaves_of(searcher):
        seg = reader.segment()
        saved = dvstore.read(store.path, seg.segment_id(), reader.doc_count_all())
        assert saved is not None, f"no doc-values file for {seg.segment_id()}"
        arrays, meta = compute_segment(reader)
        assert sorted(saved.names()) == sorted(arrays)
        for name, expected in arrays.items():
            np.testing.assert_array_equal(saved.array(name), expected, err_msg=name)
        assert saved.meta == meta
        # its decoded postings: the file written with the segment (recorded as Whoosh wrote
        # them, or carried through a merge) is the one read back from Whoosh's postings
        pst = dvstore.read(store.path, seg.segment_id(), reader.doc_count_all(), ext=pstore.EXT)
        assert pst is not None, f"no postings file for {seg.segment_id()}"
        arrays, meta = pstore.compute(reader)
        assert sorted(pst.names()) == sorted(arrays) and pst.meta == meta
        for name, expected in arrays.items():
            got = pst.array(name)
            assert got.dtype == expected.dtype, name
            np.testing.assert_array_equal(got, expected, err_msg=name)
        # and every term of every covered field gives Whoosh's ids and weights
        mapped = pstore.read(store.path, seg.segment_id(), reader.doc_count_all())
        for fname in pstore.FIELDS:
            for btext in reader.lexicon(fname):
                ids, w = segment_postings(reader, fname, btext)
                got_ids, got_w = mapped.get(fname, btext)
                np.testing.assert_array_equal(got_ids, ids, err_msg=f"{fname}:{btext!r}")
                np.testing.assert_array_equal(got_w, w, err_msg=f"{fname}:{btext!r}")
                assert got_ids.dtype == np.int64 and got_w.dtype == np.float32
        assert len(mapped.get("text", b"no-such-term")[0]) == 0


def live_values(store: WhooshStore, cache: DocValuesCache) -> dict[str, Counter]:
    """Per field, the live (document id, folded key) pairs seen through a cache's view."""
    searcher = store.searcher()
    view = cache.view(searcher)
    out: dict[str, Counter] = {}
    for fname in VALUE_FIELDS:
        docs, gids = view.docs[fname], view.gids[fname]
        keep = view.live[docs]
        out[fname] = Counter(
            (searcher.stored_fields(int(d))["id"], view.keys[fname][g])
            for d, g in zip(docs[keep].tolist(), gids[keep].tolist(), strict=True)
        )
    return out


def apply_op(store, op, version: int, truth: dict[str, list] | None = None) -> int:
    """Carry out one operation of a random history (a batch of articles put at a new
    version, a delete, or an optimize); ``truth`` (article id -> passages) follows the
    puts and deletes. Returns the version after it."""
    if op[0] == "put":
        version += 1
        with store.writer() as w:
            seen = set()
            for n, people, orgs, places in op[1]:
                if n in seen:
                    continue
                seen.add(n)
                art, passages = make_article(n, version, people, orgs, places)
                w.put(art, passages)
                if truth is not None:
                    truth[art.id] = passages
    elif op[0] == "delete":
        store.delete(f"a{op[1]}")
        if truth is not None:
            truth.pop(f"a{op[1]}", None)
    else:
        optimize(store)
    return version


def random_histories(test):
    """Run ``test(ops)`` on random sequences of commits, replacements, deletes and merges
    (``NQ_DV_EXAMPLES`` of them)."""
    return settings(
        max_examples=int(os.environ.get("NQ_DV_EXAMPLES", "20")),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )(given(ops=st.lists(operation, min_size=1, max_size=8))(test))


@random_histories
def test_saved_doc_values_agree_with_postings(ops):
    with tempfile.TemporaryDirectory() as folder:
        store = WhooshStore(folder, merge_process=False)  # the same merge code, in a thread
        store.merge_policy = merge_tiered(factor=2, floor_docs=2)  # merges at most commits
        truth: dict[str, list] = {}  # article id -> its passages
        version = 0
        for op in ops:
            version = apply_op(store, op, version, truth)
        assert store.wait_for_merges(timeout=60)
        assert store.merger.errors == []
        check_files_match_postings(store)
        check_key_table_matches_postings(store)
        # a new process (a fresh cache) maps the files and sees exactly the live values
        fresh = DocValuesCache(store.path)
        got = live_values(store, fresh)
        assert fresh.builds == 0
        assert fresh.key_table_builds == 0  # the table of the commit (or merge) is used
        assert got == live_values(store, DocValuesCache(None))  # same as from the postings
        passages = [p for ps in truth.values() for p in ps]
        for kind in ("person", "org", "place"):
            expected = Counter(
                (p.id, key) for p in passages for key in {fold(x) for x in p.names(kind)}
            )
            assert got[kind] == expected
        r = run_search(store, SearchRequest(facets=["person"], facet_size=50))
        assert r.total == len(passages)
        # searches read the postings files, with Whoosh's very results and scores
        assert fresh.postings_builds == 0
        assert_same_searches(store)
        store.close()


SEARCHES = [
    SearchRequest(q="talks story", match="most", facets=["person", "place"], per_page=50),
    SearchRequest(q="version ends names", match="any", per_page=50, group="article"),
    SearchRequest(q="story", match="all", filters={"person": ["Li Wei"]}, per_page=50),
    SearchRequest(q='"story 3" OR pdvsa', per_page=50),
    SearchRequest(q="talks guaido", per_page=50),
]


def assert_same_searches(store: WhooshStore) -> None:
    """Searches give the same hits, scores and counts from the postings files as from
    Whoosh's postings (a second store whose cache never reads the files), and the same
    whole answers from a merged key table as from registries built segment by segment."""
    bare = WhooshStore(store.path, create=False)
    cache_for(bare).postings_files = False
    tabled, untabled = WhooshStore(store.path, create=False), WhooshStore(store.path, create=False)
    cache_for(untabled).key_tables = False
    try:
        for req in SEARCHES:
            a, b = run_search(store, req), run_search(bare, req)
            assert a.total == b.total
            assert [(h.id, h.score) for h in a.hits] == [(h.id, h.score) for h in b.hits]
            assert a.facets == b.facets
            c, d = run_search(tabled, req).to_dict(), run_search(untabled, req).to_dict()
            c.pop("took_ms"), d.pop("took_ms")
            assert c == d
        assert cache_for(tabled).key_table_builds == 0 and cache_for(tabled).registries[
            "person"
        ]._order == list(range(len(cache_for(tabled).registries["person"].keys)))
    finally:
        bare.close()
        tabled.close()
        untabled.close()


def check_key_table_matches_postings(store: WhooshStore) -> None:
    """The current segment list has its merged key table, listed in the commit's manifest,
    whose every array equals the table computed from the segments' postings; no other
    table is left in the folder."""
    segs = [(r.segment().segment_id(), r.doc_count_all()) for r, _ in leaves_of(store.searcher())]
    name = keytable.file_name(segs)
    assert {n for n in os.listdir(store.path) if keytable.is_table(n)} == (
        {name} if segs else set()
    )
    if not segs:  # an empty index has no keys
        return
    manifest = integrity.read_manifest(store.path, store.generation)
    assert name in manifest.files
    assert manifest.files[name]["crc32"] == integrity.crc32_file(store.path / name)[1]
    table = keytable.read(store.path, segs, VALUE_FIELDS)
    assert table is not None
    sources = []
    for reader, _ in leaves_of(store.searcher()):
        arrays, meta = compute_segment(reader)
        sources.append(_Computed(reader.doc_count_all(), arrays, meta))
    expected = keytable.compute(VALUE_FIELDS, sources)
    assert sorted(table.src.names()) == sorted(expected)
    for aname, arr in expected.items():
        np.testing.assert_array_equal(table.src.array(aname), arr, err_msg=aname)
    for f in VALUE_FIELDS:  # each segment's keys, through the table, are its own keys
        keys = table.keys(f)
        assert keys == sorted(set(keys))
        for i, src in enumerate(sources):
            own = src.json(f"{f}.strings")["keys"]
            assert [keys[g] for g in table.local_to_table(f, i).tolist()] == own


def seg_files(folder) -> set[str]:
    return {n for n in os.listdir(folder) if n.endswith(dvstore.EXT)}


def test_files_follow_segments_through_merges(tmp_path):
    store = WhooshStore(tmp_path, background_merges=False)
    for n in range(3):
        with store.writer() as w:
            w.put(*make_article(n, 1, ["Ana Pérez"], [], ["Oslo"]))
    segs = {s.segment_id() for s in store.ix._segments()}
    assert seg_files(tmp_path) == {dvstore.file_name(s) for s in segs}
    optimize(store)
    (only,) = store.ix._segments()
    # the merged segment got its file; the files of merged-away segments went with them
    assert seg_files(tmp_path) == {dvstore.file_name(only.segment_id())}
    r = run_search(store, SearchRequest(facets=["person"]))
    assert [(v.value, v.count) for v in r.facets["person"].values] == [("Ana Pérez", 3)]


def test_an_index_without_files_builds_them_once(tmp_path):
    store = WhooshStore(tmp_path)
    with store.writer() as w:
        w.put(*make_article(1, 1, ["Juan Guaidó"], ["OPEC"], ["Bogotá"]))
        w.put(*make_article(2, 1, ["Juan Guaido"], [], []))
    expected = run_search(store, SearchRequest(facets=["person", "org", "place"]))
    for name in seg_files(tmp_path):  # as an index written before doc values were saved
        os.remove(tmp_path / name)
    store.close()

    first = WhooshStore(tmp_path)
    got = run_search(first, SearchRequest(facets=["person", "org", "place"]))
    assert cache_for(first).builds == 1
    assert got.facets == expected.facets
    assert len(seg_files(tmp_path)) == 1  # saved for the next process

    second = WhooshStore(tmp_path)
    assert run_search(second, SearchRequest(facets=["person", "org", "place"])).facets == (
        expected.facets
    )
    assert cache_for(second).builds == 0


def test_a_damaged_file_is_rebuilt_not_trusted(tmp_path):
    store = WhooshStore(tmp_path)
    with store.writer() as w:
        w.put(*make_article(1, 1, ["Li Wei"], [], ["Oslo"]))
    expected = run_search(store, SearchRequest(facets=["person", "place"])).facets
    (name,) = seg_files(tmp_path)
    path = tmp_path / name
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # truncated
    again = WhooshStore(tmp_path)
    assert run_search(again, SearchRequest(facets=["person", "place"])).facets == expected
    assert cache_for(again).builds == 1
    assert path.read_bytes() == data  # rewritten whole


def test_key_mask_selects_the_documents_holding_the_keys(tmp_path):
    """``View.key_mask`` (through the per-field key index) marks exactly the documents
    whose field holds one of the keys, over several segments and a deletion."""
    store = WhooshStore(tmp_path / "ix")
    for n, (people, orgs, places) in enumerate(
        [(PEOPLE[:2], ORGS[:1], PLACES[:1]), (PEOPLE[2:4], ORGS, PLACES[2:]), ([], [], [])]
        + [([PEOPLE[k % 5]], [ORGS[k % 3]], [PLACES[k % 4]]) for k in range(5)]
    ):
        with store.writer() as w:  # one commit (segment) per article
            w.put(*make_article(n, 1, people, orgs, places))
    store.delete("a1")
    searcher = store.searcher()  # one state (a background merge may land meanwhile)
    view = DocValuesCache(None).view(searcher)
    for fname in ("person", "org", "place"):
        docs, gids = view.docs[fname], view.gids[fname]
        nkeys = view.nkeys[fname]
        assert nkeys >= 2
        every = list(range(nkeys))
        for keys in [[g] for g in every] + [[0, nkeys - 1], [], [nkeys + 5], every]:
            want = np.zeros(view.size, dtype=bool)
            want[docs[np.isin(gids, keys)]] = True
            assert np.array_equal(view.key_mask(fname, keys), want), (fname, keys)
            # a view's first mask of a field scans it (a few keys), later ones read the
            # documents by key: both give the same documents
            fresh = DocValuesCache(None).view(searcher)
            assert np.array_equal(fresh.key_mask(fname, keys), want), (fname, keys)
            assert np.array_equal(fresh.key_mask(fname, keys), want), (fname, keys)
    store.close()


@settings(max_examples=50, deadline=None)
@given(
    batches=st.lists(st.lists(st.text(max_size=6), max_size=80), min_size=1, max_size=6),
    data=st.data(),
)
def test_key_ranks_kept_across_views_equal_a_full_sort(batches, data):
    """KeyRegistry.rank extends its order as commits add keys; each view's ranks must be
    those of sorting its keys afresh, also for a view that knows fewer keys."""
    from newsquarry.search.engine.docvalues import KeyRegistry

    reg = KeyRegistry()
    for batch in batches:
        reg.ids_for(list(dict.fromkeys(batch)))
        n = data.draw(st.integers(0, len(reg.keys)))
        for size in (n, len(reg.keys)):
            keys = reg.keys[:size]
            expected = np.empty(size, dtype=np.int64)
            expected[sorted(range(size), key=keys.__getitem__)] = np.arange(size)
            assert reg.rank(size).tolist() == expected.tolist()


def key_tables(folder) -> set[str]:
    return {n for n in os.listdir(folder) if keytable.is_table(n)}


def test_a_key_table_per_segment_list_written_at_commit_and_kept_by_deletes(tmp_path):
    store = WhooshStore(tmp_path, background_merges=False)
    with store.writer() as w:
        w.put(*make_article(1, 1, ["Juan Guaidó"], ["OPEC"], ["Bogotá"]))
        w.put(*make_article(3, 1, ["Nicolás Maduro"], [], []))
    first = key_tables(tmp_path)
    with store.writer() as w:
        w.put(*make_article(2, 1, ["Juan Guaido", "Li Wei"], [], ["Oslo"]))
    second = key_tables(tmp_path)
    assert len(first) == len(second) == 1 and first != second  # the old one removed
    store.delete("a1")  # a commit that only deletes: same segments, same table
    assert key_tables(tmp_path) == second
    (name,) = second
    assert name in integrity.read_manifest(tmp_path, store.generation).files
    check_key_table_matches_postings(store)
    optimize(store)  # a merge: the merged segment's list gets its own table
    assert len(key_tables(tmp_path)) == 1 and key_tables(tmp_path) != second
    check_key_table_matches_postings(store)
    fresh = WhooshStore(tmp_path, create=False)
    r = run_search(fresh, SearchRequest(facets=["person", "place"]))
    assert cache_for(fresh).key_table_builds == 0
    assert [(v.value, v.count) for v in r.facets["person"].values] == [
        ("Juan Guaido", 1),
        ("Li Wei", 1),
        ("Nicolás Maduro", 1),
    ]


def test_an_index_without_a_key_table_builds_it_once_byte_for_byte(tmp_path):
    store = WhooshStore(tmp_path)
    for n, people in enumerate((["Juan Guaidó"], ["Juan Guaido", "Ana Pérez"], ["Li Wei"])):
        with store.writer() as w:
            w.put(*make_article(n, 1, people, ORGS[n:], PLACES[n:]))
    req = SearchRequest(q="talks", facets=["person", "org", "place"])
    expected = run_search(store, req).facets
    (name,) = key_tables(tmp_path)
    data = (tmp_path / name).read_bytes()
    for damage in ("delete", "truncate", "flip"):
        path = tmp_path / name
        if damage == "delete":  # an index from before key tables
            path.unlink()
        elif damage == "truncate":
            path.write_bytes(data[: len(data) // 2])
        else:  # same size, a byte changed: its checksum in the manifest tells
            path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
        first = WhooshStore(tmp_path, create=False)
        assert run_search(first, req).facets == expected
        assert cache_for(first).key_table_builds == 1, damage
        assert path.read_bytes() == data, damage  # saved for the next process, as committed
        second = WhooshStore(tmp_path, create=False)
        assert run_search(second, req).facets == expected
        assert cache_for(second).key_table_builds == 0
        first.close()
        second.close()


def whole_index_arrays_agree(view) -> None:
    """A view's per-segment arrays (kept across views) equal the same arrays computed over
    the whole index from the view's global columns, as views computed them before."""
    everything = np.arange(view.size)
    if view._tiebreak is None:  # the tie-breaks of some documents, without the whole array
        some = everything[::3]
        assert view.ties[some].tolist() == view.tiebreak[some].tolist()
    assert view.ties[everything].tolist() == view.tiebreak.tolist()
    for fname in VALUE_FIELDS:
        docs, gids = view.docs[fname], view.gids[fname]
        for g in np.unique(gids).tolist():
            expected = view.empty()
            expected[docs[gids == g]] = True
            np.testing.assert_array_equal(view.key_mask(fname, [g]), expected, err_msg=fname)
        assert not view.key_mask(fname, [view.nkeys[fname] + 5]).any()
    art = view.article_of
    for doctype in ("passage", "quote", "article"):
        m = view.doctype_mask(doctype)
        for fname in ("text", "title", "quote"):
            n = int(np.count_nonzero(m))
            avg = float(view.lengths[fname][m].astype(np.float64).sum() / n) if n else 1.0
            assert view.avg_length(fname, doctype) == avg
            sel = m & (art >= 0)
            values = view.lengths[fname][sel].astype(np.float64)
            nkeys = view.nkeys["article_id"]
            summed = np.bincount(art[sel], weights=values, minlength=nkeys)
            largest = np.zeros(nkeys, dtype=np.float64)
            np.maximum.at(largest, art[sel], values)
            count = np.bincount(art[sel], minlength=nkeys)
            k = int(np.count_nonzero(count))
            for mode, want in (("sum", summed), ("max", largest)):
                got, got_n, got_avg = view.article_lengths(fname, doctype, per_article=mode)
                np.testing.assert_array_equal(got, want, err_msg=f"{fname} {doctype} {mode}")
                assert got_n == k
                assert got_avg == ((float(want.sum() / k) if k else 1.0) or 1.0)


@random_histories
def test_per_segment_arrays_kept_across_views_equal_whole_index_arrays(ops):
    """Documents by key, mean lengths and article lengths are computed per segment and
    kept across views (a commit computes its new segment's only); through commits,
    replacements, deletes and merges each view's equal those over the whole index, and
    those of a cache that never saw an earlier view."""
    with tempfile.TemporaryDirectory() as folder:
        store = WhooshStore(folder, merge_process=False)
        store.merge_policy = merge_tiered(factor=2, floor_docs=2)
        cache = cache_for(store)  # long-lived: reuses each segment's arrays
        version = 0
        for op in ops:
            version = apply_op(store, op, version)
            store.wait_for_merges(timeout=60)
            whole_index_arrays_agree(cache.view(store.searcher()))
        for req in SEARCHES:  # and the same searches as a cache that starts afresh
            fresh = WhooshStore(folder, create=False, background_merges=False)
            try:
                a, b = run_search(store, req), run_search(fresh, req)
            finally:
                fresh.close()
            assert [(h.id, h.score) for h in a.hits] == [(h.id, h.score) for h in b.hits]
            assert a.total == b.total and a.facets == b.facets
        store.close()


def answers(store: WhooshStore) -> list[dict]:
    out = []
    for req in SEARCHES:
        d = run_search(store, req).to_dict()
        d.pop("took_ms")
        out.append(d)
    return out


@random_histories
def test_what_a_view_inherits_answers_as_a_fresh_cache_does(ops):
    """A view of a state that only added segments (or deleted documents) takes over the
    previous view's decoded postings and display names; through commits, replacements,
    deletes and merges, every answer equals that of a process that never saw an earlier
    state."""
    with tempfile.TemporaryDirectory() as folder:
        store = WhooshStore(folder, merge_process=False)
        store.merge_policy = merge_tiered(factor=2, floor_docs=2)
        version = 0
        for op in ops:
            version = apply_op(store, op, version)
            store.wait_for_merges(timeout=60)
            fresh = WhooshStore(folder, create=False, background_merges=False)
            try:
                assert answers(store) == answers(fresh)
            finally:
                fresh.close()
        store.close()


def test_a_commit_keeps_decoded_postings_and_names_that_did_not_change(tmp_path):
    store = WhooshStore(tmp_path / "ix", background_merges=False)
    with store.writer() as w:
        w.put(*make_article(1, 1, ["Juan Guaidó"], [], []))
        w.put(*make_article(2, 1, ["Juan Guaidó", "Ana Pérez"], [], []))
        w.put(*make_article(3, 1, ["Juan Guaido"], [], []))
    req = SearchRequest(q="story", facets=["person"], per_page=50)
    first = run_search(store, req)
    assert ("Juan Guaidó", 3) in [(v.value, v.count) for v in first.facets["person"].values]
    cache = cache_for(store)
    old = cache.view(store.searcher())
    key = next(iter(old._postings))
    with store.writer() as w:  # a new segment: two more plain spellings
        w.put(*make_article(4, 1, ["Juan Guaido"], [], []))
        w.put(*make_article(5, 1, ["Juan Guaido", "Li Wei"], [], []))
    new = cache.view(store.searcher())
    assert new is not old and new.partial_upto == len(old.cols) == len(new.cols) - 1
    assert key in new._partial  # the old segments' lists, not decoded again
    got = run_search(store, req)
    assert key not in new._partial and new.cached_postings(key) is not None  # completed
    assert (first.total, got.total) == (3, 5)  # one hit per story
    people = {v.value: v.count for v in got.facets["person"].values}
    # the new segment held the key: its name was worked out again (3 plain vs 2 accented)
    assert people["Juan Guaido"] == 5 and "Juan Guaidó" not in people
    assert people["Ana Pérez"] == 1  # kept from the last view
    fresh = WhooshStore(tmp_path / "ix", create=False, background_merges=False)
    assert answers(store) == answers(fresh)
    fresh.close()
    store.close()


def test_a_hits_names_are_shown_without_building_fields_no_facet_needs(tmp_path):
    """A search that counts no speaker shows its hits' speakers in display form without
    mapping every speaker document (``View._key_ids``); the ids and forms are those of
    the field built in full, aliases (here an override) included."""
    store = WhooshStore(tmp_path / "ix")
    seed, passages = seed_items()
    with store.writer() as w:
        w.put(seed, passages)
    (tmp_path / "ix" / "aliases.txt").write_text(
        "Raúl Daniel Alvarenga = Harry Solano\n", encoding="utf-8"
    )
    r = run_search(store, SearchRequest(q="torture", facets=["person"], per_page=50))
    speakers = {q["speaker"] for h in r.hits for q in (h.quotes or []) if q.get("speaker")}
    assert "Harry Solano" in speakers
    view = cache_for(store).view(store.searcher())
    assert not dict.__contains__(view._field_data, "speaker")  # not built for the search
    names = ["Harry Solano", "Solano", "solano", "Raúl Daniel Alvarenga", "nobody at all"]
    light = [(view.gid("speaker", fold(n)), display_form(view, "speaker", n)) for n in names]
    view.nkeys["speaker"]  # noqa: B018 - now built in full
    assert [
        (view.gid("speaker", fold(n)), display_form(view, "speaker", n)) for n in names
    ] == light
    assert light[0][0] is not None and light[0][1] == "Harry Solano"
    assert light[3] == light[0]  # the alias the override made
    assert light[4] == (None, "nobody at all")
    store.close()


def test_an_adopted_key_tables_count_and_ranks_need_no_keys(tmp_path):
    """A fresh process's registries count and rank an adopted key table's keys without
    decoding them (``KeyRegistry.size``, ``rank``), and a field built from it holds its
    keys undecoded until they are read; the answers are those of the decoded keys."""
    store = WhooshStore(tmp_path, background_merges=False)
    for n, people in enumerate((["Juan Guaidó"], ["Juan Guaido", "Ana Pérez"], ["Li Wei"])):
        with store.writer() as w:
            w.put(*make_article(n, 1, people, ORGS[n:], PLACES[n:]))
    fresh = WhooshStore(tmp_path, create=False)
    view = cache_for(fresh).view(fresh.searcher())
    for fname in VALUE_FIELDS:
        reg = view.registries[fname]
        assert reg._pending is not None  # adopted, not decoded
        n = reg.size()
        ranks = reg.rank(n).tolist()
        if fname not in ("person", "org", "place", "speaker"):  # (the alias table reads names)
            keys = view.keys[fname]
            assert len(keys) == view.nkeys[fname] == n
            single = [keys[g] for g in range(n)]  # read one by one
            assert reg._pending is not None, fname
            assert single == list(reg.keys)[:n]
        keys = list(reg.keys)  # decoded now
        assert reg._pending is None
        assert n == len(keys)
        want = np.empty(n, dtype=np.int64)
        want[sorted(range(n), key=keys.__getitem__)] = np.arange(n)
        assert ranks == want.tolist() == reg.rank(n).tolist()
        assert list(view.keys[fname]) == keys[: view.nkeys[fname]]
    fresh.close()
    store.close()


def test_a_key_tables_keys_read_one_by_one_are_the_decoded_ones(tmp_path):
    """``KeyTable.key_reader`` reads one key from the table's JSON bytes; a list holding
    an escape (a quote, a backslash, a control character) is left to the JSON decoder."""
    cases = [
        ["a", "bogotá", "x y", "日本の銀行", "ümlaut, \u00e9", "😀 emoji", "[]", "''"],
        ['say "hi"', "b"],
        ["back\\slash"],
        ["tab\there"],
        [],
    ]
    for n, keys in enumerate(cases):
        name = f"t{n}"
        arrays = {"f.keys": keytable._json_bytes(keys), "f.0": np.arange(len(keys), dtype=np.int32)}
        dvstore.write(tmp_path, name, 0, arrays, {}, ext=keytable.EXT)
        table = keytable.KeyTable(dvstore.read(tmp_path, name, 0, ext=keytable.EXT))
        assert table.keys("f") == keys
        assert table.count("f", 1) == len(keys)
        reader = table.key_reader("f", len(keys))
        escaped = any(c in k for k in keys for c in '"\\\t')
        if escaped:
            assert reader is None, keys
        else:
            assert [reader(i) for i in range(len(keys))] == keys


def test_a_one_segment_views_lengths_of_some_documents_are_the_whole_arrays(tmp_path):
    """``View.lengths_of`` reads a one-segment view's length bytes for the documents asked
    (before the whole array is built) and gives the whole array's values, as a view of
    several segments does."""
    store = WhooshStore(tmp_path, background_merges=False)
    with store.writer() as w:
        for n in range(4):
            w.put(*make_article(n, 1, PEOPLE[n:], ORGS[n % 3 :], PLACES[n:]))
    for commits in (1, 2):
        view = DocValuesCache(None).view(store.searcher())
        assert len(view.cols) == commits
        docs = np.arange(view.size)[::2]
        for fname in ("text", "title", "quote"):
            some = view.lengths_of(fname, docs)
            assert some.dtype == view.lengths[fname].dtype
            assert some.tolist() == view.lengths[fname][docs].tolist()
            assert view.lengths_of(fname, docs).tolist() == some.tolist()  # (built now)
        # per document its article: the field's key ids as they are when every document
        # holds one, in docnum order (one segment), the same as filling a whole array
        expected = np.full(view.size, -1, dtype=np.int64)
        expected[view.docs["article_id"]] = view.gids["article_id"]
        assert view.article_of.tolist() == expected.tolist()
        with store.writer() as w:
            w.put(*make_article(9, 1, PEOPLE[:1], ORGS[:1], PLACES[:1]))
    store.close()


def test_local_keys_mapped_through_an_identity_key_map_are_the_same_ids():
    """``docvalues._mapped`` gives ``l2g[local]`` whatever the map: the local indexes
    themselves when the map is the identity, a gather otherwise, an IndexError for an
    index past the map as numpy's."""
    import pytest

    from newsquarry.search.engine.docvalues import _mapped

    local = np.array([3, 0, 2, 2, 1], dtype=np.int32)
    identity = np.arange(4, dtype=np.int32)
    assert _mapped(identity, local).tolist() == identity[local].tolist()
    assert _mapped(identity, local).dtype == identity[local].dtype
    shifted = np.array([0, 2, 3, 5], dtype=np.int32)
    assert _mapped(shifted, local).tolist() == [5, 0, 3, 3, 2]
    with pytest.raises(IndexError):  # past the map, as numpy says
        _mapped(identity, np.array([4], dtype=np.int32))
    # a negative index counts from the end, as numpy's: a gather, not the identity
    assert _mapped(identity, np.array([-1], dtype=np.int32)).tolist() == [3]

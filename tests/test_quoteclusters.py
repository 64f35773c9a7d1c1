"""Quotation clusters (search.quoteclusters): near-duplicates grouped, on real indexes.

The recall test edits generated quotations the ways copy is edited (truncation, a
changed word, other quote marks, an ellipsis) and checks that at least 95% of the
edited copies land in their original's cluster while distinct quotations stay apart.
"""

from __future__ import annotations

import contextlib
import functools
import os
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newsquarry.search.archive import quoteclusters as qc
from newsquarry.search.archive import quotelinks as qlinks
from newsquarry.search.archive import quotesigs as qsigs
from newsquarry.search.core.errors import InvalidRequest, NotFound
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.readers import article_from_mapping
from newsquarry.search.query import clusters as qclusters
from newsquarry.search.query.searching import run_search

try:
    from tests.api_support import TagEnricher
except ModuleNotFoundError:
    from api_support import TagEnricher

# -- generated edits (recall) ----------------------------------------------------------

VOCAB = (
    "government bank minister plan market price oil talks budget tax trade deficit rate "
    "growth export import company shares profit loss quarter year month week officials "
    "country agreement policy dollar yen mark currency interest debt loan credit farmers "
    "wheat coffee sugar strike union workers production output demand supply reserves "
    "election party leader parliament court ruling reform inflation recession recovery "
    "investors analysts forecast earnings dividend merger offer bid stake board "
    "chairman president spokesman statement report survey index figures data exports"
).split()
GLUE = "the a of to in and that will not be is was has have would could must should".split()


def sentence(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(VOCAB) if i % 2 == 0 else rng.choice(GLUE) for i in range(n)]


def truncated(rng: random.Random, w: list[str]) -> list[str]:
    keep = max(11, int(len(w) * rng.uniform(0.6, 0.9)))
    start = rng.randint(0, len(w) - keep)
    return w[start : start + keep]


def changed_word(rng: random.Random, w: list[str]) -> list[str]:
    out = list(w)
    i = rng.randrange(len(out))
    out[i] = rng.choice([v for v in VOCAB if v != out[i]])
    return out


def ellipsis(rng: random.Random, w: list[str]) -> list[str]:
    k = rng.randint(1, 3)
    i = rng.randint(2, len(w) - k - 2)
    return w[:i] + [rng.choice(["...", "…", ". . ."])] + w[i + k :]


def quote_style(rng: random.Random, w: list[str]) -> str:
    text = " ".join(w)
    left, right = rng.choice([("“", "”"), ('"', '"'), ("«", "»"), ("'", "'"), ("‘", "’")])
    return f"{left}{text[0].upper()}{text[1:]},{right}"


EDITS = {
    "truncation": lambda rng, w: " ".join(truncated(rng, w)),
    "changed word": lambda rng, w: " ".join(changed_word(rng, w)),
    "ellipsis": lambda rng, w: " ".join(ellipsis(rng, w)),
    "quote style": quote_style,
}


def test_edited_copies_join_their_original_and_distinct_quotations_stay_apart():
    rng = random.Random(23)
    originals = [sentence(rng, rng.randint(11, 40)) for _ in range(400)]
    texts = [" ".join(w) for w in originals]
    edits = []  # (index of the original, kind)
    for i, w in enumerate(originals):
        for kind, edit in EDITS.items():
            texts.append(edit(rng, w))
            edits.append((i, kind))
    data = qsigs.compute([(n, t, "", f"q{n}") for n, t in enumerate(texts)])
    labels = qlinks.link(data.sig, data.nsh, data.speakers, data.figures)
    n = len(originals)
    joined = {kind: 0 for kind in EDITS}
    for k, (i, kind) in enumerate(edits):
        joined[kind] += labels[n + k] == labels[i]
    per_kind = {kind: joined[kind] / n for kind in EDITS}
    assert sum(joined.values()) / len(edits) >= 0.95, per_kind
    assert min(per_kind.values()) >= 0.9, per_kind
    # no two originals share a cluster (random sentences: no real near-duplicates)
    assert len(set(labels[:n].tolist())) == n


def test_quote_marks_ellipses_and_case_do_not_change_the_words():
    assert qsigs.words("“No easy way out…” he said — «really»") == qsigs.words(
        '"no easy way out..." HE SAID really'
    )
    assert qsigs.words("it rose 7.5 pct to 4,400 dlrs") == [
        "it", "rose", "7.5", "pct", "to", "4,400", "dlrs"
    ]  # fmt: skip
    assert qsigs.words("Guaidó’s plan") == qsigs.words("guaido's plan")


def link_texts(*items: tuple[str, str]) -> np.ndarray:
    data = qsigs.compute([(n, t, s, f"q{n}") for n, (t, s) in enumerate(items)])
    return qlinks.link(data.sig, data.nsh, data.speakers, data.figures)


def test_templates_of_different_speakers_or_figures_are_not_one_quotation():
    base = "is issuing a 40 mln Australian dlr eurobond due April 24, 1990 paying 15 pct"
    labels = link_texts((base, "ANZ Merchant Bank Ltd"), (base, "Orion Royal Bank Ltd"))
    assert labels[0] != labels[1]
    labels = link_texts((base, "Frank Carlucci"), (base, "Carlucci"), (base, ""))
    assert labels[0] == labels[1] == labels[2]
    other = base.replace("15 pct", "16 pct")
    assert len(set(link_texts((base, ""), (other, "")).tolist())) == 2
    # short formulae are never grouped unless nearly identical
    labels = link_texts(
        ("it plans to change its name to CVN", ""),
        ("it plans to change its name to USA Outdoor Advertising Inc", ""),
    )
    assert labels[0] != labels[1]
    assert len(set(link_texts(("no comment", ""), ("no comment", "")).tolist())) == 2


# -- on a real index -----------------------------------------------------------------------

QUOTE = (
    "We will not accept any agreement that leaves the farmers of this country without "
    "a fair price for their wheat"
)


def article(aid: str, date: str, source: str, quote: str, speaker: str = "Ana Ruiz") -> dict:
    return {
        "id": aid,
        "title": f"Story {aid}",
        "source": source,
        "date": date,
        "text": f"Talks went on in Caracas.\n\n\u201c{quote},\u201d said {speaker}.",
    }


def build(path: Path, batches: list[list[dict]]) -> WhooshStore:
    store = WhooshStore(path, background_merges=False)
    for batch in batches:
        index_articles(store, [article_from_mapping(a) for a in batch], enricher=TagEnricher())
    return store


def other_articles(n: int) -> list[dict]:
    rng = random.Random(5)
    return [
        article(
            f"other-{i}",
            f"2020-02-{1 + i:02d}",
            "Wire",
            " ".join(sentence(rng, 14)),
            speaker="Juan Guaidó",
        )  # fmt: skip
        for i in range(n)
    ]


@pytest.fixture
def story(tmp_path):
    first = [
        article("a-late", "2020-03-05", "Daily Post", QUOTE),
        article("a-first", "2020-03-01", "Wire", QUOTE.replace("agreement", "deal")),
    ] + other_articles(12)
    # a later commit: a cut copy with other quote marks, and an ellipsis
    second = [
        article("b-cut", "2020-03-07", "Evening News", QUOTE.split(" that ")[1]),
        article("b-dots", "2020-03-08", "Wire", QUOTE.replace("any agreement that", "...")),
    ]
    return build(tmp_path / "ix", [first, second])


LINKING = ("pairs_full", "relink", "founders", "reassign", "assign")


@contextlib.contextmanager
def linking_forbidden(monkeypatch, why: str):
    """Inside: any linking of quotation clusters fails the test with ``why``."""

    def no_linking(*args, **kwargs):
        raise AssertionError(why)

    with monkeypatch.context() as m:
        for name in LINKING:  # where the clusters call it, and where linking calls it
            for module in (qc, qlinks):
                if hasattr(module, name):
                    m.setattr(module, name, no_linking)
        yield


def quote_search(store, **kw) -> object:
    return run_search(store, SearchRequest(mode="quotes", **kw))


def test_copies_across_commits_form_one_cluster_with_its_first_seen_article(story):
    r = quote_search(story, q="farmers fair price wheat", per_page=50)
    ours = [h for h in r.hits if not h.article_id.startswith("other-")]
    assert {h.article_id for h in ours} == {"a-late", "a-first", "b-cut", "b-dots"}
    assert len({h.cluster for h in ours}) == 1
    for h in ours:
        assert h.cluster_articles == 4
        assert h.first_seen["article_id"] == "a-first"
        assert h.first_seen["date"] == "2020-03-01" and h.first_seen["source"] == "Wire"
        assert h.first_seen["title"] == "Story a-first"
    # every segment committed its signatures next to it
    names = os.listdir(story.path)
    segs = {n.rsplit(".", 1)[0] for n in names if n.endswith(".seg")}
    assert segs and segs == {n.rsplit(".", 1)[0] for n in names if n.endswith(qc.EXT)}


def test_cluster_detail_lists_articles_sources_and_speakers(story):
    hit = quote_search(story, q="farmers wheat", per_page=1).hits[0]
    c = qclusters.quote_cluster(story, hit.cluster)
    assert c["id"] == hit.cluster
    assert c["first_seen"]["article_id"] == "a-first"
    assert [q["article_id"] for q in c["quotes"]] == ["a-first", "a-late", "b-cut", "b-dots"]
    assert c["article_count"] == 4 and c["quote_count"] == 4
    assert c["speakers"] == [{"name": "Ana Ruiz", "count": 4}]
    assert {s["source"]: s["count"] for s in c["sources"]} == {
        "Wire": 2, "Daily Post": 1, "Evening News": 1
    }  # fmt: skip
    assert c["text"].rstrip(",") == QUOTE  # the longest wording (each is carried once)
    with pytest.raises(NotFound):
        qclusters.quote_cluster(story, "c000000000000")
    with pytest.raises(NotFound):
        qclusters.quote_cluster(story, "../etc/passwd")
    # within a scope (a read key's filters): only the quotations inside it
    inside = qclusters.quote_cluster(
        story, hit.cluster, within=SearchRequest(filters={"source": ["Wire"]})
    )
    assert [q["article_id"] for q in inside["quotes"]] == ["a-first", "b-dots"]
    with pytest.raises(NotFound):
        qclusters.quote_cluster(
            story, hit.cluster, within=SearchRequest(filters={"source": ["Nobody"]})
        )


def test_group_cluster_totals_and_paging_are_exact(story):
    everything = quote_search(story, per_page=100)
    expected = {h.cluster for h in everything.hits}
    assert len(expected) == everything.total - 3  # four copies, one cluster
    seen, page = [], 1
    while True:
        r = quote_search(story, group="cluster", per_page=4, page=page)
        assert r.total == everything.total and r.total_clusters == len(expected)
        assert r.total_pages == -(-len(expected) // 4)
        if not r.hits:
            break
        seen.extend(h.cluster for h in r.hits)
        page += 1
    assert len(seen) == len(set(seen)) and set(seen) == expected
    best = quote_search(story, q="farmers wheat fair price", group="cluster", per_page=3).hits[0]
    assert best.more_count == 3 and len(best.more_ids) == 3
    with pytest.raises(InvalidRequest, match="mode=quotes"):
        run_search(story, SearchRequest(group="cluster"))


def test_a_clusters_article_count_counts_articles_not_quotations(tmp_path):
    """``Clusters.articles`` (made on first use) against a count over each cluster's
    members: an article that repeats a quotation counts once."""
    from newsquarry.search.engine.views import cache_for

    twice = article("a-twice", "2020-03-02", "Wire", QUOTE)
    twice["text"] += f"\n\nShe repeated it.\n\n\u201c{QUOTE},\u201d said Ana Ruiz."
    store = build(tmp_path / "ix", [[twice, article("a-other", "2020-03-03", "Post", QUOTE)]
                                    + other_articles(3)])  # fmt: skip
    c = qc.clusters_for(store)
    art = cache_for(store).view(store.searcher()).article_of
    want = [len(set(art[c.members(k)].tolist())) for k in range(c.count)]
    assert c.articles.tolist() == want
    big = int(np.argmax([len(c.members(k)) for k in range(c.count)]))
    assert len(c.members(big)) == 3 and want[big] == 2


def test_deleting_an_article_splits_what_it_joined(tmp_path):
    # a-long carries the whole quotation; the two cuts overlap only through it
    head, tail = " ".join(QUOTE.split()[:12]), " ".join(QUOTE.split()[8:])
    store = build(tmp_path / "ix", [[
        article("a-long", "2020-01-01", "Wire", QUOTE),
        article("a-head", "2020-01-02", "Wire", head),
        article("a-tail", "2020-01-03", "Wire", tail),
    ] + other_articles(3)])  # fmt: skip
    clusters = {h.article_id: h.cluster for h in quote_search(store, per_page=50).hits}
    assert clusters["a-head"] == clusters["a-tail"] == clusters["a-long"]
    store.delete("a-long")
    clusters = {h.article_id: h.cluster for h in quote_search(store, per_page=50).hits}
    assert clusters["a-head"] != clusters["a-tail"]
    r = quote_search(store, q="farmers", per_page=50)
    assert all(h.cluster_articles == 1 and h.first_seen is None for h in r.hits)


def test_a_cluster_id_keeps_working_when_an_earlier_copy_arrives(tmp_path):
    store = build(tmp_path / "ix", [[article("late", "2020-03-05", "Wire", QUOTE)]
                                    + other_articles(2)])  # fmt: skip
    old = quote_search(store, q="farmers", per_page=1).hits[0].cluster
    index_articles(
        store, [article_from_mapping(article("early", "2020-03-01", "Post", QUOTE))],
        enricher=TagEnricher(),
    )  # fmt: skip
    hit = quote_search(store, q="farmers", per_page=1).hits[0]
    assert hit.cluster != old and hit.first_seen["article_id"] == "early"
    assert qclusters.quote_cluster(store, old)["id"] == hit.cluster


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate"])
def test_signature_files_are_derived_data(story, tmp_path, damage):
    before = [(h.id, h.cluster, h.cluster_articles) for h in quote_search(story, per_page=50).hits]
    copy = tmp_path / "copy"
    shutil.copytree(story.path, copy)
    files = sorted(p for p in copy.iterdir() if p.name.endswith(qc.EXT))
    originals = {p.name: p.read_bytes() for p in files}
    for p in files:
        if damage == "delete":
            p.unlink()
        elif damage == "garbage":
            p.write_bytes(b"x" * p.stat().st_size)
        else:
            os.truncate(p, p.stat().st_size // 2)
    again = WhooshStore(copy, create=False, background_merges=False)
    after = [(h.id, h.cluster, h.cluster_articles) for h in quote_search(again, per_page=50).hits]
    assert after == before
    # rebuilt once from the stored quotations, byte for byte what the commit wrote
    assert {p.name: p.read_bytes() for p in files} == originals


def test_a_merged_segment_carries_its_sources_signatures_over(tmp_path):
    from newsquarry.search.engine.merging import merge_once, merge_tiered

    try:
        from tests.api_support import cluster_articles
    except ModuleNotFoundError:
        from api_support import cluster_articles
    arts = cluster_articles()
    store = build(tmp_path / "ix", [arts[:3], arts[3:5], arts[5:]])
    store.delete("crop-rice")  # a deletion the merge drops
    before = [(h.id, h.cluster, h.cluster_articles) for h in quote_search(store, per_page=50).hits]
    store.merge_policy = merge_tiered(factor=3, floor_docs=5)
    assert merge_once(store)
    segs = [s.segment_id() for s in store.ix._segments()]
    assert len(segs) == 1
    path = store.path / f"{segs[0]}{qc.EXT}"
    carried = path.read_bytes()
    again = WhooshStore(store.path, create=False, background_merges=False)
    after = [(h.id, h.cluster, h.cluster_articles) for h in quote_search(again, per_page=50).hits]
    assert after == before
    # exactly what reading the merged segment's stored quotations gives
    path.unlink()
    fresh = WhooshStore(store.path, create=False, background_merges=False)
    assert [(h.id, h.cluster) for h in quote_search(fresh, per_page=50).hits] == [
        (i, c) for i, c, _ in before
    ]
    assert path.read_bytes() == carried


def test_a_new_process_reads_the_links_of_the_state_instead_of_linking_again(
    story, tmp_path, monkeypatch
):
    """Linking is the costly part of a state's clusters; the first process to link a state
    saves the links (derived data), later ones read them; damaged, they are made again."""
    want = [(h.id, h.cluster, h.cluster_articles) for h in quote_search(story, per_page=50).hits]
    copy = tmp_path / "copy"
    shutil.copytree(story.path, copy)
    links = copy / qc.LINKS_FILE
    assert links.exists()

    with linking_forbidden(monkeypatch, "linked again although the state's links were saved"):
        fresh = WhooshStore(copy, create=False, background_merges=False)  # a new process's cache
        got = [(h.id, h.cluster, h.cluster_articles) for h in quote_search(fresh, per_page=50).hits]
        assert qc.clusters_for(fresh).how == "saved"
    assert got == want
    saved = links.read_bytes()
    links.write_bytes(saved[: len(saved) // 2])  # damaged: linked again, and saved again
    again = WhooshStore(copy, create=False, background_merges=False)
    hits = quote_search(again, per_page=50).hits
    assert [(h.id, h.cluster, h.cluster_articles) for h in hits] == want
    assert links.read_bytes() == saved
    again.delete("b-cut")  # another state: its links are made and saved in place of these
    assert len(quote_search(again, per_page=50).hits) == len(want) - 1
    assert links.read_bytes() != saved


def test_a_process_that_linked_a_state_links_the_states_it_commits_after_the_commit(
    story, tmp_path, monkeypatch
):
    """A process that linked a state links each state it commits (or deletes from) in a
    background thread right after the commit: its next quote search finds the new state's
    clusters made and saved; a process that never searched quotations (a bulk load) links
    nothing when it commits."""
    quote_search(story)
    batch = [article("c-copy", "2020-03-06", "Wire", QUOTE)]
    index_articles(story, [article_from_mapping(a) for a in batch], enricher=TagEnricher())
    assert qc.wait_for_links(story, timeout=30)
    saved = (story.path / qc.LINKS_FILE).read_bytes()

    why = "linked at the first quote search, not after the commit"
    with linking_forbidden(monkeypatch, why):
        hits = quote_search(story, q="farmers fair price wheat", per_page=50).hits
    assert len({h.cluster for h in hits if not h.article_id.startswith("other-")}) == 1
    assert "c-copy" in {h.article_id for h in hits} and hits[0].cluster_articles == 5
    assert qc.clusters_for(story).how == "incremental"
    story.delete("c-copy")
    assert qc.wait_for_links(story, timeout=30)
    assert (story.path / qc.LINKS_FILE).read_bytes() != saved  # the deletion's state, saved
    with linking_forbidden(monkeypatch, why):
        hits = quote_search(story, q="farmers fair price wheat", per_page=50).hits
    assert "c-copy" not in {h.article_id for h in hits} and hits[0].cluster_articles == 4
    # a process that never searched quotations: nothing linked, nothing saved at commit
    loader = WhooshStore(story.path, create=False, background_merges=False)
    before = (story.path / qc.LINKS_FILE).read_bytes()
    index_articles(loader, [article_from_mapping(a) for a in batch], enricher=TagEnricher())
    assert (story.path / qc.LINKS_FILE).read_bytes() == before
    assert qc._CACHES.get(loader) is None


def test_a_warmed_worker_links_the_states_another_process_commits_in_the_background(
    story, monkeypatch
):
    """A server worker that did not commit (another worker did) has the new state's
    clusters linked after its refresher warmed that state (in the linking thread, once no
    search has run for a moment), from the previous state's, before its first quote
    search asks for them."""
    import time

    from newsquarry.search.query.searching import warm_up

    warm_up(story)  # a server worker: it searched quotations, so it links later states
    other = WhooshStore(story.path, create=False, background_merges=False)
    try:
        batch = [article("d-copy", "2020-03-07", "Gazette", QUOTE)]
        index_articles(other, [article_from_mapping(a) for a in batch], enricher=TagEnricher())
        generation = other.generation
    finally:
        other.close()
    started = time.monotonic()
    while story.refresher.warmed_generation < generation:  # set once its warm returned
        assert time.monotonic() - started < 20, "the new state was not warmed"
        time.sleep(0.02)
    assert qc.wait_for_links(story, timeout=20), "the new state was not linked"

    with linking_forbidden(monkeypatch, "linked at the first quote search, not by the refresher"):
        hits = quote_search(story, q="farmers fair price wheat", per_page=50).hits
    assert "d-copy" in {h.article_id for h in hits}
    assert len({h.cluster for h in hits if not h.article_id.startswith("other-")}) == 1
    story.close()


def test_a_servers_warm_up_sorts_the_buckets_its_commits_look_values_up_in(story):
    """``warm_up`` leaves every segment's LSH buckets sorted, so the links made in a later
    commit look values up in them (not a scan, and no sort of every segment then)."""
    from newsquarry.search.query.searching import warm_up

    warm_up(story)
    cache = qc._CACHES[story]
    assert cache.segments and all(d.bands is not None for d in cache.segments.values())
    index_articles(story, [article_from_mapping(article("c-copy", "2020-03-06", "Wire", QUOTE))],
                   enricher=TagEnricher())  # fmt: skip
    c = qc.clusters_for(story)
    assert c.how == "incremental" and c.articles[c.label[c.qdocs]].max() == 5


# -- incremental linking: every state equals linking it from scratch -------------------


def over_buckets(pairs) -> dict[tuple[int, int], list[int]]:
    """The buckets beyond MAX_RUN of ``Pairs`` or ``Links``: (band, value) -> members."""
    ends = np.cumsum(pairs.over_len)
    return {
        (int(b), int(v)): sorted(pairs.over_members[e - n : e].tolist())
        for b, v, n, e in zip(pairs.over_band, pairs.over_val, pairs.over_len, ends, strict=True)
    }


def relink_pool(rng: random.Random) -> tuple[qc.QuoteData, np.ndarray]:
    """A pool of edited, re-carried quotations (740) and a first-seen order over it."""
    bases = [sentence(rng, rng.randint(8, 30)) for _ in range(25)]
    records = []
    for n in range(700):
        w = rng.choice(bases[:3]) if rng.random() < 0.15 else rng.choice(bases)
        edit = rng.choice([None, *EDITS])
        text = " ".join(w) if edit is None or len(w) < 14 else EDITS[edit](rng, w)
        if rng.random() < 0.3:
            text += f" by {rng.choice(['5', '7.5', 'ten'])} pct"
        speaker = rng.choice(["", "Ana Ruiz", "Ruiz", "Juan Guaido"])
        records.append((n, text, speaker, f"q{n}", rng.choice(["direct", "indirect"])))
    for n in range(40):  # one quotation carried by 40 articles
        records.append((700 + n, " ".join(bases[0]), "", f"w{n}", "direct"))
    pool = qsigs.compute(records)
    order = np.array(rng.sample(range(len(records)), len(records)))  # first-seen order
    return pool, order


def test_relinking_from_an_earlier_state_equals_linking_from_scratch():
    """``relink`` (only what changed) against ``pairs_full`` over random states of one
    pool: quotations come and go in random order, one common quotation is carried more
    than MAX_RUN times (its buckets say nothing until deletions shrink them); and the
    clusters re-grouped from the earlier state's (``reassign``) against ``founders``."""
    rng = random.Random(2323)
    pool, order = relink_pool(rng)
    records = pool.ids
    keys = qlinks.quote_keys(pool)
    dates = np.array([20200301 + rng.randrange(20) for _ in records])
    live = set(rng.sample(range(len(records)), 300)) | set(range(700, 740))
    base = None
    regrouped = 0
    for step in range(14):
        if step:
            out = rng.sample(sorted(live), rng.choice([1, 3, 12]))
            if step % 4 == 0:  # most of the carried quotation goes: its buckets shrink
                out += [i for i in range(700, 740) if i in live][:30]
            live -= set(out)
            live |= set(rng.sample(range(len(records)), rng.choice([1, 5, 40])))
        idx = np.array(sorted(live))
        rank = np.argsort(np.argsort(order[idx]))
        sub = (pool.sig[idx], pool.nsh[idx], [pool.speakers[i] for i in idx],
               [pool.figures[i] for i in idx])  # fmt: skip
        full = qc.pairs_full(*sub, rank)
        founder = qc.founders(len(idx), full, rank, dates[idx], pool.indirect[idx])
        if base is not None:
            got = qc.relink(base, keys[idx], *sub, rank)
            assert got is not None
            pairs, added, removed = got
            for name in ("lo", "hi", "mask", "ok"):
                assert np.array_equal(getattr(pairs, name), getattr(full, name)), (step, name)
            assert over_buckets(pairs) == over_buckets(full)
            args = (len(idx), pairs, rank, dates[idx], pool.indirect[idx])
            assert np.array_equal(
                qlinks.assign(*args),
                qlinks.assign(len(idx), full, rank, dates[idx], pool.indirect[idx]),
            )
            again = qc.reassign(len(idx), base.founder, pairs, rank, dates[idx], pool.indirect[idx])
            assert np.array_equal(again, founder), step
            regrouped += int((founder != np.arange(len(idx))).sum())
        base = qc.keyed(full, keys[idx], pool.nsh[idx], founder)
    assert full.ok.sum() > 20 and len(full.over_val)  # the pool did exercise both
    assert regrouped > 50


@functools.cache
def _pool() -> tuple[qc.QuoteData, np.ndarray, np.ndarray]:
    rng = random.Random(77)
    pool, order = relink_pool(rng)
    return pool, order, np.array([20200301 + rng.randrange(30) for _ in pool.ids])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2**32), st.sampled_from([1, 2, 7, 30])), min_size=2,
                max_size=6))  # fmt: skip
def test_regrouping_what_changed_equals_grouping_from_scratch(steps):
    """Any sequence of states (quotations added and removed in random numbers): the
    clusters kept from the previous state's (``relink`` then ``reassign``) are those made
    from scratch (``pairs_full`` then ``founders``), and so are the saved tables
    (``keyed``: keys, pairs, founders) of each state."""
    pool, order, dates = _pool()
    keys = qlinks.quote_keys(pool)
    live: set[int] = set()
    base = None
    for seed, size in steps:
        rng = random.Random(seed)
        live -= set(rng.sample(sorted(live), min(len(live), size // 2)))
        live |= set(rng.sample(range(len(pool.ids)), size * 8))
        idx = np.array(sorted(live))
        rank = np.argsort(np.argsort(order[idx]))
        sub = (pool.sig[idx], pool.nsh[idx], [pool.speakers[i] for i in idx],
               [pool.figures[i] for i in idx])  # fmt: skip
        flags = pool.indirect[idx]
        full = qc.pairs_full(*sub, rank)
        founder = qc.founders(len(idx), full, rank, dates[idx], flags)
        want = qc.keyed(full, keys[idx], pool.nsh[idx], founder)
        if base is not None:
            got = qc.relink(base, keys[idx], *sub, rank)
            if got is not None:  # None: so much changed that linking from scratch is cheaper
                pairs = got[0]
                again = qc.reassign(len(idx), base.founder, pairs, rank, dates[idx], flags)
                assert np.array_equal(again, founder)
                kept = qc.keyed(pairs, keys[idx], pool.nsh[idx], again)
                for name in ("keys", "pi", "pj", "mask", "ok", "founder"):
                    assert np.array_equal(getattr(kept, name), getattr(want, name)), name
                assert over_buckets(kept) == over_buckets(want)
        base = want


def cluster_map(store) -> dict[str, str]:
    """Every live quotation's id -> its cluster's public id."""
    c = qc.clusters_for(store)
    labels = c.label[c.qdocs]
    return {qid: c.public_id(int(labels[i])) for i, qid in enumerate(c.ids)}


def from_scratch(store) -> dict[str, str]:
    """The same index state's clusters linked from scratch (no earlier links)."""
    from newsquarry.search.engine.views import cache_for, leaves_of

    s = store.searcher()
    cache = qc.ClusterCache(None)
    leaves = leaves_of(s)
    c = qc.Clusters(cache_for(store).view(s), [(off, cache._segment(r)) for r, off in leaves])
    assert c.how == "full"
    labels = c.label[c.qdocs]
    return {qid: c.public_id(int(labels[i])) for i, qid in enumerate(c.ids)}


@pytest.mark.parametrize("seed", [1, 2])
def test_clusters_after_incremental_commits_equal_clusters_made_at_once(tmp_path, seed):
    """Random commits of new articles, deletions and articles indexed again (another
    date, another wording), a merge and new processes: each state's incrementally kept
    clusters equal that state's linked from scratch, and at the end those of a new index
    of the same articles made in one commit."""
    from newsquarry.search.engine.merging import merge_once, merge_tiered

    rng = random.Random(seed)
    bases = [sentence(rng, rng.randint(12, 24)) for _ in range(5)]

    def make(aid: str) -> dict:
        w = rng.choice(bases[:1] * 3 + bases)
        edit = rng.choice([None, None, *EDITS])
        text = " ".join(w) if edit is None else EDITS[edit](rng, w)
        day = rng.randint(1, 20)
        return article(aid, f"2020-03-{day:02d}", rng.choice(["Wire", "Post"]),
                       text.strip("“”\"'‘’«»,"), rng.choice(["Ana Ruiz", "Juan Guaidó"]))  # fmt: skip

    store = WhooshStore(tmp_path / "ix", background_merges=False)
    current: dict[str, dict] = {}
    hows = []
    for step in range(10):
        if step in (4, 8):  # another process, which writes before it links: it starts
            # from the links the last one saved, of the state before these writes
            store = WhooshStore(tmp_path / "ix", background_merges=False)
        batch = [make(f"n{step}-{i}") for i in range(rng.choice([1, 2, 8]))]
        if current and step % 3 == 2:  # indexed again: a new date or a new wording
            batch.append(make(rng.choice(sorted(current))))
        if step in (3, 7):  # indexed again unchanged but for an earlier date: the
            # first-seen copy of its buckets changes
            again = dict(current[max(current, key=lambda a: current[a]["date"])])
            again["date"] = "2020-02-28"
            batch.append(again)
        index_articles(store, [article_from_mapping(a) for a in batch], enricher=TagEnricher())
        current.update((a["id"], a) for a in batch)
        for aid in rng.sample(sorted(current), min(len(current) - 1, rng.choice([0, 1, 2]))):
            store.delete(aid)
            del current[aid]
        if step == 6:
            store.merge_policy = merge_tiered(factor=2, floor_docs=5)
            assert merge_once(store)
        got = cluster_map(store)
        hows.append(qc.clusters_for(store).how)
        assert got == from_scratch(store), step
    # never linked from scratch after the first state. Where a new store starts (steps 4
    # and 8) the first store, still open, may have linked and saved the new state in the
    # background before this one asks ("saved"): the same links, made incrementally there
    assert hows[0] == "full", hows
    assert all(h == "incremental" for i, h in enumerate(hows) if i and i not in (4, 8)), hows
    assert all(hows[i] in ("incremental", "saved") for i in (4, 8)), hows
    assert len(set(got.values())) < len(got)  # some quotations did cluster
    fresh = build(tmp_path / "fresh", [list(current.values())])
    assert cluster_map(fresh) == got


@pytest.mark.parametrize("damage", ["half", "zero", "block", "delete", "other rules", "older"])
def test_saved_links_are_derived_data(tmp_path, damage):
    """The saved links (``LINKS_FILE``) damaged, missing or made under other rules: the
    clusters are linked from scratch, the same; an intact file of an earlier state is
    a valid start for the links of this one."""
    arts = [article("a-late", "2020-03-05", "Daily Post", QUOTE),
            article("a-first", "2020-03-01", "Wire", QUOTE.replace("agreement", "deal")),
            ] + other_articles(6)  # fmt: skip
    store = build(tmp_path / "ix", [arts])
    quote_search(store)
    links = store.path / qc.LINKS_FILE
    older = links.read_bytes()  # the links of the first state
    index_articles(store, [article_from_mapping(article("b-cut", "2020-03-07", "Post",
                                                        QUOTE.split(" that ")[1]))],
                   enricher=TagEnricher())  # fmt: skip
    want = cluster_map(store)
    assert qc.clusters_for(store).how == "incremental"
    assert len(set(want.values())) == len(want) - 2  # three copies, one cluster
    copy = tmp_path / "copy"
    shutil.copytree(store.path, copy)
    path = copy / qc.LINKS_FILE
    size = path.stat().st_size
    if damage == "half":
        os.truncate(path, size // 2)
    elif damage == "zero":
        os.truncate(path, 0)
    elif damage == "block":  # every byte of a block in the middle changed
        with open(path, "r+b") as fh:
            fh.seek(size // 2 - 512)
            block = fh.read(1024)
            fh.seek(size // 2 - 512)
            fh.write(bytes(b ^ 0xFF for b in block))
    elif damage == "delete":
        path.unlink()
    elif damage == "other rules":
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["rules"] = np.array("other rules")
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
    else:
        path.write_bytes(older)
    again = WhooshStore(copy, create=False, background_merges=False)
    assert cluster_map(again) == want
    assert qc.clusters_for(again).how == ("incremental" if damage == "older" else "full")
    # saved again: the next process reads this state's links as they are
    third = WhooshStore(copy, create=False, background_merges=False)
    assert cluster_map(third) == want and qc.clusters_for(third).how == "saved"


def test_signatures_keep_their_values_across_versions():
    """Saved signatures (``.qmh``) stay valid only while the seeded hashes are the same:
    the values of a fixed input, as the first version computed them."""
    s = qsigs.signatures(np.array([1, 2, 3, 99, 2**40], dtype=np.uint64), np.array([3, 0, 2]))
    assert s[:, :4].tolist() == [
        [1676292126, 123496615, 13711208, 115153826],
        [4294967295, 4294967295, 4294967295, 4294967295],
        [2168529526, 2513272898, 1899433698, 1708624453],
    ]
    assert int(s.sum()) == 432116062000

"""Ranking: natural-language queries on the seed article, grouping by article, statistics
that do not depend on segment history, interpretations and did-you-mean.

Relevant seed passages are named by hand from the article's text (not from the engine).
"""

from __future__ import annotations

import random

import pytest
from conftest import PassThrough, annotate, build, seed_items
from whoosh import query as wq

from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.searching import run_search

SEED = "000_e23b3335c9472580"


def top(store, q, n=1, **kw):
    r = run_search(store, SearchRequest(q=q, per_page=max(n, 10), **kw))
    return [h.id.split("#")[1] for h in r.hits[:n]], r


# -- the queries of issue 15 on the seed article ----------------------------------


@pytest.mark.parametrize(
    ("q", "relevant"),
    [
        # p4 (soldiers ... torture you), p10 (tortured by DCGIM), p19 (in Venezuela ... torture)
        ("soldiers tortured in Venezuela", {"p4", "p10", "p19"}),
        # p18: "My escape in Colombia was like a movie"
        ("Venezuelan soldiers escape to Colombia", {"p18"}),
        # p17: sergeant major of the Venezuelan army who resigned in protest
        ("army deserters", {"p17"}),
    ],
)
def test_plain_questions_find_the_relevant_passage_first(seed_index, q, relevant):
    got, r = top(seed_index, q)
    assert r.total > 0
    assert got[0] in relevant


def test_what_did_trump_say_finds_his_quote_and_offers_the_quotes_view(seed_index):
    got, r = top(seed_index, "what did Trump say about Venezuela", n=3)
    assert r.total > 0
    assert got[0] == "p16"  # "... said Donald Trump in a speech"
    quotes = [i for i in r.interpretations if i.kind == "quotes"]
    assert quotes and quotes[0].value == "Donald Trump" and quotes[0].mode == "quotes"
    assert quotes[0].label.startswith("Quotes by Donald Trump")
    follow = run_search(
        seed_index,
        SearchRequest(q=quotes[0].q, mode="quotes", filters={"speaker": ["Donald Trump"]}),
    )
    assert follow.total == quotes[0].count > 0
    assert {h.speaker for h in follow.hits} == {"Donald Trump"}
    # offered, never applied: the query itself ran unchanged
    assert r.request.q == "what did Trump say about Venezuela" and not r.request.filters


def test_a_surname_is_offered_as_the_persons_filter(seed_index):
    r = run_search(seed_index, SearchRequest(q="Solano torture"))
    person = [i for i in r.interpretations if i.facet == "person"]
    assert person and person[0].value == "Harry Solano" and person[0].q == "torture"
    follow = run_search(
        seed_index, SearchRequest(q="torture", filters={"person": ["Harry Solano"]})
    )
    assert follow.total == person[0].count
    # a value already selected is not offered again
    again = run_search(
        seed_index, SearchRequest(q="Solano torture", filters={"person": ["Harry Solano"]})
    )
    assert not [i for i in again.interpretations if i.facet == "person"]


def test_no_stop_word_decides_and_a_question_mark_is_punctuation(seed_index):
    _, plain = top(seed_index, "escape Colombia")
    _, question = top(seed_index, "did they escape to Colombia?")
    assert {h.id for h in question.hits} == {h.id for h in plain.hits}
    assert question.total == plain.total


# -- group=article -----------------------------------------------------------------


def test_group_article_gives_one_hit_per_article_with_its_others(corpus_store):
    flat = run_search(corpus_store, SearchRequest(q="Venezuela Guaido", per_page=100))
    grouped = run_search(
        corpus_store, SearchRequest(q="Venezuela Guaido", per_page=100, group="article")
    )
    articles = {h.article_id for h in flat.hits}
    assert grouped.total == flat.total  # passages, exact in both forms
    assert grouped.total_articles == flat.total_articles == len(articles) >= 2
    # articles in the order of their own score (shown as the hit's score), each once
    assert sorted(h.article_id for h in grouped.hits) == sorted(articles)
    scores = [h.score for h in grouped.hits]
    assert scores == sorted(scores, reverse=True)
    for h in grouped.hits:
        same = [x.id for x in flat.hits if x.article_id == h.article_id]
        assert h.id == same[0]  # the best passage
        assert h.more_ids == same[1:] and h.more_count == len(same) - 1
    assert grouped.total_pages == 1


def test_group_article_pages_are_exact(corpus_store):
    full = run_search(
        corpus_store, SearchRequest(q="Venezuela Guaido", per_page=100, group="article")
    )
    pages = []
    for page in range(1, full.total_articles + 1):
        r = run_search(
            corpus_store,
            SearchRequest(q="Venezuela Guaido", per_page=1, page=page, group="article"),
        )
        assert r.total_pages == full.total_articles
        pages += [h.id for h in r.hits]
    assert pages == [h.id for h in full.hits]


def test_group_article_ranks_articles_by_their_own_evidence(tmp_path):
    """A story about the query's topic outranks a roundup with one passage that
    mentions it, though that passage alone is the best-matching passage."""
    topic = Article(
        id="topic",
        title="Producers meet in London",
        text="\n\n".join(
            [
                "Coffee producers met in London to discuss export quotas for the year.",
                "Brazil wants a larger share of the coffee quotas than last season.",
                "Colombia said export quotas should follow past coffee shipments.",
                "Consumers asked producers to agree on quotas before the market moves.",
            ]
        ),
    )
    roundup = Article(
        id="roundup",
        title="Markets roundup",
        text="\n\n".join(
            [
                "Shares rose in Tokyo and fell in Frankfurt on profit taking by dealers.",
                "Coffee export quotas: coffee export quotas.",
                "The dollar was steady against the yen and the mark in quiet trading.",
                "Oil prices eased after a report of higher stocks in the United States.",
                "Gold was little changed in Zurich, dealers in the metal said today.",
            ]
        ),
    )
    store = build(tmp_path / "ix", [(a, split_passages(a, min_chars=10)) for a in (topic, roundup)])
    flat = run_search(store, SearchRequest(q="coffee export quotas", per_page=20))
    grouped = run_search(store, SearchRequest(q="coffee export quotas", group="article"))
    assert flat.hits[0].id == "roundup#p2"  # the best single passage
    assert [h.article_id for h in grouped.hits] == ["topic", "roundup"]
    best_topic = next(h.id for h in flat.hits if h.article_id == "topic")
    assert grouped.hits[0].id == best_topic  # shown by its best passage
    assert grouped.hits[0].more_count == 3


def test_a_title_counts_once_per_article(tmp_path, monkeypatch):
    """The title scores in the article's score, once per article, with df over
    articles: an article cut into many passages does not weigh its title words more."""
    from math import log

    from newsquarry.search.query import feedback

    monkeypatch.setattr(feedback, "ENABLED", False)  # the article's score as computed here

    long_text = "\n\n".join(f"Rain fell on the farms of the valley {k}." for k in range(6))
    x = Article(id="x", title="Sugar", text="Sugar crop fell.")
    y = Article(id="y", title="Sugar", text=long_text)  # six passages, no sugar in the text
    z = Article(id="z", title="Rain", text="Sugar prices rose.")
    store = build(tmp_path / "ix", [(a, split_passages(a, min_chars=10)) for a in (x, y, z)])
    assert store.stats()["passages"] == 8
    r = run_search(store, SearchRequest(q="sugar", group="article"))
    assert [h.article_id for h in r.hits] == ["x", "z"]  # y's passages lack the word

    def bm25(idf, tf, dl, avg):
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avg))

    s = store.searcher()
    text_len = {a: 0 for a in "xyz"}
    for n in s.docs_for_query(wq.Term("doctype", "passage")):
        text_len[s.stored_fields(n)["article_id"]] += s.doc_field_length(n, "text", 0)
    avg_text = sum(text_len.values()) / 3
    text_idf = log(3 / (2 + 1)) + 1  # 2 of 3 articles hold "sugar" in their text
    title_idf = log(3 / (2 + 1)) + 1  # 2 of 3 articles (not 7 of 8 passages) in their title
    # titles are one word each (mean 1); the title weight holds its field boost (2.0)
    want_x = bm25(text_idf, 1, text_len["x"], avg_text) + bm25(title_idf, 2.0, 1, 1)
    want_z = bm25(text_idf, 1, text_len["z"], avg_text)
    assert r.hits[0].score == pytest.approx(want_x, rel=1e-3)
    assert r.hits[1].score == pytest.approx(want_z, rel=1e-3)


def test_feedback_ranks_the_story_sharing_the_top_stories_words_higher(tmp_path, monkeypatch):
    """RM3 (``query.feedback``): of two stories naming the query word once, the one that
    also uses the words of the best stories about it ranks first; what matches (totals)
    does not change."""
    from newsquarry.search.query import feedback

    about = [
        Article(id=f"coffee{k}", title="Coffee", text=f"Coffee producers and the ICO discussed "
                f"export quotas for coffee in meeting {k}; coffee quotas lapsed.")
        for k in range(3)
    ]  # fmt: skip
    other = Article(id="a-other", title="Markets", text="Coffee was quiet; dealers "
                    "watched the dollar.")  # fmt: skip
    sharing = Article(id="z-sharing", title="Markets", text="Coffee was quiet; producers "
                      "watched the ICO and its export quotas in thin trading.")  # fmt: skip
    arts = [*about, other, sharing]
    store = build(tmp_path / "ix", [(a, split_passages(a, min_chars=10)) for a in arts])
    req = SearchRequest(q="coffee", group="article", per_page=10)
    monkeypatch.setattr(feedback, "ENABLED", False)
    plain = run_search(store, req)
    monkeypatch.setattr(feedback, "ENABLED", True)
    fed = run_search(store, req)
    before = [h.article_id for h in plain.hits]
    order = [h.article_id for h in fed.hits]
    assert before.index("a-other") < before.index("z-sharing")  # shorter: BM25 prefers it
    assert order.index("z-sharing") < order.index("a-other")
    assert fed.total == plain.total and fed.total_articles == plain.total_articles == 5


# -- statistics independent of segment history ------------------------------------

WORDS = (
    "oil coffee quota bank rates dollar yen wheat harvest strike port talks minister "
    "profit shares stake takeover gold mine copper sugar crop cocoa growth inflation prices "
    "exports imports deficit surplus reserves currency market fell rose record forecast"
).split()


def _articles(n=60) -> list[Article]:
    rnd = random.Random(15)
    out = []
    for k in range(n):
        paras = [
            " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(12, 40))) + "."
            for _ in range(rnd.randint(1, 4))
        ]
        title = " ".join(rnd.choice(WORDS) for _ in range(4)) if k % 3 else ""
        out.append(Article(id=f"a{k:03d}", title=title, text="\n\n".join(paras),
                           synthetic_title=not title))  # fmt: skip
    return out


def _index(path, articles, runs: int, optimize: bool = False) -> WhooshStore:
    # no merges: each run stays a segment of its own, which is the history under test
    from whoosh.writing import NO_MERGE

    store = WhooshStore(path, background_merges=False)
    store.merge_policy = NO_MERGE
    step = -(-len(articles) // runs)
    for i in range(0, len(articles), step):
        chunk = articles[i : i + step]
        index_articles(store, chunk, enricher=PassThrough(), commit_every=10_000)
    if optimize:
        store.ix.optimize()
    return store


def _with_titles(articles: list[Article]) -> list[Article]:
    for a in articles:
        if a.synthetic_title:
            a.title = a.text.split("\n")[0][:40]
    return articles


def test_scores_do_not_depend_on_segment_history(tmp_path):
    articles = _with_titles(_articles())
    one = _index(tmp_path / "one", articles, 1)
    ten = _index(tmp_path / "ten", articles, 10)
    opt = _index(tmp_path / "opt", articles, 10, optimize=True)
    # replaced articles leave deleted documents behind until a merge
    upd = _index(tmp_path / "upd", articles, 10)
    index_articles(upd, articles[:20], enricher=PassThrough(), force=True)
    assert len(ten.ix._segments()) > 1 and len(opt.ix._segments()) == 1
    rnd = random.Random(7)
    queries = [" ".join(rnd.sample(WORDS, rnd.randint(1, 4))) for _ in range(50)]
    for q in queries:
        for match, group in (("most", "none"), ("all", "none"), ("most", "article")):
            want = run_search(one, SearchRequest(q=q, per_page=20, match=match, group=group))
            for other in (ten, opt, upd):
                got = run_search(other, SearchRequest(q=q, per_page=20, match=match, group=group))
                assert got.total == want.total
                assert [(h.id, h.score) for h in got.hits] == [
                    (h.id, h.score) for h in want.hits
                ], (q, match, group)


# -- artefacts ---------------------------------------------------------------------


def test_an_untitled_article_has_no_title_to_rank(tmp_path):
    from newsquarry.search.ingest.readers import article_from_mapping

    a = article_from_mapping(
        {"id": "u", "text": "Coffee quota talks opened today.\n\nLater, the coffee quota failed."}
    )
    b = article_from_mapping(
        {"id": "t", "title": "Markets", "text": "Opened today.\n\nThe coffee quota failed again."}
    )
    store = build(tmp_path / "ix", [(x, split_passages(x, min_chars=10)) for x in (a, b)])
    # plain BM25F (match=all/any): in "most" mode each article's own score adds too
    r = run_search(store, SearchRequest(q="coffee OR quota OR talks", per_page=10, match="all"))
    hits = {h.id: h for h in r.hits}
    assert hits["u#p1"].title == "Coffee quota talks opened today."  # still shown
    # u's second passage is ranked by its own words only: same words, same score as t's
    assert hits["u#p2"].score == pytest.approx(hits["t#p2"].score, rel=1e-4)


def test_quoted_words_count_once(seed_store):
    """A passage's quotation is part of its text: its words rank once, not again as quote."""
    seed = seed_items()[1]
    quoted = next(p for p in seed if p.quotes)
    word = quoted.quotes[0].text.split()[-1].strip(".,\"'")
    r = run_search(seed_store, SearchRequest(q=word, per_page=50, match="all"))
    by_text = run_search(seed_store, SearchRequest(q=f"text:{word}", per_page=50, match="all"))
    assert [(h.id, h.score) for h in r.hits] == [(h.id, h.score) for h in by_text.hits]


# -- did you mean ------------------------------------------------------------------


def test_did_you_mean_is_frequency_aware(tmp_path):
    arts = [Article(id=f"v{k}", title="Fed", text=f"Paul Volcker spoke about rates {k}.")
            for k in range(25)]  # fmt: skip
    arts += [Article(id="w1", title="Fed", text="Volker wrote about rates.")]
    arts += [Article(id=f"i{k}", title="Rates", text=f"Interest rates rose {k}.") for k in range(5)]
    store = build(tmp_path / "ix", [(a, split_passages(a)) for a in arts])
    r = run_search(store, SearchRequest(q="Volker"))
    assert r.total == 1
    assert r.suggestion == "Volcker" and r.suggestion_total == 25
    r = run_search(store, SearchRequest(q="intrest rates", match="all"))
    assert r.total == 0 and r.suggestion == "interest rates" and r.suggestion_total == 5
    # a word as common as its neighbours gets no suggestion
    r = run_search(store, SearchRequest(q="Volcker"))
    assert r.suggestion is None


def test_totals_and_facets_are_exact_for_the_default_mode(corpus_store):
    """Whatever ``most`` matches is counted exactly: the total is the number of hits
    and each facet count the number of hits holding the value."""
    from collections import Counter

    r = run_search(
        corpus_store,
        SearchRequest(q="the guard of Caracas and Colombia", per_page=100, facets=["person"]),
    )
    assert 0 < r.total == len(r.hits)
    held = Counter(
        n for h in r.hits for n in {e["name"] for e in h.entities if e["type"] == "person"}
    )
    from newsquarry.search.core.textnorm import fold

    held = Counter({fold(k): v for k, v in held.items()})
    assert {fold(v.value): v.count for v in r.facets["person"].values} == dict(held)
    assert r.total_articles == len({h.article_id for h in r.hits})


# -- interpretations look up only the keys that contain the query's words ---------------


NAMES = {
    "Mary O'Brien": "person", "Jean-Claude Juncker": "person", "Al Gore": "person",
    "Gore Vidal": "person", "Bank of England": "org", "The Who": "org", "Gore": "place",
    "New York": "place", "York": "place",
}  # fmt: skip


def test_names_restricted_to_a_word_equal_the_full_table(tmp_path):
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.interpret import _WORD, STOP_WORDS, _names

    text = "\n\n".join(
        f"Passage {i} is about {n} and more words here." for i, n in enumerate(NAMES)
    )
    a = Article(id="names", title="Names", text=text, date="2020-01-01")
    store = build(
        tmp_path / "ix",
        [(a, annotate(split_passages(a, min_chars=10), {n: (n, t) for n, t in NAMES.items()}, []))],
    )
    view = cache_for(store).view(store.searcher())
    for facet in ("person", "org", "place"):
        full: dict = {}  # every key's runs, as the table was built before it was restricted
        for gid, key in enumerate(view.keys[facet]):
            words = tuple(_WORD.findall(key))
            runs = [words] + (
                [words[i:] for i in range(1, len(words))] if facet == "person" else []
            )
            for run in runs:
                if not all(w in STOP_WORDS for w in run):
                    full.setdefault(run, []).append(gid)
        assert full
        for run, gids in full.items():
            assert _names(view, facet, run[-1]).get(run) == gids, (facet, run)
    r = run_search(store, SearchRequest(q="Brien passage"))
    assert [(i.facet, i.value, i.q) for i in r.interpretations] == [
        ("person", "Mary O'Brien", "passage")
    ]
    r = run_search(store, SearchRequest(q="gore words"))
    assert {(i.facet, i.value) for i in r.interpretations} == {
        ("person", "Al Gore"), ("place", "Gore")
    }  # fmt: skip
    # a commit adds a person: the next view's table (extended, not rebuilt) knows her, and
    # the surname now names two people: no longer offered alone (issue 34)
    b = Article(id="more", title="More", text="Ann Gore spoke, and more words.", date="2020-01-02")
    ann = {"Ann Gore": ("Ann Gore", "person")}
    with store.writer() as w:
        w.put(b, annotate(split_passages(b, min_chars=10), ann, []))
    r = run_search(store, SearchRequest(q="gore words"))
    assert {(i.facet, i.value) for i in r.interpretations} == {("place", "Gore")}
    r = run_search(store, SearchRequest(q="Ann Gore words"))
    assert ("person", "Ann Gore") in {(i.facet, i.value) for i in r.interpretations}


def test_a_warmed_up_servers_word_index_offers_what_a_scan_of_the_keys_offers(tmp_path):
    """``warm_up`` (a server) keeps an index of the name keys' words; a one-shot
    process scans the keys. Both offer the same interpretations, in the same order."""
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.interpret import WORD_INDEX
    from newsquarry.search.query.searching import warm_up

    build(tmp_path / "ix", [seed_items()]).close()
    queries = ["Solano torture", "what did Trump say about Venezuela", "Maduro army",
               "Venezuela", "Guaido soldiers", "Colombia escape"]  # fmt: skip

    def offered(store):
        return [
            [
                (i.kind, i.facet, i.value, i.q, i.count)
                for i in run_search(store, SearchRequest(q=q)).interpretations
            ]
            for q in queries
        ]

    scanning = WhooshStore(tmp_path / "ix")
    indexed = WhooshStore(tmp_path / "ix")
    try:
        scanned = offered(scanning)
        warm_up(indexed)
        registries = cache_for(indexed).registries
        assert all(
            WORD_INDEX in registries[f].derived for f in ("person", "org", "place", "speaker")
        )
        assert WORD_INDEX not in cache_for(scanning).registries["person"].derived
        assert offered(indexed) == scanned
        assert any(scanned)  # the seed article's names are offered at all
    finally:
        scanning.close()
        indexed.close()

"""Hits: highlights, quote search, sorting, paging, suggestions, time limits, validation."""

from __future__ import annotations

import json

import pytest
from whoosh import query as wq

from newsquarry.search.core.errors import InvalidRequest, SearchTimeout
from newsquarry.search.core.models import Article, Entity, Passage
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.query.searching import run_search

from .conftest import QUOTES, seed_items


def marked(hit):
    return [hit.text[s : s + n] for s, n in hit.matches]


def test_highlight_folded_forms(seed_store):
    r = run_search(seed_store, SearchRequest(q="Guaido", per_page=50))
    assert r.hits
    for h in r.hits:
        words = marked(h)
        assert words and all(fold(w) == "guaido" for w in words)
        assert "<mark>Guaidó</mark>" in h.snippet


def test_highlight_stemmed_forms(seed_store):
    r = run_search(seed_store, SearchRequest(q="text:tortured", per_page=50))
    words = {w for h in r.hits for w in marked(h)}
    assert {"torture", "tortured"} <= words
    assert all(w.lower().startswith("tortur") for w in words)


def test_highlight_prefix_fuzzy_and_not(seed_store):
    r = run_search(seed_store, SearchRequest(q="text:defect*", per_page=50))
    assert {w.lower() for h in r.hits for w in marked(h)} == {"defectors", "defections"}
    r = run_search(seed_store, SearchRequest(q="Alvarnga~", per_page=50))
    assert {w for h in r.hits for w in marked(h)} == {"Alvarenga"}
    # negated words are not marked
    r = run_search(seed_store, SearchRequest(q="Maduro NOT Colombia", per_page=50))
    assert {w for h in r.hits for w in marked(h)} == {"Maduro"}


def test_snippet_is_escaped_html(fresh_store):
    a = Article(
        id="xss",
        title="Script",
        text='He wrote <script>alert("torture")</script> & left the torture room.',
    )
    p = Passage(id="xss#p1", article_id="xss", position=1, start=0, end=len(a.text), text=a.text)
    with fresh_store.writer() as w:
        w.put(a, [p])
    hit = run_search(fresh_store, SearchRequest(q="torture")).hits[0]
    assert "<script>" not in hit.snippet
    assert "&lt;script&gt;" in hit.snippet and "&amp;" in hit.snippet
    assert hit.snippet.count("<mark>torture</mark>") == 2
    # offsets point into the raw text
    assert marked(hit) == ["torture", "torture"]


def test_snippet_window_on_long_passage(fresh_store):
    text = " ".join(["filler"] * 120) + " the needle is here " + " ".join(["filler"] * 120)
    a = Article(id="long", title="Long", text=text)
    p = Passage(id="long#p1", article_id="long", position=1, start=0, end=len(text), text=text)
    with fresh_store.writer() as w:
        w.put(a, [p])
    hit = run_search(fresh_store, SearchRequest(q="needle")).hits[0]
    assert "<mark>needle</mark>" in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet) < 400
    no_hl = run_search(fresh_store, SearchRequest(q="needle", highlight=False)).hits[0]
    assert no_hl.snippet is None and no_hl.matches == []


@pytest.mark.parametrize("speaker", sorted({s for _, _, s, _ in QUOTES}))
def test_quote_search_for_each_speaker(seed_store, speaker):
    surname = speaker.split()[-1]
    r = run_search(seed_store, SearchRequest(q=f"speaker:{surname}", mode="quotes", per_page=50))
    expected = sorted(words for _, words, s, _ in QUOTES if s == speaker)
    assert sorted(h.text for h in r.hits) == expected
    assert {h.speaker for h in r.hits} == {speaker}
    for h in r.hits:
        assert h.passage_id.startswith(h.article_id + "#p")
        assert h.kind in ("direct", "partial", "indirect")
        assert h.title and h.title.startswith('"They will torture you"')


def test_what_did_alvarenga_say_about_torture(seed_store):
    r = run_search(seed_store, SearchRequest(q="speaker:alvarenga torture", mode="quotes"))
    assert [h.text for h in r.hits] == [
        (
            "Unfortunately, in Venezuela, if they catch you, they will torture you physically "
            "and psychologically."
        )
    ]
    assert r.hits[0].speaker == "Raúl Daniel Alvarenga"
    assert "<mark>torture</mark>" in r.hits[0].snippet
    # Solano's words about torture are his, not Alvarenga's
    solano = run_search(seed_store, SearchRequest(q="speaker:solano tortured", mode="quotes"))
    assert [h.speaker for h in solano.hits] == ["Harry Solano"]


def test_quote_mode_facets_and_kind_filter(seed_store):
    r = run_search(
        seed_store,
        SearchRequest(
            mode="quotes", facets=["speaker", "quote_kind"], filters={"quote_kind": ["direct"]}
        ),
    )
    direct = [q for q in QUOTES if q[3] == "direct"]
    assert r.total == len(direct)
    speakers = {}
    for _, _, s, _ in direct:
        speakers[s] = speakers.get(s, 0) + 1
    assert {v.value: v.count for v in r.facets["speaker"].values} == speakers
    kinds = {}
    for q in QUOTES:
        kinds[q[3]] = kinds.get(q[3], 0) + 1
    assert {v.value: v.count for v in r.facets["quote_kind"].values} == kinds


def test_sort_by_date(corpus_store):
    newest = run_search(corpus_store, SearchRequest(sort="-date", per_page=100))
    oldest = run_search(corpus_store, SearchRequest(sort="date", per_page=100))
    dated = [h.date for h in newest.hits if h.date]
    assert dated == sorted(dated, reverse=True)
    assert [h.date for h in oldest.hits if h.date] == sorted(dated)
    # the dateless seed article comes last either way
    assert newest.hits[-1].date is None and oldest.hits[-1].date is None
    # with a query: only matching passages, still by date
    q = run_search(corpus_store, SearchRequest(q="Caracas", sort="date", per_page=100))
    arts = [h.article_id for h in q.hits]
    assert arts.index("a-2017") < arts.index("a-2019")
    # passages of one article stay in text order
    ps = [h.position for h in oldest.hits if h.article_id == "a-2019"]
    assert ps == sorted(ps)


def test_relevance_ranks_title_and_quotes(corpus_store):
    r = run_search(corpus_store, SearchRequest(q="blackout"))
    assert r.hits[0].article_id == "a-2019"
    assert r.hits[0].score >= r.hits[-1].score > 0


def test_pages_and_exact_totals(seed_store, seed_passages):
    r1 = run_search(seed_store, SearchRequest(q="title:torture", per_page=7, page=1))
    r3 = run_search(seed_store, SearchRequest(q="title:torture", per_page=7, page=3))
    assert r1.total == r3.total == len(seed_passages)
    assert r1.to_dict()["total_pages"] == 3
    assert len(r3.hits) == len(seed_passages) - 14
    all_ids = [
        h.id for h in run_search(seed_store, SearchRequest(q="title:torture", per_page=50)).hits
    ]
    assert [h.id for h in r1.hits] == all_ids[:7]
    assert run_search(seed_store, SearchRequest(q="title:torture", per_page=7, page=9)).hits == []


def test_empty_query_browses_everything(seed_store, seed_passages):
    r = run_search(seed_store, SearchRequest(per_page=100, facets=["person"]))
    assert r.total == len(seed_passages)
    assert [h.id for h in r.hits] == [p.id for p in seed_passages]
    assert r.suggestion is None
    quotes = run_search(seed_store, SearchRequest(mode="quotes"))
    assert quotes.total == len(QUOTES)


def test_did_you_mean(seed_store):
    r = run_search(seed_store, SearchRequest(q="Alvarnga"))
    assert r.total == 0
    assert r.suggestion == "Alvarenga"
    r = run_search(seed_store, SearchRequest(q="speaker:alvarnga ready", mode="quotes"))
    assert r.total == 0 and r.suggestion == "speaker:alvarenga ready"
    # a query that finds enough gets no suggestion
    assert run_search(seed_store, SearchRequest(q="Maduro")).suggestion is None
    assert run_search(seed_store, SearchRequest(q="Alvarnga", suggest=False)).suggestion is None


def test_time_limit_keeps_filters(corpus_store):
    r = run_search(
        corpus_store,
        SearchRequest(q="Caracas OR Colombia", filters={"source": ["daily planet"]}, time_limit=5),
    )
    assert r.total > 0 and not r.partial
    assert {h.source for h in r.hits} == {"Daily Planet"}


def test_time_limit_expired(corpus_store):
    with pytest.raises(SearchTimeout):
        run_search(corpus_store, SearchRequest(q="Caracas", time_limit=1e-9))


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"sort": "popularity"}, "sort"),
        ({"page": 0}, "page"),
        ({"per_page": 0}, "per_page"),
        ({"per_page": 1000}, "per_page"),
        ({"page": 2000, "per_page": 10}, "page"),
        ({"mode": "articles"}, "mode"),
        ({"date_interval": "week"}, "date_interval"),
        ({"time_limit": -1}, "time_limit"),
        ({"date_from": "tomorrow"}, "date_from"),
        (
            {
                "facets": ["person"] * 2
                + ["org", "place", "speaker", "article", "source", "date", "quote_kind"],
                "facet_size": 5,
            },
            None,
        ),
    ],
)
def test_invalid_requests(seed_store, kw, field):
    if field is None:  # duplicates are ignored: 8 distinct facets are allowed
        run_search(seed_store, SearchRequest(**kw))
        return
    with pytest.raises(InvalidRequest) as err:
        run_search(seed_store, SearchRequest(**kw))
    assert err.value.field == field


def test_result_serialises_as_plain_data(corpus_store):
    r = run_search(
        corpus_store,
        SearchRequest(
            q="Guaido", facets=["person", "article", "date"], filters={"place": ["caracas"]}
        ),
    )
    d = json.loads(json.dumps(r.to_dict()))
    assert d["total"] == r.total and d["hits"][0]["snippet"]
    assert d["facets"]["person"]["values"][0]["count"] >= 1
    assert d["took_ms"] >= 0 and d["generation"] >= 1


def test_hits_carry_entities_and_quotes(seed_store):
    seed_passages = seed_items()[1]
    by_id = {p.id: p for p in seed_passages}
    r = run_search(seed_store, SearchRequest(q="speaker:alvarenga", per_page=50))
    for h in r.hits:
        p = by_id[h.id]
        assert h.text == p.text
        assert [Entity(**e) for e in h.entities] == p.entities
        assert h.speakers == p.speakers


def test_scores_are_bm25f_over_live_passages(corpus_store):
    """The numpy ranking is BM25F (Whoosh's formula) with statistics over live passages:
    N and df count passages, avgdl is their mean length; text and title score, the
    title with its field boost (its weights hold it)."""
    from math import log

    from whoosh.scoring import bm25

    r = run_search(corpus_store, SearchRequest(q="Guaido Caracas", per_page=50, match="all"))
    assert r.total >= 2
    s = corpus_store.searcher()
    passages = list(s.docs_for_query(wq.Term("doctype", "passage")))
    n_docs = len(passages)
    avg = {
        f: sum(s.doc_field_length(n, f, 0) for n in passages) / n_docs for f in ("text", "title")
    }
    expected: dict[str, float] = {}
    for term in ("guaido", "caraca"):
        for f in ("text", "title"):
            try:
                post = dict(s.postings(f, term).items_as("weight"))
            except Exception:  # noqa: BLE001 - the term is not in this field
                post = {}
            df = sum(1 for n in passages if n in post)
            idf = log(n_docs / (df + 1)) + 1
            for n in passages:
                if n in post:
                    pid = s.stored_fields(n)["id"]
                    fl = s.doc_field_length(n, f, 0)
                    expected[pid] = expected.get(pid, 0.0) + bm25(
                        idf, post[n], fl, avg[f], 0.75, 1.2
                    )
    for h in r.hits:
        assert h.score == pytest.approx(expected[h.id], rel=1e-3)
    scores = [h.score for h in r.hits]
    assert scores == sorted(scores, reverse=True)


def test_query_boosts_change_the_ranking(corpus_store):
    # (Whoosh's parser gives the boost of the first operand of OR to the whole OR
    # group, "a^5 OR b" == "(a OR b)^5", so the boosted word comes last here)
    maduro_first = run_search(corpus_store, SearchRequest(q="Colombia OR Maduro^5"))
    colombia_first = run_search(corpus_store, SearchRequest(q="Maduro OR Colombia^5"))
    assert maduro_first.total == colombia_first.total
    assert "Maduro" in maduro_first.hits[0].text and "Colombia" not in maduro_first.hits[0].text
    assert "Colombia" in colombia_first.hits[0].text
    assert "Maduro" not in colombia_first.hits[0].text

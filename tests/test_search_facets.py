"""Facets: counts checked against counts computed from the annotated passages."""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest

from newsquarry.search.core.errors import InvalidRequest, UnknownFacet
from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.views import cache_for
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.searching import facet_values, run_search

from .conftest import annotate, seed_items, small_items


def expected_counts(passages, facet):
    """Passages per value of a facet, from the Passage objects (folded keys)."""
    counts: Counter = Counter()
    for p in passages:
        if facet in ("person", "org", "place"):
            values = p.names(facet)
        elif facet == "speaker":
            values = p.speakers
        elif facet == "quote_kind":
            values = sorted({q.kind for q in p.quotes})
        else:
            raise AssertionError(facet)
        counts.update({fold(v) for v in values})
    return counts


def as_counts(facet_result):
    return {fold(v.value): v.count for v in facet_result.values}


@pytest.mark.parametrize("facet", ["person", "org", "place", "speaker", "quote_kind"])
def test_entity_facets_count_passages(seed_store, seed_passages, facet):
    r = run_search(seed_store, SearchRequest(facets=[facet], facet_size=100))
    assert as_counts(r.facets[facet]) == dict(expected_counts(seed_passages, facet))
    assert r.facets[facet].more == 0 and r.facets[facet].other == 0


def test_facets_follow_the_query(seed_store, seed_passages):
    r = run_search(seed_store, SearchRequest(q="text:Colombia", facets=["person"], facet_size=50))
    matching = [p for p in seed_passages if re.search(r"\bColombia\b", p.text)]
    assert r.total == len(matching)
    assert as_counts(r.facets["person"]) == dict(expected_counts(matching, "person"))


def test_top_n_more_and_other(seed_store, seed_passages):
    full = expected_counts(seed_passages, "place")
    r = run_search(seed_store, SearchRequest(facets=["place"], facet_size=2))
    f = r.facets["place"]
    ranked = sorted(full.items(), key=lambda kv: (-kv[1], kv[0]))
    assert [(fold(v.value), v.count) for v in f.values] == ranked[:2]
    assert f.more == len(ranked) - 2
    assert f.other == sum(c for _, c in ranked[2:])


def test_source_article_and_date_facets(corpus_store):
    seed, seed_passages = seed_items()
    small = small_items()
    r = run_search(
        corpus_store,
        SearchRequest(facets=["source", "article", "date"], date_interval="year", facet_size=20),
    )
    expected_source = Counter()
    expected_article = {}
    expected_year = Counter()
    for art, passages in [(seed, seed_passages), *small]:
        expected_source[art.source] += len(passages)
        expected_article[art.id] = (len(passages), art.title)
        if art.date:
            expected_year[art.date[:4]] += len(passages)
    assert {v.value: v.count for v in r.facets["source"].values} == dict(expected_source)
    assert {v.value: (v.count, v.label) for v in r.facets["article"].values} == expected_article
    assert [(v.value, v.count) for v in r.facets["date"].values] == sorted(expected_year.items())
    months = run_search(corpus_store, SearchRequest(facets=["date"], date_interval="month"))
    assert [v.value for v in months.facets["date"].values] == ["2017-05", "2018-11", "2019-03"]
    days = run_search(corpus_store, SearchRequest(facets=["date"], date_interval="day"))
    assert "2018-11-20" in {v.value for v in days.facets["date"].values}


def test_written_forms_grouped_by_folded_key(corpus_store):
    """'Juan Guaidó' (seed) and 'Juan Guaido' (a-2017) are one value, most common form shown."""
    seed_passages = seed_items()[1]
    other = small_items()[0][1]
    accented = sum("Juan Guaidó" in p.names("person") for p in seed_passages)
    plain = sum("Juan Guaido" in p.names("person") for p in other)
    assert accented > plain > 0
    r = run_search(corpus_store, SearchRequest(facets=["person"], facet_size=50))
    values = [v for v in r.facets["person"].values if fold(v.value) == "juan guaido"]
    assert len(values) == 1
    assert values[0].value == "Juan Guaidó"
    assert values[0].count == accented + plain


def test_filter_matches_folded_key(corpus_store):
    r = run_search(corpus_store, SearchRequest(filters={"person": ["JUAN GUAIDO"]}, per_page=50))
    assert {h.article_id for h in r.hits} == {"000_e23b3335c9472580", "a-2017"}
    assert all(any(fold(e["name"]) == "juan guaido" for e in h.entities) for h in r.hits)


def test_multi_select_counts(seed_store, seed_passages):
    """Facet X's counts ignore X's own filter but apply the others."""
    picked = ["Colombia", "Caracas"]
    req = SearchRequest(
        filters={"place": picked, "person": ["Harry Solano"]},
        facets=["place", "person"],
        facet_size=50,
    )
    r = run_search(seed_store, req)

    def has(p, facet, values):
        return any(v in p.names(facet) for v in values)

    in_place = [p for p in seed_passages if has(p, "place", picked)]
    with_solano = [p for p in seed_passages if has(p, "person", ["Harry Solano"])]
    both = [p for p in in_place if p in with_solano]
    assert r.total == len(both)
    # place counts: person filter applied, place filter not
    counted = {k: v for k, v in as_counts(r.facets["place"]).items() if v}
    assert counted == dict(expected_counts(with_solano, "place"))
    # person counts: place filter applied, person filter not
    assert as_counts(r.facets["person"]) == dict(expected_counts(in_place, "person"))
    selected = {fold(v.value) for v in r.facets["place"].values if v.selected}
    assert selected == {"colombia", "caracas"}
    assert [v.value for v in r.facets["person"].values if v.selected] == ["Harry Solano"]


def test_all_of_needs_every_value_and_counts_within_its_own_filter(seed_store, seed_passages):
    """``all_of``: passages naming every selected person; the facet narrows as values are
    added (counted within its own filter), the others are counted as usual."""
    picked = ["Juan Guaidó", "Nicolás Maduro"]
    req = SearchRequest(filters={"person": picked}, all_of=["person"], facets=["person"])
    r = run_search(seed_store, req)
    both = [p for p in seed_passages if all(v in p.names("person") for v in picked)]
    either = [p for p in seed_passages if any(v in p.names("person") for v in picked)]
    assert 0 < r.total == len(both) < len(either)
    assert as_counts(r.facets["person"]) == dict(expected_counts(both, "person"))
    assert {v.value for v in r.facets["person"].values if v.selected} == set(picked)
    anyof = run_search(seed_store, SearchRequest(filters={"person": picked}, facets=["person"]))
    assert anyof.total == len(either)
    with pytest.raises(UnknownFacet, match="all_of"):
        run_search(seed_store, SearchRequest(filters={"person": picked}, all_of=["nope"]))
    with pytest.raises(UnknownFacet, match="all_of"):
        run_search(seed_store, SearchRequest(all_of=["date"]))


def test_a_surname_filter_marks_the_full_name_selected(seed_store):
    """ "Maduro" filters on "Nicolás Maduro": that value is the selected one, with its count,
    not a "Maduro (0)" listed beside it."""
    r = run_search(seed_store, SearchRequest(filters={"person": ["Maduro"]}, facets=["person"]))
    listed = {v.value: (v.count, v.selected) for v in r.facets["person"].values}
    assert listed["Nicolás Maduro"] == (r.total, True) and "Maduro" not in listed


def test_selected_value_always_listed(seed_store):
    r = run_search(
        seed_store,
        SearchRequest(filters={"person": ["Nobody Known"]}, facets=["person"], facet_size=1),
    )
    assert r.total == 0
    assert ("Nobody Known", 0, True) in [
        (v.value, v.count, v.selected) for v in r.facets["person"].values
    ]


def test_date_filter_and_range(corpus_store):
    r = run_search(corpus_store, SearchRequest(filters={"date": ["2019", "2017-05"]}, per_page=50))
    assert {h.article_id for h in r.hits} == {"a-2019", "a-2017"}
    r = run_search(corpus_store, SearchRequest(date_from="2018", date_to="2019-03-15", per_page=50))
    assert {h.article_id for h in r.hits} == {"a-2018", "a-2019"}
    r = run_search(corpus_store, SearchRequest(filters={"article": ["a-2018"]}, per_page=50))
    assert {h.article_id for h in r.hits} == {"a-2018"}


def test_facet_value_search(corpus_store):
    everything = seed_items()[1] + [p for _, ps in small_items() for p in ps]
    guaido = expected_counts(everything, "person")["juan guaido"]
    res = facet_values(corpus_store, "person", "GUAI", SearchRequest())
    assert [(v.value, v.count) for v in res.values] == [("Juan Guaidó", guaido)]
    # a word inside the name, accent-insensitive
    res = facet_values(corpus_store, "person", "chav", SearchRequest())
    assert [v.value for v in res.values] == ["Hugo Chávez"]
    # counts under the query and filters
    res = facet_values(
        corpus_store, "place", "c", SearchRequest(q="text:Cucuta OR text:Caracas"), size=10
    )
    seed_passages = seed_items()[1]
    small = [p for _, ps in small_items() for p in ps]
    matching = [p for p in seed_passages + small if "Cucuta" in p.text or "Caracas" in p.text]
    expected = {k: v for k, v in expected_counts(matching, "place").items() if k.startswith("c")}
    assert as_counts(res) == expected
    dates = facet_values(corpus_store, "date", "201", SearchRequest(date_interval="year"))
    assert [v.value for v in dates.values] == ["2018", "2017", "2019"] or len(dates.values) == 3


def test_unknown_facet_and_bad_sizes(seed_store):
    with pytest.raises(UnknownFacet):
        run_search(seed_store, SearchRequest(facets=["colour"]))
    with pytest.raises(UnknownFacet):
        run_search(seed_store, SearchRequest(filters={"colour": ["red"]}))
    with pytest.raises(UnknownFacet):
        facet_values(seed_store, "colour", "r")
    with pytest.raises(InvalidRequest):
        run_search(seed_store, SearchRequest(facets=["person"], facet_size=0))
    with pytest.raises(InvalidRequest):
        run_search(seed_store, SearchRequest(filters={"date": ["last week"]}))
    with pytest.raises(InvalidRequest):
        run_search(seed_store, SearchRequest(date_from="2020", date_to="2019"))


def test_counts_follow_new_commits_and_reuse_segments(fresh_store):
    """A long-lived reader sees new commits; unchanged segments are not re-read."""
    store = fresh_store
    seed, passages = seed_items()
    with store.writer() as w:
        w.put(seed, passages)
    r1 = run_search(store, SearchRequest(facets=["person"], facet_size=50))
    cache = cache_for(store)
    loads = cache.loads
    again = run_search(store, SearchRequest(q="Maduro", facets=["person"], facet_size=50))
    assert cache.loads == loads  # same index: nothing re-read
    assert again.total > 0
    extra = Article(
        id="extra",
        title="Guaidó in Bogotá",
        text="Juan Guaidó travelled to Bogotá to meet Colombian officials about aid.",
        date="2019-02-22",
        source="Wire",
    )
    ps = split_passages(extra)
    annotate(ps, {"Juan Guaidó": ("Juan Guaidó", "person")}, [])
    with store.writer() as w:
        w.put(extra, ps)
    r2 = run_search(store, SearchRequest(facets=["person"], facet_size=50))
    assert cache.loads == loads + 1  # only the new segment was opened
    assert cache.builds == 0  # from the file its commit wrote, not from its postings
    c1, c2 = as_counts(r1.facets["person"]), as_counts(r2.facets["person"])
    assert c2["juan guaido"] == c1["juan guaido"] + 1
    assert r2.total == r1.total + 1
    # deleting the article: counts drop back at once
    store.delete("extra")
    r3 = run_search(store, SearchRequest(facets=["person"], facet_size=50))
    assert as_counts(r3.facets["person"]) == c1
    assert r3.total == r1.total


def test_threads_share_the_cache(corpus_store):
    expected = run_search(corpus_store, SearchRequest(q="Caracas", facets=["place", "person"]))
    errors, results = [], []

    def work():
        try:
            for _ in range(5):
                r = run_search(corpus_store, SearchRequest(q="Caracas", facets=["place", "person"]))
                results.append((r.total, as_counts(r.facets["place"])))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert set(map(repr, results)) == {repr((expected.total, as_counts(expected.facets["place"])))}


class NameTagger:
    """Tags the given surface forms (form -> (canonical name, type)) and ``"...", X said``."""

    QUOTE = re.compile(r'"([^"]+)," said ([A-Z]\w+)')

    def __init__(self, names: dict[str, tuple[str, str]]) -> None:
        self.names = names

    def enrich(self, items):
        from newsquarry.search.core.models import Entity, Quote

        for art, passages in items:
            for p in passages:
                p.entities = sorted(
                    (Entity(m.group(0), name, type_, m.start(), m.end())
                     for form, (name, type_) in self.names.items()
                     for m in re.finditer(re.escape(form), p.text)),
                    key=lambda e: e.start,
                )  # fmt: skip
                p.quotes = [
                    Quote(m.group(1), m.start(1), m.end(1), "direct", speaker=m.group(2),
                          speaker_mention=m.group(2), speaker_start=m.start(2),
                          speaker_end=m.end(2), cue="said")
                    for m in self.QUOTE.finditer(p.text)
                ]  # fmt: skip
            yield art, passages


EXACT_NAMES = {
    "Margarine, Fats and Oils": ("Margarine, Fats and Oils", "org"),
    "OPEC": ("OPEC", "org"),
    "Opec": ("Opec", "org"),
    '"Big" [Oil] {Co}': ('"Big" [Oil] {Co}', "org"),
}


@pytest.fixture()
def exact_store(fresh_store):
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import article_from_mapping

    texts = [
        ("r1", "Reuters (Reuters-21578, 1987)",
         'OPEC met in Vienna.\n\nThe Margarine, Fats and Oils board and "Big" [Oil] {Co} '
         "watched OPEC.\n\nLater Opec said little.\n\n\"We will cut,\" said Ali, the minister."),
        ("r2", "Reuters (Reuters-21578, 1987)", "Opec again.\n\nOPEC ministers met OPEC staff."),
        ("r3", "reuters (reuters-21578, 1987)", "OPEC output rose."),
    ]  # fmt: skip
    arts = [article_from_mapping({"id": i, "source": s, "text": t}) for i, s, t in texts]
    index_articles(fresh_store, arts, enricher=NameTagger(EXACT_NAMES))
    return fresh_store


def test_values_with_commas_quotes_brackets_survive_and_filter(exact_store):
    res = run_search(exact_store, SearchRequest(facets=["org", "source"], per_page=50))
    orgs = {v.value: v.count for v in res.facets["org"].values}
    assert "Margarine, Fats and Oils" in orgs and '"Big" [Oil] {Co}' in orgs
    sources = [v.value for v in res.facets["source"].values]
    assert sources == ["Reuters (Reuters-21578, 1987)"]  # one value, its most common form
    for hit in res.hits:
        assert hit.source == "Reuters (Reuters-21578, 1987)"  # the facet's form, in every hit
        for value, facet in [(hit.source, "source")] + [(e["name"], "org") for e in hit.entities]:
            found = run_search(exact_store, SearchRequest(filters={facet: [value]}, per_page=50))
            assert hit.id in {h.id for h in found.hits}, (facet, value)


def test_one_display_form_per_value_in_facets_hits_and_documents(exact_store):
    res = run_search(exact_store, SearchRequest(facets=["org"], per_page=50))
    forms = {v.value for v in res.facets["org"].values if fold(v.value) == "opec"}
    assert forms == {"OPEC"}  # 5 passages say OPEC, 2 say Opec: one value, shown as OPEC
    names = {e["name"] for h in res.hits for e in h.entities if fold(e["name"]) == "opec"}
    assert names == {"OPEC"}
    assert {e["text"] for h in res.hits for e in h.entities} >= {"Opec"}  # mentions as written
    doc = exact_store.get_article("r1")
    names = {e["name"] for p in doc["passages"] for e in p["entities"] if fold(e["name"]) == "opec"}
    assert names == {"OPEC"}
    pid = next(p["id"] for p in doc["passages"] if "Opec said" in p["text"])
    assert {e["name"] for e in exact_store.get_passage(pid)["entities"]} >= {"OPEC"}


def test_quotes_carry_their_offsets_in_the_article(exact_store):
    doc = exact_store.get_article("r1")
    text = doc["text"]
    quotes = [q for p in doc["passages"] for q in p["quotes"]]
    assert quotes, "the tagger found the quote"
    res = run_search(exact_store, SearchRequest(q="cut"))
    quotes += [q for h in res.hits for q in h.quotes]
    quote_hits = run_search(exact_store, SearchRequest(q="cut", mode="quotes")).hits
    assert quote_hits
    quotes += [h.__dict__ for h in quote_hits]
    for q in quotes:
        assert text[q["article_start"] : q["article_end"]] == q["text"]
        if "article_speaker_start" in q:
            assert text[q["article_speaker_start"] : q["article_speaker_end"]] == "Ali"

"""The search library on the seed article as the real enricher (spaCy) annotates it.

Expected counts come from the enriched ``Passage`` objects, computed with plain
Python; the index is the session-scoped ``seed_index`` (spaCy runs once).
"""

from __future__ import annotations

from collections import Counter

import pytest

from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.searching import facet_values, run_search


@pytest.fixture(scope="session")
def enriched(seed_doc, enricher):
    ((_, passages),) = list(enricher.enrich([(seed_doc, split_passages(seed_doc))]))
    return passages


def truth(passages, facet):
    counts: Counter = Counter()
    for p in passages:
        if facet == "speaker":
            values = p.speakers
        elif facet == "quote_kind":
            values = {q.kind for q in p.quotes}
        else:
            values = p.names(facet)
        counts.update({fold(v) for v in values})
    return dict(counts)


@pytest.mark.parametrize("facet", ["person", "org", "place", "speaker", "quote_kind"])
def test_facet_counts_match_the_enrichment(seed_index, enriched, facet):
    r = run_search(seed_index, SearchRequest(facets=[facet], facet_size=100))
    assert r.total == len(enriched)
    assert {fold(v.value): v.count for v in r.facets[facet].values} == truth(enriched, facet)


def test_multi_select_on_enriched_seed(seed_index, enriched):
    req = SearchRequest(
        filters={"person": ["Nicolás Maduro", "juan guaido"]}, facets=["person", "place"]
    )
    r = run_search(seed_index, req)
    picked = {"nicolas maduro", "juan guaido"}
    chosen = [p for p in enriched if picked & {fold(n) for n in p.names("person")}]
    assert r.total == len(chosen)
    assert {fold(v.value): v.count for v in r.facets["place"].values} == truth(chosen, "place")
    assert {fold(v.value): v.count for v in r.facets["person"].values if v.count} == truth(
        enriched, "person"
    )


def test_quote_search_for_each_enriched_speaker(seed_index, enriched):
    quotes = [q for p in enriched for q in p.quotes if q.speaker]
    speakers = {q.speaker for q in quotes}
    assert {"Harry Solano", "Raúl Daniel Alvarenga", "Donald Trump"} <= speakers
    for speaker in speakers:
        surname = speaker.split()[-1]
        r = run_search(
            seed_index, SearchRequest(q=f"speaker:{surname}", mode="quotes", per_page=100)
        )
        assert sorted(h.text for h in r.hits) == sorted(
            q.text for q in quotes if q.speaker == speaker
        )
        assert {h.speaker for h in r.hits} == {speaker}


def test_alvarenga_on_torture(seed_index):
    r = run_search(seed_index, SearchRequest(q="speaker:alvarenga torture", mode="quotes"))
    assert len(r.hits) == 1
    assert r.hits[0].speaker == "Raúl Daniel Alvarenga"
    assert "torture you physically" in r.hits[0].text


def test_highlight_suggestion_and_value_search(seed_index, enriched):
    r = run_search(seed_index, SearchRequest(q="guaido", per_page=50))
    assert r.hits and all("<mark>Guaidó</mark>" in h.snippet for h in r.hits)
    assert run_search(seed_index, SearchRequest(q="Alvarnga")).suggestion == "Alvarenga"
    res = facet_values(seed_index, "person", "alv", SearchRequest())
    assert [(v.value, v.count) for v in res.values] == [
        ("Raúl Daniel Alvarenga", truth(enriched, "person")["raul daniel alvarenga"])
    ]

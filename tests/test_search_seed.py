"""Foundation search behaviour on the real seed index (real enrichment, real Whoosh)."""

import pytest

from newsquarry.search.core.errors import QueryError
from newsquarry.search.core.requests import SearchRequest

SEED_ID = "000_e23b3335c9472580"


def ids(store, q, **kw):
    result = store.search(SearchRequest(q=q, per_page=50, **kw))
    return [h.id.split("#")[1] for h in result.hits]


def test_unaccented_guaido_finds_every_guaido_paragraph(seed_index):
    found = set(ids(seed_index, "Guaido"))
    # p15 has the possessive "Guaidó's"
    assert found == {"p6", "p8", "p12", "p13", "p14", "p15"}


def test_unaccented_chavez_finds_chavez(seed_index):
    assert ids(seed_index, "Chavez") == ["p7"]


def test_stemming_tortured_finds_torture(seed_index):
    # "torture" is in the title too: the title ranks, but only passages that say it match
    assert set(ids(seed_index, "tortured")) == {"p4", "p10", "p19"}
    assert set(ids(seed_index, "title:tortured")) == {f"p{n}" for n in range(1, 20)}


def test_title_words_boost_but_do_not_match_alone(seed_index):
    # both words only in p9's text
    assert ids(seed_index, "Venezuelan soldiers", match="all") == ["p9"]
    assert ids(seed_index, "Venezuelan soldiers")[0] == "p9"
    assert ids(seed_index, "false trip", match="all") == []  # together only in the title
    assert ids(seed_index, "title:false", match="all")  # ... where they are
    for match in ("all", "most", "any"):  # words only in the title never match
        assert ids(seed_index, "false risk", match=match) == []


def test_phrase_search(seed_index):
    assert ids(seed_index, '"safe harbor"') == ["p16"]
    assert ids(seed_index, '"harbor safe"') == []


def test_malformed_phrase_is_an_error(seed_index):
    with pytest.raises(QueryError):
        seed_index.search(SearchRequest(q='"safe harbor'))


def test_a_surname_filter_selects_the_full_name(seed_index):
    full = seed_index.search(
        SearchRequest(mode="quotes", filters={"speaker": ["Raúl Daniel Alvarenga"]})
    )
    short = seed_index.search(SearchRequest(mode="quotes", filters={"speaker": ["alvarenga"]}))
    assert full.total == short.total > 0
    assert {h.speaker for h in short.hits} == {"Raúl Daniel Alvarenga"}
    # part of a word is not a name
    none = seed_index.search(SearchRequest(mode="quotes", filters={"speaker": ["alvaren"]}))
    assert none.total == 0


def test_what_did_alvarenga_say_about_torture(seed_index):
    r = seed_index.search(
        SearchRequest(q="torture", mode="quotes", filters={"speaker": ["Alvarenga"]})
    )
    assert [h.text for h in r.hits] == [
        "Unfortunately, in Venezuela, if they catch you, they will torture you physically and "
        "psychologically."
    ]

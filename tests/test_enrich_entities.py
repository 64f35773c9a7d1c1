"""Entity cleaning on wire copy (search/enrich/entities.py), on texts written for the tests.

Each rule is checked on a shape, not on a particular name: table rows, quantity
units, codes, wire markup, datelines, words before an inner determiner, bare
generic heads, the publisher as the addressee of speech, firm names the model cuts
at "and", and names that begin an organisation's name.
"""

from __future__ import annotations

from newsquarry.search.core.models import Article, Entity
from newsquarry.search.ingest.enrich import enrich_article
from newsquarry.search.ingest.passages import split_passages

WIRE = "Northwire (test wire)"


def entities_of(text: str, source: str | None = WIRE) -> list[Entity]:
    article = Article(id="t", title="t", text=text, source=source)
    passages = enrich_article(article, split_passages(article, min_chars=1))
    return [e for p in passages for e in p.entities]


def names(text: str, type_: str, source: str | None = WIRE) -> list[str]:
    return [e.name for e in entities_of(text, source) if e.type == type_]


def test_table_rows_hold_no_entities():
    text = (
        "Kestrel Tools Inc said its fourth quarter results improved.\n\n"
        "Shr profit 22 cts vs loss four cts\n\n"
        "Revs 41.2 mln vs 38.9 mln\n\n"
        "Avg shrs 12.1 mln vs 11.8 mln"
    )
    found = [e.text for e in entities_of(text)]
    assert found == ["Kestrel Tools Inc"]


def test_units_and_codes_are_not_names():
    text = (
        "The fund will raise 150 mln U.S. Dlrs through a note issue, said Harlow Capital Ltd. "
        "Trading closed at 1615 GMT. The Austral Dlrs fell against the yen and the U.S. dlrs, "
        "and M-3 money supply grew. The firm's P shares were quiet."
    )
    everything = [e.text for e in entities_of(text)]
    assert [e for e in everything if e.startswith("Harlow")] == ["Harlow Capital Ltd."]
    for junk in ("U.S. Dlrs", "Dlrs", "GMT", "Austral Dlrs", "M-3", "P"):
        assert junk not in everything


def test_markup_datelines_and_words_before_an_inner_determiner_are_cut():
    text = (
        "Shares of <Orbis Mining Ltd> rose after <Tellen Holdings Corp> bid for them.\n\n"
        "OTTAWA - Northern Savings Board chairman Alan Pryce said the rate would hold.\n\n"
        "Dealers said that at 1430 GMT the Bank of Upland had not intervened."
    )
    orgs = names(text, "org")
    assert "Orbis Mining Ltd" in orgs and "Tellen Holdings Corp" in orgs
    assert all(">" not in o and "<" not in o for o in orgs)
    assert "Northern Savings Board" in orgs
    assert "Bank of Upland" in orgs
    assert not any(o.startswith(("OTTAWA", "GMT")) for o in orgs)
    for e in entities_of(text):
        assert e.text == e.text.strip("<>")


def test_generic_head_is_the_short_form_of_the_full_name_or_nothing():
    text = (
        "The Bank of Upland raised its discount rate on Monday. The Bank said inflation was "
        "too high.\n\nThe Commission met on Tuesday and the House voted on Wednesday."
    )
    orgs = names(text, "org")
    assert orgs.count("Bank of Upland") == 2  # "The Bank" joins the full name
    assert "Bank" not in orgs and "Commission" not in orgs and "House" not in orgs


def test_clipped_name_is_kept():
    text = "The Federal Reserve left rates alone. The Fed said growth was steady."
    assert "Fed" in names(text, "org")


def test_the_publisher_as_addressee_is_not_an_org_of_the_story():
    text = (
        "The minister told Reuters the harvest would be late, and a Reuters survey of "
        "dealers agreed. Exxon Corp said exports would fall."
    )
    orgs = names(text, "org", source="Reuters (test feed)")
    assert "Reuters" not in orgs
    assert "Exxon Corp" in orgs
    # without a source the name is kept: nothing says it is the publisher
    assert "Reuters" in names(text, "org", source=None)


def test_firm_names_cut_at_and_are_joined():
    text = (
        "Standard and Poor's Corp said it lowered the rating.\n\n"
        "J.P. Morgan and Co Inc advised the buyer. J.P. Morgan said the bid was fair."
    )
    orgs = names(text, "org")
    assert "Standard and Poor's Corp" in orgs
    assert orgs.count("J.P. Morgan and Co Inc") == 2
    assert names(text, "person") == []


def test_a_firm_cut_at_and_before_one_word_and_a_suffix_is_one_name():
    text = "Northern Cable and Wireless Co said its profit rose. Two firms, Halvard Motors and Keel Boat Co, merged."
    orgs = names(text, "org")
    assert "Northern Cable and Wireless Co" in orgs
    assert "Wireless Co" not in orgs and "Northern Cable" not in orgs


def test_a_name_in_apposition_to_a_company_noun_is_an_org_in_the_whole_story():
    text = (
        "Dockers stopped ships of the state oil company Elisabras on Monday.\n\n"
        "Elisabras said exports would fall."
    )
    assert names(text, "person") == []
    assert set(names(text, "org")) == {"Elisabras"}


def test_a_name_tagged_place_and_person_in_one_story_is_a_place():
    text = (
        "A leaf blight hit rubber trees in Sri Lanka and Indonesia.\n\n"
        "Sri Lanka's output may fall by a tenth, the ministry said."
    )
    assert "Sri Lanka" not in names(text, "person")
    assert "Sri Lanka" in names(text, "place")


def test_common_words_before_a_title_are_not_an_organisation():
    text = (
        "Details will be given by Finance Minister Odile Marchand on Monday.\n\n"
        "Finance Minister Odile Marchand said rates would stay."
    )
    assert names(text, "org") == []
    assert "Odile Marchand" in names(text, "person")


def test_words_of_a_paragraph_in_capitals_are_not_names():
    text = (
        "THE COMMITTEE NAMES THREE NEW MEMBERS THIS WEEK AFTER PROPOSALS FROM NEIGHBORS "
        "IN OHIO.\n\nThe committee, led by Ann Walsh of Acme Corp, met in Ohio on Monday."
    )
    found = {(e.type, e.text) for e in entities_of(text)}
    assert not {w for _, w in found} & {"NAMES", "THREE", "WEEK", "PROPOSALS", "NEIGHBORS"}
    assert ("person", "Ann Walsh") in found and ("org", "Acme Corp") in found
    # a name the article also writes in ordinary case stays in the capitals too
    assert ("place", "OHIO") in found


def test_an_article_in_capitals_offers_no_names():
    text = (
        "THE FOLLOWING RAINFALL WAS RECORDED IN THE AREAS OVER PAST 72 HOURS\n\n"
        "PARANA STATE: UMUARAMA NIL, PARANAVAI 1.5 MILLIMETRES, LONDRINA NIL, MARINGA NIL."
    )
    assert entities_of(text) == []

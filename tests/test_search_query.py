"""The query language on the seed article: operators, fields, folding, errors.

Expected hits are computed from the hand-annotated passages with plain Python
(regexes over the text, entity and quote lists), not from the engine.
"""

from __future__ import annotations

import re

import pytest

from newsquarry.search.core.errors import QueryError
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.query.searching import run_search


def ids(store, q, **kw):
    r = run_search(store, SearchRequest(q=q, per_page=100, **kw))
    assert r.total == len(r.hits)
    return {h.id for h in r.hits}


def having(passages, *patterns):
    """Passages whose folded text matches every regex."""
    return {p.id for p in passages if all(re.search(pt, fold(p.text)) for pt in patterns)}


def test_match_all_needs_every_word(seed_store, seed_passages):
    assert ids(seed_store, "guard caracas", match="all") == having(
        seed_passages, r"\bguard\b", r"\bcaracas\b"
    )
    # stop words too
    assert ids(seed_store, "the guard of caracas", match="all") == having(
        seed_passages, r"\bguard\b", r"\bcaracas\b", r"\bthe\b", r"\bof\b"
    )


def test_match_most_needs_one_important_word(seed_store, seed_passages):
    """The default: any word that is not a stop word matches; stop words never decide."""
    either = having(seed_passages, r"\bguard\b") | having(seed_passages, r"\bcaracas\b")
    assert ids(seed_store, "guard caracas") == either
    assert ids(seed_store, "the guard of caracas") == either
    assert ids(seed_store, "the guard of caracas", match="most") == either
    # a query of stop words only needs them all
    assert ids(seed_store, "what did") == having(seed_passages, r"\bwhat\b", r"\bdid\b")


def test_match_any_lets_every_word_decide(seed_store, seed_passages):
    got = ids(seed_store, "guard of caracas", match="any")
    assert got == having(seed_passages, r"\bguard\b") | having(
        seed_passages, r"\bcaracas\b"
    ) | having(seed_passages, r"\bof\b")


def test_explicit_syntax_stays_strict_in_every_mode(seed_store, seed_passages):
    guard = having(seed_passages, r"\bguard\b")
    caracas = having(seed_passages, r"\bcaracas\b")
    maduro = having(seed_passages, r"\bmaduro\b")
    for match in ("most", "any"):
        assert ids(seed_store, "+guard caracas", match=match) == guard
        assert ids(seed_store, "guard -caracas", match=match) == guard - caracas
        assert ids(seed_store, "guard AND caracas", match=match) == guard & caracas
        # beside a required part, plain words only rank (Lucene's should beside must)
        assert ids(seed_store, "guard AND caracas maduro", match=match) == guard & caracas
        assert ids(seed_store, '"national guard" caracas', match=match) == having(
            seed_passages, r"\bnational guard\b"
        )
        # a facet field narrows like a filter: the plain words still decide
        marked = {p.id for p in seed_passages if "Nicolás Maduro" in p.names("person")}
        assert ids(seed_store, "person:maduro caracas guard", match=match) == marked & (
            guard | caracas
        )
    # ranked by the plain words: a passage holding them comes first
    r = run_search(seed_store, SearchRequest(q="+guard caracas"))
    assert r.hits[0].id in guard & caracas
    assert maduro


def test_more_important_words_rank_first(seed_store, seed_passages):
    r = run_search(seed_store, SearchRequest(q="guard caracas maduro", per_page=100))
    held = {
        p.id: sum(
            bool(re.search(w, fold(p.text))) for w in (r"\bguard\b", r"\bcaracas\b", r"\bmaduro\b")
        )
        for p in seed_passages
    }
    counts = [held[h.id] for h in r.hits]
    assert counts[0] == max(held.values()) >= 2
    assert counts.index(1) > counts.index(counts[0])  # single-word passages come after


def test_explicit_and_or_not(seed_store, seed_passages):
    both = having(seed_passages, r"\bmaduro\b", r"\bcolombia\b")
    assert ids(seed_store, "Maduro AND Colombia") == both
    either = having(seed_passages, r"\bcucuta\b") | having(seed_passages, r"\bmiami\b")
    assert ids(seed_store, "Cucuta OR Miami") == either
    maduro = having(seed_passages, r"\bmaduro\b")
    assert ids(seed_store, "Maduro NOT Guaidó") == maduro - having(seed_passages, r"\bguaido\b")
    assert ids(seed_store, "(Cucuta OR Miami) AND spies") == either & having(
        seed_passages, r"\bspies\b"
    )


def test_minus_plus_and_hyphens(seed_store, seed_passages):
    maduro = having(seed_passages, r"\bmaduro\b")
    guaido = having(seed_passages, r"\bguaido\b")
    everything = {p.id for p in seed_passages}
    assert ids(seed_store, "Maduro -Guaidó") == maduro - guaido
    assert ids(seed_store, "-Maduro") == everything - maduro
    assert ids(seed_store, "+Maduro +Guaidó") == maduro & guaido
    # a hyphen inside a word is not an operator
    assert ids(seed_store, "self-proclaimed") == having(seed_passages, r"self-proclaimed")


def test_phrase(seed_store, seed_passages):
    assert ids(seed_store, '"border town"') == having(seed_passages, r"border town")
    # words present but not adjacent: the phrase does not match
    assert ids(seed_store, '"town border"') == set()


def test_accents_and_case_never_matter(seed_store, seed_passages):
    # possessives count: "Guaidó's" is found by "guaido"
    expected = having(seed_passages, r"\bguaido\b")
    assert any("Guaidó's" in p.text for p in seed_passages if p.id in expected)
    assert expected
    assert ids(seed_store, "guaido") == expected
    assert ids(seed_store, "GUAIDÓ") == expected
    assert ids(seed_store, "Guaidó") == expected


def test_stemming(seed_store, seed_passages):
    # "tortured" finds "torture" too (title excluded by asking the text field)
    expected = having(seed_passages, r"\btortur")
    assert ids(seed_store, "text:tortured") == expected
    assert len(expected) >= 3


def test_prefix_and_fuzzy(seed_store, seed_passages):
    assert ids(seed_store, "text:defect*") == having(seed_passages, r"\bdefect")
    assert ids(seed_store, "text:GUAI*") == having(seed_passages, r"\bguai")
    assert ids(seed_store, "Alvarnga~") == having(seed_passages, r"\balvarenga\b")
    assert ids(seed_store, "Alvrnga~2") == having(seed_passages, r"\balvarenga\b")


def test_title_and_text_fields(seed_store, seed_passages):
    everything = {p.id for p in seed_passages}
    assert ids(seed_store, "title:soldiers") == everything
    assert ids(seed_store, "title:caracas") == set()
    assert ids(seed_store, "text:soldiers") == having(seed_passages, r"\bsoldiers?\b")


def test_entity_fields(seed_store, seed_passages):
    def with_name(type_, name):
        return {p.id for p in seed_passages if name in p.names(type_)}

    assert ids(seed_store, "person:guaido") == with_name("person", "Juan Guaidó")
    assert ids(seed_store, 'person:"juan guaido"') == with_name("person", "Juan Guaidó")
    assert ids(seed_store, "person:chavez") == with_name("person", "Hugo Chávez")
    assert ids(seed_store, "org:pdvsa") == with_name("org", "PDVSA")
    assert ids(seed_store, 'org:"national guard"') == with_name("org", "National Guard")
    assert ids(seed_store, "place:colombia") == with_name("place", "Colombia")
    assert ids(seed_store, "place:colom*") == with_name("place", "Colombia")
    assert ids(seed_store, "person:alvarnga~") == with_name("person", "Raúl Daniel Alvarenga")
    # a value nobody has matches nothing (and is not an error)
    assert ids(seed_store, "person:napoleon") == set()


def test_speaker_quote_and_kind_fields(seed_store, seed_passages):
    assert ids(seed_store, "speaker:trump") == {
        p.id for p in seed_passages if "Donald Trump" in p.speakers
    }
    assert ids(seed_store, "quote:barbarism") == {
        p.id for p in seed_passages if any("barbarism" in q.text for q in p.quotes)
    }
    assert ids(seed_store, "kind:indirect") == {
        p.id for p in seed_passages if any(q.kind == "indirect" for q in p.quotes)
    }


def test_source_and_article_fields(corpus_store):
    assert {i.split("#")[0] for i in ids(corpus_store, 'source:"daily planet"')} == {
        "a-2017",
        "a-2019",
    }
    assert {i.split("#")[0] for i in ids(corpus_store, "article:a-2018")} == {"a-2018"}


def test_date_field_and_ranges(corpus_store):
    def arts(q):
        return {i.split("#")[0] for i in ids(corpus_store, q)}

    assert arts("date:2019") == {"a-2019"}
    assert arts("date:2017-05") == {"a-2017"}
    assert arts("date:2018-11-20") == {"a-2018"}
    assert arts("date:[2017 TO 2018]") == {"a-2017", "a-2018"}
    assert arts("date:[2017-06 TO 2019-03]") == {"a-2018", "a-2019"}
    assert arts("date:>2018") == {"a-2019"}
    assert arts("date:<2018-12") == {"a-2017", "a-2018"}


@pytest.mark.parametrize(
    "q, position, words",
    [
        ('"torture you', 0, "unclosed quotation"),
        ('soldiers "torture', 9, "unclosed quotation"),
        ("(Maduro OR Guaidó", 0, "never closed"),
        ("Maduro OR Guaidó)", 16, "no opening"),
        ("date:[2019 TO 2020", 5, "unclosed range"),
        ("()", 0, "empty brackets"),
        ('maduro ""', 7, "empty quotation"),
        ("foo:bar", 0, "unknown field 'foo'"),
        ("torture doctype:passage", 8, "unknown field 'doctype'"),
        ("speaker: alvarenga", 0, "no value"),
        ("torture AND", 8, "nothing after"),
        ("OR torture", 0, "nothing before"),
        ("torture AND OR maduro", 8, "nothing after"),
        ("NOT", 0, "nothing after"),
        ("NOT NOT oil", 0, "double negation"),
        ("torture AND NOT NOT army", 12, "double negation"),
        ("*", 0, "lone '*'"),
        ("date:yesterday", None, "not a date"),
    ],
)
def test_malformed_queries_say_where_and_why(seed_store, q, position, words):
    with pytest.raises(QueryError) as err:
        run_search(seed_store, SearchRequest(q=q))
    assert words in str(err.value)
    if position is not None:
        assert err.value.position == position


def test_term_expansion_cap(seed_store):
    settings = _settings(max_term_expansion=5)
    with pytest.raises(QueryError) as err:
        run_search(seed_store, SearchRequest(q="soldiers s*"), settings)
    assert "more than 5" in str(err.value)
    assert err.value.position == 9
    # a narrow prefix is fine
    r = run_search(seed_store, SearchRequest(q="spie*"), settings)
    assert r.total >= 1


def test_query_too_long(seed_store):
    settings = _settings(max_query_length=20)
    with pytest.raises(QueryError, match="limit is 20"):
        run_search(seed_store, SearchRequest(q="a" * 21), settings)


def test_the_default_cap_is_400_characters(seed_store):
    """Past 400 characters a query is refused before any work, with its own error."""
    from newsquarry.search.core.errors import QueryTooLong

    words = ("torture soldiers Caracas guard " * 20)[:401]
    with pytest.raises(QueryTooLong) as err:
        run_search(seed_store, SearchRequest(q=words))
    exc = err.value
    assert isinstance(exc, QueryError) and exc.status == 400 and exc.exit_code == 2
    assert exc.field == "q" and exc.position == 400
    assert str(exc) == "the query is 401 characters long; the limit is 400"
    assert run_search(seed_store, SearchRequest(q=words[:400])).total >= 0  # 400 is fine


def test_colons_in_numbers_are_words(seed_store):
    # "10:30" is not a field specification
    assert run_search(seed_store, SearchRequest(q="10:30")).total == 0


def _settings(**kw):
    from newsquarry.search.core.config import load_settings

    return load_settings(**kw)


@pytest.mark.parametrize(
    "q", ["date:2019-02-30", "date:2019-13", "date:[2019-01 TO 2019-04-31]", "guard date:2019-00"]
)
def test_a_date_that_does_not_exist_is_refused_in_a_query_as_in_a_parameter(seed_store, q):
    with pytest.raises(QueryError, match="not a valid date") as err:
        run_search(seed_store, SearchRequest(q=q))
    if "[" not in q:  # a plain value is pointed at (a range's end is named in the message)
        assert err.value.position is not None
    run_search(seed_store, SearchRequest(q="date:2019-02-28"))  # a real day still searches


def test_the_parser_is_whooshs_default_without_single_quotes_and_every():
    """``make_parser`` builds Whoosh's default plugins but two, never made: the same
    plugins in the same order, and the same parses, as making all and removing them."""
    from whoosh import qparser

    from newsquarry.search.engine.schema import build_schema
    from newsquarry.search.query import parse

    schema = build_schema()
    for mode in ("passages", "quotes"):
        got = parse.make_parser(schema, mode)
        old = parse._Parser(None, schema)
        old.add_plugin(qparser.MultifieldPlugin(parse.DEFAULT_FIELDS[mode]))
        old.remove_plugin_class(qparser.SingleQuotePlugin)
        old.remove_plugin_class(qparser.EveryPlugin)
        old.add_plugin(qparser.FuzzyTermPlugin())
        old.add_plugin(parse.GtLtPlugin())
        old.add_plugin(
            parse.FieldAliasPlugin(
                {"article_id": ["article"], "quote_kind": ["kind", "quote_kind"]}
            )
        )
        assert [type(x) for x in got.plugins] == [type(x) for x in old.plugins]
        for q in ("oil prices", "'single' quotes", "*:*", "a AND b OR c^2", 'title:"x y"~2',
                  "date:[2019 TO 2020]", "kind:direct", "wom?n dollar~ -minister +bank"):  # fmt: skip
            assert repr(got.parse(q)) == repr(old.parse(q)), q

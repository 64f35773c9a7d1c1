"""Hostile queries: any query text gives a result or a library error, in bounded time.

Property-based (hypothesis) over arbitrary Unicode and over a grammar of the
query language's own pieces (operators, brackets, quotes, fields, ranges,
wildcards, fuzzy marks), plus named cases from issue 8: ``*`` alone, wildcards
that would expand to the whole vocabulary, deep nesting, thousands of terms,
and a time limit that cuts a search short.
"""

from __future__ import annotations

import time

import pytest
from api_support import build_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newsquarry.search.core.config import load_settings
from newsquarry.search.core.errors import NewsquarryError, QueryError, SearchTimeout
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query.searching import facet_values, run_search

BOUND = 5.0  # seconds any one search may take here (the time limit below is 2 s)
LIMITS = load_settings(search_time_limit=2.0)

WORDS = ["oil", "Caracas", "guard", "torture", "Guaidó", "PDVSA", "said", "a", "the", "x"]
FIELDS = ["text", "title", "quote", "speaker", "person", "org", "place", "source",
          "article", "kind", "date", "nofield", ""]  # fmt: skip
PIECES = [
    "AND", "OR", "NOT", "ANDNOT", "ANDMAYBE", "(", ")", '"', "*", "?", "~", "~2", "^2", ":",
    "[", "]", "{", "}", "TO", ">", "<", "=", "-", "+", "\\", "/", "'", "“", "”", "..", "#",
    "2019", "2019-02", "2019-13-45", "\x00", "\n", "\t", "é", "ß", "İ", "\u200b", "🙂",
]  # fmt: skip


@st.composite
def query_like(draw) -> str:
    """Strings made of the query language's own pieces, in any order."""
    parts = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            parts.append(draw(st.sampled_from(WORDS)))
        elif kind == 1:
            parts.append(draw(st.sampled_from(PIECES)))
        elif kind == 2:
            parts.append(draw(st.sampled_from(FIELDS)) + ":" + draw(st.sampled_from(WORDS + [""])))
        elif kind == 3:
            parts.append(
                draw(st.sampled_from(WORDS)) + draw(st.sampled_from(["*", "~", "?*", "*x"]))
            )
        else:
            parts.append(draw(st.text(max_size=6)))
    sep = draw(st.sampled_from([" ", "", "  "]))
    return sep.join(parts)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile-q")
    build_index(path)
    s = WhooshStore(path)
    yield s
    s.close()


def _run(store, q: str, **kw):
    """Run one search; returns the result or the library error. Anything else fails."""
    started = time.monotonic()
    try:
        out = run_search(store, SearchRequest(q=q, **kw), LIMITS)
    except NewsquarryError as exc:
        assert str(exc), "a library error must carry a message"
        out = exc
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"{q!r} took {elapsed:.1f} s"
    return out


PROPS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPS
@given(q=st.text(max_size=200))
def test_any_unicode_query_gives_a_result_or_a_library_error(store, q):
    _run(store, q)


@PROPS
@given(q=query_like(), mode=st.sampled_from(["passages", "quotes"]),
       sort=st.sampled_from(["relevance", "-date"]))  # fmt: skip
def test_any_query_language_soup_gives_a_result_or_a_library_error(store, q, mode, sort):
    _run(store, q, mode=mode, sort=sort, facets=["person", "speaker", "date"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(prefix=st.text(max_size=40), q=query_like())
def test_any_facet_value_search_gives_a_result_or_a_library_error(store, prefix, q):
    started = time.monotonic()
    try:
        facet_values(store, "person", prefix, SearchRequest(q=q), 10, LIMITS)
    except NewsquarryError:
        pass
    assert time.monotonic() - started < BOUND


@pytest.mark.parametrize(
    "q",
    [
        "*",
        "**",
        "*:*",
        "?",
        "a*",
        "*a",
        "*a*",
        "text:*",
        "person:*",
        "title:?*",
        "~",
        "a~",
        "a~9",
        "x~2 y~2 z~2",
        '"',
        '"""',
        "(",
        ")",
        "NOT",
        "AND OR NOT",
        "date:[ TO ]",
        "date:[2019 TO",
        "date:>",
        "\\",
        "\x00",
    ],
)
def test_named_hostile_queries(store, q):
    out = _run(store, q)
    if not isinstance(out, NewsquarryError):
        assert out.total >= 0


def test_deep_nesting_is_refused_or_answered_quickly(store):
    for depth in (100, 400, 5000):
        _run(store, "(" * depth + "oil" + ")" * depth)
        _run(store, "(" * depth + "oil")
        _run(store, "NOT " * depth + "oil")
        _run(store, '"' * depth)


def test_thousands_of_terms(store):
    many = " OR ".join(f"w{i}" for i in range(3000))
    out = _run(store, many)
    assert isinstance(out, QueryError)  # longer than max_query_length: refused with a reason
    under = " ".join(["x"] * 200)  # 200 terms: as many as the longest query allowed holds
    assert len(under) <= LIMITS["max_query_length"]
    assert not isinstance(_run(store, under), NewsquarryError)
    letters = " OR ".join("abcdefghijklmnopqrstuvwxyz" * 8)[:999]
    _run(store, letters)


def test_wildcard_expanding_to_the_whole_vocabulary_is_capped(store):
    tight = load_settings(max_term_expansion=3, search_time_limit=2.0)
    started = time.monotonic()
    with pytest.raises(QueryError, match="matches more than 3 different words"):
        run_search(store, SearchRequest(q="*a*"), tight)
    assert time.monotonic() - started < BOUND


def test_time_limit_cuts_a_search_short_with_a_clear_outcome(store):
    # a limit far below what any search needs: a partial result or SearchTimeout, nothing else
    for q in ("oil OR caracas OR guard", "o*", "oil~2", ""):
        started = time.monotonic()
        try:
            result = run_search(store, SearchRequest(q=q, time_limit=1e-9), LIMITS)
        except SearchTimeout as exc:
            assert "longer than" in str(exc)
        else:
            assert result.total >= 0
        assert time.monotonic() - started < 1.0


def test_a_search_never_recounts_all_matches_outside_the_time_limit(store, monkeypatch):
    """Whoosh's ``len(results)`` re-runs the whole query, unscored and with no time limit,
    when the top-N collector skipped blocks: 1 to 5 s at 60k passages with a 0.5 s limit."""
    from whoosh import collectors

    def recount(self):
        raise AssertionError("the whole query was run again to count it")

    monkeypatch.setattr(collectors.TopCollector, "count", recount)
    monkeypatch.setattr(collectors.TopCollector, "computes_count", lambda self: False)
    for q in ("oil", "oil OR caracas", "o*", "guard~1"):
        result = run_search(store, SearchRequest(q=q, per_page=2, page=2), LIMITS)
        assert result.total >= 0


def test_wildcard_and_fuzzy_expansion_stops_at_the_time_limit(store):
    """Expanding ``a~2`` scans the vocabulary (5 s at 60k passages): it must obey the limit."""
    from newsquarry.search.engine.views import cache_for
    from newsquarry.search.query.parse import parse_query
    from newsquarry.search.query.postings import Deadline

    searcher = store.searcher()
    view = cache_for(store).view(searcher)
    for q in ("a~2 e~2 i~2", "o* a* c*", "title:o*"):
        with pytest.raises(SearchTimeout):
            run_search(store, SearchRequest(q=q, time_limit=1e-9), LIMITS)
        expired = Deadline(1e-9)
        time.sleep(0.001)
        with pytest.raises(SearchTimeout):  # stopped while expanding, before any matching
            parse_query(q, searcher=searcher, view=view, deadline=expired)


def test_a_suggestion_that_runs_out_of_time_is_dropped_not_the_search(store, monkeypatch):
    from newsquarry.search.query import searching

    calls = []
    real = searching.match_mask

    def slow_second(*a, **kw):  # the main query answers; the "did you mean" check times out
        calls.append(1)
        if len(calls) > 1:
            raise SearchTimeout("the search took longer than 2 s and was stopped")
        return real(*a, **kw)

    monkeypatch.setattr(searching, "match_mask", slow_second)
    monkeypatch.setattr(searching, "corrected_text", lambda *a: "oil")
    result = run_search(store, SearchRequest(q="oilx"), LIMITS)
    assert result.total == 0 and result.suggestion is None and len(calls) == 2

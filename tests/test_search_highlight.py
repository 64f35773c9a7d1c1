"""Highlighting is bounded: linear in the text, capped per passage, inside the time limit.

A single ~200 KB paragraph holding the search words thousands of times took 58.8 s to
highlight (issue 33). These tests count the work (matches kept, tokens read, spans
looked at) rather than time it, and cut the deadline by hand rather than waiting.
"""

from __future__ import annotations

import time

import pytest

from newsquarry.api import create_app
from newsquarry.search import Index
from newsquarry.search.core.errors import SearchTimeout
from newsquarry.search.core.models import Article, Passage
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query import highlight as hl
from newsquarry.search.query.postings import Deadline
from newsquarry.search.query.searching import run_search

SENTENCES = [
    "The oil minister said prices would rise again in Caracas before the vote.",
    "Nobody in the ministry expected the oil shipments to stop so soon.",
    "Markets reacted calmly while analysts debated the budget and the price of bread.",
    "Tankers waited offshore for weeks, and the oil price kept falling all winter.",
    "A refinery worker said the price of diesel had doubled since March.",
]
LONG = " ".join(SENTENCES[i % len(SENTENCES)] for i in range(2900))  # one ~210 KB paragraph
SHORT = "Oil exports fell again; the price of oil is now the lowest in ten years."


def _put(store: WhooshStore, article_id: str, text: str) -> None:
    a = Article(id=article_id, title=article_id.title(), text=text)
    p = Passage(id=f"{article_id}#p1", article_id=article_id, position=1, start=0,
                end=len(text), text=text)  # fmt: skip
    with store.writer() as w:
        w.put(a, [p])


@pytest.fixture(scope="module")
def index_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("long-paragraph") / "ix"
    store = WhooshStore(path)
    _put(store, "long", LONG)
    _put(store, "short", SHORT)
    store.close()
    return path


@pytest.fixture(scope="module")
def index(index_path):
    ix = Index(index_path, create=False)
    yield ix
    ix.close()


def _marked(hit) -> list[str]:
    return [hit.text[s : s + n].lower() for s, n in hit.matches]


def test_the_paragraph_is_one_long_passage_with_thousands_of_matches():
    assert len(LONG) > 200_000
    assert LONG.lower().count("oil") + LONG.lower().count("price") > 3000


def test_a_long_paragraph_is_highlighted_by_its_first_matches(index):
    r = index.search("oil price", per_page=10)
    assert r.partial is False and r.cut_short == []
    long = next(h for h in r.hits if h.article_id == "long")
    assert len(long.text) == len(LONG)  # the hit is whole; only its highlights are capped
    assert 0 < len(long.matches) <= hl.MAX_MATCHES
    assert all(s + n <= hl.SCAN_CHARS for s, n in long.matches)
    assert set(_marked(long)) <= {"oil", "price", "prices"}
    assert long.snippet.count("<mark>") <= len(long.matches)
    assert "<mark>" in long.snippet and len(long.snippet) < 2 * hl.SNIPPET_CHARS
    # a normal passage keeps every match
    short = next(h for h in r.hits if h.article_id == "short")
    assert _marked(short) == ["oil", "price", "oil"]


def test_the_same_search_through_the_api(index_path):
    c = create_app({"index": str(index_path)}).test_client()
    resp = c.get("/v1/search?q=oil+price&per_page=10")
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["partial"] is False and body["cut_short"] == []
    long = next(h for h in body["hits"] if h["article_id"] == "long")
    assert long["text_length"] == len(LONG)
    assert 0 < len(long["matches"]) <= hl.MAX_MATCHES
    assert "<mark>" in long["snippet"]


def test_reading_stops_at_the_cap(monkeypatch):
    """The analyzer is read lazily: a dense 200 KB text costs its first matches' tokens."""
    read = [0]
    analyzer = hl._ANALYZER

    def counting(text, **kw):
        for tok in analyzer(text, **kw):
            read[0] += 1
            yield tok

    monkeypatch.setattr(hl, "_ANALYZER", counting)
    spans = hl.match_spans(LONG, {"oil", "price"})
    assert len(spans) == hl.MAX_MATCHES
    assert read[0] < 20 * hl.MAX_MATCHES  # the whole text is ~35,000 tokens
    read[0] = 0
    assert hl.match_spans(LONG, {"nowhere"}) == []  # no match: at most SCAN_CHARS are read
    assert read[0] < hl.SCAN_CHARS // 4


class CountingSpans(list):
    """A list of spans that counts how many of them are looked at."""

    looked = 0

    def __iter__(self):
        for item in super().__iter__():
            CountingSpans.looked += 1
            yield item

    def __getitem__(self, i):
        CountingSpans.looked += 1
        return super().__getitem__(i)


def test_the_snippet_window_is_linear_in_the_matches():
    text = LONG
    spans = hl.match_spans(text, {"oil", "price"}, limit=4000, scan=len(text))
    assert len(spans) > 3000
    CountingSpans.looked = 0
    hl._window(text, CountingSpans(spans), hl.SNIPPET_CHARS)
    assert CountingSpans.looked <= 10 * len(spans)  # every match against every other: n * n


def test_the_window_is_the_densest_as_before():
    text = "filler " * 60 + "oil " + "filler " * 10 + "oil price oil " + "filler " * 60
    spans = hl.match_spans(text, {"oil", "price"})
    start, end = hl._window(text, spans, 60)
    inside = [s for s, n in spans if start <= s and s + n <= end]
    assert len(inside) == 3 and text[start:end].startswith("filler")
    snippet = hl.snippet_html(text, spans, 60)
    assert snippet.count("<mark>") == 3 and snippet.startswith("…") and snippet.endswith("…")


def _expired() -> Deadline:
    d = Deadline(60.0)
    d.at = time.monotonic() - 1.0  # already passed: no waiting
    return d


def test_a_passed_deadline_stops_highlighting():
    with pytest.raises(SearchTimeout):
        hl.highlight(SHORT, {"oil"}, deadline=_expired())
    assert hl.highlight(SHORT, {"oil"}, deadline=Deadline(60.0))[1] == [[0, 3], [37, 3]]


def test_highlights_past_the_time_limit_are_left_out_and_the_result_says_partial(
    index, monkeypatch
):
    """The deadline passes during the first highlight (set by hand, not by waiting): the
    hits and totals stay whole, the rest of the page gets unmarked snippets, and the
    result is partial, naming what was cut."""
    whole = index.search("oil price", per_page=10)
    real = hl.PageHighlighter.spans

    def first_one_expires(self, docnum, field, text):
        self.deadline.at = time.monotonic() - 1.0
        return real(self, docnum, field, text)

    monkeypatch.setattr(hl.PageHighlighter, "spans", first_one_expires)
    r = index.search("oil price", per_page=10)
    assert r.partial is True and "highlights" in r.cut_short
    assert r.total == whole.total and [h.id for h in r.hits] == [h.id for h in whole.hits]
    for h in r.hits:
        assert h.matches == [] and "<mark>" not in h.snippet and h.snippet
    # the suggestion and the interpretations come after: the same deadline leaves them out
    assert {"suggestion", "interpretations"} <= set(r.cut_short)
    assert r.to_dict()["cut_short"] == r.cut_short


def test_highlight_off_is_not_partial(index):
    r = run_search(index.store, SearchRequest(q="oil price", highlight=False), index.settings)
    assert r.partial is False and all(h.snippet is None for h in r.hits)


def _snippet_with_html_escape(text, spans, size=hl.SNIPPET_CHARS):
    """``snippet_html`` as it was written with ``html.escape`` per piece."""
    import html

    start, end = hl._window(text, spans, size)
    out, pos = ["…"] if start > 0 else [], start
    for s, ln in spans:
        if s < start or s + ln > end:
            continue
        out += [html.escape(text[pos:s]), "<mark>" + html.escape(text[s : s + ln]) + "</mark>"]
        pos = s + ln
    out.append(html.escape(text[pos:end]))
    return "".join(out + (["…"] if end < len(text) else []))


@pytest.mark.parametrize("text", [
    "A & B <b>\"quoted\"</b> it's &amp; oil", SHORT, LONG[:3000],
    "<script>alert('oil')</script> & 'oil' \"oil\" &lt;oil&gt;",
])  # fmt: skip
def test_the_snippet_escapes_as_html_escape_does(text):
    spans = hl.match_spans(text, {"oil", "b", "price"})
    assert hl.snippet_html(text, spans) == _snippet_with_html_escape(text, spans)

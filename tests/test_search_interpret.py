"""Interpretations offer only the names a query gives, whole, and their links return
exactly what their labels say."""

from __future__ import annotations

import re
import time

import pytest

from newsquarry.search.core.errors import QueryTooLong
from newsquarry.search.core.models import Article, Entity, Quote
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.query import interpret, searching
from newsquarry.search.query.searching import run_search

NAMES = {
    "Tony Blair": "person", "Ian Blair": "person", "Michael Howard": "person",
    "George Michael": "person", "Gordon Brown": "person", "James Brown": "person",
    "Iraq": "place", "Labour": "org", "Harry": "person",
}  # fmt: skip
QUOTE = re.compile(r'"([^"]+)," said (Tony Blair|Ian Blair|George Michael|Iraq|Harry)')

TEXTS = [
    '"We will stay the course in Iraq," said Tony Blair. Labour agreed.',
    '"Iraq is a matter for the government," said Tony Blair to Labour.',
    '"Crime in London is falling," said Ian Blair, the police chief.',
    '"Iraq remains a risk for London," said Ian Blair.',
    "Michael Howard attacked the plans on Iraq and on crime.",
    '"I will sing again," said George Michael, who never mentioned Iraq.',
    '"We reject the report," said Iraq.',
    "Gordon Brown and James Brown were both in the news.",
    '"We met the troops in Iraq," said Harry.',
]


class Names:
    """Tags the names above and quotations written ``"...," said Name``."""

    def enrich(self, items):
        for article, passages in items:
            for p in passages:
                p.entities = sorted(
                    (
                        Entity(text=m.group(0), name=n, type=t, start=m.start(), end=m.end())
                        for n, t in NAMES.items()
                        for m in re.finditer(re.escape(n), p.text)
                    ),
                    key=lambda e: e.start,
                )
                p.quotes = [
                    Quote(text=m.group(1), start=m.start(1), end=m.end(1), kind="direct",
                          speaker=m.group(2), speaker_mention=m.group(2), cue="said")
                    for m in QUOTE.finditer(p.text)
                ]  # fmt: skip
            yield article, passages


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = WhooshStore(tmp_path_factory.mktemp("interp") / "ix")
    arts = [Article(id=f"a{i}", title=f"Story {i}", text=t) for i, t in enumerate(TEXTS)]
    index_articles(s, arts, enricher=Names())
    yield s
    s.close()


def offered(store, q: str, **kw):
    return run_search(store, SearchRequest(q=q, **kw)).interpretations


def test_a_full_name_is_not_offered_as_others_who_share_a_word(store):
    values = [i.value for i in offered(store, "what did Tony Blair say about Iraq")]
    assert "Tony Blair" in values and "Ian Blair" not in values
    assert "George Michael" not in [i.value for i in offered(store, "Michael Howard crime")]


def test_a_surname_alone_names_one_person_only_when_unambiguous(store):
    assert "Tony Blair" not in [i.value for i in offered(store, "Blair crime")]  # two Blairs
    assert [i.value for i in offered(store, "Brown news")] == []  # two Browns
    assert "Michael Howard" in [i.value for i in offered(store, "Howard crime")]


def test_a_first_name_before_an_unknown_surname_is_not_someone_else(store):
    """ "Harry Solano" on an archive that does not know him is not "Harry": the query names a
    person the index lacks. A next word that is itself a name is another name."""
    assert "Harry" not in [i.value for i in offered(store, "what did Harry Solano say about Iraq")]
    assert offered(store, "Harry Solano") == []
    assert [i.value for i in offered(store, "what did Harry say about Iraq")][:1] == ["Harry"]
    assert "Harry" in [i.value for i in offered(store, "Harry Iraq")]


def test_a_place_is_not_offered_as_a_speaker(store):
    got = offered(store, "what did Iraq say about the report")
    assert all(not (i.kind == "quotes" and i.value == "Iraq") for i in got)


def test_every_offered_link_returns_what_its_label_says(store):
    for q in ["what did Tony Blair say about Iraq", "Tony Blair NOT Labour", "Howard crime",
              "Iraq -London", "what did Ian Blair say"]:  # fmt: skip
        for it in offered(store, q):
            r = run_search(
                store, SearchRequest(q=it.q, mode=it.mode, filters={it.facet: [it.value]})
            )
            assert r.total == it.count, (q, it)
            if "NOT Labour" in q:
                assert "NOT Labour" in it.q and "NOT Labour" in it.label
                assert all("Labour" not in h.text for h in r.hits)


def test_interpretations_stop_at_the_deadline(store, monkeypatch):
    """Past the search's deadline (expired by hand, not by waiting) no reading is counted:
    the search is answered, whole, without interpretations, and says partial."""
    q = "what did Tony Blair say about Iraq"
    assert offered(store, q)  # in time: Tony Blair is offered
    real, counted = interpret.interpretations, []

    def expire_then_interpret(prep):
        prep.deadline.at = time.monotonic() - 1.0
        return real(prep)

    monkeypatch.setattr(searching, "interpretations", expire_then_interpret)
    monkeypatch.setattr(interpret, "_count", lambda *a: counted.append(a) or 1)
    r = run_search(store, SearchRequest(q=q))
    assert counted == [] and r.interpretations == []
    assert r.partial is True and "interpretations" in r.cut_short
    assert r.total == run_search(store, SearchRequest(q=q, suggest=False)).total


def test_a_long_query_is_refused_before_any_reading_is_looked_for(store, monkeypatch):
    """The runs looked up grow with the query's words: past 400 characters the query is
    refused before any (a 1,000-character query cost up to 6.5 s of CPU here)."""
    looked = []
    monkeypatch.setattr(searching, "interpretations", lambda prep: looked.append(prep) or [])
    with pytest.raises(QueryTooLong):
        run_search(store, SearchRequest(q=("what did Tony Blair say about Iraq " * 30)[:1000]))
    assert looked == []

"""Hits carry a bounded text: at most HIT_TEXT_CHARS around the first match, with its length.

Unit tests of ``api.formats.bound_hit_text`` and the same rule through HTTP on the web
tests' index, which holds a passage of about 30,000 characters.
"""

from __future__ import annotations

import pytest

try:  # tests/ is a package (tests/__init__.py) or a plain folder on sys.path
    from tests.web_support import LONG_ID, LONG_TEXT, make_app
except ModuleNotFoundError:
    from web_support import LONG_ID, LONG_TEXT, make_app

from newsquarry.api.formats import HIT_TEXT_CHARS, bound_hit_text


def test_a_short_text_is_left_whole():
    hit = {"text": "Short text.", "matches": [[0, 5]], "entities": [], "quotes": []}
    assert bound_hit_text(dict(hit)) == {**hit, "text_length": 11, "text_start": 0}


def test_a_long_text_is_cut_around_its_first_match_and_offsets_follow():
    words = " ".join(f"w{i:05d}" for i in range(2000))  # 14,000 characters
    at = words.index("w01000")
    hit = {
        "text": words,
        "matches": [[at, 6], [at + 7, 6], [len(words) - 6, 6]],  # the last lies outside
        "entities": [{"start": at, "end": at + 6, "name": "W"}, {"start": 0, "end": 6}],
        "quotes": [{"start": at + 7, "end": at + 20, "speaker_start": at, "speaker_end": at + 6}],
    }
    out = bound_hit_text(hit)
    text, start = out["text"], out["text_start"]
    assert len(text) <= HIT_TEXT_CHARS and out["text_length"] == len(words)
    assert words[start : start + len(text)] == text
    assert not text.startswith(" ") and not text.endswith(" ")  # cut between words
    assert start <= at <= start + HIT_TEXT_CHARS // 4 + 20  # the match is near the start
    assert [text[s : s + n] for s, n in out["matches"]] == ["w01000", "w01001"]
    assert [(e["start"], e["end"]) for e in out["entities"]] == [(at - start, at - start + 6)]
    quote = out["quotes"][0]
    assert text[quote["speaker_start"] : quote["speaker_end"]] == "w01000"
    assert text[quote["start"] : quote["end"]] == words[at + 7 : at + 20]


def test_a_match_near_the_end_takes_the_last_window():
    words = " ".join(f"w{i:05d}" for i in range(1000))
    at = words.index("w00999")
    out = bound_hit_text({"text": words, "matches": [[at, 6]]})
    assert out["text"].endswith("w00999") and len(out["text"]) <= HIT_TEXT_CHARS
    assert [out["text"][s : s + n] for s, n in out["matches"]] == ["w00999"]


@pytest.fixture(scope="module")
def client():
    return make_app().test_client()


@pytest.mark.parametrize("path", ["/v1/search", "/v1/quotes"])
def test_search_answers_stay_small_and_say_how_long_the_text_is(client, path):
    q = "council OR councillor" if path == "/v1/search" else "torture OR lost"
    r = client.get(path, query_string={"q": q, "per_page": 50})
    body = r.get_json()
    assert body["hits"] and len(r.data) < 40_000  # the 30,000-character passage is not sent
    for hit in body["hits"]:
        assert len(hit["text"]) <= HIT_TEXT_CHARS
        assert hit["text_length"] >= len(hit["text"]) and hit["text_start"] >= 0
        for s, n in hit["matches"]:
            assert hit["text"][s : s + n].lower()[:3] in ("cou", "tor", "los")
    if path == "/v1/search":
        long = next(h for h in body["hits"] if h["article_id"] == LONG_ID)
        assert (
            long["text_length"] == len(LONG_TEXT) and long["text"] == LONG_TEXT[: len(long["text"])]
        )
        # the whole passage is one request away
        whole = client.get(f"/v1/passages/{LONG_ID}%23p1").get_json()
        assert whole["text"] == LONG_TEXT


def test_the_schema_documents_the_bound(client):
    spec = client.get("/openapi.json").get_json()["components"]["schemas"]
    for name in ("Hit", "QuoteHit"):
        props = spec[name]["properties"]
        assert {"text_length", "text_start"} <= set(props)
        assert "1000" in props["text"]["description"]

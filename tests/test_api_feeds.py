"""Feeds of a search (api/feeds.py): Atom and JSON Feed forms of /v1/search and /v1/quotes."""

from __future__ import annotations

import json
from pathlib import Path

import feedparser
import jsonschema
import pytest
from api_support import TOKEN, TagEnricher, build_index

from newsquarry.api.app import create_app
from newsquarry.search.query.keys import Scope, make_key

AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "a-secret-of-thirty-two-characters-or-more"
SCHEMA = json.loads((Path(__file__).parent / "data" / "jsonfeed-1.1.schema.json").read_text())


@pytest.fixture
def client(tmp_path):
    build_index(tmp_path / "ix")
    app = create_app(
        {"index": str(tmp_path / "ix"), "write_token": TOKEN, "secret": SECRET},
        enricher=TagEnricher(),
    )
    return app.test_client()


def test_atom_feed_parses_cleanly_newest_first_with_stable_ids(client):
    r = client.get("/v1/search?q=oil&format=atom")
    assert r.status_code == 200 and r.mimetype == "application/atom+xml"
    feed = feedparser.parse(r.data)
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == "atom10"
    assert "oil" in feed.feed.title and feed.entries
    published = [e.published for e in feed.entries]
    assert published == sorted(published, reverse=True)
    assert len({e.id for e in feed.entries}) == len(feed.entries)
    assert all(e.link.startswith("http://localhost/passages/") for e in feed.entries)
    again = feedparser.parse(client.get("/v1/search?q=oil&format=atom").data)
    assert [e.id for e in again.entries] == [e.id for e in feed.entries]
    # the same search reached through another host name keeps every entry id
    other = feedparser.parse(
        client.get("/v1/search?q=oil&format=atom", base_url="http://news.example:8080").data
    )
    assert [e.id for e in other.entries] == [e.id for e in feed.entries]
    assert other.feed.id == feed.feed.id


def test_json_feed_matches_the_1_1_schema_for_passages_and_quotes(client):
    for path in ("/v1/search?q=oil&format=jsonfeed", "/v1/quotes?format=jsonfeed"):
        r = client.get(path)
        assert r.status_code == 200 and r.mimetype == "application/feed+json"
        body = r.get_json(force=True)
        jsonschema.validate(body, SCHEMA)
        assert body["items"], path
        published = [i["date_published"] for i in body["items"]]
        assert published == sorted(published, reverse=True)
    quotes = client.get("/v1/quotes?format=jsonfeed").get_json(force=True)
    assert all(i["authors"][0]["name"] in i["title"] for i in quotes["items"])
    with pytest.raises(jsonschema.ValidationError):  # the schema can fail
        jsonschema.validate({**quotes, "items": [{"id": "x"}]}, SCHEMA)


def test_a_new_matching_article_tops_the_feed_with_a_new_etag(client):
    first = client.get("/v1/search?q=harbour&format=atom")
    etag = first.headers["ETag"]
    assert client.get("/v1/search?q=harbour&format=atom",
                      headers={"If-None-Match": etag}).status_code == 304  # fmt: skip
    modified = first.headers["Last-Modified"]
    assert client.get("/v1/search?q=harbour&format=atom",
                      headers={"If-Modified-Since": modified}).status_code == 304  # fmt: skip
    before = feedparser.parse(first.data).entries
    put = client.put("/v1/articles/harbour-news", headers=AUTH, json={
        "title": "Harbour reopens", "date": "2031-05-01", "source": "Port Wire",
        "text": "The harbour reopened on Monday after the storm.",
    })  # fmt: skip
    assert put.status_code in (200, 201), put.data
    after = client.get("/v1/search?q=harbour&format=atom",
                       headers={"If-None-Match": etag})  # fmt: skip
    assert after.status_code == 200 and after.headers["ETag"] != etag
    entries = feedparser.parse(after.data).entries
    assert entries[0].title == "Harbour reopens"
    assert len(entries) == len(before) + 1


def test_a_scoped_key_limits_the_feed(client):
    hits = client.get("/v1/quotes?per_page=50").get_json()["hits"]
    speaker = sorted({q["speaker"] for q in hits})[0]
    key = make_key(SECRET, Scope(filters={"speaker": [speaker]}))
    body = client.get(f"/v1/quotes?format=jsonfeed&key={key}").get_json(force=True)
    assert body["items"] and {i["authors"][0]["name"] for i in body["items"]} == {speaker}
    # a reader refreshes through feed_url: it keeps the key, so the feed stays scoped
    refreshed = client.get(body["feed_url"].replace("http://localhost", "")).get_json(force=True)
    assert refreshed["items"] == body["items"]
    assert all(key not in i["url"] for i in body["items"])


def test_feed_formats_are_in_the_openapi_document_and_export_refuses_them(client):
    spec = client.get("/openapi.json").get_json()
    fmt = next(p for p in spec["paths"]["/v1/search"]["get"]["parameters"] if p["name"] == "format")
    assert {"atom", "jsonfeed"} <= set(fmt["schema"]["enum"])
    content = spec["paths"]["/v1/search"]["get"]["responses"]["200"]["content"]
    assert {"application/atom+xml", "application/feed+json"} <= set(content)
    r = client.get("/v1/search?q=oil&format=atom&export=true")
    assert r.status_code == 400 and r.mimetype == "application/problem+json"


def test_hostile_text_is_escaped_in_the_atom_feed(client):
    client.put("/v1/articles/xss", headers=AUTH, json={
        "title": "<script>alert(1)</script> & co", "date": "2032-01-01",
        "text": "Harbour news <img src=x onerror=alert(1)> ]]> &amp; more.",
    })  # fmt: skip
    r = client.get("/v1/search?q=harbour&format=atom")
    feed = feedparser.parse(r.data)
    assert not feed.bozo
    assert feed.entries[0].title == "<script>alert(1)</script> & co"
    assert b"<script>" not in r.data and b"<img" not in r.data

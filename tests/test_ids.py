"""Article ids are data: stored, returned and matched exactly as given, or refused.

Through every door: the readers (JSON Lines, front matter, files without an
id), the library store, the HTTP API (POST and PUT alike, ids in URLs with
slashes, ``#``, spaces, dots) and the CLI.
"""

from __future__ import annotations

import json
import re

import pytest
from api_support import TOKEN, TagEnricher
from click.testing import CliRunner

from newsquarry.api import create_app
from newsquarry.search.cli.app import cli
from newsquarry.search.core.errors import InvalidArticle
from newsquarry.search.core.ids import MAX_ID_LENGTH, check_id, derived_id, id_problem, url_segment
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.readers import article_from_mapping, read_paths

AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOSTILE_IDS = [
    "zz-café", "zz caf", "zz-caf", "news/2024/a", "news-2024-a", "abc-", "abc", ".hidden",
    "..", ".", "a#p1", "a", "a#p1#q1", " padded ", "x" * 250 + "1", "x" * 250 + "2",
    "قرار\u200f", "emoji 🗞️", 'quo"te\'s', "[br]{ac}(ket)", "100%", "a?b=c&d", "a+b",
]  # fmt: skip


def test_valid_ids_are_kept_exactly():
    for ident in HOSTILE_IDS:
        assert check_id(ident) == ident
        art = article_from_mapping({"id": ident, "text": "Body."})
        assert art.id == ident


@pytest.mark.parametrize(
    "bad, reason",
    [("", "empty"), ("   ", "whitespace"), ("a\nb", "U+000A"), ("a\x00", "U+0000"),
     ("tab\there", "U+0009"), ("del\x7f", "U+007F"), ("c1\x85", "U+0085"),
     ("line\u2028sep", "U+2028"), ("x" * (MAX_ID_LENGTH + 1), "longer than 512")],
)  # fmt: skip
def test_invalid_ids_are_refused_with_the_reason(bad, reason):
    assert reason in id_problem(bad)
    with pytest.raises(InvalidArticle, match=re.escape(reason)):
        check_id(bad)
    if bad:  # "" means "no id": derived from the content
        with pytest.raises(ValueError, match=re.escape(reason)):
            article_from_mapping({"id": bad, "text": "Body."})


def test_files_without_an_id_keep_the_derived_id(tmp_path):
    (tmp_path / "news 2024").mkdir()
    (tmp_path / "news 2024" / "Café story.txt").write_text("Title\n\nBody text.\n")
    (tmp_path / "given.txt").write_text("id: my/own id é\n\nTitle\n\nBody text.\n")
    (tmp_path / "feed.jsonl").write_text(
        json.dumps({"id": "zz-café", "text": "A."}) + "\n" + json.dumps({"text": "B."}) + "\n"
    )
    ids = sorted(a.id for a in read_paths([tmp_path]))
    assert derived_id("news 2024-Café story") == "news-2024-Caf-story"
    assert "news-2024-Caf-story" in ids  # the rule of earlier versions, unchanged
    assert "my/own id é" in ids and "zz-café" in ids
    assert any(i.startswith("a-") for i in ids)  # no id in the JSON line: content hash


def test_distinct_ids_are_distinct_articles_in_the_store(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    arts = [article_from_mapping({"id": i, "title": f"T {n}", "text": f"Body {n}. More."})
            for n, i in enumerate(HOSTILE_IDS)]  # fmt: skip
    report = index_articles(store, arts, enricher=TagEnricher())
    assert sorted(report.added) == sorted(HOSTILE_IDS)
    for n, ident in enumerate(HOSTILE_IDS):
        got = store.get_article(ident)
        assert got["id"] == ident and got["title"] == f"T {n}"
        assert [p["id"] for p in got["passages"]] == [f"{ident}#p1"]
        assert store.get_passage(f"{ident}#p1")["article_id"] == ident
    # article "a#p1" and the first passage of article "a" share an id string: both found
    assert store.get_passage("a#p1")["article_id"] == "a"
    assert store.get_article("a#p1")["title"] == f"T {HOSTILE_IDS.index('a#p1')}"
    assert store.stats()["articles"] == len(HOSTILE_IDS)
    assert store.delete("zz-caf") and store.get_article("zz-café")["id"] == "zz-café"


def test_url_segments_encode_every_id_reversibly():
    from urllib.parse import unquote

    for ident in HOSTILE_IDS:
        seg = url_segment(ident)
        assert "/" not in seg and "#" not in seg and "?" not in seg and " " not in seg
        assert seg not in (".", "..")
        assert unquote(seg) == ident


@pytest.fixture()
def write_client(tmp_path):
    app = create_app({"index": str(tmp_path / "ix"), "write_token": TOKEN},
                     enricher=TagEnricher())  # fmt: skip
    return app.test_client()


def test_api_post_and_put_keep_ids_and_never_merge_two(write_client):
    body = {"articles": [{"id": "zz-café", "text": "First."}, {"id": "zz caf", "text": "Second."}]}
    r = write_client.post("/v1/articles", json=body, headers=AUTH)
    assert sorted(r.get_json()["added"]) == ["zz caf", "zz-café"]
    r = write_client.put("/v1/articles/news%2F2024%2Fa", json={"text": "Slashed."}, headers=AUTH)
    assert r.get_json()["added"] == ["news/2024/a"]
    r = write_client.post("/v1/articles", json={"id": "news-2024-a", "text": "Dashed."},
                          headers=AUTH)  # fmt: skip
    assert r.get_json()["added"] == ["news-2024-a"]
    for path, ident, text in [
        ("/v1/articles/zz-caf%C3%A9", "zz-café", "First."),
        ("/v1/articles/zz%20caf", "zz caf", "Second."),
        ("/v1/articles/news%2F2024%2Fa", "news/2024/a", "Slashed."),
        ("/v1/articles/news/2024/a", "news/2024/a", "Slashed."),  # unencoded slashes too
        ("/v1/articles/news-2024-a", "news-2024-a", "Dashed."),
    ]:
        got = write_client.get(path)
        assert got.status_code == 200, (path, got.get_data(as_text=True))
        assert got.get_json()["id"] == ident and got.get_json()["text"] == text
    p = write_client.get("/v1/passages/news%2F2024%2Fa%23p1")
    assert p.get_json()["article_id"] == "news/2024/a"
    assert write_client.get("/v1/articles/zz-caf").status_code == 404


def test_api_refuses_invalid_ids_with_a_clear_reason(write_client):
    long_id = "y" * (MAX_ID_LENGTH + 1)
    r = write_client.post("/v1/articles", headers=AUTH, json={"articles": [
        {"id": "bad\u0007bell", "text": "x"}, {"id": long_id, "text": "y"},
        {"id": "fine", "text": "z"}]})  # fmt: skip
    body = r.get_json()
    assert body["added"] == ["fine"]
    reasons = {f["index"]: f["reason"] for f in body["failed"]}
    assert "control character (U+0007)" in reasons[0]
    assert "onger than" in reasons[1] and str(MAX_ID_LENGTH) in reasons[1]
    r = write_client.put(f"/v1/articles/{long_id}", json={"text": "x"}, headers=AUTH)
    assert r.status_code == 422 and f"longer than {MAX_ID_LENGTH}" in r.get_json()["detail"]


def test_api_echoes_long_unknown_ids_shortened(write_client):
    r = write_client.get("/v1/articles/" + "q" * 100_000)
    assert r.status_code == 404
    assert len(r.get_json()["detail"]) < 200


def test_permalink_pages_and_oembed_take_any_id(write_client):
    ident = "news/2024/é #1"
    write_client.put(f"/v1/articles/{url_segment(ident)}", json={"text": "Body."}, headers=AUTH)
    page = write_client.get(f"/passages/{url_segment(ident)}/1")
    assert page.status_code == 200 and "Body." in page.get_data(as_text=True)
    html = page.get_data(as_text=True)
    assert url_segment(ident) in html  # the permalink and embed links encode the id
    link = f"http://localhost/passages/{url_segment(ident)}/1"
    o = write_client.get("/oembed", query_string={"url": link})
    assert o.status_code == 200, o.get_data(as_text=True)


def test_cli_show_search_and_delete_take_ids_exactly(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    ids = ["zz-café", "zz caf", "a#p1", "a"]
    index_articles(store, [article_from_mapping({"id": i, "text": f"Oil {n}."})
                           for n, i in enumerate(ids)], enricher=TagEnricher())  # fmt: skip
    store.close()
    runner = CliRunner()

    def run(*args):
        return runner.invoke(cli, ["--index", str(tmp_path / "ix"), *args],
                             catch_exceptions=False)  # fmt: skip

    for n, ident in enumerate(ids):
        r = run("show", ident, "--json")
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        # "a#p1" is both a passage of "a" (shown first) and an article (shown by its passage)
        assert got["id"] == ident
        r = run("search", "--json", "--article", ident, f"{n}")
        assert [h["article_id"] for h in json.loads(r.stdout)["hits"]] == [ident], r.output
    r = run("show", "--article", "a#p1", "--json")
    assert json.loads(r.stdout)["passages"][0]["id"] == "a#p1#p1"
    r = run("delete", "zz-caf")
    assert r.exit_code != 0 and "zz-caf" in r.output
    r = run("delete", "zz caf")
    assert r.exit_code == 0
    assert json.loads(run("show", "zz-café", "--json").stdout)["id"] == "zz-café"

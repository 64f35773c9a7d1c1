"""The HTTP API through Flask's test client: documents, writes, errors, limits, CORS, docs."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from api_support import ARTICLES, TOKEN, TagEnricher, build_index

from newsquarry.api import create_app
from newsquarry.search.engine.store import WhooshStore

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("api-index")
    build_index(path)
    return path


@pytest.fixture()
def client(index_dir):
    app = create_app({"index": str(index_dir), "write_token": TOKEN}, enricher=TagEnricher())
    return app.test_client()


@pytest.fixture()
def write_client(tmp_path):
    """A client on a fresh, empty index (writes may change it)."""
    app = create_app(
        {"index": str(tmp_path / "ix"), "write_token": TOKEN, "lock_timeout": 0.3},
        enricher=TagEnricher(),
    )
    return app.test_client()


def assert_problem(resp, status: int) -> dict:
    assert resp.status_code == status, resp.get_data(as_text=True)
    assert resp.mimetype == PROBLEM
    body = resp.get_json(force=True)
    assert body["status"] == status
    assert body["type"] and body["title"] and body["detail"]
    assert "Traceback" not in resp.get_data(as_text=True)
    assert body["request_id"] == resp.headers["X-Request-Id"]
    return body


# ---------------------------------------------------------------- documents
def test_passage_by_id(client):
    resp = client.get("/v1/passages/solano-exile%23p1")
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["id"] == "solano-exile#p1"
    assert body["article_id"] == "solano-exile"
    assert body["title"] == "Soldiers risk a false trip"
    assert {"name": "Harry Solano", "type": "person"}.items() <= body["entities"][0].items()


def test_article_with_passages(client):
    body = client.get("/v1/articles/solano-exile").get_json()
    assert body["id"] == "solano-exile"
    assert body["source"] == "News from the world"
    texts = [p["text"] for p in body["passages"]]
    assert texts and all(t in body["text"] for t in texts)
    assert [p["position"] for p in body["passages"]] == sorted(
        p["position"] for p in body["passages"]
    )
    quotes = [q for p in body["passages"] for q in p["quotes"]]
    assert {q["speaker"] for q in quotes} >= {"Harry Solano", "Juan Guaidó"}


def test_unknown_ids_are_404_problems(client):
    body = assert_problem(client.get("/v1/passages/nope%23p1"), 404)
    assert "nope#p1" in body["detail"]
    assert_problem(client.get("/v1/articles/nope"), 404)
    assert_problem(client.get("/v1/no-such-endpoint"), 404)


def test_etag_and_304(client):
    first = client.get("/v1/articles/oil-output")
    etag = first.headers["ETag"]
    assert etag.startswith('"g')
    again = client.get("/v1/articles/oil-output", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.data == b""
    other = client.get("/v1/articles/border-aid", headers={"If-None-Match": etag})
    assert other.status_code == 200


def test_etag_changes_with_the_index_generation(write_client):
    put = write_client.put(
        "/v1/articles/a1", json={"title": "One", "text": "First text."}, headers=AUTH
    )
    assert put.status_code == 200
    etag = write_client.get("/v1/articles/a1").headers["ETag"]
    write_client.put(
        "/v1/articles/a1", json={"title": "One", "text": "Changed text."}, headers=AUTH
    )
    resp = write_client.get("/v1/articles/a1", headers={"If-None-Match": etag})
    assert resp.status_code == 200
    assert resp.get_json()["text"] == "Changed text."


# ------------------------------------------------------------------- writes
def test_write_token_missing_wrong_right(write_client):
    doc = {"articles": [{"id": "w1", "title": "T", "text": "Some text in Caracas."}]}
    missing = assert_problem(write_client.post("/v1/articles", json=doc), 401)
    assert missing["title"] == "Missing write token"
    assert (
        write_client.post("/v1/articles", json=doc).headers["WWW-Authenticate"].startswith("Bearer")
    )
    wrong = write_client.post("/v1/articles", json=doc, headers={"Authorization": "Bearer nope"})
    assert assert_problem(wrong, 403)["title"] == "Wrong write token"
    basic = write_client.post("/v1/articles", json=doc, headers={"Authorization": TOKEN})
    assert_problem(basic, 401)
    right = write_client.post("/v1/articles", json=doc, headers=AUTH)
    assert right.status_code == 200
    assert right.get_json()["added"] == ["w1"]
    assert write_client.get("/v1/articles/w1").status_code == 200


def test_writes_disabled_without_a_token(tmp_path):
    app = create_app({"index": str(tmp_path / "ix"), "write_token": None}, enricher=TagEnricher())
    c = app.test_client()
    doc = {"title": "T", "text": "x"}
    body = assert_problem(c.put("/v1/articles/x", json=doc, headers=AUTH), 403)
    assert body["title"] == "Writes disabled"
    assert_problem(c.delete("/v1/articles/x", headers=AUTH), 403)
    assert_problem(c.post("/v1/articles", json=[doc], headers=AUTH), 403)


def test_write_reports_added_replaced_unchanged_failed(write_client):
    batch = {
        "articles": [
            {"id": "b1", "title": "One", "text": "Oil in Venezuela.", "date": "2019-01-02"},
            {"id": "b2", "title": "Two", "text": "Aid in Colombia."},
            {"id": "b3", "title": "Bad date", "text": "Text.", "date": "not a date"},
            {"id": "b4", "title": "No text"},
            "not an object",
        ]
    }
    body = write_client.post("/v1/articles", json=batch, headers=AUTH).get_json()
    assert sorted(body["added"]) == ["b1", "b2"]
    assert body["passages"] == 2
    failed = {f["index"]: f for f in body["failed"]}
    assert set(failed) == {2, 3, 4}
    assert "date" in failed[2]["reason"] and failed[2]["id"] == "b3"
    assert "text" in failed[3]["reason"]
    assert "object" in failed[4]["reason"]

    batch["articles"][1]["text"] = "Aid waits in Colombia."
    again = write_client.post("/v1/articles", json=batch["articles"][:2], headers=AUTH).get_json()
    assert again["unchanged"] == ["b1"]
    assert again["replaced"] == ["b2"]
    assert write_client.get("/v1/articles/b2").get_json()["text"] == "Aid waits in Colombia."


def test_single_article_body_and_put(write_client):
    one = write_client.post(
        "/v1/articles", json={"title": "No id", "text": "Derived id."}, headers=AUTH
    ).get_json()
    assert len(one["added"]) == 1 and one["added"][0].startswith("a-")
    put = write_client.put("/v1/articles/given", json={"title": "G", "text": "Body."}, headers=AUTH)
    assert put.get_json()["added"] == ["given"]
    clash = write_client.put(
        "/v1/articles/given", json={"id": "other", "text": "Body."}, headers=AUTH
    )
    assert "differs" in assert_problem(clash, 422)["detail"]
    spaced = write_client.put("/v1/articles/bad%20id", json={"text": "x"}, headers=AUTH)
    assert spaced.get_json()["added"] == ["bad id"]  # ids are data: kept as given
    bad_id = write_client.put("/v1/articles/bad%0Aid", json={"text": "x"}, headers=AUTH)
    assert "control character" in assert_problem(bad_id, 422)["detail"]


def test_all_articles_failing_is_422_with_field_errors(write_client):
    resp = write_client.post(
        "/v1/articles", json={"articles": [{"title": "x"}, {"text": ""}]}, headers=AUTH
    )
    body = assert_problem(resp, 422)
    assert set(body["errors"]) == {"articles.0", "articles.1"}
    assert_problem(write_client.post("/v1/articles", json={"articles": []}, headers=AUTH), 422)
    assert_problem(write_client.post("/v1/articles", json=42, headers=AUTH), 422)
    extra = write_client.post(
        "/v1/articles", json={"articles": [{"text": "x"}], "more": 1}, headers=AUTH
    )
    assert assert_problem(extra, 422)["errors"] == {"more": ["Unknown field."]}


def test_delete_article(write_client):
    write_client.put("/v1/articles/d1", json={"text": "To be deleted."}, headers=AUTH)
    assert_problem(write_client.delete("/v1/articles/d1"), 401)
    resp = write_client.delete("/v1/articles/d1", headers=AUTH)
    assert resp.status_code == 200
    assert resp.get_json()["deleted"] == ["d1"]
    assert_problem(write_client.get("/v1/articles/d1"), 404)
    assert_problem(write_client.get("/v1/passages/d1%23p1"), 404)
    assert_problem(write_client.delete("/v1/articles/d1", headers=AUTH), 404)


def test_writes_that_change_nothing_keep_generation_and_etags(write_client):
    doc = {"title": "Same", "text": "Unchanged text about Caracas.", "date": "2019-01-02"}
    first = write_client.put("/v1/articles/n1", json=doc, headers=AUTH).get_json()
    generation = first["generation"]
    etag = write_client.get("/v1/articles/n1").headers["ETag"]
    search_etag = write_client.get("/v1/search?q=Caracas").headers["ETag"]

    put = write_client.put("/v1/articles/n1", json=doc, headers=AUTH).get_json()
    assert put["unchanged"] == ["n1"] and put["generation"] == generation
    post = write_client.post("/v1/articles", json=[{"id": "n1", **doc}], headers=AUTH).get_json()
    assert post["unchanged"] == ["n1"] and post["generation"] == generation
    assert_problem(write_client.delete("/v1/articles/missing", headers=AUTH), 404)

    assert write_client.get("/v1/articles/n1", headers={"If-None-Match": etag}).status_code == 304
    again = write_client.get("/v1/search?q=Caracas", headers={"If-None-Match": search_etag})
    assert again.status_code == 304
    assert write_client.get("/v1/stats").get_json()["generation"] == generation


def test_415_for_non_json_and_400_for_broken_json(write_client):
    resp = write_client.post(
        "/v1/articles",
        data="text=x",
        headers=AUTH,
        content_type="application/x-www-form-urlencoded",
    )
    assert_problem(resp, 415)
    broken = write_client.post(
        "/v1/articles", data="{not json", headers=AUTH, content_type="application/json"
    )
    assert assert_problem(broken, 400)["title"] == "Invalid JSON"


def test_413_when_the_body_is_too_large(tmp_path):
    app = create_app(
        {"index": str(tmp_path / "ix"), "write_token": TOKEN, "max_body_bytes": 1000},
        enricher=TagEnricher(),
    )
    c = app.test_client()
    resp = c.post("/v1/articles", json={"articles": [{"text": "x" * 2000}]}, headers=AUTH)
    body = assert_problem(resp, 413)
    assert "1000 bytes" in body["detail"]
    assert c.post("/v1/articles", json={"text": "small"}, headers=AUTH).status_code == 200


def test_busy_index_is_503_with_retry_after(write_client, tmp_path):
    store = WhooshStore(tmp_path / "ix")
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with store.writer():
            held.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(5)
    try:
        started = time.monotonic()
        resp = write_client.put("/v1/articles/busy", json={"text": "x"}, headers=AUTH)
        body = assert_problem(resp, 503)
        assert body["title"] == "Index busy"
        assert int(resp.headers["Retry-After"]) > 0
        assert time.monotonic() - started < 3
        # no index folder, pid or command for clients (the server log has them)
        text = resp.get_data(as_text=True)
        assert str(tmp_path) not in text and f"pid {os.getpid()}" not in text
        assert "gave up after waiting" in body["detail"]
    finally:
        release.set()
        t.join()
    assert (
        write_client.put("/v1/articles/busy", json={"text": "x"}, headers=AUTH).status_code == 200
    )


def test_a_write_on_a_full_disk_is_507_and_the_next_one_succeeds(small_disk):
    from conftest import fill_disk

    app = create_app({"index": str(small_disk / "ix"), "write_token": TOKEN},
                     enricher=TagEnricher())  # fmt: skip
    c = app.test_client()
    assert c.put("/v1/articles/first", json={"text": "x " * 50}, headers=AUTH).status_code == 200
    filler = fill_disk(small_disk, leave=8 * 1024)
    big = {"articles": [{"id": f"b{i}", "text": f"word{i} " * 2000} for i in range(20)]}
    resp = c.post("/v1/articles", json=big, headers=AUTH)
    body = assert_problem(resp, 507)
    assert body["title"] == "Not enough disk space" and "nothing of it was kept" in body["detail"]
    filler.unlink()
    assert c.post("/v1/articles", json=big, headers=AUTH).status_code == 200
    assert c.get("/v1/articles/b19").status_code == 200


# -------------------------------------------------------------- HTTP errors
def test_unexpected_errors_are_500_problems_without_traceback(index_dir, caplog):
    app = create_app({"index": str(index_dir)})

    def broken() -> None:
        raise RuntimeError("secret internals")

    app.add_url_rule("/v1/broken", "broken", broken)
    resp = app.test_client().get("/v1/broken", headers={"X-Request-Id": "boom-1"})
    assert assert_problem(resp, 500)["title"] == "Internal Server Error"
    assert "secret internals" not in resp.get_data(as_text=True)
    assert "boom-1" in caplog.text and "secret internals" in caplog.text


def test_405_lists_allowed_methods(client):
    resp = client.post("/v1/stats")
    assert_problem(resp, 405)
    assert "GET" in resp.headers["Allow"]
    assert_problem(client.patch("/v1/articles/solano-exile"), 405)


def test_414_for_an_absurd_query_string(client):
    body = assert_problem(client.get("/v1/search?q=" + "x" * 300_000), 414)
    assert "query string" in body["detail"]


def test_invalid_parameters_get_per_field_errors(client):
    resp = client.get("/v1/search?per_page=0&sort=sideways&page=x&bogus=1")
    body = assert_problem(resp, 400)
    assert body["title"] == "Invalid parameters"
    assert set(body["errors"]) >= {"per_page", "sort", "page", "bogus"}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("per_page=101", "per_page"),
        ("page=200&per_page=100", "page"),
        ("q=" + "a" * 1001, "q"),
        ("facet_size=101", "facet_size"),
        ("&".join(f"facet={f}" for f in ["person"] * 9), "facet"),
        ("facet=nonsense", "facet"),
        ("&".join(f"person=p{i}" for i in range(51)), "person"),
        ("date_from=yesterday", "date_from"),
    ],
)
def test_limits_are_enforced(client, query, field):
    body = assert_problem(client.get("/v1/search?" + query), 400)
    assert field in body["errors"]


def test_limits_follow_configuration(index_dir):
    app = create_app(
        {"index": str(index_dir), "max_per_page": 5, "max_facets": 1, "max_query_length": 10}
    )
    c = app.test_client()
    assert "per_page" in assert_problem(c.get("/v1/search?per_page=6"), 400)["errors"]
    assert "q" in assert_problem(c.get("/v1/search?q=" + "x" * 11), 400)["errors"]
    assert "facet" in assert_problem(c.get("/v1/search?facet=person&facet=org"), 400)["errors"]
    spec = c.get("/openapi.json").get_json()
    params = {p["name"]: p for p in spec["paths"]["/v1/search"]["get"]["parameters"]}
    assert params["per_page"]["schema"]["maximum"] == 5
    limits = c.get("/v1/stats").get_json()["limits"]
    assert limits["max_per_page"] == 5


def test_unreadable_index_is_not_ready_and_503(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    app = create_app({"index": str(blocker / "ix")})
    c = app.test_client()
    live = c.get("/health/live")
    assert live.status_code == 200 and live.get_json()["live"] is True
    ready = c.get("/health/ready")
    assert ready.status_code == 503
    assert ready.get_json()["ready"] is False
    assert c.get("/v1/health").get_json()["ready"] is False
    body = assert_problem(c.get("/v1/search?q=x"), 503)
    assert body["title"] == "Index unavailable"
    assert "Retry-After" in c.get("/v1/stats").headers


def test_ready_and_stats(client):
    assert client.get("/health/ready").get_json() == {
        "live": True,
        "ready": True,
        "detail": None,
        "generation": client.get("/v1/stats").get_json()["generation"],
    }
    stats = client.get("/v1/stats").get_json()
    assert stats["articles"] == len(ARTICLES)
    assert stats["passages"] >= len(ARTICLES)
    assert stats["quotes"] >= 3
    assert "path" not in stats


def test_settings_hide_secrets(client):
    body = client.get("/v1/settings").get_json()["settings"]
    assert body["write_token"]["value"] is True
    assert TOKEN not in json.dumps(body)
    assert body["max_per_page"] == {
        "value": 100,
        "default": 100,
        "env": "NEWSQUARRY_MAX_PER_PAGE",
        "help": body["max_per_page"]["help"],
    }


# ---------------------------------------------------------- request ids, CORS
def test_request_id_is_echoed_or_made(client):
    mine = client.get("/v1/stats", headers={"X-Request-Id": "abc-123"})
    assert mine.headers["X-Request-Id"] == "abc-123"
    made = client.get("/v1/stats", headers={"X-Request-Id": "bad id!"})
    assert len(made.headers["X-Request-Id"]) == 32
    assert client.get("/v1/stats").headers["X-Request-Id"] != made.headers["X-Request-Id"]


def test_cors_preflight_on_reads(client):
    resp = client.options(
        "/v1/search",
        headers={
            "Origin": "https://embed.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "If-None-Match",
        },
    )
    assert resp.status_code == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"
    assert "GET" in resp.headers["Access-Control-Allow-Methods"]
    assert "DELETE" not in resp.headers["Access-Control-Allow-Methods"]
    get = client.get("/v1/stats", headers={"Origin": "https://embed.example"})
    assert get.headers["Access-Control-Allow-Origin"] == "*"
    assert "ETag" in get.headers["Access-Control-Expose-Headers"]


def test_cors_not_offered_for_writes(client):
    resp = client.put(
        "/v1/articles/x", json={"text": "x"}, headers={"Origin": "https://evil.example", **AUTH}
    )
    assert "Access-Control-Allow-Origin" not in resp.headers


def test_cors_origins_are_configurable(index_dir):
    app = create_app({"index": str(index_dir), "cors_origins": "https://a.example"})
    c = app.test_client()
    ok = c.get("/v1/stats", headers={"Origin": "https://a.example"})
    assert ok.headers["Access-Control-Allow-Origin"] == "https://a.example"
    other = c.get("/v1/stats", headers={"Origin": "https://b.example"})
    assert "Access-Control-Allow-Origin" not in other.headers


# --------------------------------------------------------------- OpenAPI, docs
def test_openapi_document(client):
    spec = client.get("/openapi.json").get_json()
    assert spec["openapi"].startswith("3.")
    paths = spec["paths"]
    for path in (
        "/v1/search",
        "/v1/quotes",
        "/v1/facets/{facet}",
        "/v1/passages/{passage_id}",
        "/v1/articles/{article_id}",
        "/v1/articles",
        "/v1/stats",
        "/health/ready",
    ):
        assert path in paths
    assert set(paths["/v1/articles/{article_id}"]) >= {"get", "put", "delete"}
    error = spec["components"]["responses"]["DEFAULT_ERROR"]["content"]
    assert list(error) == [PROBLEM]
    hit = spec["components"]["schemas"]["Hit"]["properties"]
    assert {"snippet", "matches", "entities", "quotes"} <= set(hit)


def test_docs_page_needs_no_internet(client):
    resp = client.get("/docs")
    assert resp.status_code == 200
    html = resp.get_data(as_text=True)
    assert "openapi.json" in html
    for marker in ("http://", "https://", "cdn", "unpkg", "jsdelivr"):
        assert marker not in html


def test_too_many_articles_in_one_write_is_413(tmp_path):
    app = create_app(
        {"index": str(tmp_path / "ix"), "write_token": TOKEN, "max_articles_per_write": 3},
        enricher=TagEnricher(),
    )
    c = app.test_client()
    arts = [{"id": f"a{i}", "title": "t", "text": "Some text."} for i in range(4)]
    r = c.post("/v1/articles", json={"articles": arts}, headers=AUTH)
    assert r.status_code == 413 and r.mimetype == "application/problem+json"
    assert "at most 3 articles per request, got 4" in r.get_json()["detail"]
    r = c.post("/v1/articles", json=arts[:3], headers=AUTH)
    assert r.status_code == 200 and r.get_json()["added"] == ["a0", "a1", "a2"]


def test_a_hostile_date_is_refused_with_a_clear_reason(write_client):
    hostile = '2024-01-01"><script>alert(1)</script>'
    resp = write_client.put(
        "/v1/articles/dated", json={"text": "Body.", "date": hostile}, headers=AUTH
    )
    body = assert_problem(resp, 422)
    assert "not an ISO 8601 date" in str(body)
    assert_problem(write_client.get("/v1/articles/dated"), 404)  # nothing was stored
    ok = write_client.put(
        "/v1/articles/dated", json={"text": "Body.", "date": "2024-01-01"}, headers=AUTH
    )
    assert ok.status_code == 200
    assert write_client.get("/v1/articles/dated").get_json()["date"] == "2024-01-01"


# -- the OpenAPI document says what the server accepts (cases schemathesis found, issue 33) --


def _schema_of(client, path: str, method: str) -> tuple[dict, dict]:
    doc = client.get("/openapi.json").get_json()
    return doc, doc["paths"][path][method]


def test_the_article_date_pattern_admits_only_dates_the_server_accepts(write_client):
    import re

    doc, _ = _schema_of(write_client, "/v1/articles/{article_id}", "put")
    pattern = doc["components"]["schemas"]["ArticleInNoId"]["properties"]["date"]["pattern"]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    # "\d" in the pattern admitted any Unicode digit ("1٣:00"), which the date parser refuses:
    # a PUT body the schema admitted was a 422
    unicode_digit = "2019-02-23T1\u0663:00"
    assert re.search(pattern, unicode_digit) is None
    resp = write_client.put("/v1/articles/d1", json={"text": "Rain.", "date": unicode_digit},
                            headers=auth)  # fmt: skip
    assert_problem(resp, 422)
    for date in ("2019-02-23", "2019-02-23T10:00", "2019-02-23 10:00:59.123+05:30",
                 "2000-02-29T23:59:59.123456Z"):  # fmt: skip
        assert re.search(pattern, date), date
        resp = write_client.put("/v1/articles/d1", json={"text": f"Rain at {date}.",
                                "date": date}, headers=auth)  # fmt: skip
        assert resp.status_code == 200, (date, resp.get_json())


def test_export_with_a_feed_format_is_the_documented_400(client):
    _, op = _schema_of(client, "/v1/search", "get")
    export = next(p for p in op["parameters"] if p["name"] == "export")
    assert "format=atom or jsonfeed" in export["description"]
    assert "400" in op["responses"]
    for fmt in ("atom", "jsonfeed"):
        body = assert_problem(client.get(f"/v1/search?export=true&format={fmt}"), 400)
        assert body["errors"] == {"export": ["export needs format=json, jsonl or csv"]}
    for fmt in ("json", "jsonl", "csv"):  # what the description promises works
        assert client.get(f"/v1/search?export=true&format={fmt}").status_code == 200

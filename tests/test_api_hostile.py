"""Hostile requests to the HTTP API: clear problem+json errors, never a 500, bounded time.

Property-based (hypothesis) over query parameters of the search endpoints,
over ids in paths (traversal attempts included), and over write bodies with
any content type; plus named cases: deeply nested JSON, oversized bodies,
wrong content types, path traversal that must not touch any file.
"""

from __future__ import annotations

import json
import time
from urllib.parse import unquote

import pytest
from api_support import TOKEN, TagEnricher, build_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newsquarry.api import create_app

AUTH = {"Authorization": f"Bearer {TOKEN}"}
BOUND = 10.0  # generous: a loaded CI machine must not make this flaky
OK_STATUSES = {200, 304, 400, 401, 403, 404, 405, 413, 415, 422, 503}
PROPS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("api-hostile")
    build_index(path / "ix")
    (path / "secret.txt").write_text("do not touch")
    app = create_app(
        {"index": str(path / "ix"), "write_token": TOKEN, "lock_timeout": 1.0,
         "max_body_bytes": 100_000, "search_time_limit": 2.0},
        enricher=TagEnricher(),
    )  # fmt: skip
    c = app.test_client()
    c.root = path
    return c


def check(resp, started: float) -> None:
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"took {elapsed:.1f} s"
    if resp.status_code in (301, 308):  # werkzeug normalising a path: same host only
        assert resp.headers["Location"].startswith("http://localhost/"), resp.headers["Location"]
        return
    assert resp.status_code in OK_STATUSES, (resp.status_code, resp.get_data(as_text=True)[:300])
    if resp.status_code >= 400:
        assert resp.mimetype == "application/problem+json"
        body = resp.get_json()
        assert body["status"] == resp.status_code and body["title"] and body["detail"]


PARAM_NAMES = ["q", "page", "per_page", "sort", "facet", "facet_size", "date_from", "date_to",
               "date_interval", "mode", "format", "export", "highlight", "suggest", "person",
               "speaker", "source", "article", "key", "callback", "_shape", "q[]", ""]  # fmt: skip
VALUES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["0", "-1", "1e9", "99999999999999999999", "NaN", "true", "null", "*",
                     "[]", "{}", "person", "date", "csv", "jsonl", "xml", "2019-02-30"]),
)  # fmt: skip


@PROPS
@given(params=st.lists(st.tuples(st.sampled_from(PARAM_NAMES), VALUES), max_size=8),
       endpoint=st.sampled_from(["/v1/search", "/v1/quotes", "/v1/facets/person",
                                 "/v1/facets/nope", "/v1/facets/date"]))  # fmt: skip
def test_any_search_parameters_give_a_result_or_a_clear_error(client, params, endpoint):
    started = time.monotonic()
    check(client.get(endpoint, query_string=params), started)


ID_PIECES = ["..", "/", "%2F", "%2e%2e", "\\", "#", "%23", "p1", "%00", "~", "secret.txt",
             "ix", "etc", "passwd", "newsquarry_WRITELOCK", ".", "%", "é", " "]  # fmt: skip


@PROPS
@given(parts=st.lists(st.one_of(st.sampled_from(ID_PIECES), st.text(max_size=5)), max_size=8),
       method=st.sampled_from(["GET", "DELETE", "PUT"]),
       kind=st.sampled_from(["articles", "passages"]))  # fmt: skip
def test_any_id_in_a_path_gives_a_record_or_a_clear_error(client, parts, method, kind):
    raw = "".join(parts)
    body = {"title": "t", "text": "Some text."} if method == "PUT" else None
    started = time.monotonic()
    resp = client.open(f"/v1/{kind}/{raw}", method=method, json=body, headers=AUTH)
    check(resp, started)
    assert (client.root / "secret.txt").read_text() == "do not touch"


def test_path_traversal_in_ids_touches_no_file(client):
    for raw in ["../secret.txt", "..%2Fsecret.txt", "%2e%2e%2fsecret.txt", "..\\secret.txt",
                "....//secret.txt", "ix/../../secret.txt",
                "%2e%2e%2f%2e%2e%2fetc%2fpasswd"]:  # fmt: skip
        for method in ("GET", "DELETE"):
            resp = client.open(f"/v1/articles/{raw}", method=method, headers=AUTH)
            assert "do not touch" not in resp.get_data(as_text=True)
            if resp.status_code == 200:  # ids are data: an article of that name (made above)
                assert resp.get_json()[method == "GET" and "id" or "deleted"] in (
                    unquote(raw), [unquote(raw)]), (raw, method)  # fmt: skip
                continue
            assert resp.status_code in (301, 308, 404, 405), (raw, method, resp.status_code)
        resp = client.put(f"/v1/articles/{raw}", json={"text": "x"}, headers=AUTH)
        check(resp, time.monotonic())  # a valid id makes an article; nothing else happens
    assert (client.root / "secret.txt").read_text() == "do not touch"
    assert (client.root / "ix" / "newsquarry_WRITELOCK").exists()


CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded",
                 "multipart/form-data", "application/json; charset=latin-1",
                 "application/problem+json", "", "application/json\x00"]  # fmt: skip


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(body=st.one_of(st.binary(max_size=200), st.recursive(
           st.none() | st.booleans() | st.integers() | st.text(max_size=20),
           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
               st.sampled_from(["articles", "id", "title", "text", "date", "source", "x"]),
               inner, max_size=5), max_leaves=15).map(lambda v: json.dumps(v).encode())),
       ctype=st.sampled_from(CONTENT_TYPES), auth=st.booleans())  # fmt: skip
def test_any_write_body_gives_a_report_or_a_clear_error(client, body, ctype, auth):
    started = time.monotonic()
    headers = {**(AUTH if auth else {}), "Content-Type": ctype}
    check(client.post("/v1/articles", data=body, headers=headers), started)


def test_deeply_nested_json_body_is_a_clear_error(client):
    for body in (
        "[" * 100_000 + "]" * 100_000,
        '{"articles": ' + "[" * 50_000 + "]" * 50_000 + "}",
    ):
        started = time.monotonic()
        resp = client.post(
            "/v1/articles", data=body, headers={**AUTH, "Content-Type": "application/json"}
        )
        check(resp, started)
        assert resp.status_code in (400, 413, 422)


def test_a_body_without_a_length_is_read_no_further_than_the_limit(client):
    class Endless:  # a body stream of unknown length that never ends
        read_bytes = 0

        def read(self, n: int = -1) -> bytes:
            chunk = b"[" * (65536 if n == -1 else min(n, 65536))
            self.read_bytes += len(chunk)
            return chunk

        def readline(self, n: int = -1) -> bytes:
            return self.read(n)

    body = Endless()
    resp = client.post(
        "/v1/articles",
        headers={**AUTH, "Content-Type": "application/json", "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input": body, "wsgi.input_terminated": True},
    )
    check(resp, time.monotonic())
    assert resp.status_code in (400, 413)
    assert body.read_bytes <= 100_000 + 65536  # max_body_bytes, give or take one chunk


def test_wrong_content_type_is_415(client):
    resp = client.post(
        "/v1/articles",
        data="text=hello",
        headers={**AUTH, "Content-Type": "application/x-www-form-urlencoded"},
    )
    check(resp, time.monotonic())
    assert resp.status_code == 415


# ------------------------------------------------------------- the hardening list
def test_if_none_match_star_on_a_missing_document_is_404(client):
    star = {"If-None-Match": "*"}
    for path in ("/v1/articles/no-such-article", "/v1/passages/no-such%23p1"):
        r = client.get(path, headers=star)
        assert r.status_code == 404 and r.mimetype == "application/problem+json"
    assert client.get("/v1/articles/solano-exile", headers=star).status_code == 304
    assert client.get("/v1/passages/solano-exile%23p1", headers=star).status_code == 304


def test_the_host_header_is_never_copied_into_links(client):
    for host in ("evil.example", "evil.example:8080"):
        r = client.get("/v1/search?q=oil&facet=person&per_page=2", headers={"Host": host})
        assert r.status_code == 200, host
        body = r.get_json()
        urls = [body["links"]["self"], body["links"]["next"], r.headers["Link"]]
        urls += [v["toggle_url"] for v in body["facets"]["person"]["values"]]
        for url in urls:
            assert "evil" not in url and "http" not in url, url
        assert body["links"]["next"].startswith("/v1/search?")
        r = client.get("/v1/facets/person", headers={"Host": host})
        assert all(v["toggle_url"].startswith("/v1/search?") for v in r.get_json()["values"])


def test_a_configured_base_url_makes_absolute_links(tmp_path):
    build_index(tmp_path / "ix")
    app = create_app({"index": str(tmp_path / "ix"), "base_url": "https://news.example.org/"})
    r = app.test_client().get("/v1/search?q=oil&per_page=2", headers={"Host": "evil.example"})
    assert r.get_json()["links"]["next"].startswith("https://news.example.org/v1/search?")
    assert "evil" not in r.headers["Link"]


def test_a_busy_index_503_names_no_path_pid_or_command(client):
    from newsquarry.search.engine.store import WhooshStore

    holder = WhooshStore(client.root / "ix")
    with holder.writer():  # another writer holds the lock past the app's 1 s timeout
        r = client.put("/v1/articles/busy-one", json={"text": "Busy."}, headers=AUTH)
    holder.close()
    assert r.status_code == 503 and r.headers["Retry-After"]
    detail = r.get_data(as_text=True)
    assert str(client.root) not in detail and "pid" not in detail and "pytest" not in detail
    assert "try again" in r.get_json()["detail"]


def test_an_oversized_header_is_a_431_problem(client):
    for name in ("X-Newsquarry-Key", "X-Anything"):
        r = client.get("/v1/search", headers={name: "k" * 9000})
        assert r.status_code == 431 and r.mimetype == "application/problem+json"
        assert r.get_json()["status"] == 431


def test_double_negation_is_a_clear_query_error(client):
    r = client.get("/v1/search", query_string={"q": "NOT NOT oil"})
    assert r.status_code == 400 and "double negation" in r.get_json()["detail"]
    assert "list index" not in r.get_json()["detail"]


def test_a_long_unknown_path_is_not_echoed_in_full(client):
    for path in ("/v1/passages/" + "p" * 100_000, "/nothing/" + "n" * 100_000):
        r = client.get(path)
        assert r.status_code == 404
        assert len(r.get_data()) < 2000

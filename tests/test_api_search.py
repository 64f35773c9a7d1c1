"""Search endpoints through Flask's test client: results, facets, links, formats, caching."""

from __future__ import annotations

import csv
import io
import json
from urllib.parse import parse_qsl, urlsplit

import pytest
from api_support import TOKEN, TagEnricher, build_index

from newsquarry.api import create_app

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("api-search-index")
    build_index(path)
    return path


@pytest.fixture()
def app(index_dir):
    return create_app(
        {"index": str(index_dir), "write_token": TOKEN, "secret": "k" * 32}, enricher=TagEnricher()
    )


@pytest.fixture()
def client(app):
    return app.test_client()


def relative(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + ("?" + parts.query if parts.query else "")


def test_search_passages(client):
    resp = client.get("/v1/search?q=torture")
    assert resp.status_code == 200
    assert resp.mimetype == "application/json"
    body = resp.get_json()
    assert body["total"] == 1
    hit = body["hits"][0]
    assert hit["article_id"] == "solano-exile"
    assert "<mark>" in hit["snippet"]
    start, length = hit["matches"][0]
    assert hit["text"][start : start + length].lower().startswith("tortur")
    assert body["page"] == 1 and body["total_pages"] == 1
    assert body["partial"] is False
    assert body["request"]["q"] == "torture"


def test_highlight_off(client):
    hit = client.get("/v1/search?q=torture&highlight=false").get_json()["hits"][0]
    assert not hit["snippet"] and not hit["matches"]


def test_snippets_are_escaped(client):
    body = client.get("/v1/search?q=analyst").get_json()
    snippet = body["hits"][0]["snippet"]
    assert "<script>" not in snippet
    assert "&lt;script&gt;" in snippet


def test_filters_facets_and_toggle_urls(client):
    body = client.get("/v1/search?q=Caracas&facet=person&facet=source").get_json()
    people = {v["value"]: v for v in body["facets"]["person"]["values"]}
    assert {"Harry Solano", "Juan Guaidó", "Ana Ruiz"} <= set(people)
    assert not any(v["selected"] for v in people.values())

    picked = client.get(relative(people["Ana Ruiz"]["toggle_url"])).get_json()
    assert picked["request"]["filters"] == {"person": ["Ana Ruiz"]}
    assert picked["total"] == 1
    assert {h["article_id"] for h in picked["hits"]} == {"oil-output"}
    # multi-select: the other people keep their counts after a pick
    after = {v["value"]: v for v in picked["facets"]["person"]["values"]}
    assert after["Harry Solano"]["count"] == people["Harry Solano"]["count"]
    assert after["Ana Ruiz"]["selected"] is True

    both = client.get(relative(after["Harry Solano"]["toggle_url"])).get_json()
    assert sorted(both["request"]["filters"]["person"]) == ["Ana Ruiz", "Harry Solano"]
    assert both["total"] > picked["total"]

    back = {v["value"]: v for v in both["facets"]["person"]["values"]}
    undone = client.get(relative(back["Ana Ruiz"]["toggle_url"])).get_json()
    assert undone["request"]["filters"] == {"person": ["Harry Solano"]}


def test_all_of_two_values_of_one_facet(client):
    """``all_of=person``: passages naming both people, not either; the toggle links keep it,
    the OpenAPI document lists it, and an unknown facet is a 400 naming the parameter."""
    pairs = [("person", "Harry Solano"), ("person", "Nicolás Maduro"), ("facet", "person")]
    either = client.get("/v1/search", query_string=pairs).get_json()
    both = client.get("/v1/search", query_string=[*pairs, ("all_of", "person")]).get_json()
    assert 0 < both["total"] < either["total"]
    assert both["request"]["all_of"] == ["person"]
    for hit in both["hits"]:
        names = {e["name"] for e in hit["entities"] if e["type"] == "person"}
        assert {"Harry Solano", "Nicolás Maduro"} <= names
    values = {v["value"]: v for v in both["facets"]["person"]["values"]}
    assert values["Harry Solano"]["count"] == both["total"]  # counted within its own filter
    one = client.get(relative(values["Nicolás Maduro"]["toggle_url"])).get_json()
    assert one["request"]["filters"] == {"person": ["Harry Solano"]}
    assert one["request"]["all_of"] == ["person"]
    bad = client.get("/v1/search?person=x&all_of=nope")
    assert (
        bad.status_code == 400 and bad.mimetype == PROBLEM and "all_of" in bad.get_json()["errors"]
    )
    spec = client.get("/openapi.json").get_json()
    params = {p["name"] for p in spec["paths"]["/v1/search"]["get"]["parameters"]}
    assert "all_of" in params


def test_accent_folded_filter_and_toggle(client):
    body = client.get("/v1/search?person=Juan%20Guaido&facet=person").get_json()
    assert body["total"] >= 1
    values = {v["value"]: v for v in body["facets"]["person"]["values"]}
    assert values["Juan Guaidó"]["selected"] is True
    cleared = client.get(relative(values["Juan Guaidó"]["toggle_url"])).get_json()
    assert cleared["request"]["filters"] == {}


def test_paging_links(client):
    resp = client.get("/v1/search?q=oil&per_page=5&page=2")
    body = resp.get_json()
    assert body["total"] > 10
    link = resp.headers["Link"]
    assert 'rel="next"' in link and 'rel="prev"' in link and 'rel="first"' in link
    nxt = dict(parse_qsl(urlsplit(body["links"]["next"]).query))
    assert nxt["page"] == "3" and nxt["per_page"] == "5" and nxt["q"] == "oil"
    prev = dict(parse_qsl(urlsplit(body["links"]["prev"]).query))
    assert "page" not in prev  # page 1
    last = client.get(f"/v1/search?q=oil&per_page=5&page={body['total_pages']}")
    assert 'rel="next"' not in last.headers["Link"]
    assert last.get_json()["links"]["next"] is None
    ids = [
        h["id"]
        for p in (1, 2)
        for h in client.get(f"/v1/search?q=oil&per_page=5&page={p}").get_json()["hits"]
    ]
    assert len(set(ids)) == 10


def test_sort_by_date(client):
    hits = client.get("/v1/search?sort=-date&per_page=50").get_json()["hits"]
    dates = [h["date"] for h in hits if h["date"]]
    assert dates == sorted(dates, reverse=True)


def test_date_range(client):
    body = client.get("/v1/search?date_from=2019&date_to=2019-12").get_json()
    assert body["total"] >= 1
    assert all(h["date"].startswith("2019") for h in body["hits"])


def test_quote_search(client):
    body = client.get("/v1/quotes?q=torture&facet=speaker").get_json()
    assert body["total"] == 1
    hit = body["hits"][0]
    assert hit["speaker"] == "Harry Solano"
    assert hit["passage_id"].startswith("solano-exile#p")
    assert body["facets"]["speaker"]["values"][0]["toggle_url"].split("?")[0].endswith("/v1/quotes")
    other = client.get("/v1/quotes?q=torture&speaker=Juan%20Guaid%C3%B3").get_json()
    assert other["total"] == 0


def test_facet_value_search(client):
    resp = client.get("/v1/facets/person?prefix=gua&q=army")
    assert resp.status_code == 200
    body = resp.get_json()
    assert body["name"] == "person"
    assert [v["value"] for v in body["values"]] == ["Juan Guaidó"]
    target = client.get(relative(body["values"][0]["toggle_url"])).get_json()
    assert target["request"]["filters"] == {"person": ["Juan Guaidó"]}
    assert target["request"]["q"] == "army"
    assert client.get("/v1/facets/nope").status_code == 404
    reused = client.get("/v1/facets/person?prefix=gua&q=army&page=3&per_page=5&highlight=false")
    again = reused.get_json()["values"]
    assert [(v["value"], v["count"]) for v in again] == [
        (v["value"], v["count"]) for v in body["values"]
    ]
    kept = dict(parse_qsl(urlsplit(again[0]["toggle_url"]).query))
    assert kept["per_page"] == "5" and "page" not in kept  # display kept, back to page 1
    assert client.get("/v1/facets/person?format=csv").status_code == 400
    quotes = client.get("/v1/facets/speaker?mode=quotes").get_json()
    assert "/v1/quotes" in quotes["values"][0]["toggle_url"]


def test_invalid_query_is_a_problem(client):
    resp = client.get('/v1/search?q="unclosed phrase')
    if resp.status_code == 200:  # the parser may forgive it
        return
    assert resp.mimetype == PROBLEM
    assert resp.status_code == 400


def test_json_lines_output(client):
    resp = client.get("/v1/search?q=oil&per_page=7&format=jsonl")
    assert resp.mimetype == "application/x-ndjson"
    lines = resp.get_data(as_text=True).splitlines()
    assert len(lines) == 7
    assert all(json.loads(line)["id"] for line in lines)
    by_accept = client.get(
        "/v1/search?q=oil&per_page=3", headers={"Accept": "application/x-ndjson"}
    )
    assert by_accept.mimetype == "application/x-ndjson"
    assert len(by_accept.get_data(as_text=True).splitlines()) == 3


def test_csv_output(client):
    resp = client.get("/v1/search?q=Caracas&format=csv&per_page=50")
    assert resp.mimetype == "text/csv"
    assert "attachment" in resp.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(resp.get_data(as_text=True))))
    assert rows and rows[0]["id"]
    solano = [r for r in rows if r["article_id"] == "solano-exile"]
    assert any("Harry Solano" in r["people"] for r in solano)
    quotes = client.get("/v1/quotes?format=csv").get_data(as_text=True)
    assert quotes.splitlines()[0].startswith("id,passage_id,article_id,speaker")


def test_export_streams_every_hit(client):
    app = client.application
    small = create_app({"index": app.extensions["newsquarry"].settings["index"], "max_per_page": 4})
    resp = small.test_client().get("/v1/search?q=oil&format=jsonl&export=true")
    assert resp.is_streamed
    lines = resp.get_data(as_text=True).splitlines()
    total = int(resp.headers["X-Total-Count"])
    assert total > 4 and len(lines) == total
    assert len({json.loads(line)["id"] for line in lines}) == total
    csv_resp = small.test_client().get("/v1/search?q=oil&format=csv&export=1")
    assert len(csv_resp.get_data(as_text=True).splitlines()) == total + 1
    as_json = small.test_client().get("/v1/search?q=oil&export=true")  # format=json: one object
    assert as_json.is_streamed and as_json.mimetype == "application/json"
    assert as_json.get_json()["total"] == total
    assert [h["id"] for h in as_json.get_json()["hits"]] == [json.loads(x)["id"] for x in lines]


def test_search_etag_304_and_response_cache(client):
    first = client.get("/v1/search?q=oil&facet=person")
    assert first.headers["X-Cache"] == "MISS"
    etag = first.headers["ETag"]
    second = client.get("/v1/search?facet=person&q=oil")  # same parameters, other order
    assert second.headers["X-Cache"] == "HIT"
    assert second.headers["ETag"] == etag
    assert second.get_json() == first.get_json()
    assert (
        client.get("/v1/search?q=oil&facet=person", headers={"If-None-Match": etag}).status_code
        == 304
    )
    assert (
        client.get("/v1/search?q=oil&facet=org", headers={"If-None-Match": etag}).status_code == 200
    )


def test_new_commit_changes_search_results_and_etag(tmp_path):
    app = create_app({"index": str(tmp_path / "ix"), "write_token": TOKEN}, enricher=TagEnricher())
    c = app.test_client()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    c.put("/v1/articles/n1", json={"text": "Zebras in Caracas."}, headers=auth)
    before = c.get("/v1/search?q=zebras")
    assert before.get_json()["total"] == 1
    c.put("/v1/articles/n2", json={"text": "More zebras."}, headers=auth)
    after = c.get("/v1/search?q=zebras", headers={"If-None-Match": before.headers["ETag"]})
    assert after.status_code == 200
    assert after.get_json()["total"] == 2
    assert after.headers["X-Cache"] == "MISS"
    c.delete("/v1/articles/n1", headers=auth)
    assert c.get("/v1/search?q=zebras").get_json()["total"] == 1


def test_cache_disabled(index_dir):
    app = create_app({"index": str(index_dir), "response_cache_size": 0})
    c = app.test_client()
    c.get("/v1/search?q=oil")
    assert "X-Cache" not in c.get("/v1/search?q=oil").headers


def test_time_limit_is_passed_to_the_library(index_dir):
    """A tiny limit gives either a partial 200 (not cached) or a 503 problem."""
    app = create_app({"index": str(index_dir), "search_time_limit": 1e-9})
    c = app.test_client()
    resp = c.get("/v1/search?q=oil OR caracas OR venezuela&per_page=20")
    if resp.status_code == 200:
        assert resp.get_json()["partial"] is True
        assert resp.headers["X-Partial-Result"] == "true"
        assert "ETag" not in resp.headers and resp.headers["Cache-Control"] == "no-store"
    else:
        assert resp.status_code == 503 and resp.mimetype == PROBLEM
        assert resp.get_json()["title"] == "Search timed out"
        assert "Retry-After" in resp.headers


def test_a_query_past_400_characters_is_a_400_problem(client, app):
    """The query cap (issue 33): every endpoint taking ``q`` refuses 401 characters with a
    problem naming ``q`` and the limit, and says ``maxLength`` in its OpenAPI schema."""
    from newsquarry.api.errors import from_library_error
    from newsquarry.search.core.errors import QueryTooLong

    q = ("oil caracas venezuela " * 20)[:401]
    paths = ("/v1/search", "/v1/quotes", "/v1/facets/person", "/v1/cooccurrence")
    spec = client.get("/openapi.json").get_json()
    for path in paths:
        resp = client.get(path, query_string={"q": q})
        assert resp.status_code == 400 and resp.mimetype == PROBLEM, path
        body = resp.get_json()
        assert body["status"] == 400
        assert body["errors"]["q"] == ["the query is 401 characters long; the limit is 400"]
        template = path.replace("person", "{facet}")
        params = {p["name"]: p for p in spec["paths"][template]["get"]["parameters"]}
        assert params["q"]["schema"]["maxLength"] == 400
    assert client.get("/v1/search", query_string={"q": q[:400]}).status_code == 200
    # the library's own refusal (for a caller past the argument schema): the same 400
    with app.test_request_context("/v1/search"):
        resp = from_library_error(
            QueryTooLong("the query is 401 characters long; the limit is 400",
                         position=400, field="q")
        )  # fmt: skip
    body = resp.get_json()
    assert resp.status_code == 400 and resp.mimetype == PROBLEM
    assert body["title"] == "Query too long" and body["position"] == 400
    assert body["errors"] == {"q": ["the query is 401 characters long; the limit is 400"]}


def test_scoped_read_key(client, app):
    from newsquarry.search.query.keys import Scope, make_key

    key = make_key(
        app.extensions["newsquarry"].settings["secret"], Scope(filters={"source": ["Reuters"]})
    )
    body = client.get(f"/v1/search?per_page=100&key={key}").get_json()
    assert body["total"] > 0
    assert {h["source"] for h in body["hits"]} == {"Reuters"}
    by_header = client.get("/v1/search?per_page=100", headers={"X-Newsquarry-Key": key})
    assert by_header.get_json()["total"] == body["total"]
    assert client.get("/v1/search?per_page=100").get_json()["total"] > body["total"]
    widen = client.get(f"/v1/search?source=News%20from%20the%20world&key={key}")
    assert widen.status_code == 403 and widen.mimetype == PROBLEM
    forged = client.get(f"/v1/search?key={key[:-2]}xx")
    assert forged.status_code == 403


def test_non_ascii_query_gives_ascii_link_headers(client):
    resp = client.get("/v1/search?q=Guaid%C3%B3%C2%9B&per_page=1")
    assert resp.status_code == 200
    resp.headers["Link"].encode("ascii")
    assert "Guaid%C3%B3" in resp.get_json()["links"]["self"]


def test_fast_result_dict_matches_to_dict(app):
    from newsquarry.api.formats import result_dict
    from newsquarry.search.core.requests import SearchRequest
    from newsquarry.search.query.searching import run_search

    store = app.extensions["newsquarry"].store()
    for mode, filters in (("passages", {}), ("quotes", {}), ("passages", {"place": ["Caracas"]})):
        req = SearchRequest(
            q="Caracas OR oil", facets=["person", "date", "article"], mode=mode, filters=filters
        )
        result = run_search(store, req)
        assert result.request.filters == filters
        assert json.dumps(result_dict(result), sort_keys=True) == json.dumps(
            result.to_dict(), sort_keys=True
        )


# -- match, group, interpretations (issue 15) ----------------------------------------


def test_match_group_and_interpretations_are_in_the_openapi_document(client):
    spec = client.get("/openapi.json").get_json()
    params = {p["name"]: p for p in spec["paths"]["/v1/search"]["get"]["parameters"]}
    assert params["match"]["schema"]["enum"] == ["most", "all", "any"]
    assert params["match"]["schema"]["default"] == "most"
    assert params["group"]["schema"]["enum"] == ["none", "article", "story"]
    quote_params = {p["name"]: p for p in spec["paths"]["/v1/quotes"]["get"]["parameters"]}
    assert quote_params["group"]["schema"]["enum"] == ["none", "article", "cluster", "story"]
    schemas = spec["components"]["schemas"]
    response = next(s for n, s in schemas.items() if n.startswith("PassageSearchResponse"))
    assert {"interpretations", "total_articles", "suggestion_total"} <= set(response["properties"])
    hit = next(s for n, s in schemas.items() if n.startswith("Hit"))
    assert {"more_count", "more_ids"} <= set(hit["properties"])


def test_match_modes_over_http(client):
    most = client.get("/v1/search?q=the+torture+of+soldiers").get_json()
    every = client.get("/v1/search?q=the+torture+of+soldiers&match=all").get_json()
    anyw = client.get("/v1/search?q=the+torture+of+soldiers&match=any").get_json()
    assert most["request"]["match"] == "most"
    assert 0 <= every["total"] <= most["total"] <= anyw["total"] and most["total"] > 0
    bad = client.get("/v1/search?q=x&match=some")
    assert bad.status_code == 400 and bad.mimetype == PROBLEM  # as other bad arguments


def test_group_article_over_http(client):
    flat = client.get("/v1/search?q=Venezuela+Colombia&per_page=100").get_json()
    grouped = client.get("/v1/search?q=Venezuela+Colombia&per_page=100&group=article").get_json()
    assert grouped["total"] == flat["total"]
    assert grouped["total_articles"] == len({h["article_id"] for h in flat["hits"]})
    assert len(grouped["hits"]) == grouped["total_articles"]
    assert sum(1 + h["more_count"] for h in grouped["hits"]) == flat["total"]


def test_interpretations_over_http_offer_a_followable_search(client):
    body = client.get("/v1/search?q=what+did+Solano+say+about+torture").get_json()
    quotes = [i for i in body["interpretations"] if i["kind"] == "quotes"]
    assert quotes and quotes[0]["value"] == "Harry Solano"
    follow = client.get(relative(quotes[0]["url"])).get_json()
    assert follow["total"] == quotes[0]["count"] > 0
    assert {h["speaker"] for h in follow["hits"]} == {"Harry Solano"}


# -- quotation clusters ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_client(tmp_path_factory):
    from api_support import build_cluster_index

    path = tmp_path_factory.mktemp("api-clusters")
    build_cluster_index(path)
    return create_app({"index": str(path), "secret": "k" * 32}).test_client()


def test_quote_hits_carry_their_cluster_and_group_cluster_pages_by_cluster(cluster_client):
    body = cluster_client.get("/v1/quotes?q=farmers+wheat&per_page=10").get_json()
    assert body["total"] == 4
    assert len({h["cluster"] for h in body["hits"]}) == 1
    for h in body["hits"]:
        assert h["cluster_articles"] == 4
        assert h["first_seen"]["article_id"] == "wheat-first"
        assert h["first_seen"]["date"] == "2020-03-01"
    grouped = cluster_client.get("/v1/quotes?group=cluster&per_page=2").get_json()
    assert grouped["total"] == 8 and grouped["total_clusters"] == 5
    assert grouped["total_pages"] == 3
    ids = []
    for page in (1, 2, 3):
        b = cluster_client.get(f"/v1/quotes?group=cluster&per_page=2&page={page}").get_json()
        ids += [h["cluster"] for h in b["hits"]]
    assert len(ids) == len(set(ids)) == 5
    resp = cluster_client.get("/v1/search?q=wheat&group=cluster")
    assert resp.status_code == 400 and resp.mimetype == PROBLEM
    assert "group" in resp.get_json()["errors"]


def test_get_quote_cluster(cluster_client):
    hit = cluster_client.get("/v1/quotes?q=farmers+wheat&per_page=1").get_json()["hits"][0]
    resp = cluster_client.get(f"/v1/quotes/{hit['cluster']}")
    assert resp.status_code == 200 and resp.headers["ETag"]
    body = resp.get_json()
    assert body["id"] == hit["cluster"] and body["article_count"] == 4
    assert body["first_seen"]["article_id"] == "wheat-first"
    assert [q["article_id"] for q in body["quotes"]] == [
        "wheat-first", "wheat-late", "wheat-cut", "wheat-dots"
    ]  # fmt: skip
    assert body["speakers"] == [{"name": "Ana Ruiz", "count": 4}]
    assert body["sources"][0] == {"source": "Wire", "count": 2}
    again = cluster_client.get(
        f"/v1/quotes/{hit['cluster']}", headers={"If-None-Match": resp.headers["ETag"]}
    )
    assert again.status_code == 304
    for bad in ("c000000000000", "x" * 300, "%00", "..%2F..%2Fetc"):
        resp = cluster_client.get(f"/v1/quotes/{bad}")
        assert resp.status_code == 404 and resp.mimetype == PROBLEM, bad
    spec = cluster_client.get("/openapi.json").get_json()
    op = spec["paths"]["/v1/quotes/{cluster}"]["get"]
    assert "200" in op["responses"] and "404" in op["responses"]


def test_quote_cluster_with_a_scoped_key(cluster_client):
    from newsquarry.search.query.keys import Scope, make_key

    hit = cluster_client.get("/v1/quotes?q=farmers+wheat&per_page=1").get_json()["hits"][0]
    wire = make_key("k" * 32, Scope(filters={"source": ["Wire"]}))
    body = cluster_client.get(f"/v1/quotes/{hit['cluster']}?key={wire}").get_json()
    assert [q["article_id"] for q in body["quotes"]] == ["wheat-first", "wheat-dots"]
    assert body["sources"] == [{"source": "Wire", "count": 2}]
    # hits found with the key count only the articles inside it
    hits = cluster_client.get(f"/v1/quotes?q=farmers+wheat&key={wire}").get_json()["hits"]
    assert {h["cluster_articles"] for h in hits} == {2}
    post = make_key("k" * 32, Scope(filters={"source": ["Evening News"]}))
    resp = cluster_client.get(f"/v1/quotes/{hit['cluster']}?key={post}")
    assert resp.status_code == 200 and resp.get_json()["first_seen"]["article_id"] == "wheat-cut"
    nobody = make_key("k" * 32, Scope(filters={"speaker": ["Juan Guaidó"]}))
    resp = cluster_client.get(f"/v1/quotes/{hit['cluster']}?key={nobody}")
    assert resp.status_code == 404 and resp.mimetype == PROBLEM
    resp = cluster_client.get(f"/v1/quotes/{hit['cluster']}?key=forged")
    assert resp.status_code == 403 and resp.mimetype == PROBLEM
    assert "X-Newsquarry-Key" in resp.headers.get("Vary", "")

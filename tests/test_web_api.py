"""Web pages, oEmbed and scoped read keys, through the Flask app (no browser).

One real index (seed article + hand-written ones, spaCy enricher) per session,
see ``web_support``.
"""

from __future__ import annotations

import json
import re
import time

import pytest

try:  # tests/ is a package (tests/__init__.py) or a plain folder on sys.path
    from tests.web_support import SECRET, SEED_ID, XSS_ID, XSS_IMG, XSS_TEXT, make_app, web_index
except ModuleNotFoundError:
    from web_support import SECRET, SEED_ID, XSS_ID, XSS_IMG, XSS_TEXT, make_app, web_index

from newsquarry.search.query.keys import Scope, make_key


@pytest.fixture(scope="module")
def client():
    return make_app().test_client()


def key(**kw) -> str:
    return make_key(SECRET, Scope(**kw))


# ------------------------------------------------------------------ pages
def test_the_search_box_takes_no_more_than_a_query_may_hold(client):
    """A longer query is refused (400) before any work: the box stops at the same length."""
    html = client.get("/").get_data(as_text=True)
    box = re.search(r'<input id="q"[^>]*>', html).group(0)
    limit = int(re.search(r'maxlength="(\d+)"', box).group(1))
    assert limit == 400
    assert client.get("/v1/search", query_string={"q": "a" * limit}).status_code == 200
    assert client.get("/v1/search", query_string={"q": "a" * (limit + 1)}).status_code == 400


def test_search_page_is_a_static_shell_with_a_strict_csp(client):
    r = client.get("/?q=%3Cscript%3Ealert(1)%3C/script%3E")
    assert r.status_code == 200 and r.mimetype == "text/html"
    csp = r.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp and "frame-ancestors 'self'" in csp
    html = r.get_data(as_text=True)
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    # no inline script: every <script> has a src on this server
    for tag in re.findall(r"<script[^>]*>", html):
        assert 'src="/' in tag


def test_passage_page_shows_article_text_as_text(client):
    r = client.get(f"/passages/{XSS_ID}/1")
    assert r.status_code == 200
    html = r.get_data(as_text=True)
    assert XSS_TEXT not in html and XSS_IMG not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<b>bold</b>" not in html  # the title is text too
    assert 'href="javascript:' not in html  # the article's javascript: URL is not linked
    assert "Content-Security-Policy" in r.headers


def test_passage_page_has_context_entities_quotes_and_oembed_discovery(client):
    store = web_index()
    article = store.get_article(SEED_ID)
    p = next(p for p in article["passages"] if p["quotes"] and p["position"] > 2)
    r = client.get(f"/passages/{SEED_ID}/{p['position']}")
    html = r.get_data(as_text=True)
    assert 'type="application/json+oembed"' in html
    assert f"/oembed?url=http://localhost/passages/{SEED_ID}/{p['position']}" in html
    # relative without base_url: resolved against the address the browser used (never Host)
    assert f'<link rel="canonical" href="/passages/{SEED_ID}/{p["position"]}">' in html
    before = article["passages"][p["position"] - 2]
    assert f'href="/passages/{SEED_ID}/{before["position"]}"' in html  # context around it
    speaker = p["quotes"][0]["speaker"]
    assert speaker and speaker in html
    assert 'class="quotes"' in html


def test_missing_passage_page_is_404_html(client):
    r = client.get(f"/passages/{SEED_ID}/999")
    assert r.status_code == 404 and r.mimetype == "text/html"
    assert client.get("/passages/no-such-article/1").status_code == 404


def test_embed_page_passes_attributes_escaped_and_may_be_framed(client):
    r = client.get(
        '/embed?q="><script>x</script>&speaker=Harry Solano&speaker=Ana Ruiz&key=k&bogus=1'
    )
    html = r.get_data(as_text=True)
    assert r.status_code == 200
    assert "frame-ancestors *" in r.headers["Content-Security-Policy"]
    assert "<script>x" not in html and "&#34;&gt;&lt;script&gt;x" in html
    assert 'params="speaker=Harry+Solano&amp;speaker=Ana+Ruiz"' in html
    assert 'key="k"' in html and "bogus" not in html


def test_widget_script_is_loadable_from_other_origins(client):
    r = client.get("/widget.js")
    assert r.status_code == 200 and "javascript" in r.mimetype
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert 'customElements.define("newsquarry-results"' in r.get_data(as_text=True)


# ------------------------------------------------------------------ oEmbed
def test_oembed_answers_a_rich_embed_for_a_permalink(client):
    url = f"http://localhost/passages/{SEED_ID}/3"
    r = client.get("/oembed", query_string={"url": url, "format": "json"})
    assert r.status_code == 200 and r.mimetype == "application/json"
    body = r.get_json()
    assert body["type"] == "rich" and body["version"] == "1.0"
    assert body["provider_name"] == "newsquarry" and body["title"]
    assert isinstance(body["width"], int) and isinstance(body["height"], int)
    assert f'src="http://localhost/embed/passages/{SEED_ID}/3"' in body["html"]
    assert f'width="{body["width"]}"' in body["html"]
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    card = client.get(f"/embed/passages/{SEED_ID}/3")
    assert (
        card.status_code == 200 and "frame-ancestors *" in card.headers["Content-Security-Policy"]
    )


def test_oembed_honours_maxwidth_and_maxheight(client):
    url = f"http://localhost/passages/{SEED_ID}/3"
    wide = client.get("/oembed", query_string={"url": url}).get_json()
    narrow = client.get("/oembed", query_string={"url": url, "maxwidth": 320}).get_json()
    assert narrow["width"] == 320 <= wide["width"]
    assert narrow["height"] > wide["height"]  # narrower wraps more lines
    huge = client.get("/oembed", query_string={"url": url, "maxwidth": 5000}).get_json()
    assert huge["width"] == wide["width"]
    short = client.get("/oembed", query_string={"url": url, "maxheight": 100}).get_json()
    assert short["height"] == 100
    assert client.get("/oembed", query_string={"url": url, "maxwidth": "wide"}).status_code == 400


def test_oembed_html_carries_no_article_markup(client):
    body = client.get(
        "/oembed", query_string={"url": f"http://localhost/passages/{XSS_ID}/1"}
    ).get_json()
    assert "<script" not in body["html"] and "<b>" not in body["html"]
    assert body["html"].startswith("<iframe ") and 'sandbox="' in body["html"]
    # the card runs only its own resize script, in an opaque origin (no allow-same-origin)
    assert "allow-same-origin" not in body["html"]
    card = client.get(f"/embed/passages/{XSS_ID}/1")
    html = card.get_data(as_text=True)
    assert XSS_TEXT not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/static/card.js" defer>']
    assert "script-src 'self'" in card.headers["Content-Security-Policy"]


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost/passages/no-such-article/1",
        f"http://localhost/passages/{SEED_ID}/999",
        f"http://localhost/articles/{SEED_ID}",
        "http://localhost/",
        f"http://elsewhere.example/passages/{SEED_ID}/1",
        f"ftp://localhost/passages/{SEED_ID}/1",
    ],
)
def test_oembed_is_404_for_anything_but_a_passage_permalink(client, url):
    r = client.get("/oembed", query_string={"url": url})
    assert r.status_code == 404
    assert r.mimetype == "application/problem+json"


def test_oembed_format_and_url_errors(client):
    url = f"http://localhost/passages/{SEED_ID}/1"
    assert client.get("/oembed", query_string={"url": url, "format": "xml"}).status_code == 501
    r = client.get("/oembed")
    assert r.status_code == 400 and "url" in r.get_json()["errors"]


# ------------------------------------------------------------------ scoped keys
def search(client, path="/v1/search", headers=None, **params):
    r = client.get(path, query_string=params, headers=headers or {})
    return r.status_code, r.get_json()


def test_key_filters_are_applied_to_searches(client):
    k = key(filters={"source": ["Daily Ledger"]})
    status, body = search(client, q="said", key=k, facet="source", per_page=50)
    assert status == 200
    assert body["total"] > 0
    assert {h["source"] for h in body["hits"]} == {"Daily Ledger"}
    _, plain = search(client, q="said", source="Daily Ledger", per_page=50)
    assert body["total"] == plain["total"]
    assert [v["value"] for v in body["facets"]["source"]["values"]] == ["Daily Ledger"]
    _, everything = search(client, q="said", per_page=50)
    assert everything["total"] > body["total"]


def test_key_in_header_works_and_responses_vary_on_it(client):
    k = key(filters={"speaker": ["Harry Solano"]})
    r = client.get("/v1/quotes", headers={"X-Newsquarry-Key": k})
    assert r.status_code == 200
    body = r.get_json()
    assert body["total"] > 0 and {h["speaker"] for h in body["hits"]} == {"Harry Solano"}
    assert "X-Newsquarry-Key" in r.headers.get("Vary", "")


def test_key_can_narrow_but_not_widen(client):
    k = key(filters={"source": ["Daily Ledger", "Andean Post"]})
    status, body = search(client, key=k, source="Andean Post", per_page=50)
    assert status == 200 and {h["source"] for h in body["hits"]} == {"Andean Post"}
    status, body = search(client, key=k, source="News from the world")
    assert status == 403
    assert body["title"] == "Invalid key" and "News from the world" in body["detail"]
    status, body = search(client, key=k, source=["Andean Post", "News from the world"])
    assert status == 403


def test_key_date_range_cannot_be_widened(client):
    k = key(date_from="2019-03-01", date_to="2019-03-31")
    status, body = search(client, key=k, date_from="2000", per_page=50)
    assert status == 200
    assert body["total"] > 0 and all(h["date"].startswith("2019-03") for h in body["hits"])


def test_expired_key_is_refused(client):
    k = key(filters={"source": ["Daily Ledger"]}, expires=int(time.time()) - 5)
    status, body = search(client, key=k)
    assert status == 403 and "expired" in body["detail"]
    assert body["type"].startswith("urn:newsquarry:problem:")
    live = key(filters={"source": ["Daily Ledger"]}, expires=int(time.time()) + 3600)
    assert search(client, key=live)[0] == 200


def test_tampered_key_is_refused(client):
    k = key(filters={"source": ["Daily Ledger"]})
    prefix, rest = k[:4], k[4:]
    payload, sig = rest.split(".")
    import base64

    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body["f"] = {}
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).rstrip(b"=").decode()
    for bad in (
        f"{prefix}{forged}.{sig}",
        k[:-2] + ("AA" if not k.endswith("AA") else "BB"),
        "nqk_garbage",
        "not-a-key",
    ):
        status, problem = search(client, key=bad)
        assert status == 403, bad
        assert problem["title"] == "Invalid key"
    other = make_key("another-server-secret-0123456789", Scope(filters={}))
    assert search(client, key=other)[0] == 403


def test_keys_refused_when_the_server_has_no_secret():
    app = make_app()
    app.extensions["newsquarry"].settings["secret"] = None  # as if NEWSQUARRY_SECRET were unset
    status, body = search(app.test_client(), key=key(filters={}))
    assert status == 403 and "not enabled" in body["detail"]


def test_facet_value_search_is_scoped(client):
    k = key(filters={"source": ["Andean Post"]})
    r = client.get("/v1/facets/source", query_string={"key": k})
    assert r.status_code == 200
    assert [v["value"] for v in r.get_json()["values"]] == ["Andean Post"]
    r = client.get("/v1/facets/person", query_string={"key": k, "prefix": "nicol"})
    assert r.status_code == 200 and r.get_json()["values"] == []  # Maduro is not in that source


def test_documents_outside_the_scope_are_refused(client):
    k = key(filters={"source": ["Andean Post"]})
    inside = client.get("/v1/passages/bogota-border%23p1", query_string={"key": k})
    assert inside.status_code == 200
    outside = client.get(f"/v1/passages/{SEED_ID}%231", headers={"X-Newsquarry-Key": k})
    assert outside.status_code in (403, 404)
    outside = client.get(f"/v1/passages/{SEED_ID}%23p1", headers={"X-Newsquarry-Key": k})
    assert outside.status_code == 403 and "scope" in outside.get_json()["detail"]
    assert client.get("/v1/articles/bogota-border", query_string={"key": k}).status_code == 200
    assert client.get(f"/v1/articles/{SEED_ID}", query_string={"key": k}).status_code == 403
    assert client.get(f"/v1/articles/{SEED_ID}").status_code == 200  # no key: no scope


def test_cached_responses_do_not_leak_across_keys():
    app = make_app()
    app.extensions["newsquarry"].cache.size = 100  # cache on, whatever the default
    c = app.test_client()
    k = key(filters={"source": ["Andean Post"]})
    plain = c.get("/v1/search?q=said").get_json()["total"]
    scoped = c.get("/v1/search?q=said", headers={"X-Newsquarry-Key": k}).get_json()["total"]
    again = c.get("/v1/search?q=said").get_json()["total"]
    assert scoped < plain == again


# ------------------------------------------------------------------ headers on every answer
@pytest.mark.parametrize(
    "path, status",
    [
        ("/v1/search?q=torture", 200),
        ("/v1/search?page=x", 400),
        ("/v1/search?q=foo:bar", 400),
        ("/v1/articles/no-such-article", 404),
        ("/v1/passages/nope%23p1", 404),
        ("/v1/facets/nope", 404),
        ("/v1/stats", 200),
        ("/health/ready", 200),
        ("/openapi.json", 200),
        ("/oembed?url=http://localhost/passages/caracas-market/1", 200),
        ("/oembed?url=http://localhost/nowhere", 404),
        ("/oembed", 400),
        ("/oembed?url=http://localhost/passages/caracas-market/1&format=xml", 501),
        ("/widget.js", 200),
    ],
)
def test_cors_and_nosniff_on_every_api_answer(client, path, status):
    """The oEmbed 404 carries the same CORS header as its 200; every answer has nosniff."""
    r = client.get(path, headers={"Origin": "https://newsroom.example"})
    assert r.status_code == status
    assert r.headers.get("Access-Control-Allow-Origin") == "*", path
    assert r.headers.get("X-Content-Type-Options") == "nosniff", path


@pytest.mark.parametrize(
    "path", ["/", "/docs", f"/passages/{SEED_ID}/1", "/passages/nope/1", "/nope"]
)
def test_pages_and_errors_all_carry_nosniff_and_html_the_csp(client, path):
    r = client.get(path)
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    if r.mimetype == "text/html":
        assert "script-src 'self'" in r.headers["Content-Security-Policy"]
        assert r.headers["X-Frame-Options"] == "SAMEORIGIN"


def test_docs_has_no_inline_script_or_style(client):
    html = client.get("/docs").get_data(as_text=True)
    assert re.findall(r"<script[^>]*>", html) == ['<script src="static/docs.js" defer>']
    assert "<style" not in html and " style=" not in html
    assert '<a id="back" href="./">' in html  # a way back to search
    for asset in ("/static/docs.js", "/static/docs.css"):
        assert client.get(asset).status_code == 200


def test_oembed_height_follows_the_text_and_long_passages_are_cut(client):
    short = client.get(
        "/oembed", query_string={"url": "http://localhost/passages/caracas-market/1"}
    ).get_json()
    long = client.get(
        "/oembed", query_string={"url": "http://localhost/passages/council-minutes/1"}
    ).get_json()
    assert short["height"] < long["height"] < 500  # a 30,000-character passage: a preview
    assert "?chars=" in long["html"] and "?chars=" not in short["html"]
    card = client.get(
        long["html"].split('src="http://localhost')[1].split('"')[0].replace("&amp;", "&")
    ).get_data(as_text=True)
    assert "Read the whole passage (29,890 characters)" in card


MALFORMED_KEYS = [
    "nqk_%C3%A9.x",  # non-ASCII payload (was a UnicodeEncodeError: 500)
    "nqk_abc.%C3%A9",  # non-ASCII signature (was a TypeError in compare_digest: 500)
    "nqk_" + "A" * 5000 + ".B",
    "nqk_.%00",
    "nqk_a%2Eb.c",
    "%FF%FE",
]
SCOPED_PATHS = ["/v1/search", "/v1/quotes", "/v1/facets/person", f"/v1/passages/{SEED_ID}%23p1",
                f"/v1/articles/{SEED_ID}"]  # fmt: skip


def test_every_malformed_key_is_a_403_problem_on_every_scoped_endpoint(client):
    for path in SCOPED_PATHS:
        for bad in MALFORMED_KEYS:
            r = client.get(f"{path}?key={bad}")
            assert r.status_code == 403, (path, bad, r.status_code)
            assert r.mimetype == "application/problem+json"
            assert r.get_json()["title"] == "Invalid key"
        # the header too, with bytes no key holds (sent as latin-1 by the client)
        r = client.get(path, headers={"X-Newsquarry-Key": "nqk_\xe9.\xe9"})
        assert r.status_code == 403 and r.get_json()["title"] == "Invalid key"


def test_the_request_is_validated_before_the_key_scope_is_applied(client):
    k = key(filters={"speaker": ["Harry Solano"]}, date_from="2019")
    for params in ({"date_to": "1987-13"}, {"date_from": "2019-02-30"}, {"date": "2019-13"},
                   {"date_to": "2019-02-29"}):  # fmt: skip
        name = next(iter(params))
        for path in ("/v1/search", "/v1/quotes", "/v1/facets/person"):
            for how in ("header", "param"):
                q = dict(params, **({"key": k} if how == "param" else {}))
                h = {"X-Newsquarry-Key": k} if how == "header" else {}
                status, body = search(client, path=path, headers=h, **q)
                assert status == 400, (path, params, body)
                assert body["type"] == "urn:newsquarry:problem:invalid-parameters"
                assert list(body["errors"]) == [name]
            status, plain = search(client, path=path, **params)  # same answer without a key
            assert status == 400 and plain["type"] == body["type"]


def test_a_key_scope_means_the_same_on_every_endpoint(client):
    store = web_index()
    article = store.get_article(SEED_ID)
    mine = [p for p in article["passages"] if "Harry Solano" in p["speakers"]]
    others = [p for p in article["passages"] if "Harry Solano" not in p["speakers"]]
    assert mine and others
    k = key(filters={"speaker": ["Harry Solano"]})
    # the article: only the passages inside the scope, no full text
    r = client.get(f"/v1/articles/{SEED_ID}", query_string={"key": k})
    body = r.get_json()
    assert r.status_code == 200 and body["scoped"] is True and body["text"] is None
    assert [p["id"] for p in body["passages"]] == [p["id"] for p in mine]
    # passages: inside 200, outside 403
    assert client.get(f"/v1/passages/{others[0]['id'].replace('#', '%23')}",
                      query_string={"key": k}).status_code == 403  # fmt: skip
    got = client.get(f"/v1/passages/{mine[0]['id'].replace('#', '%23')}", query_string={"key": k})
    assert got.status_code == 200
    # quote records: only the key's speaker, in documents and in hits
    quotes = [q for p in body["passages"] for q in p["quotes"]] + got.get_json()["quotes"]
    status, res = search(client, key=k, per_page=50)
    assert status == 200 and res["hits"]
    quotes += [q for h in res["hits"] for q in h["quotes"]]
    assert quotes and {q["speaker"] for q in quotes} == {"Harry Solano"}
    assert all(h["speakers"] == ["Harry Solano"] for h in res["hits"])
    mixed = [p for p in mine if len(set(p["speakers"])) > 1]
    if mixed:  # a passage quoting several speakers lost the others' records
        shown = next(p for p in body["passages"] if p["id"] == mixed[0]["id"])
        assert len(shown["quotes"]) < len(mixed[0]["quotes"])
    # without a key nothing is withheld
    full = client.get(f"/v1/articles/{SEED_ID}").get_json()
    assert full["text"] and len(full["passages"]) == len(article["passages"])
    assert "scoped" not in full

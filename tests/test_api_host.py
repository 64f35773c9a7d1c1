"""A forged ``Host`` header never reaches a URL the server hands out (issue 33).

Pages, embeds, oEmbed answers, feeds and the API's links and interpretations make
their URLs from the ``base_url`` setting; without it, relative references where a
browser resolves them (pages, API links) and the server's bound address where an
absolute URL is needed (oEmbed, feeds): ``SERVER_NAME``/``SERVER_PORT``, which the test
client sets to ``localhost:80`` whatever ``Host`` says.
"""

from __future__ import annotations

import json

import pytest
from api_support import TagEnricher, build_index

from newsquarry.api import create_app

EVIL = {"Host": "evil.example"}
PERMALINK = "/passages/solano-exile/2"
# every answer that holds URLs: pages, embeds, oEmbed, feeds, search and facet links
PATHS = [
    "/",
    PERMALINK,
    "/embed/passages/solano-exile/2",
    "/embed?q=torture&speaker=Harry+Solano",
    "/oembed?url=http://localhost/passages/solano-exile/2",
    "/v1/search?q=what+did+Solano+say+about+torture&facet=person",
    "/v1/quotes?q=torture&facet=speaker",
    "/v1/search?q=oil&format=atom",
    "/v1/search?q=oil&format=jsonfeed",
    "/v1/quotes?format=jsonfeed",
    "/v1/facets/person?q=oil",
    "/v1/articles/solano-exile",
]


def _app(tmp_path_factory, **config):
    path = tmp_path_factory.mktemp("api-host")
    build_index(path / "ix")
    return create_app({"index": str(path / "ix"), **config}, enricher=TagEnricher())


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    return _app(tmp_path_factory).test_client()


@pytest.fixture(scope="module")
def public_client(tmp_path_factory):
    return _app(tmp_path_factory, base_url="https://news.example.org/").test_client()


def _everything(resp) -> str:
    return resp.get_data(as_text=True) + "\n" + json.dumps(dict(resp.headers))


def test_a_forged_host_is_in_no_answer(client):
    copied = []
    for path in PATHS:
        r = client.get(path, headers=EVIL)
        assert r.status_code == 200, (path, r.get_data(as_text=True)[:300])
        if "evil.example" in _everything(r):
            copied.append(path)
    assert copied == []


def test_with_base_url_every_absolute_url_is_on_it(public_client):
    elsewhere = []
    for path in PATHS:
        path = path.replace("http://localhost", "https://news.example.org")
        r = public_client.get(path, headers=EVIL)
        assert r.status_code == 200, (path, r.get_data(as_text=True)[:300])
        text = _everything(r)
        if "evil.example" in text or "http://localhost" in text:
            elsewhere.append(path)
    assert elsewhere == []


def test_permalink_page_links_are_relative_without_base_url(client):
    html = client.get(PERMALINK, headers=EVIL).get_data(as_text=True)
    assert f'<link rel="canonical" href="{PERMALINK}">' in html
    # the discovery link names the absolute permalink on the bound address
    assert "/oembed?url=http://localhost/passages/solano-exile/2" in html


def test_oembed_takes_permalinks_of_this_server_only(client, public_client):
    r = client.get("/oembed?url=http://evil.example/passages/solano-exile/2", headers=EVIL)
    assert r.status_code == 404  # a URL on the forged host is not this server's
    body = client.get(f"/oembed?url=http://localhost{PERMALINK}", headers=EVIL).get_json()
    assert 'src="http://localhost/embed/passages/solano-exile/2' in body["html"]
    assert body["provider_url"] == "http://localhost/"
    body = public_client.get(f"/oembed?url=https://news.example.org{PERMALINK}").get_json()
    assert 'src="https://news.example.org/embed/passages/solano-exile/2' in body["html"]
    assert body["provider_url"] == "https://news.example.org/"
    assert public_client.get(f"/oembed?url=http://localhost{PERMALINK}").status_code == 404


@pytest.mark.parametrize(
    ("url", "status"),
    [
        (f"http://127.0.0.1{PERMALINK}", 200),  # the server is reached as localhost:80
        (f"http://127.0.0.1:80{PERMALINK}", 200),
        (f"http://[::1]{PERMALINK}", 200),
        (f"http://app.localhost{PERMALINK}", 200),
        (f"http://127.0.0.1:8081{PERMALINK}", 404),  # another port: another server
        (f"https://127.0.0.1{PERMALINK}", 404),  # another scheme
        (f"http://127.0.0.1:x{PERMALINK}", 404),  # not a port
        (f"http://10.0.0.1{PERMALINK}", 404),
    ],
)
def test_oembed_takes_a_permalink_under_any_loopback_name_of_a_loopback_server(client, url, status):
    """A permalink copied from a browser on 127.0.0.1 is this server's when it is bound to
    localhost (issue 34); the answer's URLs stay on the bound address."""
    r = client.get("/oembed", query_string={"url": url}, headers=EVIL)
    assert r.status_code == status
    if status == 200:
        assert 'src="http://localhost/embed/passages/solano-exile/2' in r.get_json()["html"]


def test_interpretations_urls_are_relative_or_on_base_url(client, public_client):
    q = "/v1/search?q=what+did+Solano+say+about+torture"
    urls = [i["url"] for i in client.get(q, headers=EVIL).get_json()["interpretations"]]
    assert urls and all(u.startswith("/v1/") for u in urls), urls
    urls = [i["url"] for i in public_client.get(q, headers=EVIL).get_json()["interpretations"]]
    assert urls and all(u.startswith("https://news.example.org/v1/") for u in urls), urls


def test_feeds_are_absolute_on_the_bound_address_or_base_url(client, public_client):
    feed = client.get("/v1/search?q=oil&format=jsonfeed", headers=EVIL).get_json(force=True)
    assert feed["feed_url"] == "http://localhost/v1/search?q=oil&format=jsonfeed"
    assert feed["home_page_url"].startswith("http://localhost/?")
    assert all(i["url"].startswith("http://localhost/passages/") for i in feed["items"])
    feed = public_client.get("/v1/search?q=oil&format=jsonfeed").get_json(force=True)
    assert feed["feed_url"].startswith("https://news.example.org/v1/search?")
    assert all(i["url"].startswith("https://news.example.org/passages/") for i in feed["items"])


def test_oembed_discovery_link_is_absolute_and_followable(client):
    html = client.get(PERMALINK, headers=EVIL).get_data(as_text=True)
    href = html.split('type="application/json+oembed" href="')[1].split('"')[0]
    href = href.replace("&amp;", "&")
    assert href.startswith("http://localhost/oembed?url=http://localhost/passages/"), href
    assert client.get(href.removeprefix("http://localhost")).get_json()["type"] == "rich"

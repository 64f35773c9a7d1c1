"""Following a story on the search page, in headless Chromium: who appears with a selected
name (GET /v1/cooccurrence) and the feed links of a search (Atom and JSON Feed)."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import feedparser
import requests

try:  # tests/ is a package (tests/__init__.py) or a plain folder on sys.path
    from tests.test_web_browser import (
        pytestmark,  # noqa: F401  (skipped without Chromium, as the other browser tests)
        wait_loaded,
    )
    from tests.test_web_conditions import (  # noqa: F401  (the same fixtures)
        api_url,
        axe_problems,
        browser,
        page,
    )
except ModuleNotFoundError:
    from test_web_browser import pytestmark, wait_loaded  # noqa: F401
    from test_web_conditions import api_url, axe_problems, browser, page  # noqa: F401

CO_FACETS = ("speaker", "person", "org", "place")
PERSON = "Juan Guaidó"


def test_a_selected_person_shows_who_appears_with_them(page, api_url):
    page.goto(f"{api_url}/?person={PERSON}")
    wait_loaded(page)
    box = page.locator("#cooccur")
    box.wait_for(state="visible")
    api = requests.get(f"{api_url}/v1/cooccurrence", params=[
        ("person", PERSON), *(("facet", f) for f in CO_FACETS), ("size", "6")
    ], timeout=30).json()  # fmt: skip
    expected = [f"{v['value']} ({v['count']})" for f in CO_FACETS
                for v in api["facets"][f]["article"]]  # fmt: skip
    assert expected, api
    assert box.locator("dd a").all_inner_texts() == expected
    assert PERSON in page.locator("#cooccur-heading").inner_text()
    assert all(PERSON not in t for t in box.locator("dd a").all_inner_texts())
    assert axe_problems(page) == []

    # a name links to the passages holding both: the selection stays, the name joins the query
    link = box.locator("dd a").first
    name = link.inner_text().rsplit(" (", 1)[0]
    link.click()
    wait_loaded(page)
    params = parse_qsl(urlsplit(page.url).query)
    assert ("person", PERSON) in params
    q = dict(params)["q"]
    assert q.endswith(f'"{name}"') and ":" in q
    both = requests.get(f"{api_url}/v1/search", params={"q": q, "person": PERSON},
                        timeout=30).json()  # fmt: skip
    assert both["total"] > 0
    assert page.locator("#status").get_attribute("data-total") == str(both["total"])
    page.watch.assert_clean()


def test_no_selection_no_cooccurrence_and_quotes_mode_hides_it(page, api_url):
    page.goto(f"{api_url}/?q=torture")
    wait_loaded(page)
    assert page.locator("#cooccur").is_hidden()
    page.goto(f"{api_url}/?mode=quotes&person={PERSON}")
    wait_loaded(page)
    assert page.locator("#cooccur").is_hidden()


def test_follow_links_are_feeds_of_the_same_search(page, api_url):
    page.goto(f"{api_url}/?q=torture&match=all")
    wait_loaded(page)
    assert page.locator("#follow").is_visible()
    for fmt in ("atom", "jsonfeed"):
        href = page.locator(f"#follow-{fmt}").get_attribute("href")
        params = dict(parse_qsl(urlsplit(href).query))
        assert params["format"] == fmt and params["q"] == "torture" and params["match"] == "all"
    atom = requests.get(api_url + page.locator("#follow-atom").get_attribute("href"), timeout=30)
    feed = feedparser.parse(atom.content)
    assert not feed.bozo and feed.entries
    hits = requests.get(f"{api_url}/v1/search", params={
        "q": "torture", "match": "all", "sort": "-date"}, timeout=30).json()["hits"]  # fmt: skip
    assert [e.link.rsplit("/passages/", 1)[1] for e in feed.entries] == [
        h["id"].replace("#p", "/") for h in hits
    ]
    # a failed search hides the links (they would follow a search that does not run)
    page.goto(f"{api_url}/?q=%22unclosed")
    page.locator("#error").wait_for(state="visible")
    assert page.locator("#follow").is_hidden()


def test_a_quotation_carried_by_several_articles_says_where_it_was_first_seen(
    page, tmp_path_factory
):
    try:
        from tests.api_support import CLUSTER_COPIES, build_cluster_index
        from tests.web_support import make_app, serve
    except ModuleNotFoundError:
        from api_support import CLUSTER_COPIES, build_cluster_index
        from web_support import make_app, serve
    from newsquarry.search.engine.store import WhooshStore

    path = tmp_path_factory.mktemp("web-clusters")
    build_cluster_index(path)
    first_id, first_date, first_source, _ = CLUSTER_COPIES[1]
    with serve(make_app(store=WhooshStore(path))) as url:
        page.goto(f"{url}/?mode=quotes&q=farmers+wheat")
        wait_loaded(page)
        hits = page.locator(".hit.quote")
        assert hits.count() == 4
        expected = f"Also in 3 other articles, first seen {first_date} in {first_source}"
        assert page.locator(".hit.quote .also").all_inner_texts() == [expected] * 4
        api = requests.get(f"{url}/v1/quotes", params={"q": "farmers wheat"}, timeout=30).json()
        assert {h["cluster"] for h in api["hits"]} == {
            page.locator(".hit.quote .also").first.get_attribute("data-cluster")
        }
        # quotations no other article carries say nothing
        page.goto(f"{url}/?mode=quotes&q=harvest")
        wait_loaded(page)
        assert page.locator(".hit.quote").count() == 4
        assert page.locator(".hit.quote .also").count() == 0
        page.goto(f"{url}/?mode=quotes&q=farmers+wheat")
        wait_loaded(page)
        assert axe_problems(page) == []
        page.locator(".hit.quote .also a.first-seen").first.click()
        page.wait_for_url(f"**/passages/{first_id}/**")
        assert "Wheat talks (Wire)" in page.content()
        page.watch.assert_clean()

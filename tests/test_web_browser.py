"""Browser tests in headless Chromium (Debian's ``chromium``, driven by Playwright).

Two loopback servers: the API (search page, permalinks, widget, /embed) and a
"newsroom" page on a second origin that includes the widget and an oEmbed.
The page and the widget are checked against the API's own answers; an article
whose text holds ``<script>`` and ``<img onerror>`` must show those characters
and run nothing. Screenshots go to ``test-artifacts/`` (gitignored).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
import requests

try:  # tests/ is a package (tests/__init__.py) or a plain folder on sys.path
    from tests.web_support import SECRET, SEED_ID, XSS_ID, XSS_IMG, XSS_TEXT, make_app, serve
except ModuleNotFoundError:
    from web_support import SECRET, SEED_ID, XSS_ID, XSS_IMG, XSS_TEXT, make_app, serve

from newsquarry.search.query.keys import Scope, make_key

CHROMIUM = os.environ.get("NEWSQUARRY_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
FACETS = ["person", "org", "place", "speaker", "source", "quote_kind", "article", "date"]
TIMEOUT = 10_000

# skipped on a developer machine without Chromium; in CI (.ci/run installs it) never skipped
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"),
    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)",
)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def api_url():
    with serve(make_app()) as url:
        yield url


def host_page(api: str, oembed_html: str, key: str, expired: str) -> str:
    """A newsroom page on another origin: hostile CSS, four widgets, an oEmbed, an /embed iframe."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>The Daily Host</title>
<style>
  body {{ font-family: Georgia, serif; background: #fffbe6; margin: 16px; max-width: 760px; }}
  li {{ color: red !important; font-size: 30px; }}
  mark {{ display: none; }}
  a {{ color: green; }}
  newsquarry-results {{ margin: 12px 0; }}
  newsquarry-results.branded {{ --nq-accent: #c2185b; --nq-font: Georgia, serif; --nq-radius: 0px;
                                --nq-mark: #b3e5fc; }}
</style>
<script src="{api}/widget.js" defer></script>
</head><body>
<h1>The Daily Host</h1>
<ul><li>The host's own list item is red and huge.</li></ul>
<newsquarry-results id="w-torture" class="branded" api="{api}" q="torture" per-page="3"
  title="Torture, in their words"></newsquarry-results>
<newsquarry-results id="w-speaker" api="{api}" mode="quotes" speaker="Harry Solano" per-page="3"
  title="What Harry Solano said"></newsquarry-results>
<newsquarry-results id="w-probe" api="{api}" q="probe" title="Markup probe"></newsquarry-results>
<newsquarry-results id="w-key" api="{api}" key="{key}" per-page="10"
  title="Scoped key: Andean Post only"></newsquarry-results>
<newsquarry-results id="w-expired" api="{api}" key="{expired}" title="Expired key"></newsquarry-results>
<h2>oEmbed</h2>
<div id="oembed">{oembed_html}</div>
<h2>iframe</h2>
<iframe id="embed-frame" src="{api}/embed?q=probe&amp;per_page=2" width="600" height="320"
  title="newsquarry"></iframe>
</body></html>"""


@pytest.fixture(scope="module")
def host_url(api_url):
    """The second origin (another loopback port) serving the newsroom page."""
    permalink = f"{api_url}/passages/{XSS_ID}/1"
    oembed = requests.get(
        f"{api_url}/oembed", params={"url": permalink, "maxwidth": 600}, timeout=10
    )
    oembed.raise_for_status()
    key = make_key(SECRET, Scope(filters={"source": ["Andean Post"]}))
    expired = make_key(SECRET, Scope(filters={}, expires=int(time.time()) - 60))
    body = host_page(api_url, oembed.json()["html"], key, expired).encode("utf-8")

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [body]

    with serve(app) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Watch:
    """What a page did that it should not: dialogs, console errors (CSP violations included),
    page errors, requests for the injected ``<img src=x>``, requests to any other host."""

    def __init__(self, page):
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.stray: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.external: list[str] = []
        page.on("request", self._request)

    def _request(self, request):
        url = urlsplit(request.url)
        if url.path.endswith("/x"):
            self.stray.append(request.url)
        if url.scheme not in ("data", "about", "blob") and url.hostname != "127.0.0.1":
            self.external.append(request.url)  # everything must come from the two loopback servers

    def _dialog(self, dialog):
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def assert_clean(self, allow: tuple[str, ...] = ()):
        errors = [e for e in self.errors if not any(a in e for a in allow)]
        assert self.dialogs == [], f"dialogs opened: {self.dialogs}"
        assert errors == [], f"console errors: {errors}"
        assert self.stray == [], f"injected <img src=x> was loaded: {self.stray}"
        assert self.external == [], f"requests off the loopback servers: {self.external}"


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.watch = Watch(pg)
    yield pg
    context.close()


def shot(pg, name: str, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


# ------------------------------------------------------------------ helpers
def wait_loaded(pg) -> None:
    """Wait until the search page has rendered the state in its URL."""
    pg.wait_for_function(
        "() => !document.body.hasAttribute('aria-busy') && "
        "document.body.dataset.loaded === location.pathname + location.search"
    )


def api_answer(api: str, pg) -> dict:
    """The API's own answer for the state in the page's URL (same parameters as the page)."""
    pairs = [(k, v) for k, v in parse_qsl(urlsplit(pg.url).query) if k != "mode"]
    mode = dict(parse_qsl(urlsplit(pg.url).query)).get("mode", "passages")
    if "per_page" not in dict(pairs):
        pairs.append(("per_page", "10"))
    if "group" not in dict(pairs):  # passages one per article, quotations all, unless told
        pairs.append(("group", "none" if mode == "quotes" else "article"))
    pairs += [("facet", f) for f in FACETS] + [("facet_size", "30")]
    path = "/v1/quotes" if mode == "quotes" else "/v1/search"
    r = requests.get(f"{api}{path}?{urlencode(pairs)}", timeout=10)
    r.raise_for_status()
    return r.json()


def shown_facets(pg) -> dict[str, list[tuple[str, int]]]:
    """(value, count) of every facet list on the page, hidden "show more" items included."""
    return pg.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('section.facet')].map(s => [
            s.dataset.facet,
            [...s.querySelectorAll('li')].filter(li => li.querySelector('input'))
              .filter(li => li.querySelector('.n').textContent !== '')
              .map(li => [li.querySelector('input').value,
                          Number(li.querySelector('.n').textContent.replace(/,/g, ''))])]))"""
    )


def assert_page_matches_api(api: str, pg) -> dict:
    body = api_answer(api, pg)
    assert pg.locator("#status").get_attribute("data-total") == str(body["total"])
    ids = pg.locator("#hits > li").evaluate_all("els => els.map(e => e.dataset.id)")
    assert ids == [h["id"] for h in body["hits"]]
    shown = shown_facets(pg)
    for name, facet in body["facets"].items():
        if name == "date":
            continue
        want = [(v["value"], v["count"]) for v in facet["values"]]
        assert [tuple(x) for x in shown.get(name, [])] == want, name
    dates = pg.locator(".bucket").evaluate_all(
        "els => els.map(e => [e.querySelector('.label').textContent, Number(e.querySelector('.count').textContent)])"
    )
    want_dates = sorted((v["value"], v["count"]) for v in body["facets"]["date"]["values"])
    assert [tuple(d) for d in dates] == want_dates
    return body


def tick(pg, facet: str, value: str, keyboard: bool = False) -> None:
    box = pg.locator(f'section.facet[data-facet="{facet}"] input[type=checkbox][value="{value}"]')
    if keyboard:
        box.focus()
        pg.keyboard.press("Space")
    else:
        box.check()
    pg.wait_for_function(
        "([f, v]) => new URLSearchParams(location.search).getAll(f).includes(v)", arg=[facet, value]
    )
    wait_loaded(pg)
    assert pg.locator(f'section.facet[data-facet="{facet}"] input[value="{value}"]').is_checked()
    if keyboard:  # focus stays on the box after the page re-renders, so Tab goes on from there
        assert pg.evaluate("document.activeElement.value") == value


# ------------------------------------------------------------------ tests
def test_search_page_facets_paging_and_history_match_the_api(page, api_url):
    page.goto(f"{api_url}/?q=Guaid%C3%B3+OR+said")
    wait_loaded(page)
    body = assert_page_matches_api(api_url, page)
    assert body["total"] > 10 and page.locator("#hits mark").count() > 0

    people = [v["value"] for v in body["facets"]["person"]["values"][:2]]
    tick(page, "person", people[0])
    after_one = assert_page_matches_api(api_url, page)
    # multi-select: the second person keeps a count after the first is picked
    assert any(
        v["value"] == people[1] and v["count"] > 0 for v in after_one["facets"]["person"]["values"]
    )
    tick(page, "person", people[1], keyboard=True)
    both = assert_page_matches_api(api_url, page)
    assert both["total"] >= after_one["total"]  # values of one facet are ORed
    source = both["facets"]["source"]["values"][0]["value"]
    tick(page, "source", source)
    final = assert_page_matches_api(api_url, page)
    assert all(h["source"] == source for h in final["hits"])
    params = parse_qsl(urlsplit(page.url).query)
    assert ("person", people[0]) in params and ("person", people[1]) in params
    assert ("source", source) in params
    page.locator("#embed-code summary").click()
    code = page.locator("#embed-widget").inner_text()
    assert "/widget.js" in code and 'q="Guaidó OR said"' in code and "params=" in code
    assert "/embed?q=" in page.locator("#embed-iframe").inner_text()
    shot(page, "search-facets")

    # back and forward
    page.go_back()
    wait_loaded(page)
    assert not page.locator(
        f'section.facet[data-facet="source"] input[value="{source}"]'
    ).is_checked()
    assert_page_matches_api(api_url, page)
    page.go_forward()
    wait_loaded(page)
    assert page.locator(f'section.facet[data-facet="source"] input[value="{source}"]').is_checked()

    # a shared URL renders the same state in a fresh page
    shared = page.url
    other = page.context.new_page()
    other.goto(shared)
    wait_loaded(other)
    assert other.locator("#status").get_attribute("data-total") == str(final["total"])
    other.close()

    # paging and sort from the first state, one hit per passage (a few articles only)
    page.goto(f"{api_url}/?q=Guaid%C3%B3+OR+said&group=none")
    wait_loaded(page)
    page.locator("#pager a[rel=next]").click()
    wait_loaded(page)
    assert "page=2" in page.url
    assert_page_matches_api(api_url, page)
    page.select_option("#sort", "-date")
    wait_loaded(page)
    assert "sort=-date" in page.url and "page=" not in page.url and "group=none" in page.url
    dated = [h["date"] for h in assert_page_matches_api(api_url, page)["hits"] if h["date"]]
    assert dated == sorted(dated, reverse=True)
    page.watch.assert_clean()


def test_date_histogram_and_facet_value_search(page, api_url):
    page.goto(f"{api_url}/")
    wait_loaded(page)
    body = assert_page_matches_api(api_url, page)
    bucket = body["facets"]["date"]["values"][0]
    page.locator(f'.bucket[data-focus="date:{bucket["value"]}"]').click()
    wait_loaded(page)
    assert ("date", bucket["value"]) in parse_qsl(urlsplit(page.url).query)
    assert assert_page_matches_api(api_url, page)["total"] == bucket["count"]
    page.go_back()
    wait_loaded(page)

    # type-ahead over a long facet
    finder = page.locator('section.facet[data-facet="person"] input.value-search')
    finder.fill("gua")
    page.wait_for_function(
        "() => [...document.querySelectorAll('section.facet[data-facet=person] li input')]"
        ".every(i => i.value.toLowerCase().normalize('NFKD').includes('gua'))"
    )
    want = requests.get(
        f"{api_url}/v1/facets/person", params={"prefix": "gua", "size": 20}, timeout=10
    ).json()
    values = page.locator('section.facet[data-facet="person"] li input').evaluate_all(
        "els => els.map(e => e.value)"
    )
    assert values == [v["value"] for v in want["values"]] and values
    finder.press("Enter")  # moves to the first match; Space ticks it
    page.wait_for_function("() => document.activeElement.type === 'checkbox'")
    page.keyboard.press("Space")
    page.wait_for_function("() => location.search.includes('person=')")
    wait_loaded(page)
    assert ("person", values[0]) in parse_qsl(urlsplit(page.url).query)
    assert_page_matches_api(api_url, page)
    page.watch.assert_clean()


def test_quotes_view_and_permalink(page, api_url):
    page.goto(f"{api_url}/?q=torture&mode=quotes")
    wait_loaded(page)
    body = assert_page_matches_api(api_url, page)
    assert body["total"] > 0
    first = body["hits"][0]
    quote = page.locator("#hits > li").first
    assert first["text"] in quote.locator("blockquote").inner_text().replace("…", "").strip(
        "“” "
    ) or quote.locator("blockquote").inner_text().strip("“” ").startswith(first["text"][:30])
    if first["speaker"]:
        assert quote.locator(".who .chip.speaker").inner_text() == first["speaker"]
    shot(page, "search-quotes")

    # open the permalink from the result
    quote.locator("a.title-link").click()
    page.wait_for_selector("#passage")
    passage = requests.get(
        f"{api_url}/v1/passages/{first['passage_id'].replace('#', '%23')}", timeout=10
    ).json()
    assert page.locator("#passage").inner_text().strip() == passage["text"].strip()
    assert page.locator("#title").inner_text() == passage["title"]
    href = page.locator('link[rel=alternate][type="application/json+oembed"]').get_attribute("href")
    oembed = requests.get(href, timeout=10).json()
    assert oembed["type"] == "rich" and oembed["version"] == "1.0"
    for name in passage["speakers"] or []:
        assert page.locator(".quotes .chip.speaker", has_text=name).count() > 0
    shot(page, "passage")
    page.watch.assert_clean()


def test_did_you_mean_and_query_errors(page, api_url):
    page.goto(f"{api_url}/?q=tortue")
    wait_loaded(page)
    link = page.locator("#suggestion a")
    assert link.inner_text() == "torture"
    link.click()
    wait_loaded(page)
    assert dict(parse_qsl(urlsplit(page.url).query))["q"] == "torture"
    assert assert_page_matches_api(api_url, page)["total"] > 0
    page.goto(f"{api_url}/?q=foo:bar")
    page.wait_for_selector("#error:not([hidden])")
    assert "unknown field 'foo'" in page.locator("#error").inner_text()
    assert page.locator("#hits > li").count() == 0
    page.watch.assert_clean(allow=("400",))


def test_phone_width(browser, api_url):
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=1,
    )
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.goto(f"{api_url}/?q=Guaido")
    wait_loaded(pg)
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    assert pg.locator("#hits > li").count() > 0
    assert not pg.locator("#facets-box").evaluate("d => d.open")  # filters folded on phones
    shot(pg, "search-phone", full_page=False)
    pg.locator("#facets-box summary").click()
    assert pg.locator("section.facet").first.is_visible()
    shot(pg, "search-phone-filters")
    pg.goto(f"{api_url}/passages/{SEED_ID}/4")
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    shot(pg, "passage-phone", full_page=False)
    context.close()


def test_script_bearing_article_runs_nothing(page, api_url):
    page.goto(f"{api_url}/?q=probe")
    wait_loaded(page)
    text = page.locator("#hits").inner_text()
    assert XSS_TEXT in text and XSS_IMG in text
    assert page.locator("#hits script, #hits img").count() == 0
    assert "<b>bold</b>" in page.locator("#hits .hit-title").first.inner_text()
    shot(page, "xss-search")

    page.goto(f"{api_url}/passages/{XSS_ID}/1")
    assert XSS_TEXT in page.locator("#passage").inner_text()
    assert page.locator("main script, main img").count() == 0
    assert page.locator('a[href^="javascript:"]').count() == 0

    page.goto(f"{api_url}/embed/passages/{XSS_ID}/1")
    assert XSS_IMG in page.locator("blockquote").inner_text()

    page.goto(f"{api_url}/embed?q=probe")
    page.wait_for_selector("newsquarry-results li")
    assert XSS_TEXT in page.locator("newsquarry-results ol").inner_text()
    # the widget's styles apply under the strict CSP (constructed stylesheets, no inline style)
    assert (
        page.locator("newsquarry-results mark").first.evaluate(
            "e => getComputedStyle(e).backgroundColor"
        )
        == "rgb(255, 226, 122)"
    )
    page.wait_for_timeout(300)  # give any injected handler a chance to fire
    page.watch.assert_clean()


def test_widget_on_another_origin(page, api_url, host_url):
    assert urlsplit(api_url).port != urlsplit(host_url).port
    page.add_init_script("""window.__nqResize = [];
        addEventListener('message', e => e.data && e.data.type === 'newsquarry:resize'
                         && window.__nqResize.push(e.data.height));""")
    page.goto(host_url)
    for wid in ("w-torture", "w-speaker", "w-probe", "w-key"):
        page.wait_for_selector(f"#{wid} li")
    page.wait_for_selector("#w-expired .error")

    def hits(wid):
        return page.locator(f"#{wid} li").evaluate_all("els => els.map(e => e.dataset.id)")

    torture = requests.get(
        f"{api_url}/v1/search", params={"q": "torture", "per_page": 3}, timeout=10
    ).json()
    assert hits("w-torture") == [h["id"] for h in torture["hits"]]
    assert str(torture["total"]) in page.locator("#w-torture .count").inner_text()

    said = requests.get(
        f"{api_url}/v1/quotes", params={"speaker": "Harry Solano", "per_page": 3}, timeout=10
    ).json()
    assert hits("w-speaker") == [h["id"] for h in said["hits"]]
    assert set(page.locator("#w-speaker .who").all_inner_texts()) == {"Harry Solano"}

    probe = page.locator("#w-probe ol").inner_text()
    assert XSS_TEXT in probe and XSS_IMG in probe

    scoped = requests.get(
        f"{api_url}/v1/search", params={"source": "Andean Post", "per_page": 10}, timeout=10
    ).json()
    assert hits("w-key") == [h["id"] for h in scoped["hits"]]
    assert set(page.locator("#w-key .source").all_inner_texts()) == {"Andean Post"}
    assert "expired" in page.locator("#w-expired .error").inner_text()

    # isolation: the host's CSS does not reach inside; custom properties do
    style = page.locator("#w-torture li").first.evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e).fontSize]"
    )
    assert style[0] != "rgb(255, 0, 0)" and style[1] != "30px"
    assert (
        page.locator("#w-torture mark").first.evaluate("e => getComputedStyle(e).display") != "none"
    )
    assert (
        page.locator("#w-torture mark").first.evaluate("e => getComputedStyle(e).backgroundColor")
        == "rgb(179, 229, 252)"
    )
    assert (
        page.locator("#w-torture li a").first.evaluate("e => getComputedStyle(e).color")
        == "rgb(194, 24, 91)"
    )
    assert (
        page.locator("#w-speaker li a").first.evaluate("e => getComputedStyle(e).color")
        == "rgb(36, 86, 199)"
    )
    assert page.locator("li").first.evaluate("e => getComputedStyle(e).color") == "rgb(255, 0, 0)"

    # "More results" fetches the next page over CORS
    if torture["total"] > 3:
        page.locator("#w-torture button").click()
        page.wait_for_function(
            "() => document.querySelector('#w-torture').shadowRoot"
            ".querySelectorAll('li').length > 3"
        )
        page2 = requests.get(
            f"{api_url}/v1/search", params={"q": "torture", "per_page": 3, "page": 2}, timeout=10
        ).json()
        assert hits("w-torture")[3:] == [h["id"] for h in page2["hits"]]

    # changing an attribute reloads the widget
    page.locator("#w-probe").evaluate("e => e.setAttribute('q', 'blackout')")
    page.wait_for_function(
        "() => document.querySelector('#w-probe').shadowRoot"
        ".querySelector('mark')?.textContent === 'blackout'"
    )

    # a page script may send the key as a header: CORS lets it through (preflight)
    key = make_key(SECRET, Scope(filters={"source": ["Andean Post"]}))
    sources = page.evaluate(
        """([api, key]) => fetch(api + '/v1/search?per_page=50', {headers: {'X-Newsquarry-Key': key}})
               .then(r => r.json()).then(b => [...new Set(b.hits.map(h => h.source))])""",
        [api_url, key],
    )
    assert sources == ["Andean Post"]

    # the oEmbed html and the /embed iframe show the probe as text
    card = page.frame_locator("#oembed iframe").locator("blockquote")
    assert XSS_TEXT in card.inner_text()
    framed = page.frame_locator("#embed-frame").locator("newsquarry-results li").first
    assert XSS_TEXT in framed.inner_text()
    page.wait_for_function(
        "() => window.__nqResize.some(h => h > 100)"
    )  # /embed reports its height
    # out-of-viewport iframes are not painted in full-page shots: make the viewport the page
    page.set_viewport_size(
        {"width": 1280, "height": page.evaluate("document.body.scrollHeight + 40")}
    )
    page.wait_for_timeout(300)
    shot(page, "widget-host", full_page=False)
    # the expired key's 403 is reported by the browser as a failed resource load
    page.watch.assert_clean(allow=("403",))


def test_the_watch_sees_injected_markup_and_the_csp_blocks_it(page, api_url, host_url):
    """Control: markup injected on purpose is noticed, and on our pages the CSP stops it."""
    page.goto(f"{api_url}/passages/{XSS_ID}/1")
    page.evaluate(f"document.body.insertAdjacentHTML('beforeend', {XSS_IMG!r})")
    page.wait_for_timeout(300)
    assert page.watch.stray  # the <img src=x> was requested ...
    assert page.watch.dialogs == []  # ... but its inline onerror did not run (CSP)
    assert any("Content Security Policy" in e for e in page.watch.errors)

    other = page.context.new_page()
    watch = Watch(other)
    other.goto(host_url)  # no CSP on the host page: the same markup would run there
    other.evaluate(f"document.body.insertAdjacentHTML('beforeend', {XSS_IMG!r})")
    other.wait_for_function("() => true")
    other.wait_for_timeout(300)
    assert watch.dialogs == ["1"]
    other.close()


def test_match_group_and_interpretations(page, api_url):
    """The default page groups by article and ranks a typed question; the match select,
    the grouping box, "more in this article" and the offered quotes view all work."""
    page.goto(f"{api_url}/?q=what+did+Solano+say+about+torture")
    wait_loaded(page)
    body = assert_page_matches_api(api_url, page)
    assert body["request"]["group"] == "article" and body["request"]["match"] == "most"
    status = page.locator("#status").inner_text()
    assert f"in {body['total_articles']} article" in status
    first = page.locator("#hits > li").first
    more = first.locator(".more a")
    assert more.inner_text() == f"+ {body['hits'][0]['more_count']} more passages in this article"
    offered = page.locator("#interpretations a", has_text="Quotes by Harry Solano")
    assert offered.count() == 1
    shot(page, "search-grouped")
    offered.click()
    wait_loaded(page)
    params = dict(parse_qsl(urlsplit(page.url).query))
    assert params["mode"] == "quotes" and params["speaker"] == "Harry Solano"
    quotes = assert_page_matches_api(api_url, page)
    assert quotes["total"] > 0 and {h["speaker"] for h in quotes["hits"]} == {"Harry Solano"}

    page.goto(f"{api_url}/?q=what+did+Solano+say+about+torture")
    wait_loaded(page)
    page.locator("#hits > li .more a").first.click()
    wait_loaded(page)
    params = dict(parse_qsl(urlsplit(page.url).query))
    assert params["group"] == "none" and params["article"] == body["hits"][0]["article_id"]
    assert not page.locator("#group").is_checked()
    assert_page_matches_api(api_url, page)

    page.goto(f"{api_url}/?q=torture+of+deserters")
    wait_loaded(page)
    most = int(page.locator("#status").get_attribute("data-total"))
    page.select_option("#match", "all")
    wait_loaded(page)
    assert "match=all" in page.url
    every = assert_page_matches_api(api_url, page)
    assert every["total"] < most
    page.locator("#group").uncheck()
    wait_loaded(page)
    assert "group=none" in page.url and "match=all" in page.url
    assert_page_matches_api(api_url, page)
    page.watch.assert_clean()


def test_all_of_two_values_of_one_facet_from_the_page(page, api_url):
    """Two people ticked are alternatives; "all of" asks for passages naming both, the
    URL keeps it (a shared link is the same search), "any of" goes back."""
    page.goto(f"{api_url}/?group=none")
    wait_loaded(page)
    assert page.locator(".conjunction").count() == 0  # nothing to combine yet
    tick(page, "person", "Juan Guaidó")
    assert page.locator(".conjunction").count() == 0  # one value: no choice to make
    tick(page, "person", "Nicolás Maduro")
    either = assert_page_matches_api(api_url, page)
    toggle = page.locator('section.facet[data-facet="person"] .conjunction')
    assert toggle.get_by_role("button", name="any of").get_attribute("aria-pressed") == "true"
    toggle.get_by_role("button", name="all of").click()
    page.wait_for_function(
        "() => new URLSearchParams(location.search).getAll('all_of').includes('person')"
    )
    wait_loaded(page)
    both = assert_page_matches_api(api_url, page)
    assert 0 < both["total"] < either["total"]
    for hit in both["hits"]:
        assert {"Juan Guaidó", "Nicolás Maduro"} <= {e["name"] for e in hit["entities"]}
    assert (
        page.locator(
            'section.facet[data-facet="person"] .conjunction button[aria-pressed="true"]'
        ).inner_text()
        == "all of"
    )
    shot(page, "search-all-of")
    page.locator('section.facet[data-facet="person"] .conjunction').get_by_role(
        "button", name="any of"
    ).click()
    page.wait_for_function("() => !new URLSearchParams(location.search).has('all_of')")
    wait_loaded(page)
    assert assert_page_matches_api(api_url, page)["total"] == either["total"]
    page.watch.assert_clean()

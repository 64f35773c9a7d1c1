"""The search page, the widget and the embeds under real conditions, in headless Chromium.

Right-to-left overrides in article data, oEmbed cards sized to their text, the server
or ``widget.js`` going away, the keyboard path, pages past the end, empty results,
and axe-core (shipped in the ``axe-playwright-python`` wheel) on every page. The
widget and the embeds run on a second origin; the API server is real and is really
stopped and started again for the failure tests.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from playwright.sync_api import Error as PlaywrightError
from werkzeug.serving import make_server

try:  # tests/ is a package (tests/__init__.py) or a plain folder on sys.path
    from tests.test_web_browser import (  # noqa: F401  (browser, page: the same fixtures)
        browser,
        page,
        pytestmark,  # noqa: F401  (skipped without Chromium, as the other browser tests)
        shot,
        wait_loaded,
    )
    from tests.web_support import (
        LONG_ID,
        ODD_ID,
        RLO,
        RTL_DATE,
        RTL_ID,
        RTL_SOURCE,
        SEED_ID,
        XSS_ID,
        make_app,
        serve,
    )
except ModuleNotFoundError:
    from test_web_browser import (  # noqa: F401
        browser,
        page,
        pytestmark,
        shot,
        wait_loaded,
    )
    from web_support import (
        LONG_ID,
        ODD_ID,
        RLO,
        RTL_DATE,
        RTL_ID,
        RTL_SOURCE,
        SEED_ID,
        XSS_ID,
        make_app,
        serve,
    )

REFUSED = ("ERR_CONNECTION_REFUSED", "Failed to load resource")


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def api_url():
    with serve(make_app()) as url:
        yield url


@pytest.fixture(scope="module")
def pages():
    """A second origin serving whatever HTML a test puts in this dict (path -> html)."""
    served: dict[str, str] = {}

    def app(environ, start_response):
        html = served.get(environ["PATH_INFO"])
        if html is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [html.encode("utf-8")]

    with serve(app) as url:
        served["_base"] = url
        yield served


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stoppable:
    """The real API server on a fixed port that a test can stop and start again."""

    def __init__(self, app) -> None:
        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = None
        self.thread = None

    def start(self) -> None:
        self.server = make_server("127.0.0.1", self.port, self.app, threaded=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@contextmanager
def stoppable_api() -> Iterator[Stoppable]:
    api = Stoppable(make_app())
    api.start()
    try:
        yield api
    finally:
        if api.thread.is_alive():
            api.stop()


def host(pages: dict, path: str, body: str, head: str = "") -> str:
    """Serve a page on the second origin; returns its URL."""
    pages[path] = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>Host page</title>{head}</head><body>{body}</body></html>"
    )
    return pages["_base"] + path


# ------------------------------------------------------------------ layout probes
# Boxes of an element's child nodes in DOM order: text nodes through a Range, elements
# by their client rects; each with its text, left, right and top.
BOXES_JS = """(root) => [...root.childNodes].map((n) => {
    const r = document.createRange();
    r.selectNodeContents(n);
    const rects = [...r.getClientRects()].filter((x) => x.width > 0);
    if (!rects.length) return null;
    return {text: n.textContent, left: Math.min(...rects.map((x) => x.left)),
            right: Math.max(...rects.map((x) => x.right)), top: rects[0].top};
}).filter(Boolean)"""

# x of each character of the first text node under root
CHARS_JS = """(root) => {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const node = walker.nextNode();
    return [...node.data].map((_, i) => {
        const r = document.createRange();
        r.setStart(node, i); r.setEnd(node, i + 1);
        return r.getBoundingClientRect().left;
    });
}"""


def assert_in_order(boxes: list[dict], what: str) -> None:
    """Each box starts right of the one before it, or on a later line."""
    for a, b in zip(boxes, boxes[1:], strict=False):
        assert b["top"] > a["top"] + 2 or b["left"] >= a["right"] - 1, (
            f"{what}: {b['text']!r} is drawn left of {a['text']!r}: {boxes}"
        )


def assert_reads_left_to_right(xs: list[float], what: str) -> None:
    assert xs == sorted(xs) and len(set(xs)) == len(xs), f"{what} is reordered: {xs}"


def meta_in_order(locator, what: str) -> None:
    """The meta line's own separators and fields stay in order; the date reads forwards."""
    boxes = locator.evaluate(BOXES_JS)
    assert any(b["text"].strip() == "·" for b in boxes), boxes
    assert_in_order(boxes, what)
    assert_reads_left_to_right(locator.locator("time").evaluate(CHARS_JS), f"{what} date")


# ------------------------------------------------------------------ bidi
def test_an_override_in_article_data_stays_in_its_field(page, api_url, pages):
    """U+202E in a title, source and author reorders nothing outside that field: checked on
    rendered positions in the search page, a permalink, the widget and the oEmbed card."""
    # control: without isolation the same data does reorder the line (the probe can fail)
    page.set_content(f'<p id="c"><span>{RTL_SOURCE}</span> · <time>{RTL_DATE}</time></p>')
    with pytest.raises(AssertionError):
        meta_in_order(page.locator("#c"), "control")

    page.goto(f"{api_url}/?q=budget")
    wait_loaded(page)
    hit = page.locator(f'#hits > li[data-id="{RTL_ID}#p1"]')
    meta_in_order(hit.locator(".meta"), "search page meta line")
    assert hit.locator(".meta .source").inner_text() == RTL_SOURCE
    # the hit's text: "… " and " …" of the app around it stay where they are (none here),
    # and the heading and status above are untouched
    assert page.locator("#results-heading").inner_text() == "Passages matching “budget”"
    assert_reads_left_to_right(page.locator("#status").evaluate(CHARS_JS)[:8], "status")
    shot(page, "rtl-search")
    # a shared link whose query holds an override cannot reorder the heading's own words
    page.goto(f"{api_url}/?q=%E2%80%AEbudget")
    wait_loaded(page)
    heading = page.locator("#results-heading").evaluate(BOXES_JS)
    assert [b["text"] for b in heading] == ["Passages matching “", f"{RLO}budget", "”"]
    assert_in_order(heading, "results heading")

    page.goto(f"{api_url}/passages/{RTL_ID}/1")
    meta = page.locator("main .meta")
    meta_boxes = [b["text"].strip() for b in meta.evaluate(BOXES_JS) if b["text"].strip()]
    assert meta_boxes[:2] == [RTL_SOURCE, RTL_DATE]
    assert_in_order(meta.evaluate(BOXES_JS), "permalink meta")
    author = page.locator("main .meta .author")
    assert_in_order(author.evaluate(BOXES_JS), "permalink author")  # "by" stays first
    assert_reads_left_to_right(page.locator(".crumbs").evaluate(CHARS_JS), "crumbs")
    assert page.title().endswith(" · passage 1 · newsquarry")
    shot(page, "rtl-permalink")

    page.goto(f"{api_url}/embed/passages/{RTL_ID}/1")
    caption = page.locator("figcaption")
    assert_in_order(caption.evaluate(BOXES_JS), "oEmbed card caption")
    assert_reads_left_to_right(caption.locator("time").evaluate(CHARS_JS), "card date")
    assert caption.locator(".by").evaluate("e => e.textContent") == " · newsquarry"

    url = host(
        pages,
        "/rtl",
        f'<newsquarry-results id="w" api="{api_url}" q="budget" title="Budget news">'
        "</newsquarry-results>",
        f'<script src="{api_url}/widget.js" defer></script>',
    )
    page.goto(url)
    page.wait_for_selector("#w li")
    wmeta = page.locator("#w li .meta").last
    boxes = wmeta.evaluate(BOXES_JS)
    assert [b["text"].strip() for b in boxes if b["text"].strip() != "·"][1:] == [
        RTL_SOURCE,
        RTL_DATE,
    ]
    assert_in_order(boxes, "widget meta line")
    assert_reads_left_to_right(wmeta.locator("time").evaluate(CHARS_JS), "widget date")
    title = page.locator("#w li .meta a bdi").inner_text()
    assert title.startswith("Council budget") and RLO in title
    # the passage text above the meta line is its own paragraph, untouched by the title
    assert page.locator("#w li .text").inner_text().startswith("The city council")
    shot(page, "rtl-widget")
    page.watch.assert_clean()


# ------------------------------------------------------------------ embeds that fit
CARDS = [
    ("caracas-market", 1),  # short
    (SEED_ID, 3),  # a usual passage
    (LONG_ID, 1),  # 30,000 characters: a preview and a link
    (ODD_ID, 1),  # a word longer than the card and many short lines
    (RTL_ID, 1),  # overrides and Arabic
    (XSS_ID, 1),  # markup as text
]


def test_oembed_cards_are_not_clipped_and_report_their_height(page, api_url, pages):
    """At three widths every card's content fits the height the oEmbed answer gave (with
    little to spare), long passages are cut to a preview with a link to the permalink, and
    each card posts {type: "newsquarry:resize", height} with its exact height."""
    page.add_init_script(
        """window.__nq = [];
        addEventListener('message', (e) => {
          if (!e.data || e.data.type !== 'newsquarry:resize') return;
          const frame = [...document.querySelectorAll('iframe')]
            .find((f) => f.contentWindow === e.source);
          window.__nq.push([frame && frame.id, e.data.height]);
        });"""
    )
    for width in (560, 360, 240):
        answers, frames = [], []
        for i, (article, n) in enumerate(CARDS):
            permalink = f"{api_url}/passages/{article}/{n}"
            body = requests.get(
                f"{api_url}/oembed", params={"url": permalink, "maxwidth": width}, timeout=10
            ).json()
            assert body["width"] == width
            answers.append(body)
            frames.append(body["html"].replace("<iframe ", f'<iframe id="card{i}" ', 1))
        url = host(pages, f"/cards{width}", "".join(f"<div>{f}</div>" for f in frames))
        page.set_viewport_size({"width": 1280, "height": 3000})  # no lazy frame left unloaded
        page.goto(url)
        for i, body in enumerate(answers):
            frame = page.frame_locator(f"#card{i}")
            frame.locator("figcaption").wait_for()
            content = frame.locator("html").evaluate(
                "e => Math.ceil(e.getBoundingClientRect().height)"
            )
            what = f"{CARDS[i]} at {width}px: content {content}px, iframe {body['height']}px"
            assert content <= body["height"], f"clipped: {what}"
            assert body["height"] - content <= max(60, content // 8), f"too much space: {what}"
            caption = frame.locator("figcaption")
            assert caption.evaluate("e => e.getBoundingClientRect().bottom") <= body["height"]
        # the resize protocol: every card reports its own height
        page.wait_for_function(f"() => new Set(window.__nq.map((m) => m[0])).size === {len(CARDS)}")
        reported = dict(page.evaluate("window.__nq"))
        for i in range(len(CARDS)):
            content = (
                page.frame_locator(f"#card{i}")
                .locator("html")
                .evaluate("e => Math.ceil(e.getBoundingClientRect().height)")
            )
            assert reported[f"card{i}"] == content
        if width == 360:
            shot(page, "oembed-cards")

    # the long passage: a preview of at most 480 characters, then a link to all of it
    body = requests.get(
        f"{api_url}/oembed", params={"url": f"{api_url}/passages/{LONG_ID}/1"}, timeout=10
    ).json()
    src = body["html"].split('src="')[1].split('"')[0]
    page.goto(src.replace("&amp;", "&"))
    shown = page.locator("blockquote").inner_text()
    assert len(shown) <= 481 and shown.endswith("…")
    more = page.locator(".more a")
    assert more.get_attribute("href") == f"{api_url}/passages/{LONG_ID}/1"
    assert "29,890 characters" in more.inner_text()
    page.watch.assert_clean()


# ------------------------------------------------------------------ failures
def test_search_page_with_the_server_down_says_so_and_recovers(page):
    """The server stops: a sentence a reader understands, a countdown and a retry button,
    the last results kept (marked as such) and no embed code for a search not shown; the
    server comes back: "Retry now" shows the new search and its embed code."""
    with stoppable_api() as api:
        page.goto(f"{api.url}/?q=torture")
        wait_loaded(page)
        before = page.locator("#hits > li").count()
        assert before > 0
        assert 'q="torture"' in page.locator("#embed-widget").text_content()
        api.stop()

        page.fill("#q", "council")
        page.press("#q", "Enter")
        page.wait_for_selector("#error:not([hidden])")
        error = page.locator("#error").inner_text()
        assert "The search service is not reachable." in error
        assert re.search(r"Retrying in [1-5] s…|Retrying…", error)  # a countdown from 5 s
        assert "Failed to fetch" not in error
        assert page.locator("#retry").is_visible()
        assert page.locator("#hits > li").count() == before  # not wiped
        assert "from the last search that worked" in error
        assert page.locator("#hits").evaluate("e => e.classList.contains('stale')")
        assert page.locator("#embed-code").is_hidden()
        assert page.locator("#embed-widget").text_content() == ""
        assert page.evaluate("document.activeElement.id") == "results-heading"
        shot(page, "server-down")

        api.start()
        page.locator("#retry").click()
        wait_loaded(page)
        assert page.locator("#error").is_hidden()
        assert page.locator("#hits > li").count() == 3  # the council passages
        code = page.locator("#embed-widget").text_content()
        assert 'q="council"' in code and "torture" not in code
    page.watch.assert_clean(allow=REFUSED)


def test_embed_code_follows_every_search(page, api_url):
    """After a failed search the box offers nothing; after the next one, that search."""
    page.goto(f"{api_url}/?q=torture")
    wait_loaded(page)
    page.locator("#embed-code summary").click()
    assert 'q="torture"' in page.locator("#embed-widget").inner_text()
    page.fill("#q", "foo:bar")
    page.press("#q", "Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert "unknown field 'foo'" in page.locator("#error").inner_text()
    assert page.locator("#retry").count() == 0  # a wrong query is not retried
    assert page.locator("#embed-code").is_hidden()
    assert "torture" not in page.locator("#embed-widget").text_content()
    page.fill("#q", "blackout")
    page.press("#q", "Enter")
    wait_loaded(page)
    code = page.locator("#embed-widget").text_content()
    assert 'q="blackout"' in code and "torture" not in code
    # the pasted widget carries its own fallback: a link to this search
    assert '<a href="' in code and "/?q=blackout" in code
    assert "q=blackout" in page.locator("#embed-iframe").text_content()
    page.watch.assert_clean(allow=("400",))


def test_widget_when_the_service_or_its_script_is_down(page, api_url, pages):
    """Service down: the widget keeps its title, says what happened, offers a retry and
    shows the author's fallback children. Script down: the children are the content."""
    dead = f"http://127.0.0.1:{free_port()}"
    fallback = f'<a class="fb" href="{api_url}/?q=torture">Search “torture” on newsquarry</a>'
    url = host(
        pages,
        "/widget-down",
        f'<newsquarry-results id="down" api="{dead}" q="torture" title="Torture, in their words">'
        f"{fallback}</newsquarry-results>"
        f'<newsquarry-results id="up" q="torture" title="Live">{fallback}</newsquarry-results>',
        f'<script src="{api_url}/widget.js" defer></script>',
    )
    page.goto(url)
    page.wait_for_selector("#down .error")
    assert page.locator("#down h2").inner_text() == "Torture, in their words"
    error = page.locator("#down .error").inner_text()
    assert error.startswith("The search service is not reachable.")
    assert re.search(r"Retrying in [1-5] s…", error)  # a countdown from 5 s
    assert "Failed to fetch" not in error
    assert page.locator("#down button[part=retry]").is_visible()
    assert page.locator("#down a.fb").is_visible()  # the fallback, slotted under the message
    page.wait_for_selector("#up li")
    assert not page.locator("#up a.fb").is_visible()  # a working widget hides its fallback
    shot(page, "widget-down")

    url = host(
        pages,
        "/script-down",
        f'<newsquarry-results id="w" q="torture" title="Torture">{fallback}</newsquarry-results>',
        f'<script src="{dead}/widget.js" defer></script>',
    )
    page.goto(url)
    page.wait_for_load_state("load")
    link = page.locator("#w a.fb")
    assert link.is_visible() and link.inner_text() == "Search “torture” on newsquarry"
    box = link.bounding_box()
    assert box["width"] > 100 and box["height"] > 10
    page.watch.assert_clean(allow=REFUSED)


def test_embed_page_shows_its_fallback_without_the_widget_script(page, api_url):
    """/embed carries a link to the same search inside the element."""
    page.route("**/widget.js", lambda route: route.abort("connectionrefused"))
    page.goto(f"{api_url}/embed?q=torture&speaker=Harry+Solano")
    link = page.locator("newsquarry-results a")
    assert link.is_visible() and link.inner_text() == "Search “torture” on newsquarry"
    assert parse_qsl(urlsplit(link.get_attribute("href")).query) == [
        ("q", "torture"),
        ("speaker", "Harry Solano"),
    ]
    page.watch.assert_clean(allow=REFUSED)


# ------------------------------------------------------------------ paging, empty results, URL
def test_a_page_past_the_end_links_to_the_last_page(page, api_url):
    page.goto(f"{api_url}/?q=council&per_page=1&page=99")
    wait_loaded(page)
    status = page.locator("#status").inner_text()
    assert status == "3 passages in 3 articles · there is no page 99: go to page 3, the last"
    assert page.locator("#hits > li").count() == 0
    assert page.locator("#pager .prev").get_attribute("href").endswith("page=3")
    assert "Next" not in page.locator("#pager").inner_text()
    page.locator("#last-page").click()
    wait_loaded(page)
    assert dict(parse_qsl(urlsplit(page.url).query))["page"] == "3"
    assert page.locator("#hits > li").count() == 1
    assert page.locator("#status").inner_text() == "3 passages in 3 articles · page 3 of 3"
    assert page.evaluate("document.activeElement.id") == "results-heading"
    page.watch.assert_clean()


def test_no_results_offers_ways_forward(page, api_url):
    page.goto(f"{api_url}/?q=council+zebra&match=all&source=Daily+Ledger&source=Andean+Post")
    wait_loaded(page)
    assert page.locator("#status").inner_text() == "No passages match"
    help_links = page.locator("#help a").all_inner_texts()
    assert help_links == [
        "Search without the filters",
        "Remove source: Daily Ledger",
        "Remove source: Andean Post",
        "Find passages with only some of the words",
        "Search quotations instead",
    ]
    assert "(source: Daily Ledger, source: Andean Post)" in page.locator("#help").inner_text()
    page.locator("#help a", has_text="only some of the words").click()
    wait_loaded(page)
    assert "match" not in dict(parse_qsl(urlsplit(page.url).query))  # the default: most
    page.locator("#help a", has_text="Search without the filters").click()
    wait_loaded(page)
    params = parse_qsl(urlsplit(page.url).query)
    assert params == [("q", "council zebra")]
    assert page.locator("#hits > li").count() == 3 and page.locator("#help").is_hidden()

    page.goto(f"{api_url}/?q=tortue")  # a misspelling: did-you-mean, then the other ways
    wait_loaded(page)
    assert page.locator("#status").inner_text() == "No passages match"
    assert page.locator("#suggestion").inner_text() == "Did you mean torture? (4)"
    assert page.locator("#help a").all_inner_texts() == ["Search quotations instead"]
    shot(page, "no-results")
    page.watch.assert_clean()


def test_an_unknown_sort_in_the_url_falls_back_to_relevance(page, api_url):
    page.goto(f"{api_url}/?q=council&sort=bogus")
    wait_loaded(page)
    assert page.locator("#sort").input_value() == "relevance"
    assert page.locator("#sort option:checked").inner_text() == "Relevance"
    assert "sort=" not in page.url and page.locator("#hits > li").count() == 3
    assert page.locator("#error").is_hidden()
    page.watch.assert_clean()


# ------------------------------------------------------------------ keyboard and screen readers
FIRST_RESULT = "document.activeElement === document.querySelector('#hits > li h2 a')"


def test_keyboard_path_from_the_query_to_the_first_result(page, api_url):
    page.goto(f"{api_url}/?q=torture")
    wait_loaded(page)
    assert page.locator("h1").count() == 1
    assert page.locator("h1").inner_text() == "Passages matching “torture”"
    status = page.locator("#status")
    assert (
        status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
    )
    assert status.inner_text() == "4 passages in 2 articles"

    # from the search box, without searching: Search button, then the first result
    page.focus("#q")
    presses = 0
    while presses < 3 and not page.evaluate(FIRST_RESULT):
        page.keyboard.press("Tab")
        presses += 1
    assert page.evaluate(FIRST_RESULT), "the first result is more than 3 Tab presses away"
    assert presses == 2

    # type a search and press Enter: focus goes to the results heading, one Tab to the first
    page.focus("#q")
    page.keyboard.press("Control+A")
    page.keyboard.type("council")
    page.keyboard.press("Enter")
    wait_loaded(page)
    assert page.evaluate("document.activeElement.id") == "results-heading"
    assert page.locator("#results-heading").inner_text() == "Passages matching “council”"
    assert status.inner_text() == "3 passages in 3 articles"  # what the live region announces
    page.keyboard.press("Tab")
    assert page.evaluate(FIRST_RESULT)
    # the facets follow the results in tab order
    order = page.evaluate(
        "[...document.querySelectorAll('main a, aside input')].map((e) => e.closest('main,aside').tagName)"
    )
    assert order.index("ASIDE") > order.index("MAIN")
    page.watch.assert_clean()


def test_widget_more_results_keeps_the_focus(page, api_url, pages):
    url = host(
        pages,
        "/more",
        f'<newsquarry-results id="w" api="{api_url}" q="council" per-page="1" title="Council">'
        "</newsquarry-results>",
        f'<script src="{api_url}/widget.js" defer></script>',
    )
    page.goto(url)
    page.wait_for_selector("#w li")
    deep = (
        "(() => { const r = document.querySelector('#w').shadowRoot; const a = r.activeElement;"
        " return a ? (a.getAttribute('part') || a.tagName) : document.activeElement.tagName; })()"
    )
    page.locator("#w button[part=more]").focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#w').shadowRoot.querySelectorAll('li').length === 2"
    )
    assert page.evaluate(deep) == "more"  # still on the button, ready for the next page
    assert page.locator("#w .count").inner_text() == "3 passages, 2 shown"
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#w').shadowRoot.querySelectorAll('li').length === 3"
    )
    # the last page is in and the button is gone: focus moves to the first new result
    assert page.locator("#w button[part=more]").count() == 0
    assert page.evaluate(deep) == "A"
    assert page.evaluate(
        "document.querySelector('#w').shadowRoot.activeElement.closest('li')"
        " === document.querySelector('#w').shadowRoot.querySelectorAll('li')[2]"
    )
    page.watch.assert_clean()


# ------------------------------------------------------------------ axe-core
AXE_JS = None


def axe_problems(pg, include_moderate: bool = False) -> list[str]:
    """axe-core's serious and critical violations on the page (axe.min.js from the
    ``axe-playwright-python`` wheel, evaluated in the page: CSP does not apply)."""
    global AXE_JS
    if AXE_JS is None:
        import axe_playwright_python

        AXE_JS = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text("utf-8")
    if not pg.evaluate("typeof window.axe !== 'undefined'"):
        pg.evaluate(AXE_JS)
    result = pg.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = {"serious", "critical"} | ({"moderate"} if include_moderate else set())
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in bad
    ]


def test_axe_finds_nothing_serious(page, api_url, pages):
    """Zero serious or critical violations on the search page (results, empty, error), a
    permalink, the widget's host page, /embed, the oEmbed card and /docs."""
    # control: axe runs and sees a nameless button and an image without alt
    page.set_content('<main><h1>x</h1><button></button><img src="data:,"></main>')
    assert {p.split(" ")[0] for p in axe_problems(page)} >= {"button-name", "image-alt"}
    checked = {}
    for path in ("/?q=council", "/?q=zzzzqqq", "/?q=foo:bar", "/?q=torture&mode=quotes"):
        page.goto(api_url + path)
        page.wait_for_function(
            "() => document.body.dataset.loaded || document.body.dataset.failed"
            " || !document.querySelector('#error').hidden"
        )
        checked[path] = axe_problems(page)
    page.goto(f"{api_url}/passages/{SEED_ID}/3")
    checked["permalink"] = axe_problems(page)
    page.goto(f"{api_url}/passages/{RTL_ID}/1")
    checked["rtl permalink"] = axe_problems(page)
    page.goto(f"{api_url}/embed/passages/{LONG_ID}/1?chars=300")
    checked["oEmbed card"] = axe_problems(page)
    page.goto(f"{api_url}/embed?q=torture&per_page=3")
    page.wait_for_selector("newsquarry-results li")
    checked["/embed"] = axe_problems(page)
    url = host(
        pages,
        "/axe-host",
        "<main><h1>The Daily Host</h1><p>Our coverage of the crisis.</p>"
        f'<newsquarry-results api="{api_url}" q="torture" per-page="3" title="Torture, in their words">'
        "</newsquarry-results>"
        f'<newsquarry-results api="{api_url}" mode="quotes" speaker="Harry Solano" per-page="2">'
        "</newsquarry-results></main>",
        f'<script src="{api_url}/widget.js" defer></script>',
    )
    page.goto(url)
    page.wait_for_function(
        "() => [...document.querySelectorAll('newsquarry-results')]"
        ".every((w) => w.shadowRoot.querySelector('li'))"
    )
    checked["widget host"] = axe_problems(page)
    page.goto(f"{api_url}/docs")
    page.wait_for_selector("section.op")
    checked["/docs"] = axe_problems(page)
    assert {k: v for k, v in checked.items() if v} == {}
    page.watch.assert_clean(allow=("400",))


def test_a_facet_click_while_results_load_keeps_the_query(page, api_url):
    """The next search is held in flight (its response released only when the test says so,
    as a slow network would): a facet value clicked meanwhile is added to that search, which
    keeps its query; the heading and the count never disagree."""
    page.goto(f"{api_url}/")
    wait_loaded(page)
    held: list = []
    page.route("**/v1/search?*", lambda route: held.append(route))
    page.fill("#q", "torture")
    page.press("#q", "Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('q') === 'torture'")
    page.wait_for_function("() => document.body.hasAttribute('aria-busy')")
    assert "torture" in page.locator("#results-heading").inner_text()
    assert page.locator("#status").inner_text() == "Searching…"  # not the last search's count
    # a person value drawn for the previous search (all passages), clicked now
    box = page.locator("#facet-list input[type=checkbox][data-focus^='facet:person:']").first
    value = box.get_attribute("value")
    box.check()
    page.wait_for_function(
        "(v) => new URLSearchParams(location.search).getAll('person').includes(v)", arg=value
    )
    params = dict(parse_qsl(urlsplit(page.url).query))
    assert params["q"] == "torture" and params["person"] == value
    page.unroute("**/v1/search?*")
    for route in held:  # the superseded request (aborted by the page) and the current one
        try:
            route.continue_()
        except PlaywrightError:  # the page aborted it when the click superseded it
            pass
    wait_loaded(page)
    assert page.locator("#q").input_value() == "torture"
    assert "torture" in page.locator("#results-heading").inner_text()
    status = page.locator("#status").inner_text()
    assert status != "Searching…" and page.locator("#status").get_attribute("data-total")
    page.watch.assert_clean()


def test_the_quotes_view_shows_every_quotation_by_default(page, api_url):
    """A speaker's quotations are all listed, as the API's default (group=none) lists them;
    "One per article" stays one click away, and passages keep grouping by article."""
    page.goto(f"{api_url}/?mode=quotes&speaker=Harry+Solano")
    wait_loaded(page)
    assert not page.locator("#group").is_checked() and "group=" not in page.url
    every = requests.get(f"{api_url}/v1/quotes?speaker=Harry+Solano", timeout=10).json()
    assert page.locator("#status").get_attribute("data-total") == str(every["total"])
    assert page.locator("#hits > li").count() == min(10, every["total"])
    assert page.locator("#hits .more").count() == 0
    page.locator("#group").check()
    wait_loaded(page)
    assert "group=article" in page.url
    page.locator("#mode-passages").click()
    wait_loaded(page)
    assert page.locator("#group").is_checked() and "group=" not in page.url
    page.watch.assert_clean()


def test_a_search_with_no_results_offers_no_embed_and_no_empty_dates_box(page, api_url):
    page.goto(f"{api_url}/?q=zeppelinquux")
    wait_loaded(page)
    assert page.locator("#status").get_attribute("data-total") == "0"
    assert page.locator("#embed-code").is_hidden()  # nothing to embed
    assert page.locator("#histogram").is_hidden()  # no "No dated passages" box
    assert page.locator("#follow").is_visible()  # a feed tells when a first match comes
    page.goto(f"{api_url}/?q=torture")
    wait_loaded(page)
    assert page.locator("#embed-code").is_visible() and page.locator("#histogram").is_visible()
    page.watch.assert_clean()

"""The offline docs page in headless Chromium: it renders the OpenAPI document and
makes no request outside the server (no CDN)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from api_support import build_index
from werkzeug.serving import make_server

from newsquarry.api import create_app

CHROMIUM = os.environ.get("NEWSQUARRY_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# skipped on a developer machine without Chromium; in CI (.ci/run installs it) never skipped
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"),
    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)",
)


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    path = tmp_path_factory.mktemp("docs-index")
    build_index(path)
    server = make_server("127.0.0.1", 0, create_app({"index": str(path)}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


def test_docs_page_renders_offline(base_url):
    from playwright.sync_api import sync_playwright

    hosts: set[str] = set()
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        page.on("request", lambda r: hosts.add(urlsplit(r.url).netloc))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base_url + "/docs")
        page.wait_for_selector("section.op", timeout=10_000)
        ops = page.locator("section.op h3").all_inner_texts()
        assert any("/v1/search" in t for t in ops)
        assert any("/v1/articles/{article_id}" in t and "delete" in t.lower() for t in ops)
        assert page.locator("#schema-PassageSearchResponse").count() == 1
        # "Try it" sends a real request to this server and shows the answer
        search = page.locator("section#get-v1-search")
        search.locator("summary").click()
        search.locator("input[name=q]").fill("torture")
        search.locator("button").click()
        page.wait_for_function(
            "document.querySelector('section#get-v1-search pre').textContent.includes('200')"
        )
        assert '"total": 1' in search.locator("pre").inner_text()
        browser.close()
    assert errors == []
    assert hosts == {urlsplit(base_url).netloc}

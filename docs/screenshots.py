"""Regenerate the screenshots in docs/web.md: ``python docs/screenshots.py`` from the repo root.

Serves the web tests' index (tests/web_support.py) and a host page on a second
loopback port, and photographs them in headless Chromium (``NEWSQUARRY_CHROMIUM``,
default /usr/bin/chromium) into docs/img/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from web_support import SEED_ID, make_app, serve  # noqa: E402

OUT = ROOT / "docs" / "img"
CHROMIUM = os.environ.get("NEWSQUARRY_CHROMIUM", "/usr/bin/chromium")


def host_page(api: str, oembed_html: str) -> bytes:
    """A newsroom page on another origin with two widgets and an oEmbed card."""
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>The Daily Host</title>
<style>
  body {{ font-family: Georgia, serif; background: #fffbe6; margin: 24px auto; max-width: 720px; }}
  newsquarry-results {{ margin: 16px 0; }}
  newsquarry-results.branded {{ --nq-accent: #c2185b; --nq-font: Georgia, serif; --nq-radius: 0; }}
</style>
<script src="{api}/widget.js" defer></script></head><body>
<h1>The Daily Host</h1>
<p>Our coverage of Venezuela's deserters, with results from our newsquarry archive.</p>
<newsquarry-results class="branded" api="{api}" q="torture" per-page="2"
  title="Torture, in their words"><a href="{api}/?q=torture">Search “torture”</a></newsquarry-results>
<newsquarry-results api="{api}" mode="quotes" speaker="Harry Solano" per-page="2"
  title="What Harry Solano said"></newsquarry-results>
<h2>A passage, embedded with oEmbed</h2>
{oembed_html}
</body></html>""".encode()


def main() -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with serve(make_app()) as api, sync_playwright() as p:
        permalink = f"{api}/passages/{SEED_ID}/3"
        oembed = requests.get(
            f"{api}/oembed", params={"url": permalink, "maxwidth": 560}, timeout=10
        ).json()
        body = host_page(api, oembed["html"])

        def host(environ, start_response):
            start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
            return [body]

        with serve(host) as host_url:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=["--headless", "--no-sandbox"]
            )
            desk = browser.new_page(viewport={"width": 1200, "height": 860})
            desk.goto(f"{api}/?q=Guaid%C3%B3+OR+torture")
            desk.wait_for_function("() => document.body.dataset.loaded")
            desk.screenshot(path=str(OUT / "search-desktop.png"))
            desk.goto(permalink)
            desk.screenshot(path=str(OUT / "permalink.png"), full_page=True)
            desk.set_viewport_size({"width": 1200, "height": 1400})
            desk.goto(host_url)
            desk.wait_for_function(
                "() => [...document.querySelectorAll('newsquarry-results')]"
                ".every((w) => w.shadowRoot.querySelector('li'))"
            )
            desk.frame_locator("iframe").locator("figcaption").wait_for()
            desk.wait_for_timeout(300)
            height = desk.evaluate("Math.ceil(document.body.getBoundingClientRect().bottom) + 24")
            desk.screenshot(
                path=str(OUT / "widget-host.png"),
                clip={"x": 0, "y": 0, "width": 1200, "height": height},
            )
            card = desk.locator("iframe").bounding_box()
            desk.screenshot(
                path=str(OUT / "oembed-card.png"),
                clip={
                    "x": card["x"] - 12,
                    "y": card["y"] - 12,
                    "width": card["width"] + 24,
                    "height": card["height"] + 24,
                },
            )

            phone = browser.new_page(
                viewport={"width": 390, "height": 844},
                is_mobile=True,
                has_touch=True,
                device_scale_factor=1,
            )
            phone.goto(f"{api}/?q=torture")
            phone.wait_for_function("() => document.body.dataset.loaded")
            phone.screenshot(path=str(OUT / "search-phone.png"))
            browser.close()
    for png in sorted(OUT.glob("*.png")):
        print(f"{png.relative_to(ROOT)}  {png.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()

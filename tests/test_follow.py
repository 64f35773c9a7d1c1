"""Following feeds and sitemaps (``ingest.follow``), end to end against a real HTTP server
on loopback (``follow_site.Site``): 3 feeds, 1 sitemap, 50 pages, robots.txt, redirects,
304s, errors, 429 with Retry-After and broken XML. Rounds are driven one at a time
(``Follower.poll``, ``newsquarry follow --once``) and time by an injected clock: nothing
waits for time to pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PassThrough
from follow_site import Site, article_page, atom, rss, sitemap

from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.follow import fetch, urls
from newsquarry.search.ingest.follow.follower import Follower, FollowError
from newsquarry.search.ingest.follow.state import FollowBusy, State, follow_lock

N = 50
FEEDS = ("/feeds/world.xml", "/feeds/atom.xml", "/feeds/latest.xml")
SITEMAP = "/sitemap.xml"


class Clock:
    """Time as the test says: ``sleep`` moves it on, and so does ``advance``."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Newsroom:
    """The site's content: 50 stories in three feeds and a sitemap, overlapping."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.version = {n: 1 for n in range(N)}
        self.lastmod = {n: "2024-01-01T10:00:00Z" for n in range(N)}
        self.world = list(range(0, 20))
        self.atom = list(range(15, 35))
        self.latest = list(range(30, 45))
        self.publish()

    def story(self, n: int) -> str:
        return self.site.url(f"/news/story-{n}.html")

    def publish(self) -> None:
        site = self.site
        site.put("/robots.txt", b"User-agent: *\nDisallow: /private/\n", "text/plain")
        for n in self.version:
            site.put(f"/news/story-{n}.html", article_page(n, self.story(n), self.version[n]))
        site.put("/private/secret.html", article_page(999, site.url("/private/secret.html")))
        world = [
            {
                "title": f"Story number {n}",
                "link": self.story(n),
                "guid": f"story-{n}",
                "date": "Mon, 01 Jan 2024 10:00:00 GMT"
                if self.version[n] == 1
                else f"Tue, 02 Jan 2024 1{self.version[n]}:00:00 GMT",
            }
            for n in self.world
        ] + [{"title": "Secret", "link": site.url("/private/secret.html"), "guid": "secret"}]
        site.put(FEEDS[0], rss("World", world), "application/rss+xml")
        # other GUIDs than the world feed's, and links with tracking parameters
        entries = [
            {
                "title": f"Story number {n}",
                "guid": f"urn:loopback:{n}",
                "link": self.story(n) + f"?utm_source=atom&utm_medium=feed&utm_campaign=c{n}",
                "updated": self.lastmod[n],
            }
            for n in self.atom
        ]
        site.put(FEEDS[1], atom("Atom", entries), "application/atom+xml")
        latest = []
        for n in self.latest:  # no GUIDs; old addresses that redirect; fbclid
            if n >= 40:
                link = site.url(f"/old/story-{n}")
                site.redirect(f"/old/story-{n}", self.story(n))
            else:
                link = self.story(n) + "?fbclid=IwAR0abc"
            latest.append({"title": f"Story number {n}", "link": link})
        site.put(FEEDS[2], rss("Latest", latest), "application/rss+xml")
        site.put(SITEMAP, sitemap([(self.story(n) + ("?gclid=x1" if n % 7 == 0 else ""),
                                    self.lastmod[n]) for n in self.version]),
                 "application/xml")  # fmt: skip

    def sources(self) -> list[str]:
        return [self.site.url(p) for p in (*FEEDS, SITEMAP)]


@pytest.fixture
def site():
    s = Site()
    yield s
    s.close()


def ids_by_story(folder: Path, newsroom: Newsroom) -> dict[int, str]:
    state = State(folder)
    try:
        return {n: state.lookup([f"url:{newsroom.story(n)}"]) for n in newsroom.version}
    finally:
        state.close()


def page_requests(site: Site) -> list[str]:
    return [r[0] for r in site.requests() if r[0].startswith(("/news/", "/old/", "/private/"))]


def test_canonical_urls_strip_tracking_and_normalise():
    assert (urls.canonical_url("HTTP://Example.COM:80/a?utm_source=x&b=2&fbclid=y&a=1#frag")
            == "http://example.com/a?a=1&b=2")  # fmt: skip
    assert urls.canonical_url("https://example.com") == "https://example.com/"
    assert urls.canonical_url("/x?gclid=1", "https://example.com/feed") == "https://example.com/x"
    assert urls.canonical_url("https://e.com/a/") != urls.canonical_url("https://e.com/a")
    for bad in ("ftp://example.com/a", "javascript:alert(1)", "", "http://"):
        with pytest.raises(urls.BadURL):
            urls.canonical_url(bad)


def test_retry_after_in_seconds_or_as_a_date():
    assert fetch.retry_after_seconds("120", 0) == 120
    assert fetch.retry_after_seconds("Thu, 01 Jan 1970 00:02:00 GMT", 60) == 60
    assert fetch.retry_after_seconds("soon", 0) == fetch.DEFAULT_RETRY_AFTER
    assert fetch.retry_after_seconds("99999999", 0) == fetch.MAX_RETRY_AFTER


def test_the_rate_limit_spaces_requests_to_one_host(site):
    site.put("/robots.txt", b"User-agent: *\nCrawl-delay: 3\n", "text/plain")
    site.put("/a", b"a")
    clock = Clock()
    f = fetch.Fetcher(rate=2.0, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        f.get(site.url("/a"))
    # robots.txt, then three pages: each waits for the Crawl-delay (larger than 1/rate)
    assert clock.slept == [3.0, 3.0, 3.0]
    f2 = fetch.Fetcher(rate=4.0, clock=clock, sleep=clock.sleep)
    site.put("/robots.txt", b"", "text/plain")
    clock.slept.clear()
    f2.get(site.url("/a"))
    f2.get(site.url("/a"))
    assert clock.slept == [0.25, 0.25]


def test_follow_end_to_end(tmp_path, site):
    newsroom = Newsroom(site)
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=600, rate=0,
                        clock=clock, sleep=clock.sleep, commit_every=20)  # fmt: skip
    follower.add(newsroom.sources())

    # 1. every article once: shared entries, tracking parameters and redirects notwithstanding
    r1 = follower.poll()
    assert len(r1.added) == N and r1.errors == []
    assert store.stats()["articles"] == N
    ids = ids_by_story(tmp_path / "ix", newsroom)
    assert len(set(ids.values())) == N and None not in ids.values()
    for n in (0, 17, 33, 42, 49):
        art = store.get_article(ids[n])
        assert art["url"] == newsroom.story(n)
        assert f"Story {n} paragraph 1 version 1" in art["text"]
        assert art["fields"]["first_seen"] == art["fields"]["last_changed"]
    pages = page_requests(site)
    assert not any(p.startswith("/private/") for p in pages)  # robots.txt disallows it
    assert r1.robots == 1
    fetched = [p.split("?")[0] for p in pages if p.startswith("/news/")]
    assert len(fetched) == len(set(fetched)) == N  # each page fetched once
    assert site.count(301) == 5  # the old addresses were followed to the stories

    # 2. nothing changed: four conditional requests, four 304s, no page fetched
    before = len(site.requests())
    clock.advance(601)
    r2 = follower.poll()
    assert r2.not_modified == 4 and r2.fetched == 0 and r2.added == []
    new = site.requests()[before:]  # robots.txt is kept a day: not asked again
    assert [r[1] for r in new] == [304] * 4 and all(r[2] for r in new)
    assert store.stats()["articles"] == N

    # 3. an edited story (its feed and sitemap dates move) and a new one, in one poll
    first_seen = store.get_article(ids[5])["fields"]["first_seen"]
    clock.advance(601)
    newsroom.version[5] = 2
    newsroom.lastmod[5] = "2024-01-02T12:00:00Z"
    newsroom.version[50] = 1
    newsroom.lastmod[50] = "2024-01-02T12:00:00Z"
    newsroom.latest.append(50)
    newsroom.publish()
    r3 = follower.poll()
    new_id = ids_by_story(tmp_path / "ix", newsroom)[50]
    assert r3.replaced == [ids[5]] and r3.added == [new_id]
    assert store.stats()["articles"] == N + 1
    edited = store.get_article(ids[5])
    assert "version 2" in edited["text"] and "version 1" not in edited["text"]
    assert edited["fields"]["first_seen"] == first_seen
    assert edited["fields"]["last_changed"] > first_seen

    # 4. errors: a 500, a 429 with Retry-After, broken XML; the sitemap still works
    clock.advance(601)
    newsroom.version[51] = 1
    newsroom.lastmod[51] = "2024-01-03T12:00:00Z"
    newsroom.world.append(51)
    newsroom.publish()
    site.fail(FEEDS[0], 500)
    site.put(FEEDS[2], b'<?xml version="1.0"?><rss version="2.0"><channel><title>L</title>'
                       b"<item><title>broken</titl></item><item>", "application/rss+xml")  # fmt: skip
    r4 = follower.poll()
    by_source = {e["source"]: e["error"] for e in r4.errors}
    assert "HTTP 500" in by_source[site.url(FEEDS[0])]
    assert "malformed" in by_source[site.url(FEEDS[2])]
    assert r4.failed == []  # the recovered entry has no link: not fetched
    assert r4.added == [ids_by_story(tmp_path / "ix", newsroom)[51]]  # from the sitemap
    status = {s["url"]: s for s in follower.status()["sources"]}
    assert status[site.url(FEEDS[0])]["failures"] == 1
    assert "HTTP 500" in status[site.url(FEEDS[0])]["errors"][0]["error"]

    # the host asks to wait: nothing is requested before the time it gave
    site.clear(FEEDS[0])
    newsroom.publish()
    clock.advance(1300)
    site.fail(SITEMAP, 429, times=1, Retry_After="3600")
    r5 = follower.poll()
    assert r5.rate_limited == 1
    before = len(site.requests())
    clock.advance(1300)
    r6 = follower.poll()
    assert r6.polled == [] and len(site.requests()) == before
    clock.advance(3600)
    r7 = follower.poll()
    assert site.url(SITEMAP) in r7.polled and r7.errors == []
    assert store.stats()["articles"] == N + 2
    counts = {s["url"]: s["counts"] for s in follower.status()["sources"]}
    assert counts[site.url(SITEMAP)]["rate_limited"] == 1
    assert counts[site.url(FEEDS[1])]["not_modified"] >= 2
    follower.close()
    store.close()


def test_a_page_that_fails_is_fetched_again_and_the_listing_is_read_again(tmp_path, site):
    Newsroom(site)
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=0, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url(FEEDS[0])])
    site.fail("/news/story-3.html", 500, times=1)
    r1 = follower.poll()
    assert len(r1.added) == 19 and r1.failed
    r2 = follower.poll()  # no 304 hides the story that failed
    assert r2.not_modified == 0 and len(r2.added) == 1 and r2.fetched == 1
    r3 = follower.poll()
    assert r3.not_modified == 1
    assert store.stats()["articles"] == 20
    follower.close()
    store.close()


def test_a_home_page_names_its_feeds(tmp_path, site):
    Newsroom(site)
    site.put(
        "/",
        f"""<html><head><title>Loopback Times</title>
        <link rel="alternate" type="application/rss+xml" href="{FEEDS[0]}">
        <link rel="alternate" type="application/atom+xml" href="{FEEDS[1]}?utm_source=x">
        </head><body>Home</body></html>""".encode(),
    )
    site.put("/robots.txt", f"User-agent: *\nDisallow: /private/\nSitemap: {site.url(SITEMAP)}\n"
             .encode(), "text/plain")  # fmt: skip
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=60, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url("/")])
    r = follower.poll()
    assert len(r.added) == N
    found = {s["url"]: s for s in follower.status()["sources"]}
    assert found[site.url("/")]["kind"] == "page"
    assert {found[site.url(p)]["kind"] for p in (FEEDS[0], FEEDS[1], SITEMAP)} == {
        "feed", "sitemap"}  # fmt: skip
    assert all(found[site.url(p)]["parent"] == site.url("/") for p in (FEEDS[0], SITEMAP))
    follower.close()
    store.close()


def test_bad_sources_are_errors_of_their_own(tmp_path, site):
    site.put("/robots.txt", b"", "text/plain")
    site.put("/html-error.xml", b"<html><body>Oops</body></html>", "text/html")
    site.put("/garbage.xml", b"\x00\x01 not xml at all", "application/xml")
    site.put("/bad-sitemap.xml", b'<?xml version="1.0"?><urlset><url><loc>x', "application/xml")
    site.put("/bomb.xml", b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
             b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><urlset><url><loc>&b;</loc></url>'
             b"</urlset>", "application/xml")  # fmt: skip
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=0, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    paths = ["/html-error.xml", "/garbage.xml", "/bad-sitemap.xml", "/bomb.xml", "/missing.xml"]
    follower.add([site.url(p) for p in paths])
    r = follower.poll()
    assert r.added == []
    errors = {e["source"].rsplit("/", 1)[1]: e["error"] for e in r.errors}
    assert set(errors) == {"html-error.xml", "garbage.xml", "bad-sitemap.xml", "missing.xml"}
    assert "HTTP 404" in errors["missing.xml"]
    assert "malformed sitemap XML" in errors["bad-sitemap.xml"]
    assert "names no feed" in errors["html-error.xml"]
    # entities are never expanded: the "bomb" is a sitemap of no usable address
    bomb = next(s for s in follower.status()["sources"] if s["url"].endswith("/bomb.xml"))
    assert bomb["kind"] == "sitemap" and bomb["counts"]["entries"] == 0
    with pytest.raises(FollowError):
        follower.add(["ftp://example.com/feed"])
    follower.close()
    store.close()


def test_one_follower_per_index(tmp_path):
    (tmp_path / "ix").mkdir()
    with follow_lock(tmp_path / "ix"):
        with pytest.raises(FollowBusy, match="another follower"):
            with follow_lock(tmp_path / "ix"):
                pass
    with follow_lock(tmp_path / "ix"):  # released when its holder is done
        pass


# --- the command, as a real process ---------------------------------------------------
def newsquarry(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "NEWSQUARRY_DAEMON": "0"}
    return subprocess.Popen([sys.executable, "-m", "newsquarry.search.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)  # fmt: skip


def test_follow_command_resumes_after_sigkill_without_duplicates(tmp_path, site):
    newsroom = Newsroom(site)
    index = str(tmp_path / "ix")
    args = ["follow", "--index", index, "--once", "--every", "0", "--rate", "0",
            "--commit-every", "10"]  # fmt: skip
    # the round stops at story 30 (it waits there) and is killed: some batches committed
    arrived = site.hold("/news/story-30.html")
    proc = newsquarry(*args, *newsroom.sources())
    assert arrived.wait(300), "the follower never reached story 30"
    state = State(index)
    counts = state.article_counts()
    pending = state.pending()
    state.close()
    assert counts.get("indexed", 0) >= 10 and len(pending) > 0
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    site.release("/news/story-30.html")
    committed = WhooshStore(index).stats()["articles"]
    assert 10 <= committed < N

    done = newsquarry(*args)  # the sources are remembered
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err
    assert "added" in out
    store = WhooshStore(index)
    assert store.stats()["articles"] == N
    ids = ids_by_story(Path(index), newsroom)
    assert len(set(ids.values())) == N
    for n in (0, 12, 30, 49):
        assert store.get_article(ids[n])["url"] == newsroom.story(n)
    for k in pending:  # what was pending at the kill: same id, same first-seen time
        assert store.get_article(k.id)["fields"]["first_seen"] == k.first_seen
    store.close()

    # --status: each source's last poll, errors and counts
    status = newsquarry("follow", "--index", index, "--status", "--json")
    out, err = status.communicate(timeout=120)
    assert status.returncode == 0, err
    data = json.loads(out)
    assert len(data["sources"]) == 4 and data["articles"] == {"indexed": N}
    assert all(s["last_poll"] for s in data["sources"])
    text = newsquarry("follow", "--index", index, "--status")
    out, _ = text.communicate(timeout=120)
    assert site.url(SITEMAP) in out and "not modified" in out

    # a second poll: conditional requests only, all answered 304
    before = len(site.requests())
    again = newsquarry(*args)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert "4 sources polled (4 not modified), 0 pages fetched" in out
    assert [r[1] for r in site.requests()[before:]] == [304] * 4


def test_follow_command_errors_are_one_line(tmp_path):
    index = str(tmp_path / "ix")
    bad = newsquarry("follow", "--index", index, "--once", "ftp://example.com/feed")
    _, err = bad.communicate(timeout=120)
    assert bad.returncode == 2 and err.strip().count("\n") == 0 and "http(s)" in err
    none = newsquarry("follow", "--index", index, "--once")
    _, err = none.communicate(timeout=120)
    assert none.returncode == 2 and "nothing to follow" in err
    every = newsquarry("follow", "--index", index, "--every", "soon", "http://127.0.0.1:9/")
    _, err = every.communicate(timeout=120)
    assert every.returncode == 2 and "--every" in err


def test_the_server_follows_its_sources_in_the_background(tmp_path, site):
    import time

    import requests
    from api_support import free_port

    Newsroom(site)
    index = tmp_path / "ix"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env.update(HOME=str(tmp_path), NEWSQUARRY_INDEX=str(index), NEWSQUARRY_DAEMON="0",
               NEWSQUARRY_FOLLOW=f"{site.url(FEEDS[0])}, {site.url(FEEDS[1])}",
               NEWSQUARRY_FOLLOW_INTERVAL="3600", NEWSQUARRY_FOLLOW_RATE="0")  # fmt: skip
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "newsquarry.search.cli", "serve", "--port", str(port),
             "--workers", "1", "--threads", "2"],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        # the follower's first round: stories 0-34 of the two feeds (the secret page is
        # disallowed), seen by the server's worker as they are committed
        deadline = time.monotonic() + 300
        articles = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                articles = requests.get(f"http://127.0.0.1:{port}/v1/stats", timeout=10).json()[
                    "articles"
                ]
            except requests.ConnectionError:
                articles = None
            if articles == 35:
                break
            time.sleep(0.2)
        assert articles == 35, log.read_text()
        assert "Following: " in log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=120)
    # the follower stopped with the server: nothing holds the index's follow lock
    with follow_lock(index):
        pass
    status = State(index)
    assert {s.url for s in status.sources()} == {site.url(FEEDS[0]), site.url(FEEDS[1])}
    status.close()


def test_a_canonical_link_shared_by_every_page_merges_nothing(tmp_path, site):
    """A site whose pages all name its home page as canonical (a common mistake), or whose
    links all redirect to one page: each article stays itself."""
    site.put("/robots.txt", b"", "text/plain")
    items = []
    for n in range(6):
        site.put(f"/a/{n}", article_page(n, site.url("/")))
        items.append({"title": f"Story number {n}", "link": site.url(f"/a/{n}")})
    site.put("/feed.xml", rss("Shared canonical", items), "application/rss+xml")
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=0, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url("/feed.xml")])
    r = follower.poll()
    assert len(r.added) == 6 and r.replaced == []
    assert store.stats()["articles"] == 6
    # the same text under another address, in another feed, sharing no key: one article,
    # which keeps its address
    site.put("/copy/3", article_page(3, site.url("/copy/3")))
    copies = [{"title": "Story number 3, again", "link": site.url("/copy/3")}]
    site.put("/feed2.xml", rss("Copies", copies), "application/rss+xml")
    follower.add([site.url("/feed2.xml")])
    r2 = follower.poll()
    assert r2.not_modified == 1 and r2.fetched == 1
    assert r2.added == [] and r2.replaced == [] and store.stats()["articles"] == 6
    state = State(tmp_path / "ix")
    original = state.lookup([f"url:{site.url('/a/3')}"])
    assert state.lookup([f"url:{site.url('/copy/3')}"]) == original
    assert store.get_article(original)["url"] == site.url("/a/3")
    state.close()
    follower.close()
    store.close()


def test_a_feed_repeating_one_guid_keeps_its_articles_apart(tmp_path, site):
    site.put("/robots.txt", b"", "text/plain")
    items = []
    for n in range(5):
        site.put(f"/s/{n}", article_page(n, site.url(f"/s/{n}")))
        items.append({"title": f"Story number {n}", "link": site.url(f"/s/{n}"),
                      "guid": site.url("/feed.xml")})  # fmt: skip
    site.put("/feed.xml", rss("One GUID", items), "application/rss+xml")
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=0, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url("/feed.xml")])
    r = follower.poll()
    assert len(r.added) == 5 and r.replaced == [] and store.stats()["articles"] == 5
    follower.close()
    store.close()


SOUP = [b"<?xml version='1.0'?>", b"<rss version='2.0'>", b"<channel>", b"<item>", b"</item>",
        b"<link>", b"</link>", b"<guid>", b"http://e.com/a", b"<urlset>", b"<url><loc>",
        b"</loc></url>", b"<sitemapindex>", b"<feed xmlns='http://www.w3.org/2005/Atom'>",
        b"<entry>", b"<html>", b"<link rel='alternate' type='application/rss+xml' href='/f'>",
        b"<!DOCTYPE x [<!ENTITY a 'b'>]>", b"&a;", b"\x00", b"\xff\xfe", b"]]>", b"<![CDATA["]  # fmt: skip


def test_any_bytes_are_a_listing_or_a_source_error():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from newsquarry.search.ingest.follow.sources import Parsed, SourceError, read_source

    bodies = st.one_of(st.binary(max_size=2000),
                       st.lists(st.sampled_from(SOUP), max_size=40).map(b"".join))  # fmt: skip

    @settings(max_examples=300, deadline=None)
    @given(bodies)
    def check(body: bytes) -> None:
        try:
            parsed = read_source(body, "http://example.com/feed")
        except SourceError:
            return
        assert isinstance(parsed, Parsed)
        for e in parsed.entries:
            assert e.link.startswith(("http://", "https://"))

    check()


def test_a_running_follower_holds_the_index_and_stops_cleanly_on_sigterm(tmp_path, site):
    Newsroom(site)
    index = str(tmp_path / "ix")
    proc = newsquarry("follow", "--index", index, "--every", "1h", "--rate", "0",
                      site.url(FEEDS[0]))  # fmt: skip
    try:
        first = proc.stdout.readline()  # the first round's summary: the round is done
        assert "20 added" in first, first + proc.stderr.read()
        other = newsquarry("follow", "--index", index, "--once")
        _, err = other.communicate(timeout=120)
        assert other.returncode == 4 and "another follower" in err
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 143 and err.strip().splitlines()[-1].startswith("Terminated")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with follow_lock(index):  # free once it stopped
        pass
    assert WhooshStore(index).stats()["articles"] == 20


def test_a_503_with_a_retry_after_date_leaves_the_host_alone_until_then(site):
    import email.utils

    clock = Clock()
    site.put("/robots.txt", b"", "text/plain")
    site.put("/p", b"page")
    when = email.utils.formatdate(clock.now + 300, usegmt=True)
    site.fail("/p", 503, times=1, Retry_After=when)
    f = fetch.Fetcher(rate=0, clock=clock, sleep=clock.sleep)
    with pytest.raises(fetch.SlowDown) as caught:
        f.get(site.url("/p"))
    assert 299 <= caught.value.retry_after <= 300
    asked = len(site.requests())
    with pytest.raises(fetch.SlowDown):  # not asked again before the time it gave
        f.get(site.url("/p"))
    assert len(site.requests()) == asked
    clock.advance(301)
    assert f.get(site.url("/p")).body == b"page"


def test_a_sitemap_index_names_sitemaps_gzipped_or_not(tmp_path, site):
    import gzip

    newsroom = Newsroom(site)
    first = sitemap([(newsroom.story(n), None) for n in range(0, 25)])
    site.put("/sm1.xml.gz", gzip.compress(first), "application/gzip")
    site.put("/sm2.xml", sitemap([(newsroom.story(n), None) for n in range(25, N)]),
             "application/xml")  # fmt: skip
    site.put("/sitemap_index.xml", (
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.url('/sm1.xml.gz')}</loc></sitemap>"
        f"<sitemap><loc>{site.url('/sm2.xml')}</loc></sitemap></sitemapindex>").encode(),
        "application/xml")  # fmt: skip
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=60, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url("/sitemap_index.xml")])
    r = follower.poll()
    assert len(r.added) == N and r.errors == []
    kinds = {s["url"].rsplit("/", 1)[1]: s["kind"] for s in follower.status()["sources"]}
    assert kinds == {"sitemap_index.xml": "sitemapindex", "sm1.xml.gz": "sitemap",
                     "sm2.xml": "sitemap"}  # fmt: skip
    clock.advance(61)
    assert follower.poll().not_modified == 3
    follower.close()
    store.close()


def test_an_article_that_shrinks_to_a_stub_is_kept_as_indexed(tmp_path, site):
    newsroom = Newsroom(site)
    clock = Clock()
    store = WhooshStore(tmp_path / "ix")
    follower = Follower(store, enricher=PassThrough(), interval=0, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url(FEEDS[0])])
    assert len(follower.poll().added) == 20
    site.put("/news/story-4.html", b"<html><head><title>Story number 4</title></head><body>"
             b"<article><p>This article is no longer available in your region.</p></article>"
             b"</body></html>")  # fmt: skip
    newsroom.version[4] = 2  # the feed announces a new version
    newsroom.world = list(range(0, 20))
    site.put(FEEDS[0], rss("World", [
        {"title": f"Story number {n}", "link": newsroom.story(n), "guid": f"story-{n}",
         "date": "Tue, 02 Jan 2024 12:00:00 GMT" if n == 4 else "Mon, 01 Jan 2024 10:00:00 GMT"}
        for n in newsroom.world]), "application/rss+xml")  # fmt: skip
    r = follower.poll()
    assert r.replaced == [] and r.failed and "kept the version indexed" in r.failed[0]["reason"]
    aid = ids_by_story(tmp_path / "ix", newsroom)[4]
    assert "Story 4 paragraph 1 version 1" in store.get_article(aid)["text"]
    follower.close()
    store.close()


def test_a_round_that_finds_the_index_busy_loses_nothing(tmp_path, site):
    from newsquarry.search.core.errors import IndexBusy

    newsroom = Newsroom(site)
    clock = Clock()
    WhooshStore(tmp_path / "ix").close()
    other = WhooshStore(tmp_path / "ix")
    store = WhooshStore(tmp_path / "ix", lock_timeout=0.05)
    follower = Follower(store, enricher=PassThrough(), interval=0, rate=0,
                        clock=clock, sleep=clock.sleep)  # fmt: skip
    follower.add([site.url(FEEDS[0])])
    with other.write_lock():  # another writer holds the index throughout the round
        with pytest.raises(IndexBusy):
            follower.poll()
    assert store.stats()["articles"] == 0
    r = follower.poll()
    assert len(r.added) == 20 and store.stats()["articles"] == 20
    assert len(set(ids_by_story(tmp_path / "ix", newsroom)[n] for n in range(20))) == 20
    follower.close()
    store.close()
    other.close()


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\ncut short",  # the body ends early
    b"NOT HTTP AT ALL\r\n\r\n",  # no status line
    b"",  # the connection closes at once
])  # fmt: skip
def test_a_broken_response_is_a_fetch_error(answer):
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(2):  # robots.txt (an error there disallows the host), the page
            try:
                conn, _addr = server.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(answer)
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    clock = Clock()
    f = fetch.Fetcher(rate=0, clock=clock, sleep=clock.sleep)
    with pytest.raises(fetch.FetchError):
        f.get(f"http://127.0.0.1:{port}/page")
    f.robots_cache = {f"127.0.0.1:{port}": ("", clock.now)}  # now the page itself
    f.hosts.clear()
    with pytest.raises(fetch.FetchError) as caught:
        f.get(f"http://127.0.0.1:{port}/page")
    assert not isinstance(caught.value, fetch.Disallowed)
    t.join(60)
    server.close()

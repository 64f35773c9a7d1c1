"""The follower: poll rounds over the followed sources, articles through the indexer.

A round (``Follower.poll``), under the index's follow lock:

1. articles left *pending* by a follower that was killed (sent to the index, their
   commit not known) are fetched again first: the same id, the same first-seen time;
2. every source that is due (``next_poll`` passed; all of them with ``force``) is
   fetched with its validators (a 304 is counted and costs nothing more); a feed or a
   sitemap lists entries, a sitemap index or a home page names further sources, which
   are followed from then on (polled in the same round the first time);
3. each entry is identified by its GUID (scoped by the feed's host), then its canonical
   URL (tracking parameters removed), then, once its page is fetched, the page's final
   address after redirects and its ``rel=canonical``, then a fingerprint of its text.
   A known entry whose listing is unchanged (same dates, title, summary) is not fetched;
   a changed or new one is fetched (conditionally, with the page's validators), its
   text extracted (trafilatura, ``readers.parse_html``) and sent through
   ``indexer.index_articles``: a new article is added, a changed one replaces the old
   one under the same id (``first_seen`` kept, ``last_changed`` now: both are fields of
   the article), an identical one is left alone.

State changes are SQLite transactions (``follow.state``): an article is recorded as
pending before it goes to the indexer and as indexed after its commit, so a follower
killed at any point resumes without losing or duplicating an article. A source's
validators are kept only when every entry of its listing was dealt with: an entry that
could not be fetched (an error, a host asking to wait) makes the next poll read the
whole listing again instead of a 304 that would hide it.

Schedule: a source is due ``interval`` seconds after its last poll; a failed poll waits
``interval * 2**failures`` (at most ``MAX_BACKOFF``); a host that answered 429 or 503
is left alone for its ``Retry-After``. Clock and sleep are injected (tests drive them).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from newsquarry.search.core.models import Article
from newsquarry.search.ingest.follow.fetch import (
    USER_AGENT,
    Disallowed,
    Fetcher,
    FetchError,
    SlowDown,
)
from newsquarry.search.ingest.follow.sources import Entry, SourceError, page_canonical, read_source
from newsquarry.search.ingest.follow.state import Known, Source, State, follow_lock
from newsquarry.search.ingest.follow.urls import (
    BadURL,
    article_id,
    canonical_url,
    host_of,
)
from newsquarry.search.ingest.indexer import default_enricher, index_articles
from newsquarry.search.ingest.readers import normalise_date, parse_html

DEFAULT_INTERVAL = 900.0  # seconds between two polls of one source
MAX_BACKOFF = 24 * 3600.0
MAX_TRIES = 5  # fetches of one page that failed before it waits for a new listing
MAX_SOURCES = 500  # followed sources (given and discovered) of one index
MIN_FP_WORDS = 30  # words an article needs for its text fingerprint to identify it


class FollowError(ValueError):
    """A followed address that cannot be followed (not http(s), too many sources)."""


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).replace(microsecond=0).isoformat()


def fingerprint(text: str) -> str:
    """A key of the article's words (case, punctuation and spacing ignored): the same text
    at two addresses that name no common GUID or canonical URL is one article."""
    words = re.findall(r"\w+", text.casefold())
    return hashlib.sha256(" ".join(words).encode("utf-8")).hexdigest()[:32]


def _unexpected(exc: Exception, url: str | None = None) -> Exception:
    """An error no rule expected (a parser's own exception...), as a source's error that
    names it (its traceback logged at DEBUG level, for a bug report)."""
    logging.getLogger("newsquarry.follow").debug("unexpected error", exc_info=exc)
    where = f"{url}: " if url else ""
    return FetchError(f"{where}unexpected {type(exc).__name__}: {exc}"[:500])


def shared_guids(entries: list[Entry]) -> set[str]:
    """GUIDs that one listing gives to entries of different addresses: a feed that repeats
    one GUID (its own address, a constant) names no article by it, and trusting it would
    make each of those entries replace the one before."""
    links: dict[str, set[str]] = {}
    for e in entries:
        if e.guid:
            links.setdefault(e.guid, set()).add(e.link)
    return {guid for guid, urls in links.items() if len(urls) > 1}


@dataclass
class RoundReport:
    """What one poll round did (the sources' counts keep the running totals)."""

    polled: list[str] = field(default_factory=list)
    not_modified: int = 0
    fetched: int = 0
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)  # {"source", "error"}
    robots: int = 0
    rate_limited: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class _Sent:
    source: Source
    known: Known
    was_indexed: bool


class Follower:
    """Follows feeds, sitemaps and sites into one index (see the module docstring)."""

    def __init__(
        self,
        store: Any,
        *,
        enricher: Any = None,
        interval: float = DEFAULT_INTERVAL,
        rate: float = 1.0,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        user_agent: str = USER_AGENT,
        commit_every: int = 200,
        on_commit: Callable[[RoundReport], None] | None = None,
    ) -> None:
        self.store = store
        self.folder = store.path
        self.enricher = enricher
        self.interval = float(interval)
        self.rate = rate
        self.clock = clock
        self.sleep = sleep
        self.user_agent = user_agent
        self.commit_every = commit_every
        self.on_commit = on_commit  # told after each commit of a round (progress)
        self.state = State(self.folder)
        self._held = False

    def close(self) -> None:
        self.state.close()

    # -- the followed set ----------------------------------------------------
    def add(self, urls: Iterable[str], interval: float | None = None) -> list[str]:
        """Follow these addresses (kept in the state); their canonical forms. An address
        followed already keeps its state, with the interval given."""
        every = self.interval if interval is None else float(interval)
        added = []
        with self.state.transaction():
            known = {s.url: s for s in self.state.sources()}
            for url in urls:
                try:
                    canon = canonical_url(url)
                except BadURL as exc:
                    raise FollowError(str(exc)) from None
                s = known.get(canon)
                if s is None:
                    if len(known) >= MAX_SOURCES:
                        raise FollowError(f"at most {MAX_SOURCES} sources per index")
                    s = known[canon] = Source(canon, every, added=self.clock())
                s.interval, s.active, s.parent = every, True, None
                self.state.save_source(s)
                for child in known.values():  # what it named follows its schedule
                    if child.parent == canon:
                        child.interval, child.active = every, True
                        self.state.save_source(child)
                added.append(canon)
        return added

    def remove(self, urls: Iterable[str]) -> list[str]:
        """Stop following these addresses (and what was discovered from them); the
        articles stay in the index."""
        gone = []
        with self.state.transaction():
            sources = self.state.sources()
            for url in urls:
                try:
                    canon = canonical_url(url)
                except BadURL as exc:
                    raise FollowError(str(exc)) from None
                for s in sources:
                    if s.url == canon or s.parent == canon:
                        s.active = False
                        self.state.save_source(s)
                        gone.append(s.url)
        return gone

    def status(self) -> dict[str, Any]:
        """Each source's schedule, last poll, errors and counts; the articles by state."""
        return {
            "sources": [s.to_dict() for s in self.state.sources()],
            "articles": self.state.article_counts(),
        }

    def next_due(self) -> float | None:
        """When the next source is due (None: nothing is followed)."""
        due = [s.next_poll for s in self.state.sources() if s.active]
        return min(due) if due else None

    # -- a round -------------------------------------------------------------
    def poll(self, force: bool = False) -> RoundReport:
        """One round (module docstring); ``force`` polls every source now, whatever its
        schedule (hosts that asked to wait are still left alone). FollowBusy when another
        follower holds the index."""
        if self._held:
            return self._poll(force)
        with follow_lock(self.folder):
            return self._poll(force)

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """Hold the index's follow lock for as long as inside (a follower that runs until
        stopped: no other follows the index meanwhile); FollowBusy when another holds it."""
        with follow_lock(self.folder):
            self._held = True
            try:
                yield
            finally:
                self._held = False

    def _poll(self, force: bool) -> RoundReport:
        report = RoundReport()
        fetcher = Fetcher(self.rate, self.clock, self.sleep, self.user_agent,
                          blocked=self.state.blocked_hosts(),
                          robots_cache=self.state.robots())  # fmt: skip
        self._fetcher = fetcher
        self._sent: dict[str, _Sent] = {}
        self._seen: set[str] = set()
        self._shared_guids: set[str] = set()
        self._done = {"added": 0, "replaced": 0, "unchanged": 0, "failed": 0}
        items = self._articles(fetcher, report, force)
        enricher = self.enricher
        if enricher is None:
            enricher = self.enricher = default_enricher()
        try:
            result = index_articles(self.store, items, enricher=enricher,
                                    commit_every=self.commit_every,
                                    on_progress=lambda _p, r: self._committed(r, report))  # fmt: skip
        finally:
            with self.state.transaction():
                self.state.save_robots(fetcher.fresh_robots)
                for host, h in fetcher.hosts.items():
                    if h.blocked_until > self.clock():
                        self.state.block_host(host, h.blocked_until)
        self._committed(result, report)
        return report

    def _committed(self, r: Any, report: RoundReport) -> None:
        """The indexer's report after a commit: the articles it holds are indexed now."""
        changes: list[tuple[str, str]] = []
        for kind in ("added", "replaced", "unchanged"):
            ids = getattr(r, kind)
            changes += [(kind, i) for i in ids[self._done[kind] :]]
            self._done[kind] = len(ids)
        failed = r.failed[self._done["failed"] :]
        self._done["failed"] = len(r.failed)
        if not changes and not failed:
            return
        self._record(changes, failed, report)
        if self.on_commit is not None:
            self.on_commit(report)

    def _record(self, changes: list[tuple[str, str]], failed: list[dict[str, str]],
                report: RoundReport) -> None:  # fmt: skip
        with self.state.transaction():
            for kind, aid in changes:
                sent = self._sent.pop(aid, None)
                if sent is None:
                    continue
                sent.known.status, sent.known.tries, sent.known.last_error = "indexed", 0, None
                self.state.save_article(sent.known)
                if kind == "unchanged":
                    report.unchanged += 1
                else:
                    getattr(report, kind).append(aid)
                # an article the index held already but the state had pending (a follower
                # killed after the commit) counts as what it was for this source
                sent.source.count(kind)
                self.state.save_source(sent.source)
            for f in failed:
                aid = f.get("id") or ""
                sent = self._sent.pop(aid, None)
                report.failed.append({"id": aid, "reason": f.get("reason", "")})
                if sent is None:
                    continue
                k = sent.known
                k.status, k.tries, k.last_error = "failed", k.tries + 1, f.get("reason")
                self.state.save_article(k)
                sent.source.count("failed")
                sent.source.error(self.clock(), f"{k.url}: {f.get('reason')}")
                self.state.save_source(sent.source)

    def _articles(self, fetcher: Fetcher, report: RoundReport, force: bool) -> Iterator[Article]:
        now = self.clock()
        by_url = {s.url: s for s in self.state.sources()}
        # 1. what a killed follower left pending
        for k in self.state.pending():
            src = by_url.get(k.source or "") or Source(k.source or k.url, self.interval)
            art = self._fetch(fetcher, report, src, Entry(k.url), k, [], resume=True)
            if art is not None:
                yield art
        # 2. the sources that are due, parents before what they name
        queue = [s for s in by_url.values() if s.active and (force or s.next_poll <= now)]
        queue.sort(key=lambda s: (s.parent is not None, s.added or 0, s.url))
        polled: set[str] = set()
        while queue:
            src = queue.pop(0)
            if src.url in polled:
                continue
            if fetcher.blocked_for(src.url) > 0:
                # its host asked to wait (429/503 Retry-After): left alone, polled after
                src.next_poll = max(src.next_poll, self.clock() + fetcher.blocked_for(src.url))
                with self.state.transaction():
                    self.state.save_source(src)
                continue
            polled.add(src.url)
            report.polled.append(src.url)
            try:
                listing = self._poll_source(fetcher, report, src, by_url, queue)
            except Exception as exc:  # noqa: BLE001 - one source's surprise stops no other
                self._source_failed(report, src, _unexpected(exc), fetcher)
                listing = None
            complete = listing is not None
            self._shared_guids = shared_guids(listing or [])
            for entry in listing or ():
                try:
                    art, handled = self._entry(fetcher, report, src, entry)
                except SlowDown:
                    complete = False
                    continue
                except Exception as exc:  # noqa: BLE001 - nor one page's
                    self._source_failed(report, src, _unexpected(exc, entry.link), fetcher)
                    art, handled = None, False
                complete = complete and handled
                if art is not None:
                    yield art
            self._schedule(src, ok=listing is not None, complete=complete)

    def _poll_source(self, fetcher: Fetcher, report: RoundReport, src: Source,
                     by_url: dict[str, Source], queue: list[Source]) -> list[Entry] | None:  # fmt: skip
        """Fetch and read one source: its entries ([] when not modified), or None when the
        poll failed (recorded on the source). Sources it names join the queue."""
        now = self.clock()
        src.last_poll = now
        src.count("polls")
        self._pending_validators = (src.etag, src.last_modified)
        try:
            resp = fetcher.get(src.url, src.etag, src.last_modified)
        except FetchError as exc:
            self._source_failed(report, src, exc, fetcher)
            return None
        if resp.not_modified:
            src.count("not_modified")
            report.not_modified += 1
            return []
        try:
            parsed = read_source(resp.body, resp.final_url)
        except SourceError as exc:
            self._source_failed(report, src, exc, fetcher)
            return None
        src.kind, src.title = parsed.kind, parsed.title or src.title
        self._pending_validators = (resp.etag, resp.last_modified)
        if parsed.problem:
            src.error(now, parsed.problem)
            report.errors.append({"source": src.url, "error": parsed.problem})
            self._pending_validators = (None, None)  # read it whole again next time
        children = list(parsed.children)
        if parsed.kind == "page":  # a site's home page: its robots.txt names sitemaps too
            for sm in fetcher.robots_sitemaps(src.url):
                try:
                    children.append(canonical_url(sm))
                except BadURL:
                    continue
        if parsed.kind == "page" and not children:
            exc = SourceError("an HTML page that names no feed (link rel=alternate) or sitemap")
            self._source_failed(report, src, exc, fetcher)
            return None
        with self.state.transaction():
            for url in children:
                child = by_url.get(url)
                if child is None:
                    if len(by_url) >= MAX_SOURCES:
                        break
                    child = by_url[url] = Source(url, src.interval, parent=src.url, added=now)
                    self.state.save_source(child)
                if child.active and child.next_poll <= now:
                    queue.append(child)
        src.count("entries", len(parsed.entries))
        return parsed.entries

    def _source_failed(self, report: RoundReport, src: Source, exc: Exception,
                       fetcher: Fetcher) -> None:  # fmt: skip
        message = str(exc) or type(exc).__name__
        if isinstance(exc, Disallowed):
            src.count("robots")
            report.robots += 1
        if isinstance(exc, SlowDown):
            src.count("rate_limited")
            report.rate_limited += 1
        src.error(self.clock(), message)
        report.errors.append({"source": src.url, "error": message})
        if isinstance(exc, SourceError):  # a broken body: never a 304 on it next time
            self._pending_validators = (None, None)

    def _schedule(self, src: Source, ok: bool, complete: bool) -> None:
        now = self.clock()
        if ok:
            src.failures = 0
            src.last_ok = now
            src.next_poll = now + src.interval
        else:
            src.failures += 1
            src.next_poll = now + min(src.interval * 2**src.failures, MAX_BACKOFF)
        # a host that asked to wait (429/503 Retry-After) is not polled before it said
        src.next_poll = max(src.next_poll, now + self._fetcher.blocked_for(src.url))
        etag, modified = self._pending_validators
        if ok and not complete:
            # an entry left to try again: the next poll reads the listing whole
            etag = modified = None
        # a failed poll keeps the validators it had (a broken body cleared them)
        src.etag, src.last_modified = etag, modified
        with self.state.transaction():
            self.state.save_source(src)

    # -- one entry -------------------------------------------------------------
    def _keys(self, src: Source, entry: Entry) -> list[str]:
        keys = []
        if entry.guid and entry.guid not in self._shared_guids:
            keys.append(f"guid:{host_of(src.url)}:{entry.guid}")
        keys.append(f"url:{entry.link}")
        return keys

    def _entry(self, fetcher: Fetcher, report: RoundReport, src: Source,
               entry: Entry) -> tuple[Article | None, bool]:  # fmt: skip
        """The article to index for a listed entry, or None; and whether the entry was
        dealt with (False: to be tried again, so the listing is read again)."""
        keys = self._keys(src, entry)
        aid = self.state.lookup(keys)
        known = self.state.article(aid) if aid else None
        if known is not None:
            seen = known.id in self._seen  # another source of this round dealt with it
            with self.state.transaction():
                self.state.add_keys(known.id, keys)
                if seen:  # this listing's version is the one just dealt with
                    self.state.save_listing(src.url, known.id, entry.signature)
            if seen:
                return None, True
            listed = self.state.listing(src.url, known.id)
            if known.status == "indexed" and (listed is None or listed == entry.signature):
                # unchanged listing (or a new listing of an article known from elsewhere)
                if listed is None:
                    with self.state.transaction():
                        self.state.save_listing(src.url, known.id, entry.signature)
                self._seen.add(known.id)
                return None, True
            if known.status == "failed" and known.tries >= MAX_TRIES and listed == entry.signature:
                return None, True  # given up until the listing changes
        art = self._fetch(fetcher, report, src, entry, known, keys)
        if art is None:
            after = self.state.article(self.state.lookup(keys) or "")
            # a page to fetch again (an error this time) keeps the listing to be read again
            retry = after is not None and after.id not in self._seen and after.tries < MAX_TRIES
            return None, not retry
        return art, True

    def _fetch(self, fetcher: Fetcher, report: RoundReport, src: Source, entry: Entry,
               known: Known | None, keys: list[str], resume: bool = False) -> Article | None:  # fmt: skip
        """Fetch, identify and extract one article page; None when there is nothing to
        index (not modified, unchanged, a failure recorded on the source)."""
        url = entry.link
        indexed = known is not None and known.status == "indexed"
        try:
            resp = fetcher.get(url, known.page_etag if indexed else None,
                               known.page_last_modified if indexed else None)  # fmt: skip
        except Disallowed:
            src.count("robots")
            report.robots += 1
            return None
        except FetchError as exc:
            if isinstance(exc, SlowDown):
                src.count("rate_limited")
                report.rate_limited += 1
            report.errors.append({"source": src.url, "error": f"{url}: {exc}"})
            if isinstance(exc, SlowDown):
                src.error(self.clock(), f"{url}: {exc}")
                raise
            self._failed(
                report, src, known, keys, url, str(exc), None if resume else entry.signature
            )
            return None
        src.count("fetched")
        report.fetched += 1
        if resp.not_modified and known is not None:
            report.unchanged += 1
            src.count("unchanged")
            self._seen.add(known.id)
            with self.state.transaction():
                self.state.add_keys(known.id, keys)
                self.state.save_listing(src.url, known.id, entry.signature)
            return None
        html = resp.text(guess=True)
        page_keys = []
        for candidate in (resp.final_url, page_canonical(html, resp.final_url)):
            try:
                if candidate:
                    page_keys.append(f"url:{canonical_url(candidate)}")
            except BadURL:
                continue
        try:
            page = parse_html(html, "follow")
        except (ValueError, RecursionError) as exc:
            src.count("failed")
            self._failed(
                report,
                src,
                known,
                keys + page_keys,
                url,
                f"no article: {exc}",
                None if resume else entry.signature,
            )
            return None
        words = len(page.text.split())
        if known is not None and (known.words or 0) >= MIN_FP_WORDS > words:
            # an article that shrank to a stub ("no longer available", a paywall's teaser,
            # a consent page) is not replaced by it: kept as indexed, the error recorded
            src.count("failed")
            self._failed(report, src, known, keys, url,
                         f"the page now holds {words} words (the article had {known.words}): "
                         "kept the version indexed", None if resume else entry.signature)  # fmt: skip
            return None
        # a text this short (a paywall's teaser, a "page not found") is no identity
        fp_keys = [f"fp:{fingerprint(page.text)}"] if words >= MIN_FP_WORDS else []
        if known is None:
            by_page = self.state.lookup(page_keys)
            by_text = self.state.lookup(fp_keys)
            if by_page is not None and by_text != by_page:
                # the page's address names an article with another text: a canonical link
                # shared by many pages (a site pointing every article at its home page) or
                # a redirect to one place (a login page) is no identity, and never makes
                # one article replace another
                page_keys = [k for k in page_keys if self.state.lookup([k]) is None]
                by_page = None
            aid = by_page or by_text
            known = self.state.article(aid) if aid else None
            same_text_only = known is not None and by_page is None
            if known is not None and known.id in self._seen:
                with self.state.transaction():
                    self.state.add_keys(known.id, keys + page_keys)
                return None
        else:
            same_text_only = False
        now = _iso(self.clock())
        canon = next((k[4:] for k in reversed(page_keys)), url)
        if same_text_only and known is not None:
            canon = known.url  # a copy elsewhere: the article keeps its address
        if known is None:
            first = (keys or page_keys or [f"url:{url}"])[0]
            known = Known(article_id(first, url), canon, first_seen=now, last_changed=now,
                          source=src.url)  # fmt: skip
        article = self._article(known, page, entry, src, canon)
        core = article.core_hash
        if core != known.core_hash:
            known.last_changed = now if known.core_hash is not None else known.last_changed
            article = self._article(known, page, entry, src, canon)
        unchanged = core == known.core_hash and known.status == "indexed"
        if not same_text_only:  # a copy's validators are not the article's page's
            known.url, known.page_etag, known.page_last_modified = (
                canon,
                resp.etag,
                resp.last_modified,
            )
        known.core_hash, known.tries, known.last_error, known.words = core, 0, None, words
        self._seen.add(known.id)
        with self.state.transaction():
            self.state.add_keys(known.id, keys + page_keys + fp_keys)
            if not resume:
                self.state.save_listing(src.url, known.id, entry.signature)
            if unchanged:
                self.state.save_article(known)
            else:
                known.status, known.source = "pending", known.source or src.url
                self.state.save_article(known)
        if unchanged:
            report.unchanged += 1
            src.count("unchanged")
            return None
        self._sent[known.id] = _Sent(src, known, known.status == "indexed")
        return article

    def _failed(self, report: RoundReport, src: Source, known: Known | None, keys: list[str],
                url: str, message: str, signature: str | None = None) -> None:  # fmt: skip
        """A page that could not be fetched or read: recorded (tried again at the next
        listing, up to ``MAX_TRIES`` times), and on the source's errors."""
        src.error(self.clock(), f"{url}: {message}")
        report.failed.append({"id": known.id if known else "", "url": url, "reason": message})
        if known is None:
            now = _iso(self.clock())
            first = (keys or [f"url:{url}"])[0]
            known = Known(article_id(first, url), url, first_seen=now, last_changed=now,
                          source=src.url, status="failed")  # fmt: skip
        if known.status != "indexed":
            known.status = "failed"
        known.tries += 1
        known.last_error = message
        with self.state.transaction():
            self.state.add_keys(known.id, keys)
            self.state.save_article(known)
            if known.tries >= MAX_TRIES and signature is not None:
                # given up until the listing changes: a dead link does not cost a fetch
                # (and a full listing) every poll
                self.state.save_listing(src.url, known.id, signature)

    def _article(self, known: Known, page: Article, entry: Entry, src: Source,
                 canon: str) -> Article:  # fmt: skip
        date = page.date
        if date is None:
            for value in (entry.published, entry.updated):
                try:
                    date = normalise_date(value)
                except ValueError:
                    continue
                if date:
                    break
        title = page.title if not page.synthetic_title else (entry.title or page.title)
        return Article(
            id=known.id,
            title=title,
            text=page.text,
            source=page.source or src.title,
            date=date,
            url=canon,
            author=page.author,
            synthetic_title=page.synthetic_title and not entry.title,
            fields={"first_seen": known.first_seen, "last_changed": known.last_changed},
        )

    # -- continuous following ----------------------------------------------------
    def run(self, stop: threading.Event, on_round: Callable[[RoundReport], None] | None = None,
            max_wait: float = 60.0) -> None:  # fmt: skip
        """Poll rounds until ``stop`` is set, each when the next source is due (woken at
        least every ``max_wait`` seconds, so a stop or a new source is seen soon)."""
        with self.holding():
            while not stop.is_set():
                report = self.poll()
                if on_round is not None:
                    on_round(report)
                due = self.next_due()
                wait = max_wait if due is None else min(max(due - self.clock(), 1.0), max_wait)
                stop.wait(wait)

"""The ``follow`` command: feeds, sitemaps and sites polled into the index
(``ingest.follow``; docs/follow.md).
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import threading
from typing import Any

import click

from newsquarry.search.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Context,
    Terminated,
    fail,
    handle_errors,
    stop_on_sigterm,
)
from newsquarry.search.cli.output import plural, to_json

EXIT_BUSY = 4  # another follower holds the index (as a writer holding the lock: "busy")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# set by a server that starts a follower: the follower stops when that process is gone
PARENT_ENV = "NEWSQUARRY_FOLLOW_PARENT"


def parse_interval(text: str) -> float:
    """``"15m"``, ``"90s"``, ``"2h"``, ``"1d"`` or a number of seconds -> seconds."""
    text = str(text).strip().lower()
    try:
        if text and text[-1] in UNITS:
            value = float(text[:-1]) * UNITS[text[-1]]
        else:
            value = float(text)
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: use e.g. 90s, 15m, 2h, 1d", param_hint="--every"
        ) from None
    if not value >= 0 or value > 365 * 86400:
        raise click.BadParameter(f"{text!r}: between 0 and 365d", param_hint="--every")
    return value


def _when(t: float | None) -> str:
    if not t:
        return "never"
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@click.command()
@click.argument("urls", nargs=-1)
@click.option(
    "--once", is_flag=True, help="Poll once (every source that is due), then exit: for cron."
)
@click.option(
    "--now",
    "force",
    is_flag=True,
    help="Poll every source now, whatever its schedule (hosts that asked to wait "
    "are still left alone).",
)
@click.option(
    "--status",
    "show_status",
    is_flag=True,
    help="Show each source's last poll, errors and counts, then exit.",
)
@click.option("--json", "as_json", is_flag=True, help="--status (or each round) as JSON.")
@click.option("--remove", is_flag=True, help="Stop following the URLs given (articles stay).")
@click.option(
    "--every",
    default="15m",
    show_default=True,
    metavar="INTERVAL",
    help="Time between two polls of each URL given (without URLs: of every source followed): "
    "90s, 15m, 2h, 1d (0: every round).",
)
@click.option(
    "--rate",
    type=click.FloatRange(0),
    default=1.0,
    show_default=True,
    help="Requests per second to one host (0: no limit); robots.txt Crawl-delay "
    "may slow it further.",
)
@click.option(
    "--processes",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Worker processes for the NLP step.",
)
@click.option(
    "--commit-every",
    type=click.IntRange(1),
    default=200,
    show_default=True,
    help="Articles per commit (a kill loses at most one batch, fetched again).",
)
@click.pass_obj
@handle_errors
def follow(obj: Context, urls: tuple[str, ...], once: bool, force: bool, show_status: bool,
           as_json: bool, remove: bool, every: str, rate: float, processes: int,
           commit_every: int) -> None:  # fmt: skip
    """Follow RSS/Atom feeds, sitemaps or sites (their home page) into the index.

    Each URL given is followed from then on (kept in the index folder, with what was
    seen); with no URL, the ones followed already are polled. Each source is polled on
    its own schedule (--every) with conditional requests, robots.txt and a per-host rate
    limit respected; new and changed articles are fetched, extracted and indexed (a
    changed one replaces the old under the same id). Without --once it runs until
    Ctrl-C or SIGTERM. Errors of one source are reported and never stop the others.

    \b
    Examples:
      newsquarry follow https://example.org/feed.xml https://example.org/sitemap.xml
      newsquarry follow https://example.org/ --every 30m      # discover its feeds
      newsquarry follow --once                                # cron: one round
      newsquarry follow --status
    """
    from newsquarry.search.ingest.follow.follower import (  # lazy: start-up time
        Follower,
        FollowError,
    )
    from newsquarry.search.ingest.follow.state import FollowBusy  # lazy: start-up time

    interval = parse_interval(every)
    import logging  # lazy: start-up time

    # a page without an article is reported once, as the source's error: not also as
    # trafilatura's own log lines
    for name in ("trafilatura", "htmldate", "courlan"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if show_status:
        store = obj.store(create=False)
        follower = Follower(store, interval=interval)
        try:
            _print_status(follower.status(), as_json)
        finally:
            follower.close()
        return
    if remove and not urls:
        raise click.UsageError("--remove needs the URLs to stop following")
    store = obj.store()
    enricher = None
    if not remove:
        from newsquarry.search.ingest.indexer import default_enricher  # lazy: start-up time

        enricher = default_enricher(n_process=processes)
    follower = Follower(store, enricher=enricher, interval=interval, rate=rate,
                        commit_every=commit_every, on_commit=_progress)  # fmt: skip
    try:
        try:
            if remove:
                gone = follower.remove(urls)
                click.echo(f"no longer followed: {', '.join(gone) or 'none of these'}")
                return
            if urls:
                follower.add(urls, interval)
            elif click.get_current_context().get_parameter_source("every").name != "DEFAULT":
                # --every alone: the new interval of everything followed
                follower.add([s.url for s in follower.state.sources() if s.parent is None
                              and s.active], interval)  # fmt: skip
        except FollowError as exc:
            fail(str(exc), 2)
        if not follower.state.sources():
            raise click.UsageError("nothing to follow: give the URLs of feeds, sitemaps or sites")
        with stop_on_sigterm():
            if once:
                report = follower.poll(force=force)
                _print_round(report, as_json)
            else:
                _run(follower, force, as_json)
    except FollowBusy as exc:
        fail(str(exc), EXIT_BUSY)
    except KeyboardInterrupt as exc:
        term = isinstance(exc, Terminated)
        click.echo(
            f"{'Terminated' if term else 'Interrupted'}: what was committed is kept; articles "
            "of the round in progress are fetched again next time.",
            err=True,
        )
        sys.exit(EXIT_TERMINATED if term else EXIT_INTERRUPTED)
    finally:
        follower.close()
        store.wait_for_merges()


def _run(follower: Any, force: bool, as_json: bool) -> None:
    """Rounds until stopped; a server's follower also stops when the server is gone."""
    from newsquarry.search.core.errors import IndexBusy  # lazy: start-up time

    stop = threading.Event()
    parent = os.environ.get(PARENT_ENV)
    if parent and parent.isdigit():
        watch = threading.Thread(target=_watch_parent, args=(int(parent), stop), daemon=True)
        watch.start()
    first = True
    with follower.holding():  # one follower per index while this one runs
        while not stop.is_set():
            try:
                report = follower.poll(force=force and first)
            except IndexBusy as exc:  # another writer held the index too long: next round
                click.echo(f"error: {exc.message}; the articles of this round are fetched "
                           "again next round", err=True)  # fmt: skip
            else:
                _print_round(report, as_json)
            first = False
            due = follower.next_due()
            wait = 60.0 if due is None else min(max(due - follower.clock(), 1.0), 60.0)
            stop.wait(wait)


def _watch_parent(pid: int, stop: threading.Event) -> None:
    while not stop.wait(2.0):
        if os.getppid() != pid:
            stop.set()


def _progress(report: Any) -> None:
    """A line on stderr after each commit of a round (a first round may take long)."""
    click.echo(
        f"... {len(report.added) + len(report.replaced)} articles committed, "
        f"{report.fetched} pages fetched so far",
        err=True,
    )


def _print_round(report: Any, as_json: bool) -> None:
    if as_json:
        click.echo(to_json(report.to_dict()))
        return
    for e in report.errors:
        click.echo(f"error: {e['source']}: {e['error']}", err=True)
    for f in report.failed:
        if not any(f.get("url", "") in e["error"] for e in report.errors):
            click.echo(f"failed: {f.get('url') or f.get('id')}: {f['reason']}", err=True)
    click.echo(
        f"{plural(len(report.polled), 'source')} polled ({report.not_modified} not modified), "
        f"{report.fetched} pages fetched: {len(report.added)} added, "
        f"{len(report.replaced)} replaced, {report.unchanged} unchanged, "
        f"{len(report.failed)} failed; {plural(len(report.errors), 'error')}"
        + (f", {report.robots} disallowed by robots.txt" if report.robots else "")
        + (f", {report.rate_limited} asked to wait" if report.rate_limited else "")
        + "."
    )


def _print_status(status: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(to_json(status))
        return
    sources = status["sources"]
    if not sources:
        click.echo("Nothing followed yet (newsquarry follow URL...).")
        return
    for s in sources:
        flags = [] if s["active"] else ["not followed"]
        kind = s["kind"] or "not read yet"
        via = f", from {s['parent']}" if s["parent"] else ""
        click.echo(f"{s['url']}  ({kind}{via}{'; ' + ', '.join(flags) if flags else ''})")
        c = s["counts"]
        click.echo(
            f"  last poll {_when(s['last_poll'])}, last success {_when(s['last_ok'])}, "
            f"next {_when(s['next_poll']) if s['active'] else '-'}"
        )
        click.echo(
            f"  {c['polls']} polls ({c['not_modified']} not modified), {c['entries']} entries "
            f"read, {c['fetched']} pages fetched: {c['added']} added, {c['replaced']} replaced, "
            f"{c['unchanged']} unchanged, {c['failed']} failed; {c['errors']} errors, "
            f"{c['robots']} disallowed, {c['rate_limited']} asked to wait"
        )
        for e in s["errors"][:1]:
            click.echo(f"  last error ({_when(e['at'])}): {e['error']}")
    counts = status["articles"]
    click.echo(
        f"{plural(sum(counts.values()), 'article')} made by following: "
        + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    )

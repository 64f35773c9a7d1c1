"""The ``newsquarry`` command line: a thin layer over the library.

Exit codes: 0 results found / done; 1 the search ran and found nothing (like
grep); 2 usage error or bad query; 3 not found; 4 index busy (another writer);
5 index unavailable; 6 search timed out; 130 interrupted (Ctrl-C).
Errors are one line on stderr; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from .config import load_settings
from .errors import NewsquarryError
from .output import (
    PASSAGE_COLUMNS,
    QUOTE_COLUMNS,
    jsonl_lines,
    make_console,
    print_facet,
    print_hits,
    to_csv,
    to_json,
)

EXIT_NO_RESULTS = 1
EXIT_INTERRUPTED = 130


class Context:
    """What every command needs: settings, the store (opened lazily), flags."""

    def __init__(self, index: str | None, debug: bool) -> None:
        self.settings = load_settings(index=index)
        self.debug = debug
        self._store = None

    @property
    def index_dir(self) -> str:
        return self.settings["index"]

    def store(self, create: bool = True) -> Any:
        if self._store is None:
            from .store import WhooshStore

            self._store = WhooshStore(
                self.index_dir, create=create, lock_timeout=self.settings["lock_timeout"]
            )
        return self._store


def fail(message: str, code: int = 2) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(code)


def handle_errors(fn: Callable) -> Callable:
    """Turn library errors into one line on stderr and the documented exit code."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context()
        debug = getattr(ctx.obj, "debug", False)
        try:
            return fn(*args, **kwargs)
        except NewsquarryError as exc:
            if debug:
                raise
            where = f" (at character {exc.position})" if getattr(exc, "position", None) else ""
            fail(f"{exc.message}{where}", exc.exit_code)
        except (ConnectionError, OSError) as exc:
            if debug:
                raise
            fail(str(exc), 5)

    return wrapper


def output_options(fn: Callable) -> Callable:
    """--json / --jsonl / --csv for scripts (the default is a readable list)."""
    fn = click.option("--csv", "fmt", flag_value="csv", help="CSV with a header row.")(fn)
    fn = click.option("--jsonl", "fmt", flag_value="jsonl", help="One JSON record per line.")(fn)
    fn = click.option("--json", "fmt", flag_value="json", help="The whole result as JSON.")(fn)
    return fn


def filter_options(fn: Callable) -> Callable:
    """Every filter of the library as a flag; repeat a flag to OR values."""
    opts = [
        click.option("--speaker", multiple=True, help="Only passages quoting this speaker."),
        click.option("--person", multiple=True, help="Only passages mentioning this person."),
        click.option("--org", multiple=True, help="Only passages mentioning this organisation."),
        click.option("--place", multiple=True, help="Only passages mentioning this place."),
        click.option("--source", multiple=True, help="Only articles from this source."),
        click.option("--article", multiple=True, help="Only this article id."),
        click.option("--kind", "quote_kind", multiple=True,
                     type=click.Choice(["direct", "partial", "indirect"]),
                     help="Only quotations of this kind."),
        click.option("--since", help="Only articles dated on or after (YYYY[-MM[-DD]])."),
        click.option("--until", help="Only articles dated on or before (YYYY[-MM[-DD]])."),
        click.option("--url", envvar="NEWSQUARRY_URL",
                     help="Query a running newsquarry API instead of the local index "
                          "[env: NEWSQUARRY_URL]."),
    ]  # fmt: skip
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


FILTER_NAMES = ("speaker", "person", "org", "place", "source", "article", "quote_kind")


def build_request(
    query: str, kw: dict[str, Any], *, mode: str = "passages", facets: tuple = (),
    limit: int = 10, page: int = 1, sort: str = "relevance", highlight: bool = True,
    facet_size: int = 10,
) -> Any:  # fmt: skip
    from .requests import SearchRequest

    filters = {name: list(kw[name]) for name in FILTER_NAMES if kw.get(name)}
    return SearchRequest(
        q=query or "",
        filters=filters,
        date_from=kw.get("since"),
        date_to=kw.get("until"),
        facets=list(facets),
        facet_size=facet_size,
        page=page,
        per_page=limit,
        sort=sort,
        highlight=highlight,
        mode=mode,
    )


def run_request(obj: Context, request: Any, url: str | None) -> dict[str, Any]:
    """Run a search locally or against a running API; the same dict either way."""
    if url:
        from .remote import RemoteClient

        return RemoteClient(url).search(request)
    ensure_index(obj)
    return obj.store().search(request).to_dict()


def ensure_index(obj: Context) -> None:
    """With no index yet, index the bundled corpus so a new user gets an answer at once."""
    from .store import WhooshStore

    store = obj.store()
    if store.stats()["articles"] == 0 and isinstance(store, WhooshStore):
        from .corpus import bundled_corpus_path
        from .indexer import index_paths

        click.echo(f"No index yet at {obj.index_dir}: indexing the bundled corpus…", err=True)
        report = index_paths(store, [str(bundled_corpus_path())])
        click.echo(f"Indexed {len(report.added)} articles, {report.passages} passages.", err=True)


def emit(result: dict[str, Any], fmt: str | None, columns: list[str], show_facets: bool) -> int:
    """Print a search result in the chosen format; the exit code (1 when nothing found)."""
    if fmt == "json":
        click.echo(to_json(result))
    elif fmt == "jsonl":
        for line in jsonl_lines(result["hits"]):
            click.echo(line)
    elif fmt == "csv":
        click.echo(to_csv(result["hits"], columns), nl=False)
    else:
        console = make_console()
        if result["hits"]:
            print_hits(console, result, show_facets=show_facets)
        else:
            click.echo("No matches.", err=True)
            if result.get("suggestion"):
                click.echo(f"Did you mean: {result['suggestion']}", err=True)
    return 0 if result["total"] else EXIT_NO_RESULTS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--index",
    envvar="NEWSQUARRY_INDEX",
    type=click.Path(file_okay=False),
    help="Index folder [env: NEWSQUARRY_INDEX; default: ~/.local/share/newsquarry/index].",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="newsquarry")
@click.pass_context
def cli(ctx: click.Context, index: str | None, debug: bool) -> None:
    """newsquarry: search news at the level of the passage, and find who said what.

    \b
    Examples:
      newsquarry search torture
      newsquarry search 'Guaido AND army' --facet person
      newsquarry quotes torture --speaker "Raúl Daniel Alvarenga"
      newsquarry index ~/news/ && newsquarry stats
    """
    ctx.obj = Context(index, debug)


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--force", is_flag=True, help="Re-index articles even when unchanged.")
@click.option("--commit-every", type=click.IntRange(1), help="Articles per commit.")
@click.option(
    "--processes",
    type=click.IntRange(1),
    default=None,
    help="Worker processes for the NLP step [default: the usable cores, at most 4].",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    help="Articles per NLP batch (one task of a worker).",
)
@click.option(
    "--cluster",
    envvar="NEWSQUARRY_CLUSTER",
    metavar="ADDRESS",
    help="Enrich on the workers of a running Dask cluster (tcp://HOST:8786) instead of local "
    "processes; this process still writes the index [env: NEWSQUARRY_CLUSTER]. "
    "Needs newsquarry[cluster]; see docs/scaling.md.",
)
@click.option(
    "--cluster-wait",
    type=click.FloatRange(0),
    default=30.0,
    show_default=True,
    help="Seconds to wait for a worker when the cluster has none before stopping.",
)
@click.option(
    "--count/--no-count",
    default=True,
    show_default=True,
    help="Count the articles first (one quick pass over the files) to show an ETA.",
)
@click.option(
    "--optimize",
    "optimize_after",
    is_flag=True,
    help="Merge the index into one segment at the end (faster queries after a big import).",
)
@click.pass_obj
@handle_errors
def index(obj: Context, paths: tuple[str, ...], force: bool, commit_every: int | None,
          processes: int | None, batch_size: int, cluster: str | None, cluster_wait: float,
          count: bool, optimize_after: bool) -> None:  # fmt: skip
    """Index articles from files and folders (read recursively).

    Formats: .txt, .md, .jsonl, .html (see the README). Unchanged articles are
    skipped, changed ones replaced. Files that cannot be read are listed with
    the reason; the exit code is non-zero only if nothing could be indexed.

    Large imports: articles are enriched by worker processes while this one
    writes, committed every --commit-every articles. Ctrl-C keeps everything
    committed; the same command again skips it and continues. With --cluster
    the workers are those of a Dask cluster, on as many machines as it has.

    \b
    Examples:
      newsquarry index corpus/
      newsquarry index archive.jsonl --processes 2 --optimize
      newsquarry index archive.jsonl --cluster tcp://10.0.0.5:8786
    """
    from .errors import ClusterError
    from .indexer import default_enricher, default_processes, index_paths, optimize

    if cluster and processes:
        raise click.UsageError("--processes is for local workers; --cluster uses the cluster's")
    store = obj.store()
    reporter = ProgressReporter()
    executor = None
    if cluster:
        try:
            from .enrich.cluster import DaskExecutor, enrichment_fingerprint
        except ImportError as exc:
            reporter.close()
            fail(str(exc), 2)
        import logging

        from .enrich.nlp import load_nlp

        # "Couldn't gather keys, rescheduling" and the like: the executor reports
        # workers leaving in its own words (reporter.note)
        for name in ("distributed", "distributed.client"):
            logging.getLogger(name).setLevel(logging.ERROR)
        executor = DaskExecutor(
            cluster,
            preload=load_nlp,
            fingerprint=enrichment_fingerprint,
            worker_wait=cluster_wait,
            on_event=reporter.note,
        )
        try:
            executor.start()
        except BaseException:
            reporter.close()
            raise
        reporter.note(f"Enriching on {executor.describe()}.")
    enricher = default_enricher(
        n_process=processes or default_processes(), batch_size=batch_size, executor=executor
    )
    try:
        report = index_paths(
            store,
            paths,
            enricher=enricher,
            commit_every=commit_every or obj.settings["commit_every"],
            on_progress=reporter.update,
            force=force,
            count=count,
        )
    except KeyboardInterrupt as exc:
        reporter.close()
        report = getattr(exc, "report", None)
        done = (len(report.added) + len(report.replaced)) if report else 0
        click.echo(
            f"Interrupted: {done} articles committed before the interrupt; "
            "the index is intact. Run the same command again to continue.",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    except ClusterError as exc:
        reporter.close()
        report = getattr(exc, "report", None)
        done = (len(report.added) + len(report.replaced)) if report else 0
        fail(
            f"{exc.message}. {done} articles committed before that are kept; the index is "
            "intact. Run the same command again to continue once workers are back.",
            exc.exit_code,
        )
    finally:
        if executor is not None:
            executor.close()
    reporter.close()
    for f in report.failed:
        click.echo(f"failed: {f.get('path') or f.get('id')}: {f['reason']}", err=True)
    for s in reporter.skipped:
        click.echo(f"skipped: {s['path']}: {s['reason']}", err=True)
    click.echo(
        f"{len(report.added)} added, {len(report.replaced)} replaced, "
        f"{len(report.unchanged)} unchanged, {len(reporter.skipped)} skipped, "
        f"{len(report.failed)} failed; {report.passages} passages written."
    )
    indexed = len(report.added) + len(report.replaced) + len(report.unchanged)
    if indexed == 0:
        fail("nothing could be indexed", 2 if report.failed else EXIT_NO_RESULTS)
    if optimize_after:
        result = optimize(store)
        click.echo(
            f"Optimized: {result['segments_before']} -> {result['segments_after']} "
            f"segments in {result['seconds']:.1f} s."
        )


class ProgressReporter:
    """A progress bar on a terminal, a plain line every few seconds otherwise."""

    def __init__(self, interval: float = 5.0) -> None:
        self.tty = sys.stderr.isatty()
        self.interval = interval
        self.last = 0.0
        self.skipped: list[dict[str, str]] = []
        self.committed = 0
        self._progress = None
        self._task = None
        if self.tty:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=make_console(stderr=True),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("indexing", total=None)

    def update(self, progress: Any, report: Any) -> None:
        self.skipped = progress.skipped_files
        msg = (
            f"{progress.read} read · {progress.committed} committed · "
            f"{len(report.unchanged)} unchanged · {len(report.failed)} failed · "
            f"{progress.rate:.1f} articles/s"
        )
        if getattr(progress, "total", None):  # ETA from the up-front count (see indexer)
            eta = progress.eta
            left = "…" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
            msg += f" · {progress.done}/{progress.total} done · ETA {left}"
        if self._progress is not None:
            self._progress.update(self._task, description=msg)
            return
        # plain lines: after every commit, and every few seconds in between
        committed_now = progress.committed != self.committed
        if committed_now or time.monotonic() - self.last >= self.interval:
            self.last = time.monotonic()
            self.committed = progress.committed
            click.echo(msg, err=True)

    def note(self, message: str) -> None:
        """One line on stderr (above the bar on a terminal), e.g. a cluster worker leaving."""
        if self._progress is not None:
            self._progress.console.print(message, markup=False, highlight=False)
        else:
            click.echo(message, err=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@cli.command()
@click.argument("query", required=False, default="")
@filter_options
@click.option("--facet", "facets", multiple=True, help="Show counts for this facet (repeatable).")
@click.option("--facet-size", type=click.IntRange(1), default=10, show_default=True)
@click.option(
    "--sort",
    type=click.Choice(["relevance", "date", "-date"]),
    default="relevance",
    show_default=True,
    help="'date' oldest first, '-date' newest first.",
)
@click.option(
    "-n", "--limit", type=click.IntRange(1), default=10, show_default=True, help="Results per page."
)
@click.option("--page", type=click.IntRange(1), default=1, show_default=True)
@click.option("--no-highlight", is_flag=True, help="Do not compute highlights.")
@output_options
@click.pass_obj
@handle_errors
def search(obj: Context, query: str, facets: tuple[str, ...], facet_size: int, sort: str,
           limit: int, page: int, no_highlight: bool, fmt: str | None, **kw: Any) -> None:  # fmt: skip
    """Search passages.

    QUERY uses AND/OR/NOT, "phrases", prefix*, fuzzy~ and fields such as
    speaker:, person:, org:, place:, title:, quote:, source:, date:.

    \b
    Examples:
      newsquarry search torture
      newsquarry search '"safe harbor"'
      newsquarry search 'Guaido AND army' --facet person --facet org
      newsquarry search aid --speaker "Donald Trump" --json
    """
    request = build_request(
        query, kw, facets=facets, limit=limit, page=page, sort=sort,
        highlight=not no_highlight, facet_size=facet_size,
    )  # fmt: skip
    result = run_request(obj, request, kw.get("url"))
    sys.exit(emit(result, fmt, PASSAGE_COLUMNS, show_facets=bool(facets)))


@cli.command()
@click.argument("query", required=False, default="")
@filter_options
@click.option(
    "--sort",
    type=click.Choice(["relevance", "date", "-date"]),
    default="relevance",
    show_default=True,
)
@click.option("-n", "--limit", type=click.IntRange(1), default=10, show_default=True)
@click.option("--page", type=click.IntRange(1), default=1, show_default=True)
@output_options
@click.pass_obj
@handle_errors
def quotes(obj: Context, query: str, sort: str, limit: int, page: int, fmt: str | None,
           **kw: Any) -> None:  # fmt: skip
    """List quotations with their speakers, optionally matching QUERY.

    \b
    Examples:
      newsquarry quotes torture
      newsquarry quotes --speaker "Harry Solano"
      newsquarry quotes --speaker Alvarenga --kind direct --json
    """
    request = build_request(query, kw, mode="quotes", limit=limit, page=page, sort=sort)
    result = run_request(obj, request, kw.get("url"))
    sys.exit(emit(result, fmt, QUOTE_COLUMNS, show_facets=False))


@cli.command()
@click.argument("facet")
@click.option("--prefix", default="", help="Only values starting with this (accents ignored).")
@click.option("-q", "--query", default="", help="Count under this query.")
@filter_options
@click.option("-n", "--limit", type=click.IntRange(1), default=20, show_default=True)
@output_options
@click.pass_obj
@handle_errors
def facets(obj: Context, facet: str, prefix: str, query: str, limit: int, fmt: str | None,
           **kw: Any) -> None:  # fmt: skip
    """The values of one facet with their counts.

    FACET is one of person, org, place, speaker, article, source, date, quote_kind.

    \b
    Examples:
      newsquarry facets person
      newsquarry facets speaker --prefix al
      newsquarry facets person --query torture --csv
    """
    request = build_request(query, kw, facet_size=limit)
    url = kw.get("url")
    if url:
        from .remote import RemoteClient

        result = RemoteClient(url).facet_values(facet, prefix, request, limit)
    else:
        from dataclasses import asdict

        from .searching import facet_values

        ensure_index(obj)
        result = asdict(facet_values(obj.store(), facet, prefix, request, limit))
    if fmt == "json":
        click.echo(to_json(result))
    elif fmt == "jsonl":
        for line in jsonl_lines(result["values"]):
            click.echo(line)
    elif fmt == "csv":
        click.echo(to_csv(result["values"], ["value", "count", "selected"]), nl=False)
    else:
        print_facet(make_console(), result)
    sys.exit(0 if result["values"] else EXIT_NO_RESULTS)


@cli.command()
@click.argument("item_id")
@click.option("--json", "as_json", is_flag=True, help="Print the record as JSON.")
@click.option("--url", envvar="NEWSQUARRY_URL", help="Ask a running newsquarry API.")
@click.pass_obj
@handle_errors
def show(obj: Context, item_id: str, as_json: bool, url: str | None) -> None:
    """Show one passage (ARTICLE#pN) or one article with its passages.

    \b
    Examples:
      newsquarry show '000_e23b3335c9472580#p4'
      newsquarry show 000_e23b3335c9472580 --json
    """
    is_passage = "#" in item_id
    if url:
        from .remote import RemoteClient

        client = RemoteClient(url)
        record = client.passage(item_id) if is_passage else client.article(item_id)
    else:
        store = obj.store(create=False)
        record = store.get_passage(item_id) if is_passage else store.get_article(item_id)
    if as_json:
        click.echo(to_json(record))
        return
    from rich.text import Text

    console = make_console()
    console.print(Text(record.get("title") or record["id"], style="bold"))
    meta = " · ".join(str(x) for x in (record.get("source"), record.get("date"), record["id"]) if x)
    console.print(Text(meta, style="dim"))
    console.print()
    for p in record["passages"] if not is_passage else [record]:
        console.print(Text(p["text"]))
        quotes_ = p.get("quotes") or []
        for q in quotes_:
            line = Text("   “", style="dim")
            line.append(q["text"][:100] + ("…" if len(q["text"]) > 100 else ""), style="italic")
            line.append("” — ", style="dim")
            line.append(q.get("speaker") or "(unknown)", style="cyan")
            line.append(f" ({q['kind']})", style="dim")
            console.print(line)
        names = list(dict.fromkeys(e["name"] for e in p.get("entities") or []))
        if names:
            console.print(Text("   " + ", ".join(names), style="green"))
        console.print(Text(f"   [{p['id']}]", style="dim"))
        console.print()


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--url", envvar="NEWSQUARRY_URL", help="Ask a running newsquarry API.")
@click.pass_obj
@handle_errors
def stats(obj: Context, as_json: bool, url: str | None) -> None:
    """Index statistics: articles, passages, quotations, size.

    \b
    Example:
      newsquarry stats --json
    """
    if url:
        from .remote import RemoteClient

        data = RemoteClient(url).stats()
    else:
        data = obj.store(create=False).stats()
    if as_json:
        click.echo(to_json(data))
        return
    width = max(len(k) for k in data)
    for key, value in data.items():
        if key == "size_bytes":
            value = f"{value / 1e6:.1f} MB"
        click.echo(f"{key:<{width}}  {value}")


@cli.command()
@click.argument("article_ids", nargs=-1, required=True)
@click.pass_obj
@handle_errors
def delete(obj: Context, article_ids: tuple[str, ...]) -> None:
    """Delete articles (all their passages and quotations) by id.

    \b
    Example:
      newsquarry delete 000_e23b3335c9472580
    """
    store = obj.store(create=False)
    missing = []
    with store.writer() as w:
        for article_id in article_ids:
            if not w.delete(article_id):
                missing.append(article_id)
    for article_id in w.report.deleted:
        click.echo(f"deleted {article_id}")
    if missing:
        fail("no such article: " + ", ".join(missing), 3)


def port_free_or_fail(host: str, port: int) -> None:
    """Exit with a message when something already listens on ``host:port``.

    The server's workers bind with SO_REUSEPORT, which the kernel lets a second
    server of the same user share without an error; a plain bind (SO_REUSEADDR
    only, so connections of a stopped server in TIME_WAIT do not count) fails
    on any listening socket, shared or not.
    """
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror}", 2)
        return
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                fail(f"port {port} on {host} is in use (another server?): choose --port", 2)
            else:
                fail(f"cannot listen on {host}:{port}: {exc.strerror}", 2)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=2,
    show_default=True,
    help="Worker processes (one per core suits this size).",
)
@click.option(
    "--threads", type=click.IntRange(1), default=4, show_default=True, help="Threads per worker."
)
@click.pass_obj
@handle_errors
def serve(obj: Context, host: str, port: int, workers: int, threads: int) -> None:
    """Serve the HTTP API, search page and widget under gunicorn.

    Indexes the bundled corpus first when the index is empty. Settings come
    from NEWSQUARRY_* environment variables (see docs/api.md), e.g.
    NEWSQUARRY_WRITE_TOKEN enables the write endpoints.

    \b
    Examples:
      newsquarry serve
      newsquarry serve --port 9000 --workers 2 --threads 8
      newsquarry serve --threads 1   # gunicorn's sync worker: no keep-alive
      curl 'http://127.0.0.1:8080/v1/search?q=torture'
    """
    port_free_or_fail(host, port)
    ensure_index(obj)
    env = dict(os.environ, NEWSQUARRY_INDEX=obj.index_dir)
    argv = [
        sys.executable, "-m", "gunicorn",
        "--config", "python:newsquarry.api.gunicorn_conf",
        "--bind", f"{host}:{port}",
        "--workers", str(workers),
        "--threads", str(threads),
        "newsquarry.api.wsgi:app",
    ]  # fmt: skip
    click.echo(f"Serving {obj.index_dir} on http://{host}:{port}/", err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, env)


@cli.command()
@click.option("--speaker", multiple=True, help="Fix this speaker (repeat to allow several).")
@click.option("--person", multiple=True)
@click.option("--org", multiple=True)
@click.option("--place", multiple=True)
@click.option("--source", multiple=True, help="Fix this source.")
@click.option("--article", multiple=True)
@click.option("--since", help="Earliest date the key can see (YYYY[-MM[-DD]]).")
@click.option("--until", help="Latest date the key can see.")
@click.option(
    "--expires-in",
    default="30d",
    show_default=True,
    help="Lifetime: a number with s, m, h or d (e.g. 12h, 30d); 'never' for none.",
)
@click.option(
    "--secret",
    envvar="NEWSQUARRY_SECRET",
    required=True,
    help="The server secret [env: NEWSQUARRY_SECRET].",
)
@click.pass_obj
@handle_errors
def key(obj: Context, since: str | None, until: str | None, expires_in: str, secret: str,
        **kw: Any) -> None:  # fmt: skip
    """Make a scoped read key for an embedder: fixed filters and an expiry.

    Requests made with the key (header X-Newsquarry-Key or ?key=) can narrow
    its filters but never widen them.

    \b
    Examples:
      NEWSQUARRY_SECRET=... newsquarry key --source "News from the world" --expires-in 7d
      newsquarry key --speaker "Harry Solano" --expires-in never
    """
    from .keys import Scope, make_key

    filters = {name: list(values) for name, values in kw.items() if values}
    expires = None
    if expires_in != "never":
        units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
        try:
            seconds = int(expires_in[:-1]) * units[expires_in[-1]]
        except (KeyError, ValueError, IndexError):
            raise click.BadParameter(
                "use e.g. 30m, 12h, 30d or never", param_hint="--expires-in"
            ) from None
        expires = int(time.time()) + seconds
    click.echo(make_key(secret, Scope(filters, since, until, expires)))


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    Examples:
      eval "$(newsquarry completion bash)"        # in ~/.bashrc
      newsquarry completion fish > ~/.config/fish/completions/newsquarry.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    click.echo(cls(cli, {}, "newsquarry", "_NEWSQUARRY_COMPLETE").source())


@cli.command("optimize")
@click.pass_obj
@handle_errors
def optimize_command(obj: Context) -> None:
    """Merge the index into one segment so queries visit one segment, not tens.

    Worth running after a large import (or use `index --optimize`). It needs the
    write lock, and rewrites the index: about as long as writing it took.

    \b
    Example:
      newsquarry optimize
    """
    from .indexer import optimize

    result = optimize(obj.store(create=False))
    click.echo(
        f"Optimized: {result['segments_before']} -> {result['segments_after']} "
        f"segments in {result['seconds']:.1f} s."
    )


def main() -> None:
    """Console-script entry point."""
    try:
        cli(prog_name="newsquarry")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()

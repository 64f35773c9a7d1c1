"""The ``newsquarry`` command line: a thin layer over the library.

Exit codes: 0 results found / done; 1 the search ran and found nothing (like
grep); 2 usage error or bad query; 3 not found; 4 index busy (another writer);
5 index unavailable (none at the folder given) or damaged (``check`` found
damage), or server unreachable / not newsquarry; 6 search timed out; 7 not enough
disk space (for a merge, ``optimize`` or ``repair``); 130 interrupted (Ctrl-C).
Errors are one line on stderr, naming the option typed; ``--debug`` shows the traceback.

Only the default index folder is created and filled with the bundled corpus on
first use; any other folder (``--index``, ``NEWSQUARRY_INDEX``) must hold an
index already (``newsquarry index`` makes one), so a mistyped path is an error,
not a new index answering "No matches.".
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import click

# numpy's OpenBLAS starts a thread per core when numpy is imported, and they spin for a
# while: a third of a CLI search's CPU time, on a second core, for linear algebra that
# newsquarry never does. One thread, unless the user chose otherwise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from ..config import SETTINGS_BY_NAME, default_index_dir, load_settings
from ..errors import READ_DAMAGE, NewsquarryError, NoIndex, NotFound
from .output import (
    jsonl_lines,
    make_console,
    plural,
    print_cooccurrence,
    print_facet,
    print_hits,
    to_csv,
    to_json,
)

EXIT_NO_RESULTS = 1
EXIT_DAMAGED = 5
EXIT_NO_SPACE = 7
PASSAGE_ID = re.compile(r"#p\d+$")
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a tool killed by a closed pipe exits


# index folder (absolute) -> its open, warm store: set by the resident searcher
# (``search.daemon``) in the child that runs a command, empty in any other process
RESIDENT: dict[str, Any] = {}


class Context:
    """What every command needs: settings, the store (opened lazily), flags."""

    def __init__(self, index: str | None, debug: bool, url: str | None = None) -> None:
        self.settings = load_settings(index=index)
        self.debug = debug
        self.url = url  # the group's --url / NEWSQUARRY_URL; a command's own --url wins
        self._store = None

    @property
    def index_dir(self) -> str:
        return self.settings["index"]

    @property
    def default_location(self) -> bool:
        """Whether the index folder is the default one (the only one created on first use)."""
        here = Path(self.index_dir).expanduser().resolve()
        return here == Path(default_index_dir()).expanduser().resolve()

    def store(self, create: bool = True) -> Any:
        if self._store is None:
            resident = RESIDENT.get(os.path.abspath(os.path.expanduser(self.index_dir)))
            if resident is not None:  # in the resident searcher: open and warm already
                self._store = resident
                return resident
            from .._light import install

            install()  # Whoosh without the modules it would import for nothing
            from ..store import WhooshStore

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
            fail(f"{option_message(exc, ctx.info_name)}{where}", exc.exit_code)
        except BrokenPipeError:  # the reader stopped (`| head`): quiet, like SIGPIPE
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_BROKEN_PIPE)
        except (ConnectionError, OSError) as exc:
            if debug:
                raise
            if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
                fail(
                    "the disk is full: the write was abandoned and nothing of it was kept (the "
                    "index holds its last commit); free some space and run it again",
                    EXIT_NO_SPACE,
                )
            fail(str(exc), 5)
        except READ_DAMAGE as exc:
            if debug:
                raise
            fail(
                f"the index could not be read ({type(exc).__name__}): it may be damaged. Run "
                "`newsquarry check` for the details and `newsquarry repair` to rebuild it",
                EXIT_DAMAGED,
            )

    return wrapper


# the library's request fields -> the options a user types (per command where they differ)
FIELD_OPTIONS: dict[str, str] = {
    "per_page": "-n/--limit", "page": "--page", "date_from": "--since", "date_to": "--until",
    "facets": "--facet", "facet_size": "--facet-size", "sort": "--sort", "q": "QUERY",
    # the API's parameter names, in errors of a server (--url)
    "facet": "--facet", "speaker": "--speaker", "person": "--person", "org": "--org",
    "place": "--place", "source": "--source", "article": "--article", "quote_kind": "--kind",
}  # fmt: skip
COMMAND_FIELD_OPTIONS: dict[str, dict[str, str]] = {
    "facets": {"facet_size": "-n/--limit", "size": "-n/--limit", "q": "-q/--query",
               "facet": "FACET", "prefix": "--prefix"},
}  # fmt: skip


def option_message(exc: NewsquarryError, command: str | None) -> str:
    """The error's message naming the option the user typed, not the library's field.

    ``per_page must be between 1 and 100`` -> ``-n/--limit: must be between 1 and 100``,
    ``date_from: 'yesterday' is not a date`` -> ``--since: 'yesterday' is not a date``.
    """
    message = exc.message
    if isinstance(exc, NoIndex):
        where = exc.details.get("path") or "DIR"
        return f"{message} (make one with: newsquarry index FILES --index {where})"
    field = exc.field
    option = COMMAND_FIELD_OPTIONS.get(command or "", {}).get(field or "") or FIELD_OPTIONS.get(
        field or ""
    )
    if not option:
        return message
    if message.startswith((f"{field}:", f"{field} must")):
        message = message[len(field) :].lstrip(":").lstrip()  # type: ignore[arg-type]
    message = message.replace("per_page", "-n")
    if option == "-n/--limit" and command in ("search", "quotes"):
        message = message.rstrip(".") + "; --all writes every result"
    return f"{option}: {message}"


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
        click.option("--url", default=group_url,
                     help="Query a running newsquarry API instead of the local index "
                          "[env: NEWSQUARRY_URL]."),
    ]  # fmt: skip
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


URL_COMMANDS = ("search", "quotes", "facets", "show", "stats")  # the ones that take --url


def group_url() -> str | None:
    """A command's --url default: the one given before the command, or NEWSQUARRY_URL."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_object(Context) if ctx else None
    return obj.url if obj else None


class Limit(click.ParamType):
    """-n/--limit: a number of results, or ``all`` (the same as --all)."""

    name = "N|all"

    def convert(self, value: Any, param: Any, ctx: Any) -> int | str:
        if isinstance(value, int) or str(value).lower() != "all":
            try:
                n = int(value)
            except ValueError:
                self.fail(f"{value!r} is not a number nor 'all'", param, ctx)
            if n < 1:
                self.fail(f"{n} is not 1 or more", param, ctx)
            return n
        return "all"


def all_option(fn: Callable) -> Callable:
    """--all: every result as --jsonl or --csv, streamed (the API's export)."""
    return click.option(
        "--all", "everything", is_flag=True,
        help="Every result, streamed as --jsonl or --csv: the records of the API's "
             "export (same columns, same bytes). Same as -n all.",
    )(fn)  # fmt: skip


FILTER_NAMES = ("speaker", "person", "org", "place", "source", "article", "quote_kind")


def build_request(
    query: str, kw: dict[str, Any], *, mode: str = "passages", facets: tuple = (),
    limit: int = 10, page: int = 1, sort: str = "relevance", highlight: bool = True,
    facet_size: int = 10, match: str = "most", group: str = "none",
) -> Any:  # fmt: skip
    from ..requests import SearchRequest

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
        match=match,
        group=group,
    )


def match_options(fn: Callable) -> Callable:
    """--match and --group, shared by ``search`` and ``quotes``."""
    fn = click.option(
        "--group",
        type=click.Choice(["none", "article", "cluster"]),
        default="none",
        show_default=True,
        help="'article': the best hit of each article, with the count of its others; "
        "'cluster' (quotes): the best copy of each quotation carried by several articles.",
    )(fn)
    fn = click.option(
        "--match", type=click.Choice(["most", "all", "any"]), default="most", show_default=True,
        help="How plain words combine: 'most' needs one word that is not a stop word and "
        "ranks hits with more of the words first; 'all' needs every word; 'any' one word. "
        "Operators, +word, -word, \"phrases\" and field: stay strict.",
    )(fn)  # fmt: skip
    return fn


def no_grouping_with_all(group: str) -> None:
    """--all streams every record, one per hit: grouping does not apply."""
    if group != "none":
        raise click.UsageError("--all writes every record: it cannot be used with --group")


def print_notes(result: dict[str, Any]) -> None:
    """Did you mean (with its hit count) and the offered interpretations, on stderr."""
    if result.get("suggestion"):
        n = result.get("suggestion_total")
        count = f" ({n} {'match' if n == 1 else 'matches'})" if n is not None else ""
        click.echo(f"Did you mean: {result['suggestion']}{count}", err=True)
    for it in result.get("interpretations") or []:
        flag = f"--{it['facet']} {shlex.quote(it['value'])}"
        cmd = "quotes" if it["mode"] == "quotes" else "search"
        q = f" {shlex.quote(it['q'])}" if it["q"] else ""
        click.echo(f"Also: {it['label']} ({it['count']}): newsquarry {cmd}{q} {flag}", err=True)


def run_request(obj: Context, request: Any, url: str | None) -> dict[str, Any]:
    """Run a search locally or against a running API; the same dict either way."""
    url = url or obj.url
    if url:
        from .remote import RemoteClient

        return RemoteClient(url).search(request)
    ensure_index(obj)
    return obj.store().search(request).to_dict()


def ensure_index(obj: Context, serving: bool = False) -> None:
    """Open the index; at the default folder, fill an empty one with the bundled corpus.

    So a new user gets an answer at once. Any other folder must hold an index
    already (NoIndex: "no index at DIR"), except for ``serve``, which starts on a
    new, empty index there (articles come through the API's writes).
    """
    if not obj.default_location:
        try:
            obj.store(create=False)
        except NoIndex:
            if not serving:
                raise
            click.echo(f"No index at {obj.index_dir}: serving a new, empty index.", err=True)
        obj.store().searcher()  # opens (and checks) every segment: damage is reported here
        return
    store = obj.store()  # first: it imports Whoosh without the modules it never uses
    from ..store import WhooshStore

    # a live document count from the segments' metadata: ``stats()`` would walk them all
    if isinstance(store, WhooshStore) and store.searcher().doc_count() == 0:
        from ..corpus import bundled_corpus_path
        from ..indexer import index_paths

        click.echo(f"No index yet at {obj.index_dir}: indexing the bundled corpus…", err=True)
        report = index_paths(store, [str(bundled_corpus_path())])
        click.echo(
            f"Indexed {plural(len(report.added), 'article')}, "
            f"{plural(report.passages, 'passage')}.",
            err=True,
        )


def binary_stdout() -> Any:
    """Standard output for bytes (records are written as the API encodes them)."""
    sys.stdout.flush()
    return sys.stdout.buffer


def stream_all(obj: Context, request: Any, url: str | None, fmt: str | None) -> int:
    """Write every hit as JSON Lines or CSV, a page at a time: the API's export.

    Locally there is no page depth limit (the API's protection against deep
    paging); against a server, the server's export applies its own. The exit
    code is 1 when nothing matched, like a search.
    """
    if fmt not in ("jsonl", "csv"):
        raise click.UsageError("--all writes --jsonl or --csv (one record at a time): add one")
    if request.page != 1:
        raise click.UsageError("--all writes every page: leave out --page")
    if request.facets:
        raise click.UsageError("--all writes records only: leave out --facet")
    out = binary_stdout()
    if url:
        from .remote import RemoteClient

        total, chunks = RemoteClient(url).export(request, fmt)
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        return 0 if total else EXIT_NO_RESULTS
    from ..export import Export, records

    ensure_index(obj)
    settings = dict(obj.settings, max_page_depth=sys.maxsize)
    export = Export(obj.store(), request, settings)
    for chunk in records(export.hits(), fmt, request.mode):
        out.write(chunk)
    out.flush()
    if export.partial:
        click.echo(
            f"Warning: the time limit cut a page short: {export.written} of {export.total} "
            "written (NEWSQUARRY_SEARCH_TIME_LIMIT gives more time).",
            err=True,
        )
    return 0 if export.total else EXIT_NO_RESULTS


def note_truncated(result: dict[str, Any]) -> None:
    """On stderr: how many of how many a page of --json/--jsonl/--csv output holds."""
    grouped = (result.get("request") or {}).get("group") == "article"
    shown = len(result["hits"])
    total = result.get("total_articles", result["total"]) if grouped else result["total"]
    first = (result["page"] - 1) * result["per_page"]
    if first + shown >= total:
        return
    noun = "quotation" if result["request"]["mode"] == "quotes" else "passage"
    click.echo(
        f"Note: {shown} of {plural(total, noun)} written (page {result['page']} of "
        f"{result['total_pages']}); --all writes every one.",
        err=True,
    )


def emit(result: dict[str, Any], fmt: str | None, show_facets: bool) -> int:
    """Print a search result in the chosen format; the exit code (1 when nothing found).

    --jsonl and --csv write the API's records (``search.export``): the same
    columns and bytes as ``format=jsonl|csv`` on the API.
    """
    if fmt == "json":
        click.echo(to_json(result))
    elif fmt in ("jsonl", "csv"):
        from ..export import records

        out = binary_stdout()
        for chunk in records(result["hits"], fmt, result["request"]["mode"]):
            out.write(chunk)
        out.flush()
    else:
        console = make_console()
        if result["hits"]:
            print_hits(console, result, show_facets=show_facets)
        else:
            req = result.get("request") or {}
            if req.get("match") == "all" and req.get("q"):
                click.echo(
                    "No matches: no passage holds every word. --match most finds passages "
                    "holding some of them.", err=True,
                )  # fmt: skip
            else:
                click.echo("No matches.", err=True)
        print_notes(result)
    if fmt:
        note_truncated(result)
    return 0 if result["total"] else EXIT_NO_RESULTS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--index",
    envvar="NEWSQUARRY_INDEX",
    type=click.Path(file_okay=False),
    help="Index folder [env: NEWSQUARRY_INDEX; default: ~/.local/share/newsquarry/index].",
)
@click.option(
    "--url",
    envvar="NEWSQUARRY_URL",
    help="Ask a running newsquarry API (search, quotes, facets, show, stats) [env: NEWSQUARRY_URL].",
)
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.version_option(package_name="newsquarry")
@click.pass_context
def cli(ctx: click.Context, index: str | None, url: str | None, debug: bool) -> None:
    """newsquarry: search news at the level of the passage, and find who said what.

    \b
    Examples:
      newsquarry search torture
      newsquarry search 'Guaido AND army' --facet person
      newsquarry quotes torture --speaker "Raúl Daniel Alvarenga"
      newsquarry index ~/news/ && newsquarry stats

    --index and --url may also follow the command:
    newsquarry search x --index DIR
    """
    ctx.obj = Context(index, debug, url)
    given = ctx.get_parameter_source("url") == click.core.ParameterSource.COMMANDLINE
    if given and ctx.invoked_subcommand not in URL_COMMANDS:
        raise click.UsageError(f"--url: `{ctx.invoked_subcommand}` works on a local index only")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--force", is_flag=True, help="Re-index articles even when unchanged.")
@click.option(
    "--commit-every",
    type=click.IntRange(1),
    default=SETTINGS_BY_NAME["commit_every"].default,
    envvar="NEWSQUARRY_COMMIT_EVERY",
    show_default=True,
    show_envvar=True,
    help="Articles per commit (an interruption loses at most one batch).",
)
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
      newsquarry index archive.jsonl --cluster tcp://scheduler-host:8786
    """
    from ..errors import ClusterError
    from ..indexer import default_enricher, default_processes, index_paths, optimize

    if cluster and processes:
        raise click.UsageError("--processes is for local workers; --cluster uses the cluster's")
    store = obj.store()
    reporter = ProgressReporter()
    executor = None
    if cluster:
        try:
            from ..enrich.cluster import DaskExecutor, enrichment_fingerprint
        except ImportError as exc:
            reporter.close()
            fail(str(exc), 2)
        import logging

        from ..enrich.nlp import load_nlp

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
            f"Interrupted: {plural(done, 'article')} committed before the interrupt; "
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
    store.wait_for_merges()  # merges due after the last commits run in the background
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
            f"{progress.read} read · {progress.enriched} enriched · "
            f"{progress.committed} committed · "
            f"{len(report.unchanged)} unchanged · {len(report.failed)} failed · "
            f"{progress.rate:.1f} articles/s"
        )
        if getattr(progress, "total", None):  # ETA from the up-front count (see indexer)
            eta = progress.eta
            left = "…" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
            msg += f" · {progress.processed}/{progress.total} done · ETA {left}"
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
    "-n", "--limit", type=Limit(), default=10, show_default=True,
    help="Results per page, or 'all' (see --all).",
)  # fmt: skip
@click.option("--page", type=click.IntRange(1), default=1, show_default=True)
@click.option("--no-highlight", is_flag=True, help="Do not compute highlights.")
@all_option
@match_options
@output_options
@click.pass_obj
@handle_errors
def search(obj: Context, query: str, facets: tuple[str, ...], facet_size: int, sort: str,
           limit: int | str, page: int, no_highlight: bool, everything: bool, fmt: str | None,
           match: str, group: str, **kw: Any) -> None:  # fmt: skip
    """Search passages.

    QUERY uses AND/OR/NOT, "phrases", prefix*, fuzzy~ and fields such as
    speaker:, person:, org:, place:, title:, quote:, source:, date:.

    \b
    Examples:
      newsquarry search torture
      newsquarry search '"safe harbor"'
      newsquarry search 'Guaido AND army' --facet person --facet org
      newsquarry search aid --speaker "Donald Trump" --json
      newsquarry search torture --all --csv > torture.csv
      newsquarry search "soldiers tortured in Venezuela" --group article
      newsquarry search "guard caracas" --match all
    """
    everything = everything or limit == "all"
    request = build_request(
        query, kw, facets=facets, limit=10 if everything else limit, page=page, sort=sort,
        highlight=not no_highlight, facet_size=facet_size, match=match, group=group,
    )  # fmt: skip
    if everything:
        no_grouping_with_all(group)
        sys.exit(stream_all(obj, request, kw.get("url"), fmt))
    result = run_request(obj, request, kw.get("url"))
    sys.exit(emit(result, fmt, show_facets=bool(facets)))


@cli.command()
@click.argument("query", required=False, default="")
@filter_options
@click.option(
    "--sort",
    type=click.Choice(["relevance", "date", "-date"]),
    default="relevance",
    show_default=True,
)
@click.option(
    "-n", "--limit", type=Limit(), default=10, show_default=True,
    help="Results per page, or 'all' (see --all).",
)  # fmt: skip
@click.option("--page", type=click.IntRange(1), default=1, show_default=True)
@all_option
@match_options
@output_options
@click.pass_obj
@handle_errors
def quotes(obj: Context, query: str, sort: str, limit: int | str, page: int, everything: bool,
           fmt: str | None, match: str, group: str, **kw: Any) -> None:  # fmt: skip
    """List quotations with their speakers, optionally matching QUERY.

    \b
    Examples:
      newsquarry quotes torture
      newsquarry quotes --speaker "Harry Solano"
      newsquarry quotes --speaker Alvarenga --kind direct --json
      newsquarry quotes --speaker "Harry Solano" --all --csv > solano.csv
      newsquarry quotes "fair price" --group cluster
    """
    everything = everything or limit == "all"
    request = build_request(
        query, kw, mode="quotes", limit=10 if everything else limit, page=page, sort=sort,
        match=match, group=group,
    )  # fmt: skip
    if everything:
        no_grouping_with_all(group)
        sys.exit(stream_all(obj, request, kw.get("url"), fmt))
    result = run_request(obj, request, kw.get("url"))
    sys.exit(emit(result, fmt, show_facets=False))


@cli.command()
@click.argument("query", required=False, default="")
@filter_options
@click.option(
    "--facet",
    "targets",
    multiple=True,
    type=click.Choice(["person", "org", "place", "speaker", "source"]),
    help="Facets to count (repeatable) [default: person, org, place, speaker].",
)
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(1, 100),
    default=10,
    show_default=True,
    help="Values per facet and level.",
)
@output_options
@click.pass_obj
@handle_errors
def cooccur(obj: Context, query: str, targets: tuple[str, ...], limit: int, fmt: str | None,
            **kw: Any) -> None:  # fmt: skip
    """Who and what appears with a selection, in the same passage and the same article.

    Select with filters (and optionally QUERY); the selection itself is left out.

    \b
    Examples:
      newsquarry cooccur --person "Juan Guaidó"
      newsquarry cooccur --speaker "Harry Solano" --facet speaker --json
      newsquarry cooccur aid --place Venezuela --facet org --csv
    """
    from ..cooccurrence import DEFAULT_TARGETS

    request = build_request(query, kw)
    chosen = list(targets) or list(DEFAULT_TARGETS)
    url = kw.get("url") or obj.url
    if url:
        from .remote import RemoteClient

        result = RemoteClient(url).cooccurrence(request, chosen, limit)
    else:
        from ..cooccurrence import cooccurrence

        ensure_index(obj)
        result = cooccurrence(obj.store(), request, chosen, limit, obj.settings).to_dict()
        result.pop("request", None)
    rows = [
        {"facet": name, "level": level, "value": v["value"], "count": v["count"]}
        for name, facet in result["facets"].items()
        for level in ("passage", "article")
        for v in facet[level]
    ]
    if fmt == "json":
        click.echo(to_json(result))
    elif fmt == "jsonl":
        for line in jsonl_lines(rows):
            click.echo(line)
    elif fmt == "csv":
        click.echo(to_csv(rows, ["facet", "level", "value", "count"]), nl=False)
    else:
        print_cooccurrence(make_console(), result)
    sys.exit(0 if rows else EXIT_NO_RESULTS)


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

        from ..searching import facet_values

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
@click.option(
    "--article",
    "force_article",
    is_flag=True,
    help="ITEM_ID is an article id even if it looks like a passage id.",
)
@click.option(
    "--url", default=group_url, help="Ask a running newsquarry API [env: NEWSQUARRY_URL]."
)
@click.pass_obj
@handle_errors
def show(obj: Context, item_id: str, as_json: bool, force_article: bool, url: str | None) -> None:
    """Show one passage (ARTICLE#pN) or one article with its passages.

    Ids are matched exactly as given (quote them in the shell; put `--` before an id
    that starts with "-").

    \b
    Examples:
      newsquarry show '000_e23b3335c9472580#p4'
      newsquarry show 000_e23b3335c9472580 --json
    """
    if url:
        from .remote import RemoteClient

        source: Any = RemoteClient(url)
        get_passage, get_article = source.passage, source.article
    else:
        ensure_index(obj)
        source = obj.store()
        get_passage, get_article = source.get_passage, source.get_article
    # ids are data (search.ids): an article may itself be called "x#p2", so an id shaped
    # like a passage id is looked up as a passage first, then as an article
    is_passage = not force_article and PASSAGE_ID.search(item_id) is not None
    if is_passage:
        try:
            record = get_passage(item_id)
        except NotFound:
            is_passage = False
    if not is_passage:
        record = get_article(item_id)
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
@click.option(
    "--url", default=group_url, help="Ask a running newsquarry API [env: NEWSQUARRY_URL]."
)
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


@cli.command()
@click.option(
    "--search", "search_text", default="", help="Only pairs naming this (accents ignored)."
)
@click.option(
    "--facet",
    type=click.Choice(["person", "org", "place", "speaker"]),
    help="Only aliases seen in this facet.",
)
@click.option("--rebuild", is_flag=True, help="Recompute the table from the stored passages.")
@click.option("--json", "as_json", is_flag=True, help="Print the pairs as JSON.")
@click.pass_obj
@handle_errors
def aliases(
    obj: Context, search_text: str, facet: str | None, rebuild: bool, as_json: bool
) -> None:
    """The alias table: which names are shown, counted and filtered as which.

    Aliases are learnt from the articles as they are indexed (acronyms, spelling
    variants, a surname alone); the override file (its path is printed) holds your
    own, one "alias = canonical" per line, and "name = name" keeps a name apart.
    Changes apply to the next search, with no re-indexing.

    \b
    Examples:
      newsquarry aliases
      newsquarry aliases --search fed --facet org
      newsquarry aliases --rebuild
    """
    from ..aliases import OVERRIDE_HELP
    from ..textnorm import fold

    store = obj.store(create=False)
    if rebuild:
        n = store.rebuild_aliases()
        click.echo(f"alias table rebuilt from {n} articles", err=True)
    path = store.aliases.override_path
    if not path.exists():
        try:
            path.write_text(OVERRIDE_HELP, encoding="utf-8")
        except OSError:
            pass  # a read-only index: the path is still printed
    store.aliases.check_overrides()
    want = fold(search_text)
    rows = [
        {"facet": f, "alias": a, "canonical": c}
        for f, a, c in store.aliases.table().pairs()
        if (facet is None or f == facet) and (not want or want in fold(a) or want in fold(c))
    ]
    if as_json:
        click.echo(to_json({"overrides": str(path), "aliases": rows}))
        return
    for r in rows:
        click.echo(f"{r['facet']:<8} {r['alias']}  ->  {r['canonical']}")
    click.echo(f"{len(rows)} aliases; your overrides: {path}", err=True)


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
    if obj.settings.get("secret"):
        from ..keys import check_secret

        check_secret(str(obj.settings["secret"]))  # gunicorn would refuse it too, less clearly
    port_free_or_fail(host, port)
    ensure_index(obj, serving=True)
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
    help="The server's secret [env: NEWSQUARRY_SECRET, as the server reads it].",
)
@click.pass_obj
@handle_errors
def key(obj: Context, since: str | None, until: str | None, expires_in: str,
        secret: str | None, **kw: Any) -> None:  # fmt: skip
    """Make a scoped read key for an embedder: fixed filters and an expiry.

    Requests made with the key (header X-Newsquarry-Key or ?key=) can narrow
    its filters but never widen them. The key is signed with the server's
    secret: NEWSQUARRY_SECRET, read like the server reads it (or --secret).

    \b
    Examples:
      NEWSQUARRY_SECRET=... newsquarry key --source "News from the world" --expires-in 7d
      newsquarry key --speaker "Harry Solano" --expires-in never
    """
    from ..keys import Scope, check_secret, make_key

    if not secret:
        fail("no server secret: set NEWSQUARRY_SECRET to the server's secret, or pass --secret")
    secret = check_secret(secret)
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
@click.argument("action", type=click.Choice(["status", "start", "stop"]), default="status")
@click.option("--json", "as_json", is_flag=True, help="status as JSON.")
@click.pass_obj
def daemon(obj: Context, action: str, as_json: bool) -> None:
    """Show, start or stop the resident searcher.

    The first `search`, `quotes`, `facets`, `cooccur`, `show` or `stats` on a local
    index starts it in the background: it keeps the index open and warm, and runs the
    next such commands (as this user, with their output, folder and environment) in a
    few milliseconds instead of a new process's few hundred. It exits after 10 idle
    minutes (NEWSQUARRY_DAEMON_IDLE, in seconds). NEWSQUARRY_DAEMON=0 turns it off.
    Exit code 3: none is running (status, stop).

    \b
    Examples:
      newsquarry daemon                  # is one running, for which indexes?
      newsquarry daemon start            # start it now, warming the index
      newsquarry daemon stop
    """
    # lazy: start-up time (socket, subprocess, hashlib: for this command only)
    from .control import ask, start_resident
    from .wire import enabled, socket_path

    if action == "start":
        if not enabled():
            fail("NEWSQUARRY_DAEMON is off: unset it (or set it to 1) to start one")
        folder = os.path.abspath(os.path.expanduser(obj.index_dir))
        if ask("status") is None:
            start_resident(folder)
        deadline = time.monotonic() + 120
        while (reply := ask("status")) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if reply is None:
            fail(
                f"the resident searcher did not start (see {socket_path().with_suffix('.log')})",
                5,
            )
        click.echo(f"Resident searcher running (pid {reply['pid']}).")
        return
    reply = ask(action)
    if reply is None:
        if as_json:
            click.echo(to_json({"status": "stopped"}))
        else:
            click.echo("No resident searcher is running.")
        sys.exit(3)
    if as_json:
        click.echo(to_json(reply))
    elif action == "stop":
        click.echo(f"Resident searcher stopping (pid {reply['pid']}).")
    else:
        up = time.time() - reply["started"]
        click.echo(f"Resident searcher: pid {reply['pid']}, up {up / 60:.0f} min, "
                   f"{plural(reply['served'], 'command')} served, idle "
                   f"{reply['idle_seconds']:.0f} of {reply['idle_limit']:.0f} s.")  # fmt: skip
        for entry in reply["indexes"]:
            click.echo(f"  {entry['folder']} (generation {entry['generation']})")


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
    from ..indexer import optimize

    result = optimize(obj.store(create=False))
    click.echo(
        f"Optimized: {result['segments_before']} -> {result['segments_after']} "
        f"segments in {result['seconds']:.1f} s."
    )


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
@handle_errors
def check(obj: Context, as_json: bool) -> None:
    """Verify every file of the index against its checksum (exit 0 clean, 5 damaged).

    Names each damaged file and the articles it held. Reads the whole index
    once; safe while other processes read or write it.

    \b
    Examples:
      newsquarry check
      newsquarry check --json
    """
    from ..integrity import check_index, toc_generations

    path = obj.index_dir
    if not os.path.isdir(path):
        fail(f"no index at {path}", EXIT_DAMAGED)
    for _ in range(5):  # a commit during the check deletes files it was reading: check again
        before = toc_generations(path)[:1]
        report = check_index(path)
        if toc_generations(path)[:1] == before:
            break
    if as_json:
        click.echo(to_json(report.to_dict()))
    else:
        mb = report.bytes_checked / 1e6
        click.echo(
            f"{path}: generation {report.generation}, {report.files_checked} files "
            f"({mb:.1f} MB) checked."
        )
        for note in report.notes:
            click.echo(f"note: {note}")
        for p in report.problems:
            click.echo(f"damaged: {p.file} ({p.kind}): {p.problem}")
            if p.articles is not None:
                shown = ", ".join(p.articles[:20]) + (" …" if len(p.articles) > 20 else "")
                click.echo(f"  holds {len(p.articles)} articles: {shown or '(none)'}")
            elif p.kind == "segment":
                click.echo("  the articles it held cannot be named (its article list is damaged)")
            elif p.kind == "toc":
                click.echo(
                    "  every read goes through it; `repair` rebuilds it from the segments "
                    "(their articles are kept)"
                )
            elif p.kind == "manifest":
                click.echo(
                    "  answers do not depend on it, but writes refuse until `repair` rebuilds it"
                )
            elif p.kind == "articles list":
                click.echo("  answers do not depend on it (it names a segment's articles)")
        if report.ok:
            click.echo("No damage found.")
        else:
            click.echo(
                "The index is damaged. Run `newsquarry repair` (with the original files, "
                "to recover the articles named above) to rebuild it; see docs/reliability.md."
            )
    sys.exit(0 if report.ok else EXIT_DAMAGED)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--processes",
    type=click.IntRange(1),
    default=None,
    help="Worker processes for the NLP step of articles read from PATHS.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_obj
@handle_errors
def repair(obj: Context, paths: tuple[str, ...], processes: int | None, as_json: bool) -> None:
    """Rebuild a damaged index from what survives, and from PATHS if given.

    Every article of an undamaged segment is kept as it was indexed. Articles
    held by damaged files are lost unless their original files are given again
    as PATHS (files and folders, as for `index`): those are indexed again.
    Says what could not be recovered; exit 0 when the index is clean afterwards.

    \b
    Examples:
      newsquarry check
      newsquarry repair
      newsquarry repair ~/news/archive.jsonl
    """
    from ..indexer import default_enricher, default_processes
    from ..repair import repair as run_repair

    # spaCy loads only when there are files to enrich again
    enricher = default_enricher(n_process=processes or default_processes()) if paths else None
    report = run_repair(obj.index_dir, paths, enricher=enricher,
                        timeout=obj.settings["lock_timeout"],
                        commit_every=obj.settings["commit_every"])  # fmt: skip
    if as_json:
        click.echo(to_json(report.to_dict()))
    elif not report.repaired:
        click.echo("No damage found: nothing to repair.")
    else:
        for f in report.failed:
            click.echo(f"failed: {f.get('path') or f.get('id')}: {f['reason']}", err=True)
        click.echo(
            f"Repaired: generation {report.generation_before} -> {report.generation_after}; "
            f"{report.kept} articles kept, {len(report.recovered)} recovered from files, "
            f"{len(report.added)} added from files."
        )
        if report.lost:
            shown = ", ".join(report.lost[:20]) + (" …" if len(report.lost) > 20 else "")
            click.echo(f"Not recovered ({len(report.lost)} articles): {shown}")
            click.echo("Give their original files to `newsquarry index` to add them back.")
        for seg in report.unknown:
            click.echo(f"Lost articles cannot be named for damaged segment {seg}.")
    sys.exit(0 if report.clean_after else EXIT_DAMAGED)


def _late_index(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--index`` given after the command: it wins over the one before it and the env."""
    obj = ctx.find_object(Context)
    if value is not None and obj is not None:
        obj.settings["index"] = value


# every command that uses an index also takes --index after its name (one definition)
for _name in ("index", "search", "quotes", "facets", "cooccur", "show", "stats", "delete",
              "serve", "optimize", "check", "repair"):  # fmt: skip
    cli.commands[_name].params.append(
        click.Option(
            ["--index"],
            type=click.Path(file_okay=False),
            expose_value=False,
            callback=_late_index,
            is_eager=True,
            help="Index folder, as before the command [env: NEWSQUARRY_INDEX].",
        )  # fmt: skip
    )


def main() -> None:
    """Console-script entry point (through ``search.launch``).

    Not click's standalone mode only for Ctrl-C: click turns it into "Aborted!" and exit
    code 1, where the documented code is 130 (as a shell reports a command it
    interrupted); usage errors and ``--help`` behave as click makes them.
    """
    try:
        code = cli.main(prog_name="newsquarry", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("Interrupted.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)  # an int only from click's Exit (--help)


if __name__ == "__main__":
    main()

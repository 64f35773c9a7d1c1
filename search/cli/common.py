"""What every command shares: the Context (settings, the store), library errors turned
into the documented exit codes and one-line messages, and the shared options.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any

import click

# numpy's OpenBLAS starts a thread per core when numpy is imported, and they spin for a
# while: a third of a CLI search's CPU time, on a second core, for linear algebra that
# newsquarry never does. One thread, unless the user chose otherwise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from newsquarry.search.cli.output import plural
from newsquarry.search.core.config import default_index_dir, load_settings
from newsquarry.search.core.errors import READ_DAMAGE, NewsquarryError, NoIndex

# Exit codes: 0 results found / done; 1 the search ran and found nothing (like
# grep); 2 usage error or bad query; 3 not found; 4 index busy (another writer);
# 5 index unavailable (none at the folder given) or damaged (``check`` found
# damage), or server unreachable / not newsquarry; 6 search timed out; 7 not enough
# disk space (for a merge, ``optimize`` or ``repair``); 130 interrupted (Ctrl-C); 143
# terminated (SIGTERM: systemd, ``docker stop``, ``timeout``), ``index`` keeping its commits.
# Errors are one line on stderr, naming the option typed; ``--debug`` shows the traceback.
EXIT_NO_RESULTS = 1
EXIT_DAMAGED = 5
EXIT_NO_SPACE = 7
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a command the signal stopped
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a tool killed by a closed pipe exits


# index folder (absolute) -> its open, warm store: set by the resident searcher
# (``search.cli.daemon``) in the child that runs a command, empty in any other process
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
            from newsquarry.search.engine.light import install  # lazy: start-up time

            install()  # Whoosh without the modules it would import for nothing
            from newsquarry.search.engine.store import WhooshStore  # lazy: start-up time

            self._store = WhooshStore(
                self.index_dir, create=create, lock_timeout=self.settings["lock_timeout"]
            )
        return self._store


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be (``stop_on_sigterm``): the same clean stop.

    A ``KeyboardInterrupt``, so every path that stops cleanly on Ctrl-C (the indexer
    discarding the batch in progress, the enricher's workers stopped, the cluster's tasks
    cancelled) does the same on SIGTERM; only the message and the exit code differ.
    """


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM raises ``Terminated`` in the main thread while inside, once: a second
    SIGTERM during the clean stop is ignored (a supervisor's SIGKILL still ends it).
    The previous handler is back on the way out. Worker processes forked inside put the
    default back (``enrich.executors``), so the pool's own SIGTERM still ends them."""
    import signal  # lazy: start-up time

    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread
        return

    def _raise(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
            message = option_message(exc, ctx.info_name)
            position = getattr(exc, "position", None)
            # the position once: most query errors already say where
            where = f" (at character {position})" if position and "position" not in message else ""
            fail(f"{message}{where}", exc.exit_code)
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
    """Every filter of the library as a flag; repeat a flag to OR values (``--all-of``: AND)."""
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
        click.option("--where", "where", multiple=True, metavar="FIELD=VALUE",
                     help="Only articles whose declared field has this value (repeatable; "
                          "values of one field are ORed): --where category=sport, "
                          "--where pages=10..20."),
        click.option("--all-of", "all_of", multiple=True, metavar="FACET",
                     help="Values of this filter must all hold, not any one (repeatable): "
                          "--org NATO --org UN --all-of org finds passages naming both."),
        click.option("--dedupe", type=click.Choice(["none", "story"]), default="none",
                     help="'story': count facet values once per story, however many "
                          "syndicated copies carry them."),
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
    from newsquarry.search.core.requests import SearchRequest  # lazy: start-up time

    filters = {name: list(kw[name]) for name in FILTER_NAMES if kw.get(name)}
    for item in kw.get("where") or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.UsageError(f"--where takes FIELD=VALUE, not {item!r}")
        filters.setdefault(name.strip(), []).append(value)
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
        all_of=list(dict.fromkeys(kw.get("all_of") or ())),
        dedupe=kw.get("dedupe") or "none",
        retrieval=kw.get("retrieval"),
        similar_to=kw.get("like") or "",
    )


def match_options(fn: Callable) -> Callable:
    """--match, --group and --retrieval, shared by ``search`` and ``quotes``."""
    fn = click.option(
        "--retrieval",
        type=click.Choice(["auto", "keyword", "semantic", "hybrid"]),
        default=None,
        help="How hits are found: by their words (keyword), by meaning (semantic), or both "
        "(hybrid); auto (default): hybrid when the semantic extra is installed and the "
        "index has vectors (`newsquarry embed`), else keyword.",
    )(fn)
    fn = click.option(
        "--group",
        type=click.Choice(["none", "article", "cluster", "story"]),
        default="none",
        show_default=True,
        help="'article': the best hit of each article, with the count of its others; "
        "'cluster' (quotes): the best copy of each quotation carried by several articles; "
        "'story': the best hit of each story (an article and its syndicated copies).",
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


# Only the default index folder is created and filled with the bundled corpus on
# first use; any other folder (``--index``, ``NEWSQUARRY_INDEX``) must hold an
# index already (``newsquarry index`` makes one), so a mistyped path is an error,
# not a new index answering "No matches.".
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
    from newsquarry.search.engine.store import WhooshStore  # lazy: start-up time

    # a live document count from the segments' metadata: ``stats()`` would walk them all
    if isinstance(store, WhooshStore) and store.searcher().doc_count() == 0:
        from newsquarry.search.ingest.corpus import bundled_corpus_path  # lazy: start-up time
        from newsquarry.search.ingest.indexer import index_paths

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


def _late_index(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--index`` given after the command: it wins over the one before it and the env."""
    obj = ctx.find_object(Context)
    if value is not None and obj is not None:
        obj.settings["index"] = value


def index_after_command() -> click.Option:
    """The ``--index`` every command that uses an index also takes after its name."""
    return click.Option(
        ["--index"],
        type=click.Path(file_okay=False),
        expose_value=False,
        callback=_late_index,
        is_eager=True,
        help="Index folder, as before the command [env: NEWSQUARRY_INDEX].",
    )  # fmt: skip

"""The write commands: ``index`` (with its progress reporter), ``delete`` and
``optimize``.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from newsquarry.search.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_NO_RESULTS,
    EXIT_TERMINATED,
    Context,
    Terminated,
    fail,
    handle_errors,
    stop_on_sigterm,
)
from newsquarry.search.cli.output import make_console, plural
from newsquarry.search.core.config import SETTINGS_BY_NAME
from newsquarry.search.core.errors import ClusterError


@click.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--force", is_flag=True, help="Re-index articles even when unchanged.")
@click.option(
    "--field",
    "field_specs",
    multiple=True,
    metavar="NAME:KIND",
    help="Declare an extra field of the data as a filter and facet (repeatable); KIND is "
    "keyword (default), date or number: --field category:keyword. Kept in the index folder; "
    "declaring one rewrites nothing (every extra field is stored already), so it may be "
    "given with no files.",
)
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
def index(obj: Context, paths: tuple[str, ...], force: bool, field_specs: tuple[str, ...],
          commit_every: int | None,
          processes: int | None, batch_size: int, cluster: str | None, cluster_wait: float,
          count: bool, optimize_after: bool) -> None:  # fmt: skip
    """Index articles from files and folders (read recursively).

    Formats: .txt, .md, .jsonl, .html (see the README). Unchanged articles are
    skipped, changed ones replaced. Files that cannot be read are listed with
    the reason; the exit code is non-zero only if nothing could be indexed.

    Large imports: articles are enriched by worker processes while this one
    writes, committed every --commit-every articles. Ctrl-C (exit 130) or SIGTERM
    (exit 143) keeps everything committed; the same command again skips it and continues. With --cluster
    the workers are those of a Dask cluster, on as many machines as it has.

    \b
    Examples:
      newsquarry index corpus/
      newsquarry index archive.jsonl --processes 2 --optimize
      newsquarry index archive.jsonl --cluster tcp://scheduler-host:8786
    """
    if cluster and processes:
        raise click.UsageError("--processes is for local workers; --cluster uses the cluster's")
    if field_specs:
        _declare(obj, field_specs)
    if not paths:
        if field_specs:
            return
        raise click.UsageError("Missing argument 'PATHS...'.")
    with stop_on_sigterm():  # SIGTERM stops it as Ctrl-C does: commits kept, one line
        _index(obj, paths, force, commit_every, processes, batch_size, cluster, cluster_wait,
               count, optimize_after)  # fmt: skip


def _declare(obj: Context, specs: tuple[str, ...]) -> None:
    from newsquarry.search.core import fields  # lazy: start-up time

    try:
        new = [fields.parse_spec(s) for s in specs]
    except fields.FieldError as exc:
        raise click.UsageError(f"--field: {exc}") from None
    store = obj.store()
    try:
        declared = fields.declare(store.path, new)
    except fields.FieldError as exc:
        fail(str(exc), 2)
    click.echo("fields: " + ", ".join(f"{s.name} ({s.kind})" for s in declared), err=True)


def _index(obj: Context, paths: tuple[str, ...], force: bool, commit_every: int | None,
           processes: int | None, batch_size: int, cluster: str | None, cluster_wait: float,
           count: bool, optimize_after: bool) -> None:  # fmt: skip
    from newsquarry.search.ingest.indexer import (  # lazy: start-up time
        default_enricher,
        default_processes,
        index_paths,
        optimize,
    )

    store = obj.store()
    reporter = ProgressReporter()
    executor = None
    if cluster:
        try:
            # lazy: an optional dependency (newsquarry[cluster]), and start-up time
            from newsquarry.search.ingest.enrich.cluster import DaskExecutor, enrichment_fingerprint
        except ImportError as exc:
            reporter.close()
            fail(str(exc), 2)
        import logging  # lazy: start-up time

        from newsquarry.search.ingest.enrich.nlp import load_nlp  # lazy: start-up time (spaCy)

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
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        reporter.close()
        report = getattr(exc, "report", None)
        done = (len(report.added) + len(report.replaced)) if report else 0
        term = isinstance(exc, Terminated)
        click.echo(
            f"{'Terminated' if term else 'Interrupted'}: {plural(done, 'article')} committed "
            f"before the {'SIGTERM' if term else 'interrupt'}; the index is intact. Run the "
            "same command again to continue.",
            err=True,
        )
        sys.exit(EXIT_TERMINATED if term else EXIT_INTERRUPTED)
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
            # lazy: start-up time
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
        # rate and ETA first, and within 80 columns: a narrow terminal cuts the end
        parts = [f"{progress.rate:.1f} articles/s"]
        if getattr(progress, "total", None):  # ETA from the up-front count (see indexer)
            eta = progress.eta
            left = "…" if eta is None else time.strftime("%H:%M:%S", time.gmtime(eta))
            parts += [f"ETA {left}", f"{progress.processed}/{progress.total}"]
        else:
            parts += [f"{progress.read} read", f"{progress.enriched} enriched"]
        parts.append(f"{progress.committed} committed")
        if report.unchanged:
            parts.append(f"{len(report.unchanged)} unchanged")
        if report.failed:
            parts.append(f"{len(report.failed)} failed")
        msg = " · ".join(parts)
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


@click.command()
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


@click.command("optimize")
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
    from newsquarry.search.ingest.indexer import optimize  # lazy: start-up time

    result = optimize(obj.store(create=False))
    click.echo(
        f"Optimized: {result['segments_before']} -> {result['segments_after']} "
        f"segments in {result['seconds']:.1f} s."
    )

"""The maintenance commands: ``check`` (checksums), ``repair`` (rebuild what survives),
``aliases`` (the alias table and its override file) and ``embed`` (vectors for what was
indexed without them).
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict
from typing import Any

import click

from newsquarry.search.cli.common import EXIT_DAMAGED, Context, ensure_index, fail, handle_errors
from newsquarry.search.cli.output import to_json


@click.command()
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
    from newsquarry.search.engine.check import check_index  # lazy: start-up time
    from newsquarry.search.engine.integrity import toc_generations

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
            elif p.kind == "derived":
                click.echo(
                    "  names are counted and filtered through it, so searches refuse until "
                    "`repair` rebuilds it from the stored articles (none is lost)"
                )
        if report.ok:
            click.echo("No damage found.")
        else:
            click.echo(
                "The index is damaged. Run `newsquarry repair` (with the original files, "
                "to recover the articles named above) to rebuild it; see docs/reliability.md."
            )
    sys.exit(0 if report.ok else EXIT_DAMAGED)


@click.command()
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
    from newsquarry.search.ingest.indexer import (  # lazy: start-up time
        default_enricher,
        default_processes,
    )
    from newsquarry.search.ingest.repair import repair as run_repair  # lazy: start-up time

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
        for name in report.rebuilt:
            click.echo(f"Rebuilt {name} from the stored articles.")
        if report.generation_after != report.generation_before:  # segments rebuilt too
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


@click.command()
@click.option(
    "--search", "search_text", default="", help="Only pairs naming this (accents ignored)."
)
@click.option(
    "--facet",
    type=click.Choice(["person", "org", "place", "speaker"]),
    help="Only aliases seen in this facet.",
)
@click.option("--rebuild", is_flag=True, help="Recompute the table from the stored passages.")
@click.option(
    "--weakest",
    type=click.IntRange(min=1),
    help="Only the N aliases of least evidence, weakest first: the ones to review.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the pairs as JSON.")
@click.pass_obj
@handle_errors
def aliases(
    obj: Context,
    search_text: str,
    facet: str | None,
    rebuild: bool,
    weakest: int | None,
    as_json: bool,
) -> None:
    """The alias table: which names are shown, counted and filtered as which.

    Aliases are learnt from the articles as they are indexed (acronyms, spelling
    variants, a surname alone); each is shown with the rule that made it and its
    evidence, the number of articles behind it. The override file (its path is
    printed) holds your own, one "alias = canonical" per line, and "name = name"
    keeps a name apart. Changes apply to the next search, with no re-indexing.

    \b
    Examples:
      newsquarry aliases
      newsquarry aliases --search fed --facet org
      newsquarry aliases --weakest 20
      newsquarry aliases --rebuild
    """
    from newsquarry.search.archive.aliases import OVERRIDE_HELP  # lazy: start-up time

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
    rows = [
        {"facet": f, "alias": a, "canonical": c, "rule": rule, "evidence": n}
        for f, a, c, rule, n in store.aliases.table().listing(facet, search_text, weakest)
    ]
    if as_json:
        click.echo(to_json({"overrides": str(path), "aliases": rows}))
        return
    for r in rows:
        n = r["evidence"]
        evidence = f"{r['rule']}, {n} article{'' if n == 1 else 's'}"
        if r["rule"] == "override":
            evidence = "your override"
        click.echo(f"{r['facet']:<8} {r['alias']}  ->  {r['canonical']}  ({evidence})")
    click.echo(f"{len(rows)} aliases; your overrides: {path}", err=True)


@click.command()
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Encode every passage again, not only those without a vector.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_obj
@handle_errors
def embed(obj: Context, every: bool, as_json: bool) -> None:
    """Add vectors (search by meaning) to what was indexed without them.

    Encodes every passage and quotation that has no vector yet, segment by segment,
    each committed as it is done: interrupted, run it again to go on. Needs the
    semantic extra (pip install 'newsquarry[semantic]'); articles indexed with it
    get their vectors while indexing.

    \b
    Examples:
      newsquarry embed
      newsquarry search desertion --retrieval hybrid
    """
    from newsquarry.search.archive.vectors import embed as run_embed  # lazy: torch

    ensure_index(obj)
    last = [-1.0]

    def progress(p: Any) -> None:
        if as_json or not p.total:
            return
        share = p.done / p.total
        if share - last[0] >= 0.05 or p.done == p.total:
            last[0] = share
            click.echo(f"Embedding: {p.done:,} of {p.total:,} ({share:.0%}), "
                       f"{p.segments} segments committed", err=True)  # fmt: skip

    done = run_embed(obj.store(), progress, every=every)
    if as_json:
        click.echo(to_json(asdict(done)))
    elif not done.total:
        click.echo("Every passage and quotation has its vector: nothing to do.")
    else:
        click.echo(f"Added {done.done:,} vectors in {done.segments} segments.")

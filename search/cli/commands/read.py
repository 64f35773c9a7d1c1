"""The read commands: ``search``, ``quotes``, ``cooccur``, ``facets``, ``show`` and
``stats``, on the local index or a running API (``--url``), and how their results are
printed or streamed.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import asdict
from typing import Any

import click

from newsquarry.search.cli.common import (
    EXIT_NO_RESULTS,
    Context,
    Limit,
    all_option,
    binary_stdout,
    build_request,
    ensure_index,
    filter_options,
    group_url,
    handle_errors,
    match_options,
    no_grouping_with_all,
    output_options,
)
from newsquarry.search.cli.output import (
    jsonl_lines,
    make_console,
    plural,
    print_cooccurrence,
    print_facet,
    print_hits,
    to_csv,
    to_json,
)
from newsquarry.search.core.errors import NotFound

PASSAGE_ID = re.compile(r"#p\d+$")


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
        from newsquarry.search.cli.remote import RemoteClient  # lazy: start-up time

        return RemoteClient(url).search(request)
    ensure_index(obj)
    return obj.store().search(request).to_dict()


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
        from newsquarry.search.cli.remote import RemoteClient  # lazy: start-up time

        total, chunks = RemoteClient(url).export(request, fmt)
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        return 0 if total else EXIT_NO_RESULTS
    from newsquarry.search.query.export import Export, records  # lazy: start-up time

    ensure_index(obj)
    settings = dict(obj.settings, max_page_depth=sys.maxsize)
    export = Export(obj.store(), request, settings)
    for chunk in records(export.hits(), fmt, request.mode, export.fields):
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
        from newsquarry.search.query.export import records  # lazy: start-up time

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


@click.command()
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
      newsquarry search desertion --retrieval hybrid
    """
    list_hits(
        obj, query, kw, fmt, everything or limit == "all", facets=facets, limit=limit,
        page=page, sort=sort, highlight=not no_highlight, facet_size=facet_size, match=match,
        group=group,
    )  # fmt: skip


def list_hits(obj: Context, query: str, kw: dict[str, Any], fmt: str | None, everything: bool,
              **options: Any) -> None:  # fmt: skip
    """Run a search or quotation request and print one page, or stream every hit (--all)."""
    if everything:
        options["limit"] = 10
    request = build_request(query, kw, **options)
    if everything:
        no_grouping_with_all(options["group"])
        sys.exit(stream_all(obj, request, kw.get("url"), fmt))
    result = run_request(obj, request, kw.get("url"))
    sys.exit(emit(result, fmt, show_facets=bool(options.get("facets"))))


@click.command()
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
@click.option(
    "--facet", "facets", multiple=True,
    help="Show counts of quotations for this facet (repeatable): --facet speaker is who is "
    "quoted most.",
)  # fmt: skip
@click.option("--facet-size", type=click.IntRange(1), default=10, show_default=True)
@click.option(
    "--like", metavar="TEXT",
    help="Quotations by meaning, near TEXT (a claim, a paraphrase): who said something "
    "like this, and when first. Needs the semantic extra.",
)  # fmt: skip
@all_option
@match_options
@output_options
@click.pass_obj
@handle_errors
def quotes(obj: Context, query: str, sort: str, limit: int | str, page: int,
           facets: tuple[str, ...], facet_size: int, everything: bool, fmt: str | None,
           match: str, group: str, **kw: Any) -> None:  # fmt: skip
    """List quotations with their speakers, optionally matching QUERY.

    \b
    Examples:
      newsquarry quotes torture
      newsquarry quotes --speaker "Harry Solano"
      newsquarry quotes --speaker Alvarenga --kind direct --json
      newsquarry quotes --speaker "Harry Solano" --all --csv > solano.csv
      newsquarry quotes "fair price" --group cluster
      newsquarry quotes aid --facet speaker     # who is quoted most about aid?
      newsquarry quotes --like "soldiers who talk in public get tortured"
    """
    list_hits(
        obj, query, kw, fmt, everything or limit == "all", mode="quotes", facets=facets,
        limit=limit, page=page, sort=sort, facet_size=facet_size, match=match, group=group,
    )  # fmt: skip


@click.command()
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
    from newsquarry.search.query.cooccurrence import DEFAULT_TARGETS  # lazy: start-up time

    request = build_request(query, kw)
    chosen = list(targets) or list(DEFAULT_TARGETS)
    url = kw.get("url") or obj.url
    if url:
        from newsquarry.search.cli.remote import RemoteClient  # lazy: start-up time

        result = RemoteClient(url).cooccurrence(request, chosen, limit)
    else:
        from newsquarry.search.query.cooccurrence import cooccurrence  # lazy: start-up time

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


@click.command()
@click.argument("facet")
@click.option("--prefix", default="", help="Only values starting with this (accents ignored).")
@click.option("-q", "--query", default="", help="Count under this query.")
@filter_options
@click.option("-n", "--limit", type=click.IntRange(1), default=20, show_default=True)
@click.option(
    "--mode", type=click.Choice(["passages", "quotes"]), default="passages", show_default=True,
    help="Count passages, or quotations (--mode quotes: who is quoted most).",
)  # fmt: skip
@output_options
@click.pass_obj
@handle_errors
def facets(obj: Context, facet: str, prefix: str, query: str, limit: int, mode: str,
           fmt: str | None, **kw: Any) -> None:  # fmt: skip
    """The values of one facet with their counts.

    FACET is one of person, org, place, speaker, article, source, date, quote_kind.

    \b
    Examples:
      newsquarry facets person
      newsquarry facets speaker --prefix al
      newsquarry facets person --query torture --csv
      newsquarry facets speaker --mode quotes --query aid   # who is quoted most on aid
    """
    request = build_request(query, kw, mode=mode, facet_size=limit)
    url = kw.get("url")
    if url:
        from newsquarry.search.cli.remote import RemoteClient  # lazy: start-up time

        result = RemoteClient(url).facet_values(facet, prefix, request, limit)
    else:
        from newsquarry.search.query.searching import facet_values  # lazy: start-up time

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


@click.command()
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
        from newsquarry.search.cli.remote import RemoteClient  # lazy: start-up time

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
        if not url:
            from newsquarry.search.query.storygroups import article_copies  # lazy: start-up

            record["copies"] = article_copies(source, item_id)
    if as_json:
        click.echo(to_json(record))
        return
    from rich.text import Text  # lazy: start-up time

    console = make_console()
    console.print(Text(record.get("title") or record["id"], style="bold"))
    meta = " · ".join(str(x) for x in (record.get("source"), record.get("date"), record["id"]) if x)
    console.print(Text(meta, style="dim"))
    copies = [c for c in record.get("copies") or [] if c["id"] != record["id"]]
    if copies:
        console.print(Text(f"The same story in {len(copies)} other "
                           f"{'article' if len(copies) == 1 else 'articles'}:"))  # fmt: skip
        for c in copies:
            what = "first published" if c.get("first") else f"{round(100 * c['changed'])}% changed"
            where = " · ".join(str(x) for x in (c.get("source"), c.get("date")) if x)
            console.print(Text(f"   {c['id']}  " + " · ".join(x for x in (where, what) if x)))
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


@click.command()
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
        from newsquarry.search.cli.remote import RemoteClient  # lazy: start-up time

        data = RemoteClient(url).stats()
    else:
        data = obj.store(create=False).stats()
    if as_json:
        click.echo(to_json(data))
        return
    shown = {("size" if k == "size_bytes" else k): v for k, v in data.items()}
    extra = shown.pop("fields", None) or {}
    vecs = shown.pop("vectors", None)
    if vecs:  # search by meaning: how much of the index has its vectors
        total = vecs["with"] + vecs["without"]
        shown["vectors"] = (
            f"{vecs['with']:,} of {total:,} passages and quotations ({vecs['model']})"
        )
    width = max(len(k) for k in shown)
    for key, value in shown.items():
        if key == "size":  # bytes in the JSON; here in megabytes, labelled as such
            value = f"{data['size_bytes'] / 1e6:.1f} MB"
        click.echo(f"{key:<{width}}  {value}")
    for f in extra.get("declared") or []:
        click.echo(f"field {f['name']} ({f['kind']})  {plural(f['articles'], 'article')}")
    for f in extra.get("undeclared") or []:
        click.echo(
            f"undeclared field {f['name']}  {plural(f['articles'], 'article')} "
            f"(stored; --field {f['name']}:KIND makes it a filter and facet)"
        )

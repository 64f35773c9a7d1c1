"""Rendering results for the terminal and for scripts.

Scripts get the same records the API returns (``--json``: the whole result;
``--jsonl`` and ``--csv`` are written by ``search.export``, as the API writes
them). People get a
readable list with highlighted matches: colour only on a terminal and never
when ``NO_COLOR`` is set (rich honours both).
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported by the functions that print for people: --json,
    # --jsonl, --csv and --help do without it (20 ms of every command's start)
    from rich.console import Console
    from rich.text import Text

CSV_LIST_SEP = "; "


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 article``, ``2 articles`` (``words`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def make_console(stderr: bool = False) -> Console:
    """A console that writes plain text when not on a terminal or when NO_COLOR is set."""
    from rich.console import Console  # lazy: start-up time

    stream = sys.stderr if stderr else sys.stdout
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(
        file=stream,
        no_color=no_color,
        color_system=None if no_color else "auto",
        highlight=False,
        soft_wrap=not stream.isatty(),
        emoji=False,
    )


def to_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def jsonl_lines(records: Iterable[dict[str, Any]]) -> Iterable[str]:
    for r in records:
        yield json.dumps(r, ensure_ascii=False)


def _flat(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        parts = []
        for v in value:
            if isinstance(v, dict):
                parts.append(v.get("name") or v.get("text") or json.dumps(v, ensure_ascii=False))
            else:
                parts.append(str(v))
        return CSV_LIST_SEP.join(parts)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def to_csv(records: list[dict[str, Any]], columns: list[str]) -> str:
    """CSV with a header; list values joined with '; ', entities by canonical name."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in records:
        w.writerow([_flat(r.get(c)) for c in columns])
    return buf.getvalue()


def _indented(console: Console, text: Text) -> None:
    """Print ``text`` indented by 3; wrapped lines keep the indent on a terminal.

    Off a terminal the line is not wrapped at all (soft wrap), so nothing is
    cut when the output goes to a file or a pager.
    """
    if console.is_terminal:
        from rich.padding import Padding  # lazy: start-up time

        console.print(Padding(text, (0, 0, 0, 3)))
    else:
        text = text.copy()
        text.pad_left(3)
        console.print(text)


def marked(text: str, matches: list[list[int]], style: str = "bold yellow") -> Text:
    """Text with the [start, length] ranges styled."""
    from rich.text import Text  # lazy: start-up time

    t = Text(text)
    for start, length in matches or []:
        t.stylize(style, start, start + length)
    return t


def snippet_window(text: str, matches: list[list[int]], width: int = 320) -> tuple[str, list]:
    """A window of ``text`` around the first match, with the matches shifted into it."""
    if len(text) <= width:
        return text, matches
    first = matches[0][0] if matches else 0
    start = max(0, min(first - width // 4, len(text) - width))
    # move to a word boundary
    if start > 0:
        sp = text.find(" ", start)
        start = sp + 1 if 0 <= sp < first else start
    end = min(len(text), start + width)
    if end < len(text):
        sp = text.rfind(" ", start, end)
        end = sp if sp > start else end
    shifted = [[s - start, n] for s, n in matches if s >= start and s + n <= end]
    return (
        ("…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else ""),
        [[s + (1 if start > 0 else 0), n] for s, n in shifted],
    )


def also_in(hit: dict[str, Any]) -> str:
    """ "Also in 3 other articles, first seen 2020-03-01 in Wire (wheat-first)" for a
    quote hit whose quotation several articles carry."""
    others = hit["cluster_articles"] - 1
    seen = hit["first_seen"]
    when = f" {seen['date']}" if seen.get("date") else ""
    where = f" in {seen['source']}" if seen.get("source") else ""
    noun = "article" if others == 1 else "articles"
    return (
        f"also in {others} other {noun}, first seen{when}{where} ({seen['article_id']})"
        f" · cluster {hit['cluster']}"
    )


def print_hits(console: Console, result: dict[str, Any], show_facets: bool = False) -> None:
    """The human-readable list of passage or quote hits, then the facets if asked."""
    from rich.text import Text  # lazy: start-up time

    hits = result["hits"]
    group = (result.get("request") or {}).get("group")
    first = (result["page"] - 1) * result["per_page"]
    for n, h in enumerate(hits, start=first + 1):
        if "passage_id" in h:  # a quote
            head = Text(f"{n}. ", style="bold")
            head.append(h.get("speaker") or "(unknown speaker)", style="bold cyan")
            head.append(f"  {h['kind']}", style="magenta")
            if h.get("cue"):
                head.append(f" · {h['cue']}", style="magenta")
            console.print(head)
            body = marked(f"“{h['text']}”", [[s + 1, ln] for s, ln in h.get("matches") or []])
            _indented(console, body)
            meta = f"{h.get('title') or ''} · {h.get('date') or 'undated'} · {h['passage_id']}"
            if h.get("similarity") is not None:
                meta += f" · similarity {h['similarity']:.2f}"
            _indented(console, Text(meta, style="dim"))
            if h.get("first_seen") and h.get("cluster_articles", 1) > 1:
                _indented(console, Text(also_in(h), style="dim"))
        else:
            head = Text(f"{n}. ", style="bold")
            head.append(h.get("title") or h["article_id"], style="bold")
            extra = " · ".join(x for x in (h.get("source"), h.get("date")) if x)
            if extra:
                head.append(f"  {extra}", style="dim")
            console.print(head)
            text, matches = snippet_window(h["text"], h.get("matches") or [])
            _indented(console, marked(text, matches))
            chips = Text()
            if h.get("speakers"):
                chips.append("said: " + ", ".join(h["speakers"]), style="cyan")
                chips.append("  ")
            names = list(dict.fromkeys(e["name"] for e in h.get("entities") or []))
            if names:
                chips.append(", ".join(names[:8]), style="green")
            chips.append(f"  [{h['id']}]", style="dim")
            if h.get("matched_by"):
                chips.append(f"  by {h['matched_by']}", style="dim")
            _indented(console, chips)
        if h.get("copies"):
            c = h["copies"]
            _indented(console, Text(f"the same story in {c} other "
                                    f"{'article' if c == 1 else 'articles'}", style="dim"))  # fmt: skip
        if h.get("more_count"):
            more = h["more_count"]
            where = group if group in ("cluster", "story") else "article"
            _indented(
                console,
                Text(f"+ {more} more {'match' if more == 1 else 'matches'} in this {where}: "
                     + ", ".join(h.get("more_ids") or []), style="dim"),
            )  # fmt: skip
        console.print()
    total = result["total"]
    summary = f"{total} {'match' if total == 1 else 'matches'}"
    if group == "article":
        arts = result.get("total_articles", 0)
        summary += f" in {arts} {'article' if arts == 1 else 'articles'}"
    elif group == "cluster":
        n = result.get("total_clusters", 0)
        summary += f" in {n} {'quotation' if n == 1 else 'distinct quotations'}"
    elif group == "story":
        n = result.get("total_stories", 0)
        summary += f" in {n} {'story' if n == 1 else 'stories'}"
    if result.get("total_pages", 1) > 1:
        summary += f" · page {result['page']} of {result['total_pages']}"
    summary += f" · {result.get('took_ms', 0):.0f} ms"
    if result.get("partial"):
        cut = result.get("cut_short") or []
        summary += " · partial (time limit reached" + (f": no {', '.join(cut)})" if cut else ")")
    console.print(Text(summary, style="dim"))
    if show_facets and result.get("facets"):
        console.print()
        for name, facet in result["facets"].items():
            print_facet(console, facet, name)


def print_facet(console: Console, facet: dict[str, Any], name: str | None = None) -> None:
    """One facet: its values with counts, selected ones marked."""
    from rich.text import Text  # lazy: start-up time

    console.print(Text(name or facet["name"], style="bold underline"))
    values = facet.get("values") or []
    width = max((len(v["value"]) for v in values), default=0)
    for v in values:
        mark = "[x] " if v.get("selected") else "    "
        line = Text(f"{mark}{v['value']:<{width}}  ")
        line.append(str(v["count"]), style="cyan")
        console.print(line)
    if not values:
        console.print(Text("    (no values)", style="dim"))
    if facet.get("more"):
        console.print(Text(f"    … {plural(facet['more'], 'more value')}", style="dim"))


def print_cooccurrence(console: Console, result: dict[str, Any]) -> None:
    """Co-occurring values: per facet, the same-passage and same-article lists side by side."""
    from rich.text import Text  # lazy: start-up time

    p, a = result["passages"], result["articles"]
    console.print(Text(
        f"{p} passage{'s' if p != 1 else ''} in {a} article{'s' if a != 1 else ''}", style="dim"
    ))  # fmt: skip
    for name, facet in result["facets"].items():
        console.print()
        console.print(Text(name, style="bold underline"))
        rows = max(len(facet["passage"]), len(facet["article"]))
        if not rows:
            console.print(Text("    (none)", style="dim"))
            continue
        left = [f"{v['value']}  {v['count']}" for v in facet["passage"]]
        width = max([len("same passage")] + [len(x) for x in left])
        console.print(Text(f"    {'same passage':<{width}}    same article", style="dim"))
        for i in range(rows):
            lv = left[i] if i < len(left) else ""
            rv = facet["article"][i] if i < len(facet["article"]) else None
            right = f"{rv['value']}  {rv['count']}" if rv else ""
            console.print(Text(f"    {lv:<{width}}    {right}"))

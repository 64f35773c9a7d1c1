"""Highlights: where a passage matches, as offsets and as a safe HTML snippet.

The passage text is run through the same analyzer as the index (lower case,
accents folded, Porter stems), and every token whose index form is one of the
query's terms is a match. So a search for ``Guaido`` marks "Guaidó" and one
for ``tortured`` marks "torture" and "tortured", and prefix or fuzzy terms
mark the words they expanded to.

Formats: ``matches`` is a list of ``[start, length]`` pairs (characters into
the passage or quote text); ``snippet`` is HTML in which all text is escaped
and matches are wrapped in ``<mark>``, cut to a window around the densest
group of matches with "…" where text was left out.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from newsquarry.search.engine.schema import text_analyzer

SNIPPET_CHARS = 240
_ANALYZER = text_analyzer()


def match_spans(text: str, terms: Iterable[str]) -> list[list[int]]:
    """``[start, length]`` of every token of ``text`` whose index form is in ``terms``."""
    wanted = set(terms)
    if not wanted or not text:
        return []
    spans = []
    for tok in _ANALYZER(text, chars=True, mode="index"):
        if tok.text in wanted:
            end = tok.endchar
            if text[end - 2 : end].lower() in ("'s", "’s"):  # mark "Guaidó" in "Guaidó's"
                end -= 2
            spans.append([tok.startchar, end - tok.startchar])
    return spans


def _window(text: str, spans: list[list[int]], size: int) -> tuple[int, int]:
    """The [start, end) window of about ``size`` chars holding the most matches."""
    if len(text) <= size:
        return 0, len(text)
    best_start, best_n = 0, -1
    for s, _ in spans or [[0, 0]]:
        start = max(0, s - size // 4)
        n = sum(1 for s2, ln in spans if s2 >= start and s2 + ln <= start + size)
        if n > best_n:
            best_start, best_n = start, n
    start = best_start
    end = min(len(text), start + size)
    if end == len(text):
        start = max(0, end - size)
    # move to word boundaries
    if start > 0:
        sp = text.find(" ", start)
        if sp != -1 and sp - start < 20:
            start = sp + 1
    if end < len(text):
        sp = text.rfind(" ", start, end)
        if sp != -1 and end - sp < 20:
            end = sp
    return start, end


def snippet_html(text: str, spans: list[list[int]], size: int = SNIPPET_CHARS) -> str:
    """Escaped HTML of a window of ``text`` with matches in ``<mark>``."""
    start, end = _window(text, spans, size)
    out = ["…"] if start > 0 else []
    pos = start
    for s, ln in spans:
        if s < start or s + ln > end:
            continue
        out.append(html.escape(text[pos:s]))
        out.append("<mark>" + html.escape(text[s : s + ln]) + "</mark>")
        pos = s + ln
    out.append(html.escape(text[pos:end]))
    if end < len(text):
        out.append("…")
    return "".join(out)


def highlight(text: str, terms: Iterable[str], size: int = SNIPPET_CHARS) -> tuple[str, list]:
    """(snippet HTML, match offsets) for one text."""
    spans = match_spans(text, terms)
    return snippet_html(text, spans, size), spans

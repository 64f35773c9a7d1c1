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

From the index (issue 37): a segment that keeps its texts' tokens
(``archive.tokenoffsets``: index form ids and character offsets, recorded when the
segment was written) is highlighted without the analyzer: the query's terms are looked up
in the segment's vocabulary once per search and a hit's matches are the positions of its
tokens with those ids (``indexed_spans``), the same spans ``match_spans`` finds. A segment
without them is highlighted by analysing the text, as before.

Bounded work (issue 33): a text is read once, token by token, and the reading
stops at its ``MAX_MATCHES``-th match or past its first ``SCAN_CHARS``
characters, whichever comes first; the window is found in one pass over the
matches (two pointers, not every match against every other). So a normal
passage (at most ``ingest.passages.MAX_CHARS`` characters) is highlighted
whole, and a 200 KB paragraph costs what its first matches cost: its snippet
and its ``matches`` are those of its first ``MAX_MATCHES`` matches. A
``deadline`` (``postings.Deadline``) is checked as the text is read: past it,
``SearchTimeout`` is raised and the caller leaves the highlights out
(``searching``: the result says ``partial``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from newsquarry.search.engine.schema import text_analyzer
from newsquarry.search.query.proximity import kept_pair_share

SNIPPET_CHARS = 240
MAX_MATCHES = 100  # match positions kept per text: the reading stops at the last one
SCAN_CHARS = 50_000  # characters of a text read for matches at most (~40 ms of analysis)
CHECK_EVERY = 256  # tokens read between two looks at the deadline
_ANALYZER = text_analyzer()


def match_spans(
    text: str,
    terms: Iterable[str],
    *,
    limit: int = MAX_MATCHES,
    scan: int = SCAN_CHARS,
    deadline: Any = None,
) -> list[list[int]]:
    """``[start, length]`` of the tokens of ``text`` whose index form is in ``terms``:
    the first ``limit`` of them, among the tokens starting in the first ``scan``
    characters. ``deadline.check()`` (raising ``SearchTimeout``) is called before
    reading and every ``CHECK_EVERY`` tokens."""
    wanted = set(terms)
    if not wanted or not text:
        return []
    if deadline is not None:
        deadline.check()
    spans: list[list[int]] = []
    for n, tok in enumerate(_ANALYZER(text, chars=True, mode="index"), start=1):
        if tok.startchar >= scan:
            break
        if tok.text in wanted:
            spans.append(_trim_possessive(text, tok.startchar, tok.endchar))
            if len(spans) >= limit:
                break
        if deadline is not None and n % CHECK_EVERY == 0:
            deadline.check()
    return spans


def _trim_possessive(text: str, start: int, end: int) -> list[int]:
    if text[end - 2 : end].lower() in ("'s", "’s"):  # mark "Guaidó" in "Guaidó's"
        end -= 2
    return [start, end - start]


def indexed_spans(
    text: str,
    tokens: tuple[np.ndarray, np.ndarray, np.ndarray],
    wanted: np.ndarray,
    *,
    limit: int = MAX_MATCHES,
    scan: int = SCAN_CHARS,
    deadline: Any = None,
) -> list[list[int]] | None:
    """``match_spans`` of ``text`` from its kept tokens (term ids, starts, ends in text
    order) and the sorted ids of the query's terms; None if the tokens do not fit the text
    (the caller analyses it then)."""
    tid, start, end = tokens
    if len(end) and int(end[-1]) > len(text):
        return None
    if not text or not (wanted.any() if wanted.dtype == bool else len(wanted)):
        return []
    if deadline is not None:
        deadline.check()
    n = int(np.searchsorted(start, scan, side="left"))  # tokens starting before ``scan``
    # ``wanted``: the sorted term ids, or a boolean array over the vocabulary (the faster)
    hit = wanted[tid[:n]] if wanted.dtype == bool else np.isin(tid[:n], wanted)
    found = np.flatnonzero(hit)[:limit]
    return [_trim_possessive(text, s, e)
            for s, e in zip(start[found].tolist(), end[found].tolist(), strict=True)]  # fmt: skip


class _Unfit(Exception):
    """Kept tokens that do not fit the text they were read for."""


class PageHighlighter:
    """The highlights of one search's hits: from the kept tokens of a hit's segment when
    ``source`` (``archive.tokenoffsets.TokenSource``) has them, else by analysis."""

    def __init__(self, terms: Iterable[str], view: Any, source: Any, deadline: Any) -> None:
        self.terms = set(terms)
        self.view, self.source, self.deadline = view, source, deadline
        self._wanted: dict[int, Any] = {}  # segment index -> (kept tokens, term ids) or None
        self._pairs: dict[tuple, list] = {}  # (segment start, pairs) -> their masks

    def _segment(self, docnum: int, need_terms: bool = True) -> tuple[int, Any]:
        i = bisect.bisect_right(self.view.offsets, docnum) - 1
        got = self._wanted.get(i, False)
        if got is False:
            got = None
            if self.source is not None and (self.terms or not need_terms) and i >= 0:
                c = self.view.cols[i]
                kept = self.source.get(c.segid, c.ndocs)
                if kept is not None:
                    ids = kept.term_ids(self.terms)
                    wanted = np.zeros(len(kept.vocab), dtype=bool)
                    wanted[ids] = True
                    got = (kept, wanted if len(ids) else ids)
            self._wanted[i] = got
        return docnum - self.view.offsets[i], got

    def pair_share(
        self, docnum: int, field: str, text_of: Callable[[], str], pairs: list
    ) -> float | None:
        """``proximity.pair_share`` of a document's text from its kept tokens (each pair's
        terms as a boolean array over its segment's vocabulary, made once per segment);
        None without them, or if they do not fit the text. ``text_of()`` gives the text,
        called only when a pair's words are near by the tokens."""
        local, got = self._segment(docnum, need_terms=False)
        kept = got[0] if got is not None else None
        tokens = kept.tokens(local, field) if kept is not None else None
        if tokens is None:
            return None
        last = int(tokens[2][-1]) if len(tokens[2]) else 0

        def fitting() -> str:
            text = text_of()
            if last > len(text):
                raise _Unfit
            return text

        key = (docnum - local, tuple((frozenset(a), frozenset(b), w) for a, b, w in pairs))
        masks = self._pairs.get(key)
        if masks is None:
            masks = self._pairs[key] = [(self._mask(kept, a), self._mask(kept, b), w)
                                        for a, b, w in pairs]  # fmt: skip
        try:
            return kept_pair_share(fitting, tokens[0], tokens[1], masks)
        except _Unfit:
            return None

    @staticmethod
    def _mask(kept: Any, terms: Any) -> np.ndarray:
        mask = np.zeros(len(kept.vocab), dtype=bool)
        mask[kept.term_ids(terms)] = True
        return mask

    def spans(self, docnum: int, field: str, text: str) -> list[list[int]]:
        """The matches of a hit's ``field`` text; raises ``SearchTimeout`` past the deadline."""
        local, got = self._segment(docnum)
        if got is not None:
            tokens = got[0].tokens(local, field)
            if tokens is not None:
                spans = indexed_spans(text, tokens, got[1], deadline=self.deadline)
                if spans is not None:
                    return spans
        return match_spans(text, self.terms, deadline=self.deadline)

    def __call__(self, docnum: int, field: str, text: str) -> tuple[str, list]:
        """(snippet HTML, match offsets) of a hit's text."""
        spans = self.spans(docnum, field, text)
        return snippet_html(text, spans), spans


def _window(text: str, spans: list[list[int]], size: int) -> tuple[int, int]:
    """The [start, end) window of about ``size`` chars holding the most matches.

    Candidate windows start a quarter of ``size`` before each match; the first
    holding the most whole matches wins. Spans come in text order and never
    overlap, so their starts and their ends both increase, and the matches inside
    a candidate are a run ``[lo, hi)`` whose both ends only move forward as the
    candidates do: one pass, linear in the matches.
    """
    if len(text) <= size:
        return 0, len(text)
    best_start, best_n = 0, -1
    lo = hi = 0  # first span starting at or after ``start``; first ending past its window
    for s, _ in spans or [[0, 0]]:
        start = max(0, s - size // 4)
        while lo < len(spans) and spans[lo][0] < start:
            lo += 1
        while hi < len(spans) and spans[hi][0] + spans[hi][1] <= start + size:
            hi += 1
        n = max(0, hi - lo)
        if n > best_n:
            best_start, best_n = start, n
    start = best_start
    end = min(len(text), start + size)
    if end == len(text):
        start = max(0, end - size)
    # move to word boundaries
    if start > 0:
        sp = text.find(" ", start, start + 20)
        if sp != -1:
            start = sp + 1
    if end < len(text):
        sp = text.rfind(" ", start, end)
        if sp != -1 and end - sp < 20:
            end = sp
    return start, end


# ``html.escape`` (quote=True) as one translation: the same characters, one C pass
_ESCAPE = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"})


def snippet_html(text: str, spans: list[list[int]], size: int = SNIPPET_CHARS) -> str:
    """Escaped HTML of a window of ``text`` with matches in ``<mark>``."""
    start, end = _window(text, spans, size)
    out = ["…"] if start > 0 else []
    pos = start
    for s, ln in spans:
        if s < start or s + ln > end:
            continue
        out.append(text[pos:s].translate(_ESCAPE))
        out.append("<mark>" + text[s : s + ln].translate(_ESCAPE) + "</mark>")
        pos = s + ln
    out.append(text[pos:end].translate(_ESCAPE))
    if end < len(text):
        out.append("…")
    return "".join(out)


def highlight(
    text: str, terms: Iterable[str], size: int = SNIPPET_CHARS, deadline: Any = None
) -> tuple[str, list]:
    """(snippet HTML, match offsets) for one text; raises ``SearchTimeout`` past
    ``deadline``."""
    spans = match_spans(text, terms, deadline=deadline)
    return snippet_html(text, spans, size), spans

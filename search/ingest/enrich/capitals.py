"""Paragraphs written in capitals, where case says nothing about names."""

from __future__ import annotations

import re
from typing import Protocol, TypeVar

from newsquarry.search.core.textnorm import fold


class _Placed(Protocol):
    start: int
    name: str


Mention = TypeVar("Mention", bound=_Placed)


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_WORD = re.compile(r"[^\W\d_]{2,}")


def shouting(text: str) -> bool:
    """Text written in capitals (old wire copy, tables, transcripts): at least three words
    and twelve letters, four in five of them capitals."""
    letters = [c for c in text if c.isalpha()]
    if len(letters) < 12 or len(_WORD.findall(text)) < 3:
        return False
    return sum(c.isupper() for c in letters) >= 0.8 * len(letters)


def _outside_capitals(mentions: list[Mention], text: str) -> list[Mention]:
    """The mentions, less those in paragraphs written in capitals that the article does
    not also name in ordinary case.

    The tagger reads a capital as the mark of a name; in a paragraph of capitals every
    word has one, so common words come out as names ("NAMES", "THREE", "WEEK" as
    organisations, "MAX TEMP" as a person) and places as firms. Case says nothing there,
    so those mentions are no evidence: dropped, unless the same name stands in ordinary
    case elsewhere in the article (a heading repeating the company the story is about).
    """
    if not mentions or not any(c.isupper() for c in text):
        return mentions
    loud: list[tuple[int, int]] = []
    start = 0
    for brk in [*_PARAGRAPH_BREAK.finditer(text), None]:
        end = brk.start() if brk is not None else len(text)
        if shouting(text[start:end]):
            loud.append((start, end))
        start = brk.end() if brk is not None else end
    if not loud:
        return mentions

    def in_loud(m: Mention) -> bool:
        return any(a <= m.start < b for a, b in loud)

    plain = {fold(m.name) for m in mentions if not in_loud(m)}
    return [m for m in mentions if not in_loud(m) or fold(m.name) in plain]

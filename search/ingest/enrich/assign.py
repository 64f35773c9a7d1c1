"""Handing article-level entities and quotes to passages, with passage offsets.

An entity or quote belongs to the passage that contains its start; a quote
running past its passage's end is clipped there. A speaker mention outside the
quote's passage keeps ``speaker``/``speaker_mention`` but its offsets are None.
"""

from __future__ import annotations

import bisect

from newsquarry.search.core.models import Entity, Passage, Quote
from newsquarry.search.ingest.enrich.entities import Mention
from newsquarry.search.ingest.enrich.quotes import ArticleQuote


def _passage_index(starts: list[int], passages: list[Passage], pos: int) -> int | None:
    k = bisect.bisect_right(starts, pos) - 1
    if k < 0 or pos >= passages[k].end:
        return None
    return k


def assign(
    passages: list[Passage], mentions: list[Mention], quotes: list[ArticleQuote]
) -> list[Passage]:
    """Set each passage's entities and quotes (replacing any) and return the passages."""
    order = sorted(range(len(passages)), key=lambda i: passages[i].start)
    ordered = [passages[i] for i in order]
    starts = [p.start for p in ordered]
    for p in passages:
        p.entities = []
        p.quotes = []
    for m in mentions:
        k = _passage_index(starts, ordered, m.start)
        if k is None:
            continue
        p = ordered[k]
        end = min(m.end, p.end)
        p.entities.append(
            Entity(
                text=m.text, name=m.name, type=m.type, start=m.start - p.start, end=end - p.start
            )
        )
    for q in quotes:
        k = _passage_index(starts, ordered, q.start)
        if k is None:
            continue
        p = ordered[k]
        end = min(q.end, p.end)
        s_start = s_end = None
        if (
            q.speaker_start is not None
            and q.speaker_end is not None
            and p.start <= q.speaker_start
            and q.speaker_end <= p.end
        ):
            s_start, s_end = q.speaker_start - p.start, q.speaker_end - p.start
        p.quotes.append(
            Quote(
                text=p.text[q.start - p.start : end - p.start],
                start=q.start - p.start,
                end=end - p.start,
                kind=q.kind,
                speaker=q.speaker,
                speaker_mention=q.speaker_mention,
                speaker_start=s_start,
                speaker_end=s_end,
                cue=q.cue,
            )
        )
    return passages

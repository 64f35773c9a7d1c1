"""Quote marks and the quoted segments they delimit, found on characters paragraph by
paragraph (no parse needed)."""

from __future__ import annotations

from dataclasses import dataclass

OPEN_MARKS = "“„«"
CLOSE_MARKS = "”»"
STRAIGHT_MARKS = '"'
ALL_MARKS = OPEN_MARKS + CLOSE_MARKS + STRAIGHT_MARKS


@dataclass
class QuoteSpan:
    """A quoted segment; ``start``/``end`` exclude the marks (article offsets)."""

    start: int
    end: int
    mark: int  # offset of the opening mark
    para: int
    left_open: bool = False  # no closing mark before the paragraph ended
    continues: bool = False  # continues a quote left open in the previous paragraph


def _trimmed(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def find_quote_spans(text: str, paragraphs: list[tuple[int, int]]) -> list[QuoteSpan]:
    """Quoted segments of the article, paragraph by paragraph."""
    spans: list[QuoteSpan] = []
    prev_left_open = False
    for pi, (ps, pe) in enumerate(paragraphs):
        opened: int | None = None
        para_spans: list[QuoteSpan] = []
        for i in range(ps, pe):
            c = text[i]
            if c not in ALL_MARKS:
                continue
            if opened is None:
                if c in CLOSE_MARKS or not text[i + 1 : pe].strip():
                    continue  # stray closing mark, or a mark ending the paragraph
                opened = i
            else:
                if (
                    c in OPEN_MARKS
                    and text[opened] in OPEN_MARKS
                    and (i + 1 < pe and not text[i + 1].isspace())
                    and (i == ps or text[i - 1].isspace())
                ):
                    # missing closing mark: close here and open again
                    s, e = _trimmed(text, opened + 1, i)
                    if s < e:
                        para_spans.append(QuoteSpan(s, e, opened, pi))
                    opened = i
                    continue
                s, e = _trimmed(text, opened + 1, i)
                if s < e:
                    para_spans.append(QuoteSpan(s, e, opened, pi))
                opened = None
        if opened is not None:
            s, e = _trimmed(text, opened + 1, pe)
            if s < e:
                para_spans.append(QuoteSpan(s, e, opened, pi, left_open=True))
        if para_spans and prev_left_open and para_spans[0].mark == ps:
            para_spans[0].continues = True
        prev_left_open = bool(para_spans) and para_spans[-1].left_open
        spans.extend(para_spans)
    return spans

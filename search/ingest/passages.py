"""Articles -> passages: paragraph-aware chunks with stable ids and offsets.

Rules (DESIGN.md section 2):
- a passage is one or more whole paragraphs; a paragraph shorter than
  ``min_chars`` joins the next one (when the two fit in ``max_chars``);
- a paragraph longer than ``max_chars`` splits at sentence boundaries, never
  inside a quotation and never inside a sentence;
- ids are ``<article_id>#p<n>`` (n from 1, in text order), so the same text
  always gives the same ids;
- ``article.text[p.start:p.end] == p.text`` for every passage.

Splitting uses no NLP model, so ids never depend on a model version.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from newsquarry.search.core.models import Article, Passage

MIN_CHARS = 120
MAX_CHARS = 1200

_PARA_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A sentence ends with . ! or ? (optionally followed by closing quotes or brackets)
# and is followed by whitespace and something that can start a sentence. The
# look-behind makes a match start only at the first mark of a run: without it a
# long run of "!!!!" costs quadratic time (40,000 marks took a minute).
_SENT_END = re.compile(r"(?<![.!?])[.!?]+[\"'”’)\]]*(?=\s+[\"'“‘(\[]?[A-Z0-9À-Ý])")
_ABBREV = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|Gen|Col|Lt|Sgt|Capt|Gov|Sen|Rep|Rev|Inc|Corp|Co|Ltd|"
    r"vs|etc|No|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)|\b[A-Z])\.$"
)
_OPEN = {"“": "”", "‘": "’"}


# A line that can open a paragraph: a capital, a digit, a quote mark, a bullet or markup.
_LINE_OPENS = re.compile(r"[ \t]*[\"'“‘«(\[<*•·–—-]*[ \t]*[A-Z0-9À-Ý\"“‘«<]")
# A line that ends a paragraph: final punctuation, then closing quotes or brackets.
_LINE_ENDS = re.compile(r"[.!?:;…][\"'”’»)\]]*[ \t\xa0]*$")
HEADING_CHARS = 80  # a line this short without final punctuation is a heading or list item


def _is_furniture(line: str) -> bool:
    """A short line with no final punctuation and no quote mark: a heading, a list
    item or page furniture ("Advertisement - Story continues below")."""
    return (
        0 < len(line.split()) <= 8
        and not _LINE_ENDS.search(line)
        and not any(c in line for c in '"“”«»')
        and not line.rstrip().endswith((",", "-"))
    )


def _single_newline_breaks(text: str, s: int, e: int) -> list[int]:
    """Offsets of the newlines inside text[s:e] that separate paragraphs.

    A single newline separates two paragraphs when the next line opens like a
    paragraph (capital, digit, quote mark, bullet) and the line before either
    ends like one (final punctuation, closing quote; not an abbreviation such
    as "Mr.") or is short, like a heading or a list item. A line wrapped in
    the middle of a sentence (the next line in lower case, or a long line with
    no final punctuation) is not split.
    """
    out = []
    pos = s
    while True:
        nl = text.find("\n", pos, e)
        if nl < 0:
            return out
        line = text[text.rfind("\n", s, nl) + 1 if text.rfind("\n", s, nl) >= 0 else s : nl]
        pos = nl + 1
        if not line.strip() or not _LINE_OPENS.match(text, nl + 1, e):
            continue
        stripped = line.rstrip()
        nxt_end = text.find("\n", nl + 1, e)
        nxt = text[nl + 1 : e if nxt_end < 0 else nxt_end].strip()
        if _is_furniture(nxt) or _is_furniture(stripped):
            out.append(nl)  # a heading or page furniture stands alone
            continue
        if _LINE_ENDS.search(stripped):
            if _ABBREV.search(stripped[-6:]):
                continue
            out.append(nl)
        elif len(stripped) <= HEADING_CHARS:
            out.append(nl)


def paragraphs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph, outer whitespace excluded.

    Paragraphs are separated by blank lines, and by single newlines where the
    lines on either side look like paragraphs of their own
    (``_single_newline_breaks``): wire and web copy often separates paragraphs
    with one newline.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _PARA_BREAK.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    spans.append((pos, len(text)))
    split: list[tuple[int, int]] = []
    for s, e in spans:
        if "\n" in text[s:e].strip():
            for nl in _single_newline_breaks(text, s, e):
                split.append((s, nl))
                s = nl + 1
        split.append((s, e))
    out = []
    for s, e in split:
        seg = text[s:e]
        lstripped = len(seg) - len(seg.lstrip())
        rstripped = len(seg) - len(seg.rstrip())
        s2, e2 = s + lstripped, e - rstripped
        if e2 > s2:
            out.append((s2, e2))
    return out


def quoted_mask(text: str) -> list[bool]:
    """For each character of one paragraph, whether it lies inside a quotation.

    Straight double quotes toggle; curly ones open and close. The state resets
    at each paragraph, since news style reopens a quote continued across
    paragraphs.
    """
    inside = False
    mask = []
    closer = None
    for ch in text:
        if ch == '"':
            inside = not inside
            closer = None
        elif ch == "“":
            inside, closer = True, "”"
        elif ch == "”" and (closer == "”" or inside):
            inside, closer = False, None
        mask.append(inside)
    return mask


def sentence_ends(text: str) -> list[int]:
    """Offsets just after each sentence end in ``text`` that is not inside a quotation."""
    mask = quoted_mask(text)
    ends = []
    for m in _SENT_END.finditer(text):
        end = m.end()
        if _ABBREV.search(text[max(0, m.start() - 6) : m.start() + 1]):
            continue
        # the boundary is the whitespace after `end`; it must be outside a quote
        if end < len(mask) and mask[end]:
            continue
        ends.append(end)
    return ends


def _split_long(text: str, start: int, end: int, max_chars: int) -> Iterator[tuple[int, int]]:
    """Split one long paragraph at sentence ends into chunks of at most ``max_chars``."""
    para = text[start:end]
    cuts = sentence_ends(para)
    chunk_start = 0
    last_ok = None
    for cut in cuts + [len(para)]:
        if cut - chunk_start > max_chars and last_ok is not None:
            yield _trim(text, start + chunk_start, start + last_ok)
            chunk_start = last_ok
            while chunk_start < len(para) and para[chunk_start].isspace():
                chunk_start += 1
        last_ok = cut
    if chunk_start < len(para):
        yield _trim(text, start + chunk_start, end)


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def passage_spans(
    text: str, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS
) -> list[tuple[int, int]]:
    """The (start, end) spans of the passages of an article text."""
    chunks: list[tuple[int, int]] = []
    for s, e in paragraphs(text):
        if e - s > max_chars:
            chunks.extend(_split_long(text, s, e, max_chars))
        else:
            chunks.append((s, e))
    merged: list[tuple[int, int]] = []
    for s, e in chunks:
        if merged:
            ps, pe = merged[-1]
            if pe - ps < min_chars and e - ps <= max_chars:
                merged[-1] = (ps, e)
                continue
        merged.append((s, e))
    # a short last passage joins the one before it
    if len(merged) > 1:
        (ps, _), (s, e) = merged[-2], merged[-1]
        if e - s < min_chars and e - ps <= max_chars:
            merged[-2:] = [(ps, e)]
    return merged


def split_passages(
    article: Article, min_chars: int = MIN_CHARS, max_chars: int = MAX_CHARS
) -> list[Passage]:
    """The passages of an article, with ids ``<article_id>#p<n>`` and offsets."""
    return [
        Passage(
            id=f"{article.id}#p{n}",
            article_id=article.id,
            position=n,
            start=s,
            end=e,
            text=article.text[s:e],
        )
        for n, (s, e) in enumerate(passage_spans(article.text, min_chars, max_chars), start=1)
    ]

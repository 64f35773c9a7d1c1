"""How tall the oEmbed card is: its text is laid out here the way the browser will.

A sandboxed iframe cannot size itself and oEmbed consumers take the provider's
``height`` as it is, so the provider computes it from the text the card shows:
words are wrapped greedily at the card's text width with DejaVu Sans advance
widths (Debian's ``system-ui``, one of the widest sans-serif faces, so on other
systems the estimate errs towards a little empty space, never a cut caption).
The card's box metrics below mirror ``static/embed.css``; a browser test checks
the two agree for short, long and hostile passages.
"""

from __future__ import annotations

import math
import unicodedata

# Advance widths of ASCII 32..126 in DejaVu Sans, in hundredths of an em.
_ASCII = [
    int(w)
    for w in (
        "32 40 46 84 64 95 78 27 39 39 50 84 32 36 32 34 64 64 64 64 64 64 64 64 64 64 34 34 84 "
        "84 84 53 100 71 69 70 77 63 58 77 75 29 29 66 56 86 75 79 60 79 69 63 60 73 68 99 69 61 "
        "69 39 34 39 84 50 50 61 63 55 63 62 34 63 63 28 28 58 28 97 63 61 63 63 40 52 39 63 59 "
        "82 59 59 52 64 34 64 84"
    ).split()
]
SAFETY = 1.06  # widths are scaled up a little: hinting, kerning and font fallback vary

# The card's box (static/embed.css), in CSS pixels.
BODY_PAD = 8  # body padding, each side
CARD_BORDER = 1
CARD_PAD_X, CARD_PAD_Y = 16, 14
QUOTE_INDENT = 12 + 3  # blockquote padding-left + border
QUOTE_GAP = 8  # blockquote margin-bottom
TEXT_PX, TEXT_LINE = 16.0, 24.0  # passage text: 1rem, line-height 1.5
SMALL_PX, SMALL_LINE = 13.6, 20.4  # caption and "read more": .85rem, line-height 1.5
MORE_GAP = 8  # margin below the "read more" line
PREVIEW_CHARS = 480  # the card shows at most this much of a passage, then "Read the whole passage"
PREVIEW_LINES = 12  # ... and at most this many lines of it


def char_em(ch: str) -> float:
    """The advance width of one character, in em (conservative for non-ASCII)."""
    code = ord(ch)
    if 32 <= code < 127:
        return _ASCII[code - 32] / 100
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0.0  # combining marks, bidi controls, zero-width characters
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 1.0
    return 0.9 if ch.isupper() else 0.75


def line_count(text: str, width_px: float, font_px: float) -> int:
    """Lines ``text`` takes at ``width_px`` (``white-space: pre-wrap``,
    ``overflow-wrap: anywhere``): greedy wrapping at spaces, long words broken."""
    limit = width_px / (font_px * SAFETY)  # in em
    lines = 0
    for para in text.split("\n"):
        lines += 1
        used = 0.0
        for i, word in enumerate(para.split(" ")):
            w = sum(char_em(c) for c in word)
            space = char_em(" ") if i else 0.0
            if used + space + w <= limit:
                used += space + w
                continue
            if used > 0:  # the word goes to the next line
                lines += 1
                used = 0.0
            while w > limit:  # a word longer than a line is broken anywhere
                taken = 0.0
                for j, c in enumerate(word):
                    if taken + char_em(c) > limit and j:
                        word = word[j:]
                        break
                    taken += char_em(c)
                lines += 1
                w = sum(char_em(c) for c in word)
            used = w
    return max(1, lines)


def more_label(total_chars: int) -> str:
    """The link under a cut passage (``embed_passage.html`` shows this text)."""
    return f"Read the whole passage ({total_chars:,} characters)"


def card_height(text: str, caption: str, width: int, more: str | None) -> int:
    """The card's height in pixels at iframe ``width``: text, optional "read more", caption."""
    inner = width - 2 * BODY_PAD - 2 * CARD_BORDER - 2 * CARD_PAD_X
    height = 2 * BODY_PAD + 2 * CARD_BORDER + 2 * CARD_PAD_Y
    height += line_count(text, inner - QUOTE_INDENT, TEXT_PX) * TEXT_LINE + QUOTE_GAP
    if more:
        height += line_count(more, inner, SMALL_PX) * SMALL_LINE + MORE_GAP
    height += line_count(caption, inner, SMALL_PX) * SMALL_LINE
    return math.ceil(height) + 2  # sub-pixel rounding of each line box


def preview(text: str, chars: int) -> str:
    """``text``, or its first ``chars`` characters (cut back to a space when one is near) and "…"."""
    text = text.strip()
    if len(text) <= chars:
        return text
    cut = text[:chars]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > chars - 40:
        cut = cut[:space]
    return cut.rstrip() + "…"


def fit(text: str, caption: str, width: int, max_height: int | None = None) -> tuple[int, int]:
    """(characters of ``text`` to show, card height) at ``width``: at most PREVIEW_CHARS and
    PREVIEW_LINES, fewer when the card would be taller than ``max_height``."""
    text = text.strip()
    inner = width - 2 * BODY_PAD - 2 * CARD_BORDER - 2 * CARD_PAD_X - QUOTE_INDENT

    def ok(n: int) -> bool:
        shown = preview(text, n)
        if n < len(text) and line_count(shown, inner, TEXT_PX) > PREVIEW_LINES:
            return False
        more = more_label(len(text)) if n < len(text) else None
        return max_height is None or card_height(shown, caption, width, more) <= max_height

    n = min(len(text), PREVIEW_CHARS)
    if not ok(n):
        lo, hi = 1, n  # the largest n that fits (heights grow with n)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
        n = lo
    more = more_label(len(text)) if n < len(text) else None
    return n, card_height(preview(text, n), caption, width, more)

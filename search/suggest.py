"""Did you mean: a corrected query when the query finds nothing or little.

Words are corrected against the unstemmed ``spell`` field (a stemmed field
would suggest stems such as "minist palac", DESIGN.md section 5). Only plain
words and words inside phrases are corrected (not operators, field names,
wildcards or fuzzy terms); words in facet fields (``speaker:alvarnga``) are
corrected against that facet's values. The caller runs the corrected query
and offers it (one suggestion per query, with its hit count) only when it finds
more than the original.
"""

from __future__ import annotations

import re
from typing import Any

from .docvalues import View
from .query import USER_FIELDS, Token
from .textnorm import fold

_WORD = re.compile(r"\w+", re.UNICODE)


RARE = 50  # a known word in at most this many articles may be a misspelling ...
RATIO = 10  # ... of a word one edit away found in at least RATIO times as many articles


def _df(searcher: Any, word: str) -> int:
    try:
        return int(searcher.doc_frequency("spell", word))
    except (KeyError, ValueError):
        return 0


def _correct_word(searcher: Any, word: str) -> str | None:
    """A better spelling of one word, frequency-aware.

    A word the index lacks gets its closest spelling (two edits at most, most
    frequent first among the closest). A word the index has, but rarely (in at
    most ``RARE`` articles), gets a spelling one edit away that is at least
    ``RATIO`` times as frequent: "Volker" (2 articles) -> "Volcker" (267).
    """
    folded = fold(word)
    if len(folded) < 3 or folded.isdigit():
        return None
    df = _df(searcher, folded)
    if df > RARE:
        return None
    corrector = searcher.corrector("spell")
    if df == 0:
        got = corrector.suggest(folded, limit=1, maxdist=2, prefix=1)
        return got[0] if got else None
    got = [w for w in corrector.suggest(folded, limit=8, maxdist=1, prefix=1) if w != folded]
    best = max(got, key=lambda w: _df(searcher, w), default=None)
    return best if best is not None and _df(searcher, best) >= RATIO * df else None


def _correct_value(view: View, fname: str, value: str) -> str | None:
    """The facet word closest to a misspelt word of a facet value."""
    from .query import edit_distance

    folded = fold(value)
    words = {w for k in view.keys[fname] for w in k.split()}
    if folded in words or not folded:
        return None
    best = min(
        ((edit_distance(folded, w, 2), w) for w in words), default=(3, None), key=lambda p: p
    )
    return best[1] if best[0] <= 2 else None


def corrected_text(text: str, tokens: list[Token], searcher: Any, view: View) -> str | None:
    """The query text with misspelt words replaced, or None if nothing to correct."""
    edits: list[tuple[int, int, str]] = []
    field: str | None = None
    for tok in tokens:
        if tok.kind == "field":
            field = USER_FIELDS[tok.text]
            continue
        in_field, field = field, None
        if tok.kind not in ("word", "phrase") or any(c in tok.text for c in "*?~^"):
            continue
        if in_field in ("date", "article_id", "quote_kind"):
            continue
        base = tok.start + (1 if tok.kind == "phrase" else 0)
        for m in _WORD.finditer(tok.text):
            word = m.group(0)
            if in_field in (None, "text", "title", "quote"):
                fix = _correct_word(searcher, word)
            else:
                fix = _correct_value(view, in_field, word)
            if fix and fix != fold(word):
                if word[:1].isupper():
                    fix = " ".join(w[:1].upper() + w[1:] for w in fix.split())
                edits.append((base + m.start(), base + m.end(), fix))
    if not edits:
        return None
    out, pos = [], 0
    for s, e, fix in edits:
        out.append(text[pos:s])
        out.append(fix)
        pos = e
    out.append(text[pos:])
    return "".join(out)

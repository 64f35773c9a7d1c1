"""Did you mean: a corrected query when the query finds nothing or little.

Words are corrected against the unstemmed ``spell`` field (a stemmed field
would suggest stems such as "minist palac", DESIGN.md section 5). Only plain
words and words inside phrases are corrected (not operators, field names,
wildcards or fuzzy terms); words in facet fields (``speaker:alvarnga``) are
corrected against that facet's values. The caller runs the corrected query
and offers it only when it finds more than the original.
"""

from __future__ import annotations

import re
from typing import Any

from .docvalues import View
from .query import USER_FIELDS, Token
from .textnorm import fold

_WORD = re.compile(r"\w+", re.UNICODE)
SUGGEST_BELOW = 3  # offer a suggestion when a query finds fewer hits than this


def _known(searcher: Any, word: str) -> bool:
    try:
        return searcher.doc_frequency("spell", word) > 0
    except (KeyError, ValueError):
        return False


def _correct_word(searcher: Any, word: str) -> str | None:
    folded = fold(word)
    if len(folded) < 3 or folded.isdigit() or _known(searcher, folded):
        return None
    got = searcher.corrector("spell").suggest(folded, limit=1, maxdist=2, prefix=1)
    return got[0] if got else None


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

"""Did you mean: a corrected query when the query finds nothing or little.

Words are corrected against the unstemmed ``spell`` field (a stemmed field
would suggest stems such as "minist palac", DESIGN.md section 5). Only plain
words and words inside phrases are corrected (not operators, field names,
wildcards or fuzzy terms); words in facet fields (``speaker:alvarnga``) are
corrected against that facet's values. The caller runs the corrected query
and offers it (one suggestion per query, with its hit count) only when it finds
more than the original.

A suggestion must be very likely right, because a wrong one misleads more than
none. So, as Lucene's ``DirectSpellChecker`` does by default: words shorter than
``MIN_LENGTH`` are never corrected ("did" is not a misspelling of "aid"), a
candidate keeps the word's first letter, and words of up to five letters take one
edit only. A word the query finds as it is typed (its stem is in the index: "say"
finds "says") or a stop word is never corrected, and a query with a word that is
neither known nor correctable gets no suggestion at all ("zzqxj blorf" is not
"zzqxj born").

Bounded work: a word costs a few hundred term lookups (its one-edit neighbours),
and a query at most ``max_query_length`` characters of words; ``corrected_text``
also looks at the search's deadline before each word (``SearchTimeout`` past it:
the search is answered without a suggestion and says ``partial``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.schema import text_analyzer
from newsquarry.search.engine.views import View, leaves_of
from newsquarry.search.query.parse import STOP_WORDS, USER_FIELDS, Token, edit_distance

_WORD = re.compile(r"\w+", re.UNICODE)


RARE = 50  # a known word in at most this many articles may be a misspelling ...
RATIO = 10  # ... of a word one edit away found in at least RATIO times as many articles
MIN_LENGTH = 4  # shorter words are never corrected (Lucene's minQueryLength)
SHORT = 5  # words of up to this many letters take one edit, longer ones up to two
_ANALYZER = text_analyzer()


def _found_as_typed(searcher: Any, word: str) -> bool:
    """Whether the query finds ``word`` as typed: its analysed (stemmed) form is a term of
    the text field, so "say" (indexed as "say" from "says") is no misspelling."""
    terms = [t.text for t in _ANALYZER(word)]
    if not terms:
        return True  # a stop word or punctuation: nothing to correct
    try:
        return all(
            any(reader.doc_frequency("text", t) for reader, _ in leaves_of(searcher)) for t in terms
        )
    except (KeyError, ValueError):
        return False


def _df(searcher: Any, word: str, cap: int | None = None) -> int:
    """Articles holding ``word``; with ``cap``, counting stops once it is exceeded
    (segment by segment: a common word is known to be common after one lookup)."""
    total = 0
    try:
        for reader, _ in leaves_of(searcher):
            total += int(reader.doc_frequency("spell", word))
            if cap is not None and total > cap:
                break
    except (KeyError, ValueError):
        return 0
    return total


_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"


def edits1(word: str) -> set[str]:
    """Every string one edit away: a deletion, transposition, substitution or insertion."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
    out |= {a + c + b for a, b in splits for c in _LETTERS}
    out.discard(word)
    return out


_SEGMENT_WORDS: OrderedDict[str, frozenset[str]] = OrderedDict()
_SEGMENT_WORDS_LOCK = threading.Lock()
_SEGMENTS_KEPT = 256


def _vocabulary(searcher: Any) -> list[frozenset[str]]:
    """The words of the ``spell`` field, one set per segment.

    Segments never change and their ids are unique, so each segment's words are
    read once per process (a bounded cache): after a commit only new segments
    are read.
    """
    out = []
    for reader, _ in leaves_of(searcher):
        segid = reader.segment().segment_id()
        with _SEGMENT_WORDS_LOCK:
            words = _SEGMENT_WORDS.get(segid)
            if words is not None:
                _SEGMENT_WORDS.move_to_end(segid)
        if words is None:
            words = frozenset(t.decode("utf-8") for t in reader.lexicon("spell"))
            with _SEGMENT_WORDS_LOCK:
                _SEGMENT_WORDS[segid] = words
                while len(_SEGMENT_WORDS) > _SEGMENTS_KEPT:
                    _SEGMENT_WORDS.popitem(last=False)
        out.append(words)
    return out


def _correct_word(searcher: Any, word: str, articles: int | None = None) -> str | None:
    """A better spelling of one word, frequency-aware.

    The candidates are the words one edit away (a transposition counts as one:
    "Bundesbnak" -> "Bundesbank") that the index holds, the most frequent first.
    A word the index lacks gets the best of them, else its closest spelling two
    edits away. A word the index has, but rarely (in at most ``RARE`` articles),
    gets one only when it is at least ``RATIO`` times as frequent: "Volker" (2
    articles) -> "Volcker" (267). Candidates are looked up directly (a few
    hundred term lookups), not by scanning the vocabulary as Whoosh's corrector
    does (tens of milliseconds on a large index).
    """
    folded = fold(word)
    if len(folded) < MIN_LENGTH or folded.isdigit() or not folded.isalnum():
        return None
    if folded in STOP_WORDS:
        return None
    df = _df(searcher, folded, cap=RARE)
    if df > RARE or (df and articles is not None and articles < RATIO * (df + 1)):
        return None  # common, or no neighbour could be RATIO times as frequent
    vocab = _vocabulary(searcher)
    best, best_df = None, 0
    for cand in sorted(
        c for c in edits1(folded) if c[:1] == folded[:1] and any(c in v for v in vocab)
    ):
        n = _df(searcher, cand)
        if n > best_df:
            best, best_df = cand, n
    if df == 0:
        if best is not None:
            return best
        if len(folded) <= SHORT:
            return None
        got = searcher.corrector("spell").suggest(folded, limit=1, maxdist=2, prefix=1)
        return got[0] if got else None
    return best if best is not None and best_df >= RATIO * df else None


def _correct_value(view: View, fname: str, value: str) -> str | None:
    """The facet word closest to a misspelt word of a facet value."""
    folded = fold(value)
    words = {w for k in view.keys[fname] for w in k.split()}
    if folded in words or not folded:
        return None
    best = min(
        ((edit_distance(folded, w, 2), w) for w in words), default=(3, None), key=lambda p: p
    )
    return best[1] if best[0] <= 2 else None


def corrected_text(
    text: str, tokens: list[Token], searcher: Any, view: View, deadline: Any = None
) -> str | None:
    """The query text with misspelt words replaced, or None if nothing to correct;
    ``deadline.check()`` (``postings.Deadline``) before each word."""
    edits: list[tuple[int, int, str]] = []
    field: str | None = None
    # a word under NOT (or -) is left as typed: it finds nothing, so spelling it
    # otherwise cannot find what was asked for, and only changes what is left out
    # ("Maduro NOT Guaido" is not "Maduro NOT Guard")
    negate, depth, negated_to = False, 0, -1
    for tok in tokens:
        if tok.kind == "op" and tok.text == "NOT":
            negate = True
            continue
        if tok.kind == "lparen":
            depth += 1
            if negate and negated_to < 0:
                negated_to = depth
            negate = False
            continue
        if tok.kind == "rparen":
            if depth == negated_to:
                negated_to = -1
            depth = max(0, depth - 1)
            continue
        if tok.kind == "field":
            field = USER_FIELDS[tok.text]
            continue
        in_field, field = field, None
        negated, negate = negate or negated_to >= 0, False
        if tok.kind not in ("word", "phrase") or any(c in tok.text for c in "*?~^"):
            continue
        if negated:
            continue
        if in_field in ("date", "article_id", "quote_kind"):
            continue
        base = tok.start + (1 if tok.kind == "phrase" else 0)
        for m in _WORD.finditer(tok.text):
            word = m.group(0)
            if deadline is not None:
                deadline.check()
            if in_field in (None, "text", "title", "quote"):
                fix = _correct_word(searcher, word, view.live_count("article"))
                if not fix and not _found_as_typed(searcher, word):
                    return None  # an unknown word nothing corrects: no plausible query
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

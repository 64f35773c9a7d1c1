"""Quote marks and the quoted segments they delimit: paired on characters paragraph by
paragraph, then a segment whose closing mark is missing is cut where narrative resumes."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from spacy.tokens import Doc

from newsquarry.search.ingest.enrich.entities import Mention
from newsquarry.search.ingest.enrich.speech import INDIRECT_VERBS

OPEN_MARKS = "“„«"
CLOSE_MARKS = "”»"
STRAIGHT_MARKS = '"'
ALL_MARKS = OPEN_MARKS + CLOSE_MARKS + STRAIGHT_MARKS
# two apostrophes written for a double quote (''Yes,'' she said)
DOUBLE_APOSTROPHE = "''"
# tokens that are a quote mark (the parse keeps '' as one token)
MARK_TOKENS = frozenset(ALL_MARKS) | {DOUBLE_APOSTROPHE}
# the closing marks each curly opening mark may take: “...”, „...“ / „...”, «...»
CLOSERS = {"“": "”", "„": "“”", "«": "»"}
# what may stand right before an opening mark / right after a closing mark
_BEFORE_OPEN = "([{–—-/"
_AFTER_CLOSE = ",.;:!?)]}–—-/…"


# an attribution right after a mark: a name (or he/she) and a speech verb, either order
# ("Solano said", "said Donald Trump")
_SPEECH_FORMS = (
    r"(?:said|says|added|adds|told|tells|asked|asks|wrote|writes|explained|continued|"
    r"insisted|argued|warned|claimed|replied|admitted|stated)\b"
)
_ATTRIBUTION_AFTER = re.compile(
    r"(?:(?:[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,3}|he|she)\s+"
    + _SPEECH_FORMS
    + r"|"
    + _SPEECH_FORMS
    + r"\s+(?:[A-Z]|he\b|she\b))"
)


@dataclass
class QuoteSpan:
    """A quoted segment; ``start``/``end`` exclude the marks (article offsets)."""

    start: int
    end: int
    mark: int  # offset of the opening mark
    para: int
    left_open: bool = False  # no closing mark before the paragraph ended
    continues: bool = False  # continues a quote left open (previous paragraph or piece)
    closed: bool = True  # ended by its own closing mark (not by a re-sync or the paragraph end)


def _trimmed(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e


def _marks(text: str, ps: int, pe: int) -> list[tuple[int, str]]:
    """(offset, mark) of the double quote marks of a paragraph, ``''`` as one mark and
    two curly single marks as their double (`‘‘` as “, `’’` as ”)."""
    out = []
    i = ps
    while i < pe:
        c = text[i]
        if c in ALL_MARKS:
            out.append((i, c))
        elif c in "‘’" and text.startswith(c + c, i):
            out.append((i, "“" if c == "‘" else "”"))
            i += 1
        elif (
            c == "'"
            and text.startswith(DOUBLE_APOSTROPHE, i)
            and (i + 2 >= pe or text[i + 2] != "'")
            and (i == ps or text[i - 1] != "'")
        ):
            out.append((i, DOUBLE_APOSTROPHE))
            i += 1
        i += 1
    return out


def _facing(text: str, i: int, mark: str, ps: int, pe: int) -> str:
    """Which way a mark faces, from its neighbours: "open" (space or start before, a
    word after: ` "We`), "close" (a word or punctuation before, space, punctuation or
    the end after: `end," `), else "either" (spaced on both sides, or glued on both)."""
    j = i + len(mark)
    space_before = i == ps or text[i - 1].isspace() or text[i - 1] in _BEFORE_OPEN
    space_after = j >= pe or text[j].isspace() or text[j] in _AFTER_CLOSE
    if space_before and not space_after:
        return "open"
    if space_after and not space_before:
        return "close"
    return "either"


def find_quote_spans(text: str, paragraphs: list[tuple[int, int]]) -> list[QuoteSpan]:
    """Quoted segments of the article, paragraph by paragraph.

    Marks are paired by the way they face, not by counting, so that one missing
    mark cannot turn the rest of a paragraph inside out: inside an open quotation,
    a mark that faces open (space before, a word after) means the closing mark
    was left out, the usual layout of a quotation whose paragraphs the page ran
    together (`"A. "B. "C."`): the piece ends there and the next one, its
    continuation, starts. A mark facing close with no quotation open is stray and
    dropped. A quotation still open at the end of its paragraph ends there; when
    the next paragraph opens with a mark it is the continuation (the convention
    for quotations running over several paragraphs). Curly marks pair with their
    own closers (“...”, „...“, «...»); ``''`` counts as a double mark.
    """
    spans: list[QuoteSpan] = []
    prev_left_open = False

    def piece(opened: int, opener: str, end: int, pi: int, **flags: bool) -> list[QuoteSpan]:
        width = 2 if text.startswith(("''", "‘‘", "’’"), opened) else 1
        s, e = _trimmed(text, opened + width, end)
        return [QuoteSpan(s, e, opened, pi, **flags)] if s < e else []

    for pi, (ps, pe) in enumerate(paragraphs):
        opened: int | None = None
        opener = ""
        resync = False  # the open piece was opened by a re-sync (continues the previous)
        para_spans: list[QuoteSpan] = []

        for i, c in _marks(text, ps, pe):
            facing = _facing(text, i, c, ps, pe)
            if opened is None:
                if c in CLOSE_MARKS or not text[i + len(c) : pe].strip():
                    continue  # stray closing mark, or a mark ending the paragraph
                if c not in OPEN_MARKS and facing == "close":
                    continue  # a straight mark facing close: its opening mark is missing
                opened, opener, resync = i, c, False
                continue
            if opener in CLOSERS and c in CLOSERS[opener]:
                closes = True
            elif c in OPEN_MARKS:
                closes = facing == "close"  # “ typed for ”
            else:
                # a mark facing open right after a comma is a closing mark typed with
                # the space on the wrong side ('violence, "Solano said'): a piece
                # whose closing mark is missing ends at a sentence end
                after_comma = text[ps:i].rstrip().endswith(",") and bool(
                    _ATTRIBUTION_AFTER.match(text, i + len(c), pe)
                )
                closes = c in CLOSE_MARKS or facing != "open" or after_comma
            if closes:
                para_spans += piece(opened, opener, i, pi, continues=resync)
                opened = None
            elif opener in STRAIGHT_MARKS and c in OPEN_MARKS:
                # a straight mark left open before a curly one: a stray conversion
                # artefact (`"Lee defended the “...” line`), not a quotation
                opened, opener, resync = i, c, False
            elif facing == "open" or c in OPEN_MARKS:
                # missing closing mark: the piece ends here, its continuation opens
                para_spans += piece(opened, opener, i, pi, continues=resync, closed=False)
                opened, opener, resync = i, c, True
        if opened is not None:
            para_spans += piece(
                opened, opener, pe, pi, continues=resync, closed=False, left_open=True
            )
        if para_spans and prev_left_open and para_spans[0].mark == ps:
            para_spans[0].continues = True
        prev_left_open = bool(para_spans) and para_spans[-1].left_open
        spans.extend(para_spans)
    return spans


# words that put a sentence in the speaker's own voice
FIRST_SECOND_PERSON = frozenset(
    "i i'm i've i'd i'll me my mine myself we we're we've we'd we'll us our ours ourselves "
    "you you're you've you'd you'll your yours yourself yourselves let's".split()
)
THIRD_PERSON = frozenset("he she him her his hers himself herself".split())


def _person_at(toks: list, people: list[int]) -> bool:
    lo, hi = toks[0].idx, toks[-1].idx + len(toks[-1])
    k = bisect.bisect_left(people, lo)
    return k < len(people) and people[k] < hi


def _reported(toks: list, people: list[int]) -> bool:
    """A sentence in the reporter's voice for sure: no first- or second-person word, and
    a speech verb in the past or third-person present with a person spoken of ("Ann Lee
    welcomed the move and said ...")."""
    if any(t.lower_ in FIRST_SECOND_PERSON for t in toks):
        return False
    if not any(t.tag_ in ("VBD", "VBZ") and t.lemma_.lower() in INDIRECT_VERBS for t in toks):
        return False
    return any(t.lower_ in THIRD_PERSON for t in toks) or _person_at(toks, people)


def _opens_on_someone(toks: list, people: list[int]) -> bool:
    """A sentence with no first- or second-person word that opens on a person of the
    article in the third person (a name, or He/She/His/Her): "His gift follows ..."."""
    if any(t.lower_ in FIRST_SECOND_PERSON for t in toks):
        return False
    first = toks[0]
    return first.lower_ in THIRD_PERSON or _person_at(toks[:1], people)


def _tail_attribution(sent, end: int) -> int | None:
    """Offset of the comma of a trailing attribution `..., he said.` / `..., said Lee.`
    ending the sentence before ``end``: the quotation's closing mark belongs there."""
    toks = [t for t in sent if t.idx < end and not t.is_space]
    while toks and toks[-1].is_punct:
        toks = toks[:-1]
    for k in range(len(toks) - 1, max(0, len(toks) - 6), -1):
        if toks[k].text == ",":
            tail = toks[k + 1 :]
            verbs = [t for t in tail if t.lemma_.lower() in INDIRECT_VERBS and t.pos_ == "VERB"]
            others = [t for t in tail if t not in verbs]
            if (
                len(verbs) == 1
                and others
                and verbs[0] in (tail[0], tail[-1])
                and all(t.pos_ == "PROPN" or t.lower_ in ("he", "she") for t in others)
            ):
                return toks[k].idx
            return None
    return None


def cut_narrative(spans: list[QuoteSpan], doc: Doc, mentions: list[Mention], text: str) -> None:
    """Cut each quotation whose closing mark is missing where narrative resumes (in place).

    A closing mark left out at the end of an utterance makes the reporter's next
    words look quoted (`"I'm giving it all away. His gift follows ...`). Speech is
    in the speaker's voice, so, after the piece's first sentence: a trailing
    attribution (`..., he said.`) ends the quotation at its comma; a sentence with
    no first- or second-person word whose speech verb reports on a person of the
    article ("Lee welcomed it and said ...") is the reporter's, and the quotation
    ends before it; and when the piece runs to the end of its paragraph without
    the next paragraph taking it up, such a sentence that opens on a person of the
    article in the third person ("His gift follows ...") ends it (losing a
    third-person sentence of speech is preferred to storing narrative as speech).
    """
    people = sorted(m.start for m in mentions if m.type == "person")
    tok_starts = None
    for k, sp in enumerate(spans):
        if sp.closed:
            continue
        if tok_starts is None:
            tok_starts = [t.idx for t in doc]
        a = bisect.bisect_left(tok_starts, sp.start)
        if a >= len(doc):
            continue
        continued = sp.left_open and k + 1 < len(spans) and spans[k + 1].continues
        weak = sp.left_open and not continued
        sent, first, cut = doc[a].sent, True, None
        while True:
            toks = [
                t
                for t in sent
                if sp.start <= t.idx < sp.end
                and not t.is_space
                and not t.is_punct
                and t.text != "''"
            ]
            comma = _tail_attribution(sent, sp.end)
            if comma is not None and comma > sp.start:
                cut = comma + 1
                break
            if (
                not first
                and toks
                and (_reported(toks, people) or (weak and _opens_on_someone(toks, people)))
            ):
                cut = sent.start_char
                break
            if sent.end >= len(doc) or doc[sent.end].idx >= sp.end:
                break
            sent, first = doc[sent.end].sent, False
        if cut is None:
            continue
        s, e = _trimmed(text, sp.start, cut)
        if s < e:
            sp.end = e
            if continued:
                sp.left_open = False
                spans[k + 1].continues = False

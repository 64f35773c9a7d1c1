"""Attribution by layout: speakers named by a colon clause, an attribution line after the
quotation, a neighbouring quotation or the paragraph before (rules on paragraphs, not on one clause)."""

from __future__ import annotations

import re

from spacy.tokens import Token

from newsquarry.search.core.textnorm import fold
from newsquarry.search.ingest.enrich.context import ArticleQuote, Speaker, _Context
from newsquarry.search.ingest.enrich.entities import TITLES
from newsquarry.search.ingest.enrich.marks import ALL_MARKS, CLOSE_MARKS, STRAIGHT_MARKS, QuoteSpan
from newsquarry.search.ingest.enrich.speech import (
    _NAME,
    ANAPHORIC_OPENERS,
    DASH_LEAD,
    SUBJECT_DEPS,
    _depth,
    _is_cue,
)

FOLLOW_GAP = 80  # max characters between a paragraph's last quote and its end


def _colon_cue(sp: QuoteSpan, ctx: _Context) -> tuple[Token | None, Token | None]:
    """(cue, speaker) of a clause introducing the quote with a colon.

    "X continued: ...", "X delivered a retort: ..." (the highest verb with a
    subject before the colon) or a bare "Clinton: ..." (the name is the
    speaker, no cue). The colon may end the previous paragraph when the quote
    opens its own.
    """
    text = ctx.text
    before = text[: sp.mark].rstrip()
    if not before.endswith(":"):
        return None, None
    colon = ctx.token_at(len(before) - 1)
    if ctx.para_of(len(before) - 1) not in (sp.para, sp.para - 1):
        return None, None
    tok = ctx.doc[colon]
    cands = [t for t in tok.sent if t.i < colon and not ctx.quoted[t.i]]
    dash = _headline_dash(tok, ctx)
    if dash is not None:
        cands = [t for t in cands if t.i > dash.i]
    cues = [t for t in cands if _is_cue(t)]
    if cues:
        return cues[-1], None
    verbs = [
        t
        for t in cands
        if t.pos_ in ("VERB", "AUX") and any(c.dep_ in SUBJECT_DEPS for c in t.children)
    ]
    if verbs:
        return min(verbs, key=_depth), None
    # "Laura Finch, The Evening Post: ...": the person before the outlet
    for t in cands:
        m = ctx.mention_at.get(t.i)
        if m is not None and m.type == "person":
            return None, ctx.doc[m.tok_end - 1]
    if colon > 0:
        prev = ctx.doc[colon - 1]
        m = ctx.mention_at.get(prev.i)
        if (m is not None and m.type in ("person", "org")) or prev.pos_ == "PROPN":
            return None, prev
    return None, None


def _headline_dash(colon: Token, ctx: _Context) -> Token | None:
    """The spaced dash before a colon in its sentence, if any.

    "Polls were right on one side - Ann Lee: ...": a headline, a dash, then the
    source; the words before the dash are the editor's, not the quotation's frame.
    Dashes in pairs set off an aside ("how many buses - old and new - failed").
    """
    dashes = [
        t
        for t in ctx.doc[colon.sent.start + 1 : colon.i]
        if t.text in DASH_LEAD and t.whitespace_ and t.nbor(-1).whitespace_ and not ctx.quoted[t.i]
    ]
    return dashes[-1] if len(dashes) % 2 else None


def _previous_quote_in_paragraph(
    qi: int, sp: QuoteSpan, spans: list[QuoteSpan], out: list
) -> ArticleQuote | None:
    """The last attributed quote before this one in its paragraph (or the one it continues)."""
    for pj in range(qi - 1, -1, -1):
        psp = spans[pj]
        if psp.para != sp.para and not (sp.continues and psp.para == sp.para - 1):
            return None
        prevq = out[pj]
        if prevq is not None and (prevq.speaker or prevq.speaker_mention):
            return prevq
    return None


def _previous_paragraph_quote(
    qi: int, sp: QuoteSpan, spans: list[QuoteSpan], out: list, ctx: _Context
) -> ArticleQuote | None:
    """Speaker source for a quote opening a paragraph right after an attributed one."""
    ps = ctx.paragraphs[sp.para][0]
    prev_para = ctx.previous_content_paragraph(sp.para)  # page furniture in between is skipped
    if sp.mark != ps or qi == 0 or prev_para is None or spans[qi - 1].para != prev_para:
        return None
    prev_end = ctx.paragraphs[prev_para][1]
    if prev_end - spans[qi - 1].end > FOLLOW_GAP:
        return None
    for pj in range(qi - 1, -1, -1):
        if spans[pj].para != prev_para:
            break
        prevq = out[pj]
        if prevq is not None and prevq.speaker:
            return prevq
    return None


def _fills_paragraph(sp: QuoteSpan, ctx: _Context) -> bool:
    """The quotation is its paragraph: nothing but marks and punctuation around it."""
    ps, pe = ctx.paragraphs[sp.para]
    return sp.mark == ps and not re.search(r"\w", ctx.text[sp.end : pe])


def _attribution_line(pi: int, ctx: _Context) -> Speaker | None:
    """A line naming the speaker of the quotation above it.

    "- Martin Okafor, a plumber" (a dash, then a person) or "Martin Okafor,
    plumber" (a person, then an apposition or nothing), with no quote mark.
    """
    ps, pe = ctx.paragraphs[pi]
    return _attribution_text(ps, pe, ctx)


# "- Gov. Ann Lee, tweeting": after the dash, capitalised words up to a comma,
# parenthesis or the end of the line
_DASHED_NAME = re.compile(r"([A-Z][\w.'’-]*(?:\s+[A-Z][\w.'’-]*){0,4})\s*(?:[,(]|\.?\s*$)")


def _attribution_text(ps: int, pe: int, ctx: _Context) -> Speaker | None:
    """The speaker named by the line ``text[ps:pe]`` when the line is an attribution."""
    line = ctx.text[ps:pe].rstrip()
    # a closing mark may end the line: the quotation above ran on to its author's
    # name (a single-newline layout: '"... stimulus.\nAnn Lee, Acme Corp."')
    line = line.rstrip(CLOSE_MARKS + STRAIGHT_MARKS)
    pe = ps + len(line)
    if any(c in ALL_MARKS for c in line) or len(line.split()) > 25:
        return None
    lead = len(line) - len(line.lstrip(DASH_LEAD + " \t"))
    dashed = lead > 0 and line[0] in DASH_LEAD
    for m in ctx.mentions:
        if m.type != "person" or m.start < ps + lead or m.start > ps + lead + 1:
            continue
        rest = ctx.text[m.end : pe].lstrip()
        if dashed or not rest or rest[0] in ",(":
            return m.name, m.text, m.start, m.end
    if not dashed:
        return None
    # a name the model did not tag ("- Sanders.", "-President Obama, tweeting")
    found = _DASHED_NAME.match(line, lead)
    if found is None:
        return None
    words = found.group(1).split()
    if len(words[-1]) > 2:
        words[-1] = words[-1].rstrip(".")  # the line's full stop, not an initial
    k = 0
    while k < len(words) - 1 and fold(words[k]).rstrip(".") in TITLES:
        k += 1
    name = " ".join(words[k:])
    start = ctx.text.find(name, ps + found.start(1), pe)
    if start < 0:
        return None
    end = start + len(name)
    known = ctx.surname_owner(fold(words[-1]))
    if known is not None and (k + 1 == len(words) or fold(name) in fold(known)):
        return known, name, start, end
    # two words or more, or a title before the name ("-Senator Ortiz")
    if (len(words) - k >= 2 or k) and _NAME.match(name):
        return name, name, start, end
    return None


def _anaphoric_attribution(pi: int, ctx: _Context) -> Speaker | None:
    """ "That was how X described it": a sentence opening the next paragraph that
    points back at the quotation and names its speaker."""
    ps, pe = ctx.paragraphs[pi]
    first = ctx.doc[ctx.token_at(ps)]
    sent = first.sent
    if first.lower_ not in ANAPHORIC_OPENERS or any(ctx.quoted[t.i] for t in sent):
        return None
    for t in sent:
        if _is_cue(t):
            subj = ctx.subject_of(t) or ctx.inverted_subject(t)
            if subj is not None:
                found = ctx.speaker_from(subj)
                if found[0]:
                    return found
    return None


def _subject_of_previous_paragraph(sp: QuoteSpan, ctx: _Context) -> Speaker | None:
    """The named person subject of the main clause of the previous paragraph's last
    sentence, when that paragraph holds no quotation ("Viguerie sees Cruz as a
    uniter." then a quotation on its own)."""
    pi = ctx.previous_content_paragraph(sp.para)
    if pi is None:
        return None
    ps, pe = ctx.paragraphs[pi]
    if any(c in ALL_MARKS for c in ctx.text[ps:pe]):
        return None
    last = ctx.doc[ctx.token_at(max(ps, pe - 1))].sent
    root = last.root
    for c in root.children:
        if c.dep_ in SUBJECT_DEPS:
            found = ctx.speaker_from(c)
            if found[0] and (c.i in ctx.mention_at and ctx.mention_at[c.i].type == "person"):
                return found
            if found[0] and c.lower_ in ("he", "she"):
                return found
    return None


def _subject_of_sentence_before(sp: QuoteSpan, ctx: _Context) -> Speaker | None:
    """The person a quotation without a speech verb follows: the named (or he/she)
    subject of the main clause of the sentence right before its opening mark, when that
    sentence holds no quotation ("Dave Prentis criticised the plans. "If you want ...").

    News introduces a speaker by what they did, then gives their words as a sentence of
    their own; the sentence is the previous paragraph's last one when the quotation
    opens its paragraph. A sentence with a quotation of its own is left to the
    follow-on rule (the quote continues that speaker's words).
    """
    text = ctx.text
    ps = ctx.paragraphs[sp.para][0]
    if sp.mark == ps:
        pi = ctx.previous_content_paragraph(sp.para)
        if pi is None:
            return None
        a, b = ctx.paragraphs[pi]
        end = len(text[a:b].rstrip()) + a
    else:
        before = text[ps : sp.mark].rstrip()
        if not before or before[-1] not in ".?!":
            return None
        a, end = ps, ps + len(before)
    if end <= a:
        return None
    last = ctx.doc[ctx.token_at(end - 1)].sent
    start = max(last.start_char, a)
    if any(c in ALL_MARKS for c in text[start:end]):
        return None
    root = last.root
    if root.pos_ not in ("VERB", "AUX") or ctx.quoted[root.i]:
        return None
    for c in root.children:
        if c.dep_ not in SUBJECT_DEPS or c.idx < start:
            continue
        m = ctx.mention_at.get(c.i)
        person = m is not None and m.type == "person"
        if not person and c.lower_ not in ("he", "she"):
            # "general secretary ... Dave Prentis criticised": a role with the name in it
            person = any(
                ctx.mention_at.get(k.i) is not None and ctx.mention_at[k.i].type == "person"
                for k in c.children
                if k.dep_ in ("compound", "appos")
            )
        if person or c.lower_ in ("he", "she"):
            found = ctx.speaker_from(c)
            if found[0]:
                return found
        return None
    return None

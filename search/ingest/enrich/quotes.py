"""Quotations and reported speech of one article, with speakers.

This module runs the pipeline and re-exports its names; the jobs live in
``speech.py`` (vocabulary and token predicates), ``marks.py`` (quote-mark
spans), ``context.py`` (per-article lookups, speakers from subject tokens,
``ArticleQuote``), ``layouts.py`` (attribution by paragraph layout) and
``attribution.py`` (speaker, cue and kind per quotation); imports run in
that order.

Pipeline for one article (the whole text is parsed once, for context):

1. ``find_quote_spans``: quoted segments, found on characters paragraph by
   paragraph. Straight quotes toggle; curly quotes also say which way they
   face, which repairs missing marks (a stray closing mark is dropped, an
   opening mark met inside an open quote closes it and opens a new one). A quote
   still open at the end of a paragraph ends there; when the next paragraph
   opens with a quote mark it is the continuation of the same quotation
   (the newspaper convention for quotes running over several paragraphs).
2. ``attribute``: for each quoted segment, the *frame* is the unquoted part of
   the sentences it touches (plus the next sentence when the quote closes its
   sentence and the next one opens with a speech verb: `..." Trump said to a
   crowd`). The cue is chosen among the frame's speech verbs by
   ``_choose_cue`` (the governing verb with a named subject, see there); the
   speaker is its subject, found by climbing participles, prepositions and
   passives ("was quoted as saying", "..., saying", "upon saying"), the object
   of "according to", a name the parser took as the verb's object ("added
   Gowdy") or a name just before a subjectless verb. The possessor of a noun
   naming an utterance that holds the quotation below the cue ("Lee's claim
   that ...") overrides the cue's subject. Without a cue: a clause
   introducing the quote with a colon ("X continued:", "X: ..."), then, for a
   partial quote, the person subject of the clause around it. Proper names
   become canonical names, "he"/"she" are resolved by ``PersonTracker``; other
   mentions ("officials", "it", "they") keep the mention but have speaker
   None. A segment still without a speaker takes the speaker of the previous
   quotation in its paragraph (or of the quotation it continues, or of the
   previous paragraph's last quotation when it opens a paragraph right after
   it).
3. ``indirect_speech``: unquoted sentences whose speech verb has a clausal
   complement ("Solano alleges that ...", "..., said Solano") or that hold
   "according to X": kind "indirect", text = the reported clause.

Kinds: "direct" for a quotation that stands as speech (it opens the sentence
or follows ":" / "," / a speech verb), "partial" for a fragment quoted inside
paraphrase. Not speech, dropped: a quoted fragment of at most three words that
is not a sentence and has neither a cue nor a person whose clause governs it
(scare quotes, "so-called" terms), and a short Title-Case partial fragment
with no speaker (the name of a show or book). ``cue`` is the lemma of the
speech verb ("say", "tell", "according to", "go on"), None when the speaker
comes from the follow-on or governing-clause rules.
"""

from __future__ import annotations

from spacy.tokens import Doc

from newsquarry.search.ingest.enrich.attribution import attribute
from newsquarry.search.ingest.enrich.context import ArticleQuote, Speaker, _Context
from newsquarry.search.ingest.enrich.entities import Mention
from newsquarry.search.ingest.enrich.marks import (
    ALL_MARKS,
    CLOSE_MARKS,
    OPEN_MARKS,
    STRAIGHT_MARKS,
    QuoteSpan,
    cut_narrative,
    find_quote_spans,
)
from newsquarry.search.ingest.enrich.speech import (
    INDIRECT_VERBS,
    NON_SPEAKERS,
    SPEECH_VERBS,
    _cue_name,
    _is_cue,
)
from newsquarry.search.ingest.passages import paragraphs as paragraph_bounds

__all__ = [
    "ALL_MARKS",
    "CLOSE_MARKS",
    "INDIRECT_VERBS",
    "OPEN_MARKS",
    "SPEECH_VERBS",
    "STRAIGHT_MARKS",
    "ArticleQuote",
    "QuoteSpan",
    "Speaker",
    "attribute",
    "extract_quotes",
    "find_quote_spans",
    "indirect_speech",
]


def indirect_speech(doc: Doc, ctx: _Context) -> list[ArticleQuote]:
    """Reported speech without quotation marks: "X said (that) ...", "according to X"."""
    out: list[ArticleQuote] = []
    for sent in doc.sents:
        for tok in sent:
            if ctx.quoted[tok.i]:
                continue
            if tok.lower_ == "according" and _is_cue(tok):
                prep = tok
                content = [t for t in sent if not (prep.left_edge.i <= t.i <= prep.right_edge.i)]
                cue_tok = tok
            elif tok.pos_ == "VERB" and tok.lemma_.lower() in INDIRECT_VERBS:
                comps = [c for c in tok.children if c.dep_ == "ccomp"]
                if not comps:
                    continue
                comp = comps[0]
                content = [t for t in doc[comp.left_edge.i : comp.right_edge.i + 1]]
                cue_tok = tok
            else:
                continue
            while content and (
                content[0].is_punct or content[0].is_space or content[0].dep_ == "mark"
            ):
                content = content[1:]
            while content and (content[-1].is_punct or content[-1].is_space):
                content = content[:-1]
            if len(content) < 3 or any(ctx.quoted[t.i] for t in content):
                continue
            subj = ctx.subject_of(cue_tok)
            if subj is None or ctx.quoted[subj.i]:
                continue
            speaker, mention, mstart, mend = ctx.speaker_from(subj)
            if speaker is None and (mention or "").lower() in NON_SPEAKERS:
                continue
            s, e = content[0].idx, content[-1].idx + len(content[-1])
            out.append(
                ArticleQuote(
                    start=s,
                    end=e,
                    text=ctx.text[s:e],
                    kind="indirect",
                    speaker=speaker,
                    speaker_mention=mention,
                    speaker_start=mstart,
                    speaker_end=mend,
                    cue=_cue_name(cue_tok),
                )
            )
    return out


def extract_quotes(
    doc: Doc, mentions: list[Mention], text: str | None = None
) -> list[ArticleQuote]:
    """All quotations (direct, partial, indirect) of a parsed article, in text order.

    ``text``: ``doc.text`` if the caller has it (spaCy rebuilds it on every access).
    """
    text = doc.text if text is None else text
    paragraphs = paragraph_bounds(text)
    spans = find_quote_spans(text, paragraphs)
    cut_narrative(spans, doc, mentions, text)
    ctx = _Context(doc, mentions, spans, paragraphs, text)
    quotes = attribute(doc, mentions, spans, paragraphs, ctx)
    quotes.extend(indirect_speech(doc, ctx))
    quotes.sort(key=lambda q: q.start)
    return quotes

"""Speaker, cue and kind of each quoted segment: the frame of sentences around a quotation,
the choice of its speech verb, and the fallbacks when the clause names no speaker."""

from __future__ import annotations

import re

from spacy.tokens import Doc, Span, Token

from newsquarry.search.ingest.enrich.context import ArticleQuote, _Context
from newsquarry.search.ingest.enrich.entities import Mention
from newsquarry.search.ingest.enrich.layouts import (
    _anaphoric_attribution,
    _attribution_line,
    _colon_cue,
    _fills_paragraph,
    _headline_dash,
    _previous_paragraph_quote,
    _previous_quote_in_paragraph,
    _subject_of_previous_paragraph,
    _subject_of_sentence_before,
)
from newsquarry.search.ingest.enrich.marks import ALL_MARKS, MARK_TOKENS, QuoteSpan
from newsquarry.search.ingest.enrich.pronouns import FEMALE_TITLES, MALE_TITLES
from newsquarry.search.ingest.enrich.speech import (
    SPEECH_NOUNS,
    SUBJECT_DEPS,
    _cue_name,
    _depth,
    _governs,
    _is_cue,
    _is_finite_with_subject,
    _is_title_word,
    _names_subject,
    _unknown_word,
)


def _choose_cue(cues: list[Token], qtoks: list[Token], first: int, last: int) -> Token:
    """The speech verb a quotation belongs to.

    Among the verbs governing the quote, the lowest finite one with its own
    subject, a name or pronoun ("Sanders said Trump called them 'rapists'" ->
    called; "X said the platform should reiterate 'Y'" -> said), else the
    highest ("Clinton says she expects Obama to announce an 'intensification'"
    -> says; "X rejected it, calling it 'a Y'" -> the verb above). Without a
    governing verb, the nearest one.
    """
    governing = [t for t in cues if _governs(t, qtoks)]
    if len(governing) > 1:
        # "was quoted as saying": the frame verb "quote" yields to the speech verb
        governing = [t for t in governing if t.lemma_.lower() != "quote"] or governing
    if governing:
        by_depth = sorted(governing, key=_depth, reverse=True)  # lowest first
        for t in by_depth:
            if _is_finite_with_subject(t) and (t is by_depth[-1] or _names_subject(t)):
                return t
        return by_depth[-1]
    return min(cues, key=lambda t: min(abs(t.i - first), abs(t.i - last)))


PERSONAL_TITLES = MALE_TITLES | FEMALE_TITLES | {"dr", "prof", "professor"}

_SMALL_WORDS = frozenset("of the and a an in on for to with at by or".split())


def _is_title(content: str) -> bool:
    """A short capitalised fragment: the name of a show, book or group."""
    words = re.findall(r"[^\W\d_][\w’'-]*", content)
    if not words or len(words) > 4 or not words[0][0].isupper():
        return False
    return all(w[0].isupper() or w.lower() in _SMALL_WORDS for w in words)


def _person_subject_above(qtoks: list[Token], ctx: _Context) -> Token | None:
    """The person subject of the nearest clause above a quoted fragment, if any."""
    if not qtoks:
        return None
    tok = qtoks[0]
    seen = 0
    while tok.head.i != tok.i and seen < 8:
        tok = tok.head
        seen += 1
        if ctx.quoted[tok.i] or tok.pos_ not in ("VERB", "AUX"):
            continue
        for c in tok.children:
            if c.dep_ in SUBJECT_DEPS and not ctx.quoted[c.i]:
                m = ctx.mention_at.get(c.i)
                if (m is not None and m.type == "person") or c.lower_ in ("he", "she"):
                    return c
                if c.dep_ == "nsubj" and c.pos_ == "PROPN" and ctx.known_surname(c) is not None:
                    return c  # a surname the model did not tag as a person
                return None
    return None


def _utterance_owner(qtoks: list[Token], ctx: _Context, cue: Token | None) -> Token | None:
    """The person whose utterance noun holds the quotation, below any cue.

    "Lee's claim that Reyes 'lied'", "Lee's 'no new taxes' promise", "Lee's motto
    was, '...'", "claims from Lee that Reyes 'lied'": the possessor (or the "from"/"by"
    person) of the noun naming the utterance is the speaker, whatever verb of the
    sentence governs the noun phrase.
    """
    if not qtoks:
        return None
    lo, hi = qtoks[0].i, qtoks[-1].i
    tops = [t for t in qtoks if not (lo <= t.head.i <= hi) or t.head.i == t.i]
    for top in tops[:3]:
        tok = top
        for _ in range(8):
            if cue is not None and tok.i == cue.i:
                return None
            nouns = []
            if tok.pos_ == "NOUN":
                nouns.append(tok)
            elif tok.lemma_ == "be" and re.search(
                r"[,:]\s*$", ctx.text[max(0, qtoks[0].idx - 5) : qtoks[0].idx - 1]
            ):
                # "Lee's motto was, '...'" (not "Lee's claim was 'false'": a judgment)
                nouns.extend(c for c in tok.children if c.dep_ == "nsubj" and c.pos_ == "NOUN")
            for n in nouns:
                if n.lemma_.lower() not in SPEECH_NOUNS or ctx.quoted[n.i]:
                    continue
                owners = [c for c in n.children if c.dep_ == "poss"] + [
                    o  # "claims from Michael Howard that ...", "a promise by Lee to ..."
                    for p in n.children
                    if p.dep_ == "prep" and p.lower_ in ("from", "by")
                    for o in p.children
                    if o.dep_ == "pobj"
                ]
                for c in owners:
                    if ctx.quoted[c.i]:
                        continue
                    m = ctx.mention_at.get(c.i)
                    if (m is not None and m.type == "person") or (
                        c.pos_ == "PROPN" and ctx.known_surname(c) is not None
                    ):
                        return c
            if tok.head.i == tok.i:
                break
            tok = tok.head
    return None


def _lead_in_subject(sp: QuoteSpan, ctx: _Context) -> Token | None:
    """The person subject of the clause that runs into a quotation after a comma or a
    dash, when the parse hangs that clause under the quotation ("Lee also defended
    the plan -- 'I think it works'" with "defended" a complement of "think")."""
    mark = ctx.token_at(sp.mark)
    start = max(ctx.doc[mark].sent.start, ctx.token_at(ctx.paragraphs[sp.para][0]))
    for tok in ctx.doc[start:mark]:
        if ctx.quoted[tok.i] or tok.pos_ not in ("VERB", "AUX"):
            continue
        for c in tok.children:
            if c.dep_ in SUBJECT_DEPS and c.i < mark and not ctx.quoted[c.i]:
                m = ctx.mention_at.get(c.i)
                if (m is not None and m.type == "person") or c.lower_ in ("he", "she"):
                    return c
                if c.dep_ == "nsubj" and c.pos_ == "PROPN" and ctx.known_surname(c) is not None:
                    return c
                return None
    return None


def _kind(text: str, sp: QuoteSpan, ctx: _Context, cue: Token | None) -> str:
    """direct for a quote that stands as speech, partial for a fragment in paraphrase."""
    if sp.continues:
        return "direct"
    ps = ctx.paragraphs[sp.para][0]
    before = text[ps : sp.mark].rstrip()
    content = text[sp.start : sp.end]
    words = content.split()
    if not before or before[-1] in ":,.?!;—–-([":
        if len(words) <= 3 and not re.search(r"[.?!,]\W*$", content):
            return "partial"
        return "direct"
    prev_word = re.findall(r"[A-Za-z]+$", before)
    if cue is not None and prev_word and ctx.token_at(sp.mark - 1) == cue.i:
        return "direct"
    return "partial"


_SENTENCE = re.compile(r"^\W*[A-Z].*[.?!]\W*$", re.DOTALL)


def _bare_cue(sp: QuoteSpan, ctx: _Context, after: list[Token]) -> Token | None:
    """The verb of a short attribution right after a quotation ending in , ? or !.

    `"...," Rosa Delgado fumed`, `"...," interjected Frank Willis`: whatever the
    verb, a name and a verb right after such a quote attribute it, so a speech
    verb outside the lexicon still finds its speaker.
    """
    content = ctx.text[sp.start : sp.end].rstrip()
    gap = ctx.text[sp.end : sp.end + 3]
    if not (content.endswith((",", "?", "!")) or gap[1:2] == ","):
        return None
    words = [t for t in after if not t.is_punct and not t.is_space][:5]
    for k, t in enumerate(words):
        if t.pos_ == "VERB":
            before = words[:k]
            if all(
                w.pos_ == "PROPN" or w.i in ctx.mention_at or _is_title_word(w) or _unknown_word(w)
                for w in before
            ):
                if before or ctx.inverted_subject(t) is not None:
                    return t
            return None
    return None


def _adjacent_cue(sp: QuoteSpan, ctx: _Context, after: list[Token]) -> Token | None:
    """The speech verb of an attribution right after a quotation ending in , ? or !.

    `"...," Ann Lee said, after Bo Reyes said ...`: the name and cue right after
    the closing mark attribute the quotation, whatever verb the parse makes it the
    complement of.
    """
    content = ctx.text[sp.start : sp.end].rstrip()
    gap = ctx.text[sp.end : sp.end + 3]
    if not (content.endswith((",", "?", "!")) or gap[1:2] == ","):
        return None
    lead = ctx.text[ctx.paragraphs[sp.para][0] : sp.mark].rstrip()
    if lead and lead[-1] not in '.?!”"':
        return None  # a fragment inside a sentence, not a quotation standing as speech
    words = [t for t in after if not t.is_punct and not t.is_space][:5]
    for k, t in enumerate(words):
        if _is_cue(t):
            before = words[:k]
            if (
                before
                and all(
                    w.pos_ == "PROPN" or w.i in ctx.mention_at or _is_title_word(w) for w in before
                )
                or (len(before) == 1 and before[0].lower_ in ("he", "she"))
            ):
                return t
            return None
        if not (t.pos_ == "PROPN" or t.i in ctx.mention_at or t.lower_ in ("he", "she")):
            return None
    return None


def _opens_with_speaker(sent: Span, first: Token, ctx: _Context) -> bool:
    """The sentence opens with a person who is the subject of its speech verb, an
    apposition in between ('"...?" Ann Lee, a retired nurse, said into the phone.')."""
    m = ctx.mention_at.get(first.i)
    if m is None or m.type != "person":
        return False
    for t in sent:
        if _is_cue(t) and not ctx.quoted[t.i]:
            subj = ctx.subject_of(t)
            return subj is not None and m.tok_start <= subj.i < m.tok_end
    return False


# verbs that give something a name (marketing, nicknames); passive with no agent, the
# quotation is the label. Not "dub", "term", "describe": news quotes these as someone's words.
LABEL_VERBS = frozenset({"bill", "nickname"})


def _passive_label(qtoks: list[Token], ctx: _Context) -> bool:
    """The quotation is the label of a passive naming verb with no agent ("it is being
    billed as '...'", "he is described as '...'", "was dubbed '...'"): the grammatical
    subject is the thing named, and nobody is said to have spoken."""
    if not qtoks:
        return False
    lo, hi = qtoks[0].i, qtoks[-1].i
    for top in [t for t in qtoks if not (lo <= t.head.i <= hi)][:2]:
        tok = top
        for _ in range(3):
            if tok.head.i == tok.i:
                break
            tok = tok.head
            if ctx.quoted[tok.i]:
                break
            if tok.pos_ == "VERB":
                kids = list(tok.children)
                return (
                    tok.lemma_.lower() in LABEL_VERBS
                    and tok.tag_ == "VBN"
                    and any(c.dep_ in ("auxpass", "nsubjpass") for c in kids)
                    and not any(c.dep_ == "agent" for c in kids)
                )
    return False


def _after_personal_title(doc: Doc, k: int) -> bool:
    """The name at token ``k`` follows Mr, Mrs, Ms, Dr or another personal title: a person,
    though the model tagged none ("said Mr Davies")."""
    return k > 0 and doc[k - 1].lower_.rstrip(".") in PERSONAL_TITLES


def _frames_its_own_quote(sp: QuoteSpan, nxt: Span, ctx: _Context) -> bool:
    """The sentence after a quotation is the frame of another quotation, not of this one.

    A quotation closed by a full stop is a finished sentence; the sentence after it that
    quotes words of its own ("Leigh told BBC News the success was 'amazing'.") or ends
    in a colon introducing the next quotation ("He said: '...'") or reports speech of
    its own ("Lee says he hopes ...") attributes those, and the quotation before keeps
    its own (or its paragraph's) speaker.
    """
    tail = ctx.text[nxt.start_char : nxt.end_char].rstrip()
    if tail.endswith(":"):
        return True
    content = ctx.text[sp.start : sp.end].rstrip().rstrip(ALL_MARKS)
    if not content.endswith((".", "?", "!")):
        return False
    if any(ctx.quoted[t.i] and t.idx > sp.end and t.text not in MARK_TOKENS for t in nxt):
        return True
    # "Prof Reddy says he hopes to ...": a speech verb with reported content of its own
    # opens the reporter's next sentence, it does not close the quotation before
    words = [t for t in nxt if not t.is_punct and not t.is_space][:4]
    return any(
        _is_cue(t) and any(c.dep_ == "ccomp" and not ctx.quoted[c.i] for c in t.children)
        for t in words
    )


def attribute(
    doc: Doc,
    mentions: list[Mention],
    spans: list[QuoteSpan],
    paragraphs: list[tuple[int, int]],
    ctx: _Context | None = None,
) -> list[ArticleQuote]:
    """Speaker, cue and kind of each quoted segment."""
    ctx = ctx or _Context(doc, mentions, spans, paragraphs)
    text = ctx.text
    out: list[ArticleQuote | None] = []
    for qi, sp in enumerate(spans):
        first_tok = ctx.token_at(sp.start)
        last_tok = ctx.token_at(max(sp.start, sp.end - 1))
        qtoks = [doc[k] for k in range(first_tok, last_tok + 1)]
        if not sp.continues and _passive_label(qtoks, ctx):
            out.append(None)  # a name given to something, not anyone's words
            continue
        sents = []
        for k in (ctx.token_at(sp.mark), first_tok, last_tok):
            s = doc[k].sent
            if s not in sents:
                sents.append(s)
        # the sentence right after, when the quote closes a sentence and the cue
        # sits in a fragment the model split off ("...," he said.)
        end_sent = doc[last_tok].sent
        ps, pe = ctx.paragraphs[sp.para]
        ranges = [(ps, pe)]
        if end_sent.end < len(doc):
            nxt = doc[end_sent.end].sent
            nxt_para = ctx.para_of(nxt.start_char)
            if (
                nxt_para != sp.para
                and text[sp.start : sp.end].rstrip().endswith(",")
                and not re.search(r"\w", text[sp.end : pe])
            ):
                # `"...,"` ending its paragraph: the attribution is in the next
                # paragraph, past any page furniture ("Advertisement")
                nxt_para = ctx.next_content_paragraph(sp.para)
                if nxt_para is not None:
                    nxt = doc[ctx.token_at(ctx.paragraphs[nxt_para][0])].sent
                    ranges.append(ctx.paragraphs[nxt_para])
                    nxt_para = sp.para
            if nxt_para == sp.para and nxt not in sents:
                head_toks = [t for t in nxt if not t.is_punct and not t.is_space]
                gap = text[sp.end : nxt.start_char] if len(ranges) == 1 else ""
                own_cue = any(
                    _is_cue(t) and not ctx.quoted[t.i] and t.idx < sp.mark for s in sents for t in s
                )
                if (
                    head_toks
                    and not own_cue  # "X attacked Y, calling him '...'. Y fired back"
                    and not _frames_its_own_quote(sp, nxt, ctx)
                    and not ctx.quoted[head_toks[0].i]
                    and not re.search(r"\w", gap)
                    and (
                        any(_is_cue(t) for t in head_toks[:4])
                        or _opens_with_speaker(nxt, head_toks[0], ctx)
                        or _bare_cue(sp, ctx, head_toks) is not None  # '"...?" Lee pressed.'
                    )
                ):
                    sents.append(nxt)
        frame = [
            t
            for s in sents
            for t in s
            if not ctx.quoted[t.i]
            and any(a <= t.idx < b for a, b in ranges)
            and not t.is_punct
            and not t.is_space
        ]
        cues = [t for t in frame if _is_cue(t)]
        intro = text[: sp.mark].rstrip()
        if cues and intro.endswith(":") and ctx.para_of(len(intro) - 1) == sp.para:
            dash = _headline_dash(doc[ctx.token_at(len(intro) - 1)], ctx)
            if dash is not None:
                cues = [t for t in cues if t.i > dash.i]
        cue = None
        if cues:
            cue = _adjacent_cue(sp, ctx, [t for t in frame if t.idx >= sp.end]) or _choose_cue(
                cues, qtoks, first_tok, last_tok
            )
        else:
            cue = _bare_cue(sp, ctx, [t for t in frame if t.idx >= sp.end])
        speaker = mention = None
        mstart = mend = None
        if cue is not None:
            subj = ctx.subject_of(cue)
            if subj is None or ctx.quoted[subj.i]:
                # a word of the quotation is never its speaker ('"...," Ann Lee, 58,
                # told reporters' parsed as a clause joined to the quotation)
                subj = (
                    ctx.name_right_before(cue)
                    or ctx.inverted_subject(cue)
                    or ctx.preceding_name(cue)
                    or ctx.name_between(last_tok + 1, cue)
                    or subj
                )
            if subj is not None and not ctx.quoted[subj.i]:
                speaker, mention, mstart, mend = ctx.speaker_from(subj)
            elif subj is not None and cue.i > 0:
                # the name glued to the closing mark, right before the cue
                speaker, mention, mstart, mend = ctx.glued_name(doc[cue.i - 1])
        owner = _utterance_owner(qtoks, ctx, cue)
        if owner is not None:
            cue = None
            speaker, mention, mstart, mend = ctx.person_from(owner)
        if cue is None and owner is None:
            cue, subj = _colon_cue(sp, ctx)
            if cue is not None:
                subj = ctx.subject_of(cue)
            if subj is not None and not ctx.quoted[subj.i]:
                speaker, mention, mstart, mend = ctx.speaker_from(subj)
        kind = _kind(text, sp, ctx, cue)
        content = text[sp.start : sp.end]
        lead_in = text[ctx.paragraphs[sp.para][0] : sp.mark].rstrip()
        if (
            speaker is None
            and mention is None
            and (kind == "partial" or (cue is None and lead_in.endswith((",", "--", "—", "–"))))
        ):
            # a fragment quoted inside a clause whose subject is a person: theirs; so is
            # a quotation the clause runs into ("Ann Lee issued a statement, '...'")
            subj = _person_subject_above(qtoks, ctx)
            if subj is None and kind == "direct":
                subj = _lead_in_subject(sp, ctx)
            if subj is not None:
                speaker, mention, mstart, mend = ctx.person_from(subj)
        if (
            cue is None
            and speaker is None
            and len(content.split()) <= 3
            and not _SENTENCE.search(content)
        ):
            out.append(None)  # a title or scare quote, not speech
            continue
        if speaker is None and kind == "partial" and _is_title(content):
            out.append(None)  # a title ("Good Morning America"), not speech
            continue
        if speaker is None and mention is None and _fills_paragraph(sp, ctx):
            # the attribution placed after the quotation, on a line of its own
            # ("- Martin Okafor, a plumber") or pointing back ("That was how X put it")
            nxt_para = ctx.next_content_paragraph(sp.para)
            if nxt_para is not None:
                found = _attribution_line(nxt_para, ctx) or _anaphoric_attribution(nxt_para, ctx)
                if found is not None:
                    speaker, mention, mstart, mend = found
        if (
            speaker is None
            and mention is None
            and _fills_paragraph(sp, ctx)
            and _previous_paragraph_quote(qi, sp, spans, out, ctx) is None
        ):
            # a quotation standing alone after a paragraph about someone (no quote
            # there): the person that paragraph's last sentence is about
            found = _subject_of_previous_paragraph(sp, ctx)
            if found is not None:
                speaker, mention, mstart, mend = found
        if speaker is None and mention is None and cue is None and kind == "direct":
            # a quotation standing as a sentence right after one about a person
            found = _subject_of_sentence_before(sp, ctx)
            if found is not None:
                speaker, mention, mstart, mend = found
        if speaker is None and mention is None:
            # follow-on: the previous quotation of the paragraph (or the one continued),
            # else the last attributed quote of the previous paragraph
            prevq = _previous_quote_in_paragraph(qi, sp, spans, out)
            if prevq is None:
                prevq = _previous_paragraph_quote(qi, sp, spans, out, ctx)
            if prevq is not None:
                speaker, mention = prevq.speaker, prevq.speaker_mention
                mstart, mend = prevq.speaker_start, prevq.speaker_end
        if speaker is not None and mstart is not None and mend is not None:
            a, b = ctx.token_at(mstart), ctx.token_at(mend - 1) + 1
            if (
                a not in ctx.mention_at
                and not ctx.quoted[a]
                and (speaker in ctx.person_names.values() or _after_personal_title(doc, a))
                and doc[a].pos_ != "PRON"
            ):
                ctx.tracker.add(a, b, speaker)  # an untagged name: "he" may refer to it
        out.append(
            ArticleQuote(
                start=sp.start,
                end=sp.end,
                text=text[sp.start : sp.end],
                kind=kind,
                speaker=speaker,
                speaker_mention=mention,
                speaker_start=mstart,
                speaker_end=mend,
                cue=_cue_name(cue) if cue is not None else None,
            )
        )
    # A quote left open whose speaker is only named in its continuation.
    for qi in range(len(spans) - 2, -1, -1):
        q, nxt_q = out[qi], out[qi + 1]
        if (
            q is not None
            and nxt_q is not None
            and spans[qi + 1].continues
            and q.speaker_mention is None
            and nxt_q.speaker_mention is not None
        ):
            q.speaker, q.speaker_mention = nxt_q.speaker, nxt_q.speaker_mention
            q.speaker_start, q.speaker_end = nxt_q.speaker_start, nxt_q.speaker_end
    return [q for q in out if q is not None]

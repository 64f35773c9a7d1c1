"""Quotations and reported speech of one article, with speakers.

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

import bisect
import re
from dataclasses import dataclass

from spacy.tokens import Doc, Span, Token

from newsquarry.search.core.textnorm import fold
from newsquarry.search.ingest.enrich.entities import (
    DETERMINERS,
    TITLES,
    Mention,
    _generic_head,
    common_words,
)
from newsquarry.search.ingest.enrich.pronouns import PersonTracker, pronoun_gender
from newsquarry.search.ingest.passages import paragraphs as paragraph_bounds

OPEN_MARKS = "“„«"
CLOSE_MARKS = "”»"
STRAIGHT_MARKS = '"'
ALL_MARKS = OPEN_MARKS + CLOSE_MARKS + STRAIGHT_MARKS

SPEECH_VERBS = frozenset(
    [
        "say",
        "tell",
        "add",
        "allege",
        "claim",
        "warn",
        "accuse",
        "describe",
        "write",
        "tweet",
        "post",
        "ask",
        "call",
        "state",
        "explain",
        "note",
        "report",
        "reply",
        "respond",
        "declare",
        "conclude",
        "argue",
        "insist",
        "continue",
        "announce",
        "admit",
        "acknowledge",
        "recall",
        "remark",
        "comment",
        "suggest",
        "complain",
        "predict",
        "promise",
        "pledge",
        "vow",
        "urge",
        "joke",
        "quip",
        "shout",
        "yell",
        "scream",
        "whisper",
        "testify",
        "answer",
        "boast",
        "brag",
        "concede",
        "confirm",
        "deny",
        "emphasize",
        "emphasise",
        "stress",
        "observe",
        "read",
        "quote",
        "mention",
        "maintain",
        "contend",
        "assert",
        "caution",
        "agree",
        "counter",
        "retort",
        "demand",
        "proclaim",
        "lament",
        "muse",
        "repeat",
        "reiterate",
        "wonder",
        "exclaim",
        "chant",
        "dub",
        "label",
        "brand",
        "term",
        "praise",
        "criticize",
        "criticise",
        "blast",
        "slam",
        "mock",
        "dismiss",
        "decry",
        "hail",
        "thank",
        "apologize",
        "apologise",
        "threaten",
        "tout",
        "insist",
        "charge",
        "predict",
        "declare",
        "proclaim",
        "lash",
        "rail",
        "explain",
        "recount",
        "fume",
        "interject",
        "blurt",
        "snap",
        "scoff",
        "sneer",
        "gush",
        "grumble",
        "mutter",
        "mumble",
        "sigh",
        "plead",
        "rant",
        "chime",
        "marvel",
        "interrupt",
        "cite",
        "write",
    ]
)
INDIRECT_VERBS = frozenset(
    [
        "say",
        "tell",
        "allege",
        "claim",
        "warn",
        "argue",
        "insist",
        "announce",
        "add",
        "deny",
        "admit",
        "state",
        "explain",
        "note",
        "report",
        "suggest",
        "acknowledge",
        "predict",
        "promise",
        "complain",
        "contend",
        "maintain",
        "assert",
        "reply",
        "respond",
        "write",
        "tweet",
        "declare",
        "confirm",
        "stress",
        "emphasize",
        "emphasise",
        "testify",
        "concede",
        "charge",
    ]
)
NON_SPEAKERS = frozenset(
    {"it", "they", "we", "i", "you", "people", "this", "that", "there", "who", "which", "one"}
)
SUBJECT_DEPS = ("nsubj", "nsubjpass")
# things that "say" for their author ("her email said", "a video that said")
DOCUMENT_NOUNS = frozenset(
    "email e-mail statement letter memo video ad advertisement release tweet response "
    "message note post".split()
)
# nouns naming an utterance: their possessor is its speaker ("Lee's claim that ...")
SPEECH_NOUNS = frozenset(
    "claim accusation assertion charge comment remark statement words question answer reply "
    "response retort quip joke promise pledge vow warning suggestion prediction declaration "
    "admission insistence argument complaint criticism conclusion description dictum phrase "
    "catchphrase slogan mantra refrain line message speech tweet post letter email "
    "e-mail".split()
)
# speech verbs whose object is the person spoken to
LISTENER_VERBS = frozenset({"tell", "ask", "urge", "warn", "remind", "assure", "inform", "thank"})
# A name not known as an entity: capitalised words (name particles allowed), no
# markup or digits ("de Blasio" yes; "veteran Republicans", 'datetime="2016' no)
_NAME = re.compile(
    r"^(?:(?:de|da|di|du|del|van|von|der|den|al|el|bin|ben|la|le|st\.?)\s)?"
    r"[A-Z][\w.'’-]*(?:\s+(?:(?:de|da|di|du|del|van|von|der|den|al|el|bin|la|le)\s+)?"
    r"[A-Z][\w.'’-]*)*$"
)
FURNITURE_WORDS = 8  # page furniture ("Advertisement - Story continues below") is short
DASH_LEAD = "-–—―•*"
ANAPHORIC_OPENERS = frozenset({"that", "this", "those", "these", "so", "such", "thus"})
CLIMB_DEPS = ("xcomp", "advcl", "pcomp", "conj", "prep", "acl", "ccomp")


@dataclass
class QuoteSpan:
    """A quoted segment; ``start``/``end`` exclude the marks (article offsets)."""

    start: int
    end: int
    mark: int  # offset of the opening mark
    para: int
    left_open: bool = False  # no closing mark before the paragraph ended
    continues: bool = False  # continues a quote left open in the previous paragraph


@dataclass
class ArticleQuote:
    """A quotation with article-level offsets (converted to passage offsets later)."""

    start: int
    end: int
    text: str
    kind: str
    speaker: str | None
    speaker_mention: str | None
    speaker_start: int | None
    speaker_end: int | None
    cue: str | None


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


class _Context:
    """Per-article lookups shared by the attribution rules."""

    def __init__(
        self,
        doc: Doc,
        mentions: list[Mention],
        spans: list[QuoteSpan],
        paragraphs: list[tuple[int, int]],
        text: str | None = None,
    ) -> None:
        self.doc = doc
        self.text = doc.text if text is None else text
        self.paragraphs = paragraphs
        self.para_starts = [s for s, _ in paragraphs]
        self.tok_starts = [t.idx for t in doc]
        n = len(doc)
        self.quoted = [False] * n
        for sp in spans:
            a = bisect.bisect_left(self.tok_starts, sp.mark)
            b = bisect.bisect_left(self.tok_starts, sp.end)
            for k in range(a, min(b, n)):
                self.quoted[k] = True
            # the closing mark too
            if b < n and doc[b].text in ALL_MARKS:
                self.quoted[b] = True
        for t in doc:
            if t.text in ALL_MARKS:
                self.quoted[t.i] = True
        self.mentions = mentions
        self._furniture: dict[int, bool] = {}
        self.mention_at: dict[int, Mention] = {}
        for m in mentions:
            for k in range(m.tok_start, m.tok_end):
                self.mention_at[k] = m
        self.tracker = PersonTracker(doc, mentions, self.quoted)
        self.person_names = {
            tuple(fold(m.name).split()): m.name for m in mentions if m.type == "person"
        }

    def is_furniture(self, pi: int) -> bool:
        """A paragraph that is page furniture, not text: a short line with no final
        punctuation, no quote mark and no person ("Advertisement - Story continues below")."""
        got = self._furniture.get(pi)
        if got is None:
            got = self._furniture[pi] = self._is_furniture(pi)
        return got

    def _is_furniture(self, pi: int) -> bool:
        ps, pe = self.paragraphs[pi]
        line = self.text[ps:pe]
        if len(line.split()) > FURNITURE_WORDS or any(c in ALL_MARKS for c in line):
            return False
        if re.search(r"[.!?:;…]\W*$", line):
            return False
        return not any(m.type == "person" and ps <= m.start < pe for m in self.mentions)

    def next_content_paragraph(self, pi: int) -> int | None:
        """The next paragraph after ``pi`` that is not furniture."""
        for k in range(pi + 1, len(self.paragraphs)):
            if not self.is_furniture(k):
                return k
        return None

    def previous_content_paragraph(self, pi: int) -> int | None:
        for k in range(pi - 1, -1, -1):
            if not self.is_furniture(k):
                return k
        return None

    def para_of(self, char: int) -> int:
        return max(0, bisect.bisect_right(self.para_starts, char) - 1)

    def token_at(self, char: int) -> int:
        """Index of the token holding (or first after) a character offset."""
        k = bisect.bisect_right(self.tok_starts, char) - 1
        return max(0, k)

    # -- speakers ---------------------------------------------------------------

    def known_surname(self, tok: Token) -> str | None:
        """The one person of the article whose last name is this word, if any."""
        return self.surname_owner(fold(tok.text))

    def surname_owner(self, key: str) -> str | None:
        """The one person of the article whose folded last name is ``key``, if any."""
        found = {name for full, name in self.person_names.items() if full and full[-1] == key}
        return found.pop() if len(found) == 1 else None

    def untagged_name(self, tok: Token, cue: Token) -> bool:
        """A proper noun after a cue that is no entity of another kind ("Continued
        Stone:"); not after a verb whose object is the listener ("told Jones.")."""
        return (
            tok.pos_ == "PROPN"
            and tok.ent_type_ in ("", "PERSON")
            and cue.lemma_.lower() not in LISTENER_VERBS
            and not self.quoted[tok.i]
            and bool(_NAME.match(tok.text))
        )

    def misparsed_name(self, tok: Token) -> bool:
        """A capitalised word the tagger read as a function word ("From said",
        "said Skelly", "Will urged"): inside a sentence a capital marks a name; at
        its start, only a surname of someone the article names."""
        if not tok.text[:1].isupper() or tok.pos_ in ("PROPN", "PRON", "DET", "NUM", "PUNCT"):
            return False
        if self.quoted[tok.i] or tok.lower_ in NON_SPEAKERS or tok.ent_type_ not in ("", "PERSON"):
            return False
        if tok.i == tok.sent.start or self.text[tok.idx - 2 : tok.idx].strip() in (".", "\n"):
            return self.known_surname(tok) is not None
        return True

    def subject_of(self, cue: Token) -> Token | None:
        """Grammatical speaker of a speech verb, climbing participles and passives."""
        if cue.lower_ == "according":
            for child in cue.children:
                if child.lower_ == "to":
                    for obj in child.children:
                        if obj.dep_ == "pobj":
                            return obj
            return None
        if cue.lemma_.lower() != "quote":
            # a passive cue names its speaker as the agent ("described by Ann Lee as")
            for c in cue.children:
                if c.dep_ == "agent":
                    objs = [o for o in c.children if o.dep_ == "pobj" and not self.quoted[o.i]]
                    if objs:
                        return objs[0]
        t = cue
        for _ in range(7):
            subj = [c for c in t.children if c.dep_ in SUBJECT_DEPS]
            # a word of the quotation parsed as a second subject is not the speaker
            subj = [c for c in subj if not self.quoted[c.i]] or subj
            if subj:
                s = subj[0]
                if s.lower_ in ("who", "that") and t.dep_ == "relcl":
                    return t.head
                return s
            if t.dep_ == "relcl":
                return t.head
            if t.i == cue.i and t.tag_ in ("VBD", "VBZ", "VBN"):
                # "Will urged": a modal never governs a finite verb; it is a name; so is
                # a capitalised "adverb" right before the verb ("..., Early described")
                names = [
                    c
                    for c in t.children
                    if (
                        (c.dep_ == "aux" and c.tag_ == "MD")
                        or (c.dep_ == "advmod" and c.i == t.i - 1)
                    )
                    and self.misparsed_name(c)
                ]
                if names:
                    return names[0]
            if t.i == cue.i:
                # "Conway notes": the name parsed as a compound of the verb
                names = [
                    c
                    for c in t.children
                    if c.dep_ == "compound" and c.i < t.i and c.pos_ == "PROPN"
                ]
                if names:
                    return names[-1]
            if t.dep_ not in CLIMB_DEPS + ("pobj", "dobj") or t.head.i == t.i:
                return None
            t = t.head
            if t.pos_ not in ("VERB", "AUX", "ADP", "NOUN"):
                return None
        return None

    def inverted_subject(self, cue: Token) -> Token | None:
        """A name right after a subjectless cue the parser took as its object ("added Gowdy")."""
        if cue.lower_ == "according":
            return None
        described = False
        for tok in self.doc[cue.i + 1 : cue.i + 7]:
            if tok.text == "," and described:
                continue  # "snapped the chairman, Oliver Grant"
            if tok.is_punct or self.quoted[tok.i]:
                return None
            described = described or tok.pos_ == "NOUN"
            if tok.i in self.mention_at and self.mention_at[tok.i].type == "person":
                while tok.dep_ == "compound" and tok.head.i in self.mention_at:
                    tok = tok.head
                return tok
            if pronoun_gender(tok.lower_) and tok.lower_ in ("he", "she"):
                return tok
            if (
                tok.i == cue.i + 1
                and tok.i + 1 < len(self.doc)
                and self.doc[tok.i + 1].is_punct
                and (self.misparsed_name(tok) or self.untagged_name(tok, cue))
            ):
                return tok  # "said Skelly, explaining ...": a name the tagger missed
        return None

    def preceding_name(self, cue: Token) -> Token | None:
        """A person named just before a subjectless cue ("Clinton, exasperated, responded")."""
        if cue.lower_ == "according":
            return None
        for k in range(cue.i - 1, max(cue.sent.start, cue.i - 8) - 1, -1):
            tok = self.doc[k]
            if self.quoted[tok.i]:
                return None
            m = self.mention_at.get(k)
            if m is not None and m.type == "person" and tok.dep_ not in ("pobj", "dobj", "poss"):
                return tok
        return None

    def name_right_before(self, cue: Token) -> Token | None:
        """A person named right before a subjectless cue: its subject, though the
        parse made the name a modifier ("Lee accused Reyes, ..., of" read as one
        noun phrase "Lee accused Reyes"); it wins over the name after the cue."""
        if cue.i == 0 or cue.lower_ == "according":
            return None
        tok = self.doc[cue.i - 1]
        m = self.mention_at.get(tok.i)
        if (
            m is None
            or m.type != "person"
            or self.quoted[tok.i]
            or tok.dep_ in ("pobj", "dobj", "poss")
        ):
            return None
        return tok

    def person_from(self, tok: Token) -> Speaker:
        """``speaker_from`` for a token known to name a person: a surname the model
        tagged as a place or organisation ("Morrow's" LOC) is that person."""
        m = self.mention_at.get(tok.i)
        if m is not None and m.type != "person" and m.tok_end - m.tok_start == 1:
            known = self.known_surname(tok)
            if known is not None:
                return known, m.text, m.start, m.end
        return self.speaker_from(tok)

    def document_author(self, doc_tok: Token) -> Token | None:
        """The person whose document speaks ("Lee's email said", "an email sent by Lee
        warned", "Lee released a video that said"), if the parse names one."""
        for c in doc_tok.children:
            m = self.mention_at.get(c.i)
            if c.dep_ == "poss" and m is not None and m.type == "person":
                return c
            if c.dep_ == "acl":
                for a in c.children:
                    if a.dep_ == "agent":
                        for o in a.children:
                            m = self.mention_at.get(o.i)
                            if o.dep_ == "pobj" and m is not None and m.type == "person":
                                return o
        head = doc_tok.head
        if doc_tok.dep_ == "dobj" and head.pos_ == "VERB":
            for c in head.children:
                m = self.mention_at.get(c.i)
                if c.dep_ == "nsubj" and m is not None and m.type == "person":
                    return c
        return None

    def glued_name(self, tok: Token) -> Speaker:
        """A name glued to the closing mark ('...paranoia,”Clinton said'): the model
        makes one token of the quotation's last word, the mark and the name."""
        found = re.search(r"[”\"]([A-Z][\w.'’-]+)$", tok.text)
        if found is None or not _NAME.match(found.group(1)):
            return None, None, None, None
        word = found.group(1)
        start = tok.idx + found.start(1)
        name = self.surname_owner(fold(word)) or word
        return name, word, start, start + len(word)

    def name_between(self, start: int, cue: Token) -> Token | None:
        """The first person named between a quotation's end and its cue, in the cue's
        sentence, not as an object ('"...," Ann Lee, the network's anchor, ..., said')."""
        for k in range(max(start, cue.sent.start), cue.i):
            m = self.mention_at.get(k)
            tok = self.doc[k]
            if self.quoted[k] or m is None or m.type != "person":
                continue
            if tok.dep_ in ("pobj", "dobj", "poss"):
                return None
            return self.doc[m.tok_end - 1]
        return None

    def speaker_from(self, tok: Token) -> tuple[str | None, str | None, int | None, int | None]:
        """(speaker, mention, mention start, mention end) for a subject token."""
        m = self.mention_at.get(tok.i)
        if (m is None or m.type != "person") and tok.lower_.rstrip(".") in TITLES:
            # "said Army Capt. Christian Pardo" (the model may take "Army Capt" for an
            # organisation), "Vice President for news Dave Gorab"
            title_mention, m = m, None
            for t in tok.subtree:
                cand = self.mention_at.get(t.i)
                if cand is not None and cand.type == "person":
                    m = cand
                    break
            if m is None:
                # not bounded by the sentence: the model may end one after "Capt."
                for t in self.doc[tok.i + 1 : min(tok.i + 5, len(self.doc))]:
                    cand = self.mention_at.get(t.i)
                    if cand is not None and cand.type == "person":
                        m = cand
                        break
                    if not (t.pos_ == "PROPN" or t.is_punct):
                        break
            m = m or title_mention
        if m is None:
            for c in tok.children:
                if c.dep_ in ("compound", "appos") and c.i in self.mention_at:
                    cand = self.mention_at[c.i]
                    # "the Trump campaign" speaks as an org, "a South Carolina native" is
                    # not South Carolina
                    if cand.type == "person" or (c.dep_ == "compound" and cand.type == "org"):
                        m = cand
                        break
        if m is None and tok.dep_ == "appos" and tok.head.i in self.mention_at:
            # "Braynard, a native who writes ...": the relative clause's noun is an
            # apposition of the name
            cand = self.mention_at[tok.head.i]
            if cand.type == "person":
                m = cand
        if m is not None:
            return m.name, m.text, m.start, m.end
        word = tok.lower_
        if pronoun_gender(word) and tok.pos_ == "PRON":
            return self.tracker.resolve(tok.i, word), tok.text, tok.idx, tok.idx + len(tok)
        if (
            tok.pos_ == "PROPN"
            or (
                tok.text[:1].isupper()
                and tok.pos_ in ("NOUN", "X")
                and (tok.i != tok.sent.start or tok.lower_ not in common_words())
            )
            or self.misparsed_name(tok)
        ):
            left = tok
            while (
                left.i > 0
                and self.doc[left.i - 1].dep_ == "compound"
                and self.doc[left.i - 1].head.i == tok.i
            ):
                left = self.doc[left.i - 1]
            right = tok
            # "S and P cited": a firm's initials joined by "and"
            if _initial(tok):
                if left.i >= 2 and self.doc[left.i - 1].lower_ in ("and", "&"):
                    if _initial(self.doc[left.i - 2]):
                        left = self.doc[left.i - 2]
                if tok.i + 2 < len(self.doc) and self.doc[tok.i + 1].lower_ in ("and", "&"):
                    if _initial(self.doc[tok.i + 2]):
                        right = self.doc[tok.i + 2]
            span = self.doc[left.i : right.i + 1]
            if right.i != tok.i or (_initial(left) and left.i < tok.i and _initial(tok)):
                return span.text, span.text, span.start_char, span.end_char
            if (
                len(span) == 1
                and tok.i > 1
                and self.doc[tok.i - 1].text == "The"
                and tok.i - 1 != tok.sent.start
                and (not self.doc[tok.i - 2].is_punct or self.doc[tok.i - 2].text in ",”\"'’")
            ):
                # "as The Hill pointed out": a capital "The" inside a sentence is part
                # of the name (a paper, a band), not the determiner of a description
                named = self.doc[tok.i - 1 : tok.i + 1]
                return named.text, named.text, named.start_char, named.end_char
            if (
                len(span) == 1
                and _generic_head(tok)
                and tok.i > 0
                and self.doc[tok.i - 1].lower_ in DETERMINERS
            ):
                # "the Bank said" with no full name in the article: a description
                return None, span.text, span.start_char, span.end_char
            key = tuple(fold(span.text).split())
            for full, name in self.person_names.items():
                if key and key[-1] == full[-1]:
                    return name, span.text, span.start_char, span.end_char
            # a plural ("Traders", "Officials", tagged PROPN when capitalised at the
            # start of a sentence) describes a group: no identifiable speaker
            plural = tok.tag_ in ("NNS", "NNPS")
            if word not in NON_SPEAKERS and not plural and _NAME.match(span.text):
                return span.text, span.text, span.start_char, span.end_char
            return None, span.text, span.start_char, span.end_char
        if word in NON_SPEAKERS or tok.pos_ == "PRON":
            return None, tok.text, tok.idx, tok.idx + len(tok)
        if word in DOCUMENT_NOUNS:
            author = self.document_author(tok)
            if author is not None:
                return self.speaker_from(author)
        # A description ("the spokesman", "officials"): keep the mention only.
        left = tok.left_edge
        right = tok
        for c in tok.rights:
            if c.dep_ == "prep" and c.lower_ in ("of", "for", "at", "from"):
                right = c.right_edge
        span = self.doc[left.i : right.i + 1]
        return None, span.text, span.start_char, span.end_char


def _initial(tok: Token) -> bool:
    """A single capital letter ("S" of "S and P")."""
    return len(tok.text) == 1 and tok.text.isupper()


def _is_cue(tok: Token) -> bool:
    if tok.lower_ == "according":
        return any(c.lower_ == "to" for c in tok.children)
    if tok.pos_ != "VERB":
        return False
    lemma = tok.lemma_.lower()
    if lemma == "call" and tok.i >= 2 and tok.nbor(-1).text == "-" and tok.nbor(-2).lower_ == "so":
        return False  # "so-called": a scare quote, not speech
    if lemma == "continue" and any(c.dep_ == "xcomp" for c in tok.children):
        return False  # "Lee will continue to be 'a champion'": not speech
    if lemma == "go":  # "Trump went on"
        return any(c.dep_ == "prt" and c.lower_ == "on" for c in tok.children)
    if any(c.dep_ == "prt" and c.lower_ in ("down", "off") for c in tok.children):
        return False  # "shouted down", "called off", "wrote off": not speech
    if lemma in ("shoot", "fire", "hit", "strike", "push", "snap"):  # "Lee shot back"
        if any(c.dep_ in ("prt", "advmod") and c.lower_ == "back" for c in tok.children):
            return True
    if lemma == "put":  # "as Ann Lee put it"
        return any(c.dep_ == "dobj" and c.lower_ == "it" for c in tok.children)
    if lemma == "point":  # "Ann Lee pointed out"
        return any(c.dep_ == "prt" and c.lower_ == "out" for c in tok.children)
    return lemma in SPEECH_VERBS


def _cue_name(tok: Token) -> str:
    if tok.lower_ == "according":
        return "according to"
    lemma = tok.lemma_.lower()
    if lemma in ("go", "point"):
        return lemma + (" on" if lemma == "go" else " out")
    if lemma in ("shoot", "fire", "hit", "strike", "push"):
        return lemma + " back"
    return lemma


def _governs(cue: Token, toks: list[Token]) -> bool:
    for t in toks:
        h = t
        for _ in range(6):
            if h.i == cue.i:
                return True
            if h.head.i == h.i:
                break
            h = h.head
    return False


def _depth(tok: Token) -> int:
    depth = 0
    while tok.head.i != tok.i and depth < 50:
        tok = tok.head
        depth += 1
    return depth


def _is_finite_with_subject(tok: Token) -> bool:
    has_subject = any(c.dep_ in SUBJECT_DEPS for c in tok.children)
    finite = tok.tag_ in ("VBD", "VBZ", "VBP", "MD") or any(c.dep_ == "aux" for c in tok.children)
    return has_subject and finite


def _names_subject(tok: Token) -> bool:
    """The verb's subject is a name or a personal pronoun, not a description."""
    for c in tok.children:
        if c.dep_ in SUBJECT_DEPS:
            return c.pos_ == "PROPN" or c.lower_ in ("he", "she", "i", "we", "they")
    return False


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
    was, '...'": the possessor of the noun naming the utterance is the speaker,
    whatever verb of the sentence governs the noun phrase.
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
                for c in n.children:
                    if c.dep_ != "poss" or ctx.quoted[c.i]:
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


Speaker = tuple[str | None, str | None, int | None, int | None]


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


def _unknown_word(tok: Token) -> bool:
    """A capitalised word the tagger took for a noun that no dictionary knows: a name
    ('"...?" Hannity pressed.' with "Hannity" tagged NOUN)."""
    return (
        tok.text[:1].isupper()
        and tok.pos_ in ("NOUN", "X")
        and tok.is_alpha
        and tok.lower_ not in common_words()
    )


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


def _is_title_word(tok: Token) -> bool:
    return tok.lower_.rstrip(".") in TITLES


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
                and speaker in ctx.person_names.values()
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
    ctx = _Context(doc, mentions, spans, paragraphs, text)
    quotes = attribute(doc, mentions, spans, paragraphs, ctx)
    quotes.extend(indirect_speech(doc, ctx))
    quotes.sort(key=lambda q: q.start)
    return quotes

"""The per-article context of attribution: token lookups, quoted tokens, mentions, the
pronoun tracker, and the rules that turn a subject token into a speaker; and the quotation record."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from spacy.tokens import Doc, Token

from newsquarry.search.core.textnorm import fold
from newsquarry.search.ingest.enrich.entities import (
    DETERMINERS,
    TITLES,
    Mention,
    _generic_head,
    common_words,
)
from newsquarry.search.ingest.enrich.marks import ALL_MARKS, MARK_TOKENS, QuoteSpan
from newsquarry.search.ingest.enrich.pronouns import (
    PersonTracker,
    phrase_head,
    pronoun_gender,
    sentences_back,
)
from newsquarry.search.ingest.enrich.speech import (
    _NAME,
    CLIMB_DEPS,
    DOCUMENT_NOUNS,
    FURNITURE_WORDS,
    LISTENER_VERBS,
    NON_SPEAKERS,
    SUBJECT_DEPS,
    _initial,
)

Speaker = tuple[str | None, str | None, int | None, int | None]


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
            if b < n and doc[b].text in MARK_TOKENS:
                self.quoted[b] = True
        for t in doc:
            if t.text in MARK_TOKENS:
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
        for m in mentions:  # a nickname stands for the whole name: "Mido" for Ahmed 'Mido' Hossam
            if m.type == "person":
                for nick in re.findall(r"['‘\"“]([^\W\d_]+)['’\"”]", m.name):
                    self.person_names.setdefault((fold(nick),), m.name)
        self.roles = self._roles()
        self.role_at: dict[int, str | None] = {}  # description token -> role_holder's answer
        for tok in doc:  # "The prime minister shrugged off ...": a mention of the person
            if not self.quoted[tok.i] and tok.i not in self.mention_at and _role_description(tok):
                name = self.role_at[tok.i] = self.role_holder(tok)
                if name is not None:
                    self.tracker.add(tok.i, tok.i + 1, name)

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

    def _roles(self) -> list[tuple[int, frozenset[str], str]]:
        """(token, role words, name) for each person the article names with a role:
        "Prime Minister Tony Blair", "England coach Mike Friday" (words before the name,
        in its noun phrase), "Tony Blair, the prime minister" and "the prime minister,
        Tony Blair" (appositions). Role words are lower-cased lemmas."""
        out = []
        doc = self.doc
        for m in self.mentions:
            if m.type != "person" or self.quoted[m.tok_start]:
                continue
            words: list[str] = []
            k = m.tok_start - 1
            while k >= 0 and m.tok_start - k <= 4:
                t = doc[k]
                if not t.is_alpha or k in self.mention_at or t.lower_ in DETERMINERS:
                    break
                if not (m.tok_start <= t.head.i < m.tok_end or k < t.head.i < m.tok_start):
                    break
                words.append(t.lemma_.lower())
                k -= 1
            root = doc[m.tok_end - 1]
            nouns = [c for c in root.children if c.dep_ == "appos"]
            if root.dep_ == "appos":
                nouns.append(root.head)
            for n in nouns:
                if n.pos_ == "NOUN" and n.i not in self.mention_at:
                    words.append(n.lemma_.lower())
                    words.extend(
                        c.lemma_.lower()
                        for c in n.children
                        if c.dep_ in ("compound", "amod") and c.i not in self.mention_at
                    )
            if words:
                out.append((m.tok_start, frozenset(words), m.name))
        return out

    def role_holder(self, tok: Token) -> str | None:
        """The person a definite description of a role ("the prime minister", "the
        coach") names, when the article gave that role to a person by name: the one
        whose role words hold the description's noun and its lower-case modifiers
        (the latest named before it, else the first after it)."""
        want = {tok.lemma_.lower()} | {
            c.lemma_.lower()
            for c in tok.children
            if c.dep_ in ("compound", "amod") and c.text[:1].islower()
        }
        fits = [(i, name) for i, words, name in self.roles if want <= words]
        before = [(i, name) for i, name in fits if i < tok.i]
        if before:
            return max(before)[1]
        return min(fits)[1] if fits else None

    def org_antecedent(self, token_index: int, sentences: int = 3) -> Mention | None:
        """The organisation an "it" or "the firm" at ``token_index`` stands for: of the
        organisations named outside quotations in its sentence and the ``sentences``
        before, the latest that is the subject of a clause, else the latest named."""
        horizon = sentences_back(self.doc, token_index, sentences)
        latest = None
        for m in reversed(self.mentions):
            if m.tok_start >= token_index:
                continue
            if m.tok_start < horizon:
                break
            if m.type != "org" or self.quoted[m.tok_start]:
                continue
            if phrase_head(self.doc[m.tok_end - 1]).dep_ in ("nsubj", "nsubjpass"):
                return m
            latest = latest or m
        return latest

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
            described = tok.text.islower() and any(
                c.dep_ == "det" and c.lower_ in DETERMINERS for c in tok.children
            )
            # "the director behind JFK, Platoon and ...": a description, and the names
            # after its preposition are what the person did, not who they are
            words = (
                [t for c in tok.children if c.dep_ in ("compound", "appos") for t in c.subtree]
                if described
                else list(tok.subtree)
            )
            for t in words:
                cand = self.mention_at.get(t.i)
                if cand is not None and cand.type == "person":
                    m = cand
                    break
            if m is None and not described:
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
        epithet = _epithet(tok, self.text)
        if epithet is not None:
            # "said the German", "the 22-year-old added": the reporter's variation on the
            # name of the person just written about
            span = self.doc[tok.left_edge.i : tok.i + 1]
            pron = {"male": "he", "female": "she"}.get(epithet)
            name = self.tracker.resolve(tok.i, pron) if pron else self.tracker._resolve(tok.i, None)
            return name, span.text, span.start_char, span.end_char
        if (
            # "the prime minister", "the Glasgow Kelvin MP" are descriptions, not names
            (tok.pos_ == "PROPN" and not tok.text.islower() and not _role_description(tok))
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
            while left.i < tok.i and (
                not left.text[:1].isupper() or left.lower_.rstrip(".") in TITLES
            ):
                # a job before the name is no part of it ("shadow attorney general Mr
                # Grieve said" -> Grieve)
                left = self.doc[left.i + 1]
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
            plural = tok.tag_ in ("NNS", "NNPS") and (
                tok.i == tok.sent.start or tok.lower_ in common_words()
            )  # "Davies" (NNPS) inside a sentence is a surname, not a group
            if word not in NON_SPEAKERS and not plural and _NAME.match(span.text):
                return span.text, span.text, span.start_char, span.end_char
            return None, span.text, span.start_char, span.end_char
        if word == "it" and tok.pos_ == "PRON":
            # "..., it said": a thing that speaks is an organisation, the one the last
            # sentences are about
            org = self.org_antecedent(tok.i)
            if org is not None:
                return org.name, tok.text, tok.idx, tok.idx + len(tok)
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
        if right.i == tok.i and _org_description(tok):
            # "The Australian firm said", "the car maker said": the organisation just named
            org = self.org_antecedent(tok.i)
            if org is not None:
                return org.name, span.text, span.start_char, span.end_char
        if right.i == tok.i and _role_description(tok):
            # "The double Olympic champion said": a definite description of a role
            # names again a person just named (the reporter's variation on the name),
            # the one the article gave that role, if it did ("Prime Minister Tony Blair")
            held = self.role_at[tok.i] if tok.i in self.role_at else self.role_holder(tok)
            name = held or self.tracker.resolve_description(tok.i, tok.lemma_.lower())
            if name is not None:
                return name, span.text, span.start_char, span.end_char
        return None, span.text, span.start_char, span.end_char


# what a definite description calls an organisation that speaks ("the firm said")
ORG_NOUNS = frozenset(
    "company firm corporation group club bank carrier airline maker carmaker automaker "
    "retailer insurer broadcaster network studio developer publisher manufacturer operator "
    "giant producer organisation organization agency charity union association "
    "federation regulator watchdog".split()
)


def _org_description(tok: Token) -> bool:
    """ "the firm", "the Australian firm", "the car maker": a definite singular noun for
    an organisation, with no possessor ("its parent company" is another one)."""
    if tok.lemma_.lower() not in ORG_NOUNS or tok.tag_ != "NN":
        return False
    kids = list(tok.children)
    if any(c.dep_ == "poss" for c in kids):
        return False
    return any(c.dep_ == "det" and c.lower_ == "the" for c in kids)


# roles a definite description names a person by ("the champion", "the Man Utd boss");
# not the words for an unnamed source ("the spokesman", "the official"), who is
# usually someone not named before
ROLE_NOUNS = frozenset(
    "boss manager coach champion captain striker player seed star actor actress director "
    "singer senator minister chancellor secretary premier leader chairman chairwoman "
    "president governor mayor judge veteran youngster winner founder chief "
    "executive mp mep msp".split()
)
# roles written in capitals ("the Glasgow Kelvin MP", "the Tory MEP")
ROLE_ACRONYMS = frozenset({"mp", "mep", "msp"})


def _role_description(tok: Token) -> bool:
    """A definite singular description of a role, with no name or possessor in it."""
    if tok.lemma_.lower() not in ROLE_NOUNS:
        return False
    if tok.tag_ != "NN" and not (
        tok.tag_ == "NNP" and (tok.text.islower() or tok.lower_ in ROLE_ACRONYMS)
    ):
        return False  # (a lower-case "minister" the model took for a proper noun is one)
    kids = list(tok.children)
    if any(c.dep_ == "poss" or c.pos_ == "PROPN" and c.ent_type_ == "PERSON" for c in kids):
        return False
    return any(c.dep_ == "det" and c.lower_ == "the" for c in kids)


# nationality nouns made with "man"/"woman": the gender is in the word
NATIONALITY_MAN = frozenset(
    "frenchman dutchman scotsman welshman englishman irishman cornishman manxman".split()
)
NATIONALITY_WOMAN = frozenset(w.replace("man", "woman") for w in NATIONALITY_MAN)
_AGE = re.compile(r"\d+-year-$")


def _epithet(tok: Token, text: str) -> str | None:
    """ "the German", "the Frenchwoman", "the 22-year-old": a definite singular epithet
    that news uses for a person already named (nationality or age, never a role), with
    the gender when the word has one ("male", "female", else "").

    Peoples written as plurals ("the French", "the British", "the Swiss") name a nation,
    not a person, so a nationality ending in s, sh or ch is refused.
    """
    kids = list(tok.children)
    if not any(c.dep_ == "det" and c.lower_ == "the" for c in kids):
        return None
    if any(c.dep_ in ("poss", "prep") for c in kids):
        return None
    word = tok.lower_
    if word in NATIONALITY_MAN:
        return "male"
    if word in NATIONALITY_WOMAN:
        return "female"
    if word == "old" and _AGE.search(text[max(0, tok.idx - 12) : tok.idx]):
        return ""
    if (
        tok.ent_type_ == "NORP"
        and tok.tag_ in ("NNP", "NN", "JJ")
        and tok.text[:1].isupper()
        and not word.endswith(("s", "sh", "ch"))
        and tok.dep_ in SUBJECT_DEPS
    ):
        return ""
    return None

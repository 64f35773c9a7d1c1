"""Pronoun resolution for speakers: no coreference model, a few rules.

``PersonTracker`` knows every person mention of an article (outside quoted
text) in order and a gender guess per canonical name, and resolves "he" or
"she" at a token position to the most recent compatible person.

Gender evidence, per canonical name:
* a title in front of a mention ("Mr", "Mrs", "Ms", ...), strongest;
* the first name of a name of two words or more, when that first name is given
  almost only to men or only to women (``first_names.txt``: "Imelda Staunton" is
  a woman, "Clive Owen" a man; "Jamie" or "Leigh" decide nothing);
* a gendered noun in apposition or as predicate ("X, a spokeswoman", "X is a
  father");
* the subject pronoun of the next sentence after a sentence whose subject is
  the mention ("Harry Solano was a sergeant. He is now ..."), unless that
  pronoun introduces a quotation (there "she said" right after a man is the
  very case we must not learn from).

"she" never resolves to a person known to be male and vice versa; the most
recent compatible person (matching or unknown gender) wins.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import Any

from spacy.tokens import Doc, Token

from newsquarry.search.ingest.enrich.entities import Mention
from newsquarry.search.ingest.enrich.names import first_name_gender

MALE = frozenset({"he", "him", "his", "himself"})
FEMALE = frozenset({"she", "her", "hers", "herself"})
MALE_TITLES = frozenset({"mr", "sir", "lord", "king", "prince", "father", "brother"})
FEMALE_TITLES = frozenset(
    {"mrs", "ms", "miss", "dame", "lady", "madam", "madame", "queen", "princess", "sister"}
)
MALE_NOUNS = frozenset(
    [
        "man",
        "father",
        "husband",
        "son",
        "brother",
        "spokesman",
        "congressman",
        "chairman",
        "businessman",
        "boy",
        "grandfather",
        "uncle",
        "nephew",
        "king",
        "actor",
        "widower",
    ]
)
FEMALE_NOUNS = frozenset(
    [
        "woman",
        "mother",
        "wife",
        "daughter",
        "sister",
        "spokeswoman",
        "congresswoman",
        "chairwoman",
        "businesswoman",
        "girl",
        "grandmother",
        "aunt",
        "niece",
        "queen",
        "actress",
        "widow",
    ]
)


def phrase_head(tok: Token) -> Token:
    """The head of the name a token ends ("Blair" of "Tony Blair", up compounds)."""
    while tok.dep_ in ("compound", "flat") and tok.head.i != tok.i:
        tok = tok.head
    return tok


def sentences_back(doc: Doc, token_index: int, sentences: int) -> int:
    """First token of the sentence ``sentences`` before the one holding ``token_index``."""
    start = doc[token_index].sent.start
    for _ in range(sentences):
        if start == 0:
            break
        start = doc[start - 1].sent.start
    return start


def pronoun_gender(word: str) -> str | None:
    """'m', 'f' or None for a (lower-cased) pronoun."""
    if word in MALE:
        return "m"
    if word in FEMALE:
        return "f"
    return None


class PersonTracker:
    """Person mentions of one article, in order, with gender guesses."""

    def __init__(self, doc: Doc, mentions: list[Mention], quoted: list[bool]) -> None:
        self.doc = doc
        self.people = [m for m in mentions if m.type == "person" and not quoted[m.tok_start]]
        self.positions = [m.tok_start for m in self.people]
        votes: dict[str, dict[str, int]] = defaultdict(lambda: {"m": 0, "f": 0})
        for m in self.people:
            self._vote(m, votes, quoted)
        for name in {m.name for m in self.people}:
            g = first_name_gender(name)
            if g is not None:
                votes[name][g] += 2
        self.gender: dict[str, str] = {}
        for name, v in votes.items():
            if v["m"] > v["f"]:
                self.gender[name] = "m"
            elif v["f"] > v["m"]:
                self.gender[name] = "f"

    def add(self, tok_start: int, tok_end: int, name: str) -> None:
        """A person the attribution rules found where the model tagged no name
        ('"...," Tripp said' with "Tripp" untagged): later pronouns may refer to it."""
        if tok_start in self.positions:
            return
        span = self.doc[tok_start:tok_end]
        k = bisect.bisect_left(self.positions, tok_start)
        m = Mention(
            start=span.start_char,
            end=span.end_char,
            text=span.text,
            type="person",
            name=name,
            tok_start=tok_start,
            tok_end=tok_end,
        )
        self.people.insert(k, m)
        self.positions.insert(k, tok_start)
        if name not in self.gender and tok_start > 0:
            prev = self.doc[tok_start - 1].lower_.rstrip(".")  # "said Mr Davies"
            if prev in MALE_TITLES:
                self.gender[name] = "m"
            elif prev in FEMALE_TITLES:
                self.gender[name] = "f"

    def _vote(self, m: Mention, votes: dict[str, dict[str, int]], quoted: list[bool]) -> None:
        doc = self.doc
        if m.tok_start > 0:
            prev = doc[m.tok_start - 1].lower_.rstrip(".")
            if prev in MALE_TITLES:
                votes[m.name]["m"] += 3
            elif prev in FEMALE_TITLES:
                votes[m.name]["f"] += 3
        root = doc[m.tok_end - 1]
        if root.dep_ == "appos":  # "his wife, Jane"
            noun = root.head.lemma_.lower()
            if noun in MALE_NOUNS:
                votes[m.name]["m"] += 2
            elif noun in FEMALE_NOUNS:
                votes[m.name]["f"] += 2
        for tok in list(root.children) + ([root.head] if root.dep_ in ("nsubj",) else []):
            if tok.dep_ in ("appos", "attr") or (tok is root.head and tok.lemma_ == "be"):
                nouns = [tok] + [c for c in tok.children if c.dep_ == "attr"]
                for n in nouns:
                    if n.lemma_.lower() in MALE_NOUNS:
                        votes[m.name]["m"] += 2
                    elif n.lemma_.lower() in FEMALE_NOUNS:
                        votes[m.name]["f"] += 2
        # A subject pronoun later in the same sentence, with no other person or
        # gendered noun in between ("X was ..., when he resigned").
        sent = root.sent
        for tok in doc[m.tok_end : sent.end]:
            if quoted[tok.i]:
                continue
            if tok.ent_type_ == "PERSON" or tok.lemma_.lower() in MALE_NOUNS | FEMALE_NOUNS:
                break
            if tok.dep_ in ("nsubj", "nsubjpass"):
                g = pronoun_gender(tok.lower_)
                if g:
                    votes[m.name][g] += 1
                    break
        # Subject of the sentence -> subject pronoun opening the next sentence.
        if root.dep_ not in ("nsubj", "nsubjpass") or root.head.dep_ != "ROOT":
            return
        if sent.end >= len(doc):
            return
        nxt = doc[sent.end].sent
        if any(quoted[t.i] for t in nxt):
            return
        for tok in nxt:
            if tok.dep_ in ("nsubj", "nsubjpass") and tok.head.dep_ == "ROOT":
                g = pronoun_gender(tok.lower_)
                if g:
                    votes[m.name][g] += 1
                break

    def _subject_depth(self, m: Mention) -> int | None:
        """Depth of the clause whose subject the mention is, None if not a subject."""
        tok = phrase_head(self.doc[m.tok_end - 1])
        if tok.dep_ not in ("nsubj", "nsubjpass"):
            # "... leaders Barcelona and Owen is confident": the parser joined the name to
            # the noun before it; a name right before a verb that has no subject is its subject
            nxt = self.doc[m.tok_end] if m.tok_end < len(self.doc) else None
            if (
                tok.dep_ != "conj"
                or nxt is None
                or nxt.pos_ not in ("VERB", "AUX")
                or any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in nxt.children)
            ):
                return None
            tok = nxt
        depth = 0
        while tok.head.i != tok.i and depth < 50:
            tok = tok.head
            depth += 1
        return depth

    def resolve(self, token_index: int, word: str) -> str | None:
        """Canonical name a "he"/"she" at token_index refers to, or None.

        In the pronoun's own sentence and the sentence before, a compatible
        person who is the subject of the highest clause wins ("Rubio said he
        would ..., whom he called ..." -> Rubio, not the object); otherwise the
        most recent compatible person.
        """
        g = pronoun_gender(word.lower())
        if g is None:
            return None
        return self._resolve(token_index, g)

    def _resolve(self, token_index: int, g: str | None) -> str | None:
        k = bisect.bisect_left(self.positions, token_index)
        before = self.people[:k]

        def compatible(m: Mention) -> bool:
            return g is None or self.gender.get(m.name) in (None, g)

        sent = self.doc[token_index].sent
        windows = [sent]
        if sent.start > 0:
            windows.append(self.doc[sent.start - 1].sent)
        asked = self._asked_clause(sent, token_index)
        for window in windows:
            subjects = []
            for m in reversed(before):
                if m.tok_start < window.start:
                    break
                if m.tok_start >= window.end or not compatible(m) or m.tok_start in asked:
                    continue
                depth = self._subject_depth(m)
                if depth is not None:
                    subjects.append((depth, -m.tok_start, m))
            if subjects:
                return min(subjects, key=lambda x: (x[0], x[1]))[2].name
        # further back, the latest person who was the subject of a clause (the topic a
        # pronoun picks up: "Ken Bates has taken over Leeds United. The 73-year-old
        # ... . He said" -> Bates), within a few sentences; else the latest person
        horizon = sentences_back(self.doc, token_index, 3)
        for m in reversed(before):
            if m.tok_start < horizon:
                break
            if compatible(m) and m.tok_start not in asked and self._subject_depth(m) is not None:
                return m.name
        for m in reversed(before):
            if compatible(m) and m.tok_start not in asked:
                return m.name
        return None

    def _asked_clause(self, sent: Any, token_index: int) -> range:
        """Tokens of an opening "Asked if X ..., he replied" clause, when the pronoun is
        outside it: the person asked about is not the one who answers."""
        words = [t for t in sent if not (t.is_space or t.is_punct)]
        first = words[0] if words else sent[0]
        if first.lower_ != "asked" or token_index < sent.start:
            return range(0)
        end = max(t.i for t in first.subtree) + 1
        return range(sent.start, end) if token_index >= end else range(0)

    def resolve_description(self, token_index: int, noun: str) -> str | None:
        """Canonical name a definite role description ("the champion") at token_index
        refers to: as for a pronoun, the compatible person subject of the highest
        clause in its sentence or the one before, else the most recent person; the
        gender from the noun when it has one ("the chairwoman")."""
        word = "he" if noun in MALE_NOUNS else "she" if noun in FEMALE_NOUNS else None
        if word is not None:
            return self.resolve(token_index, word)
        return self._resolve(token_index, None)

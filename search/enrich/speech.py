"""The speech vocabulary: verbs, nouns and words that mark speech and speakers, and the
token predicates built on them (is this token a speech cue, a title, a name the tagger missed)."""

from __future__ import annotations

import re

from spacy.tokens import Token

from newsquarry.search.enrich.entities import TITLES, common_words

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
CLIMB_DEPS = ("xcomp", "advcl", "pcomp", "conj", "prep", "acl", "ccomp")
FURNITURE_WORDS = 8  # page furniture ("Advertisement - Story continues below") is short
DASH_LEAD = "-–—―•*"
ANAPHORIC_OPENERS = frozenset({"that", "this", "those", "these", "so", "such", "thus"})


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


def _unknown_word(tok: Token) -> bool:
    """A capitalised word the tagger took for a noun that no dictionary knows: a name
    ('"...?" Hannity pressed.' with "Hannity" tagged NOUN)."""
    return (
        tok.text[:1].isupper()
        and tok.pos_ in ("NOUN", "X")
        and tok.is_alpha
        and tok.lower_ not in common_words()
    )


def _is_title_word(tok: Token) -> bool:
    return tok.lower_.rstrip(".") in TITLES

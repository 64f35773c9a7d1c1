"""Named entities of one article, with spans cleaned and canonical names.

Rules (all general, none names a particular word of an article):

* Types: PERSON -> person, ORG -> org, GPE/LOC/FAC -> place; NORP and the
  other labels are not entities.
* Spans: leading determiners and titles ("the", "Mr", "President") and trailing
  possessives, prepositions and punctuation are cut; an ORG cut before its
  "of" complement ("the National Guard of" + "Venezuela") is re-joined; a
  person span is extended left over capitalised proper nouns the model
  dropped ("Raúl" + "Daniel Alvarenga").
* A person used as the modifier of an institution noun ("the Trump
  administration", "Trump campaign") is that organisation, not the person.
* An ORG in apposition with a place noun ("Cotiza, a suburb of ...") is a place.
* Canonical person names: a mention joins the fullest person name of the
  article that contains its tokens (surname or first name); ambiguous partial
  names go to the nearest preceding full name. Any mention whose text is a
  known person name is a person whatever its label (the model tags some
  surnames as ORG).

Cleaning for wire copy (rules from the parse and the text's shape; see
``_keep``):

* Wire markup (``<Bangkok Bank Ltd>``) and other symbol tokens are cut from
  the edges; a dateline glued to a name ("WASHINGTON - Federal Reserve Board")
  and a word run before an inner determiner ("GMT the Bank of England") are
  cut off.
* Table rows (a line with no verb and two or more numbers: "Avg shrs 51.7 mln
  vs 43.4 mln") hold no entities.
* The unit of a quantity ("100 mln U.S. Dlrs", "1430 GMT") is not a name, nor
  is a capitalised word the article otherwise writes in lower case and the
  dictionary does not know ("Dlrs" / "dlrs"), nor a code without a word of two
  letters ("M-1", "P").
* A bare generic head ("the Bank", "the Commission", "Co") is the article's
  short form of a full name holding it as its head ("World Bank", "Bank of
  England"), or of a longer name it clips ("the Fed" / "Federal Reserve");
  otherwise it names nothing and is dropped.
* The publisher of the article (``publisher``, e.g. the article's source) as
  the addressee of speech ("told Reuters") or as a modifier ("a Reuters
  survey") is the news agency speaking of itself, not an entity of the story.
* A person or place name that begins an organisation's name in the same
  article ("J.P. Morgan" / "J.P. Morgan and Co Inc") is that organisation; a
  lone capitalised word used as the modifier of a common noun ("the Bahia
  cocoa zone") that no person of the article is called is not a person.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from spacy.tokens import Doc, Span, Token

from newsquarry.search.core.textnorm import fold
from newsquarry.search.ingest.enrich.capitals import _outside_capitals
from newsquarry.search.ingest.enrich.names import (
    expansion,
    given_name,
    names_the_model_split,
    where,
)

LABEL_TYPES = {"PERSON": "person", "ORG": "org", "GPE": "place", "LOC": "place", "FAC": "place"}

TITLES = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "miss",
        "mx",
        "dr",
        "prof",
        "professor",
        "sir",
        "dame",
        "lord",
        "lady",
        "madam",
        "madame",
        "president",
        "vice",
        "prime",
        "minister",
        "secretary",
        "senator",
        "sen",
        "rep",
        "representative",
        "congressman",
        "congresswoman",
        "governor",
        "gov",
        "mayor",
        "judge",
        "justice",
        "chancellor",
        "king",
        "queen",
        "prince",
        "princess",
        "pope",
        "general",
        "gen",
        "colonel",
        "col",
        "captain",
        "capt",
        "lieutenant",
        "lt",
        "sergeant",
        "sgt",
        "major",
        "maj",
        "commander",
        "admiral",
        "adm",
        "chief",
        "director",
        "ambassador",
        "speaker",
        "leader",
        "chairman",
        "chairwoman",
        "rev",
        "reverend",
        "father",
        "sister",
        "brother",
        "st",
        "saint",
        "sheikh",
        "ayatollah",
        "candidate",
        "nominee",
        "former",
        "late",
        "then",
        "acting",
        "interim",
        "deputy",
        "assistant",
        "attorney",
        "state",
        "house",
    ]
)
CORPORATE_SUFFIXES = frozenset(
    "inc corp corporation co ltd llc plc ag sa nv bv gmbh lp llp group holdings".split()
)
DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those"})
# nouns for a firm: a name in apposition to one is the firm's ("the oil company Petrobras")
COMPANY_NOUNS = frozenset(
    "company firm corporation conglomerate airline carrier utility subsidiary concern "
    "bank insurer brokerage automaker carmaker".split()
)
# the last word of an institution's name: such a name is an organisation, not a place
# (not "union": the Soviet Union is a country)
INSTITUTION_HEADS = frozenset(
    "agency ministry department bank commission council board authority institute "
    "association exchange party organization organisation corporation company "
    "federation fund office service administration committee".split()
)
INSTITUTION_NOUNS = frozenset(
    [
        "administration",
        "campaign",
        "government",
        "team",
        "cabinet",
        "regime",
        "presidency",
        "organization",
        "organisation",
        "foundation",
        "camp",
        "company",
        "family",
        "staff",
        "transition",
        "office",
        "aides",
        "committee",
        "movement",
    ]
)
PLACE_NOUNS = frozenset(
    [
        "suburb",
        "town",
        "city",
        "village",
        "district",
        "region",
        "province",
        "state",
        "country",
        "county",
        "neighborhood",
        "neighbourhood",
        "capital",
        "island",
        "port",
        "municipality",
        "borough",
        "area",
        "territory",
        "republic",
        "kingdom",
        "hamlet",
        "settlement",
        "township",
    ]
)
TRAILING_JUNK = frozenset({"'s", "’s", "'", "’", "of", ",", "-", "–", "—", "and", "(", ")", '"'})
DASHES = frozenset({"-", "--", "–", "—"})
LINKERS = frozenset({"of", "for", "and", "&", "de", "du", "des", "la", "le", "del", "at", "on"})
# markup characters left on a name's edge by wire formats ("Bangkok Bank Ltd>")
EDGE_MARKUP = "<>[]{}|*+#=_~^"
SPEECH_TO = frozenset({"tell", "say", "speak", "talk", "write", "explain", "confirm", "add"})


@dataclass
class Mention:
    """An entity mention with article-level character and token offsets."""

    start: int  # char offsets into the article text
    end: int
    text: str
    type: str
    name: str
    tok_start: int  # token offsets into the Doc
    tok_end: int


def _is_title(tok: Token) -> bool:
    return tok.lower_.rstrip(".") in TITLES


def _clean_span(doc: Doc, start: int, end: int, label: str) -> tuple[int, int]:
    """Cut determiners/titles at the front and possessives/junk at the back.

    A dictionary word in front of a title is part of the title ("Political
    Editor Matthew Boyle" -> "Matthew Boyle").
    """
    words = common_words() if label == "PERSON" else frozenset()
    while start < end and (
        doc[start].lower_ in DETERMINERS
        or (label == "PERSON" and _is_title(doc[start]))
        or (
            doc[start].lower_ in words
            and not given_name(doc[start])  # "Martin Luther King": first names, not a title
            and start + 1 < end
            and (_is_title(doc[start + 1]) or doc[start + 1].lower_ in words)
            and end - start > 2
        )
        or doc[start].is_punct
        or doc[start].is_space
        or not any(c.isalnum() for c in doc[start].text)
    ):
        start += 1
    while end > start and (
        doc[end - 1].lower_ in TRAILING_JUNK
        or doc[end - 1].is_punct
        or doc[end - 1].is_space
        or not any(c.isalnum() for c in doc[end - 1].text)
    ):
        end -= 1
    return start, end


def _cut_prefixes(doc: Doc, start: int, end: int) -> tuple[int, int]:
    """Cut a dateline ("WASHINGTON - Fed...") and words before an inner determiner.

    A spaced dash does not occur inside a name: the part before it is dropped
    when it is an upper-case dateline, else the part after it. A determiner
    inside a span that does not follow a linking word ("Bank of the West"
    keeps its "the") starts the name: "GMT the Bank of England".
    """
    for k in range(end - 2, start, -1):
        tok = doc[k]
        if tok.text in DASHES and doc[k - 1].whitespace_ and tok.whitespace_:
            before = doc[start:k].text
            if before.isupper():
                start = k + 1
            else:
                end = k
            break
    for k in range(start + 1, end - 1):
        if doc[k].lower_ in DETERMINERS and doc[k - 1].lower_ not in LINKERS:
            start = k + 1
            break
    # "Harlow Capital Ltd. Trading closed": a name ends at its corporate suffix
    for k in range(start + 1, end - 1):
        tok = doc[k]
        if (
            tok.text.endswith(".")
            and tok.lower_.rstrip(".") in CORPORATE_SUFFIXES
            and doc[k + 1].lower_ not in LINKERS
            and not any(t.lower_.rstrip(".") in CORPORATE_SUFFIXES for t in doc[k + 1 : end])
        ):
            end = k + 1
            break
    return start, end


def _char_bounds(doc: Doc, text: str, s: int, e: int) -> tuple[int, int]:
    """Character offsets of tokens s..e, without markup glued to the edges.

    ``text`` is ``doc.text``, passed in: spaCy rebuilds it on every access.
    """
    cs, ce = doc[s].idx, doc[e - 1].idx + len(doc[e - 1])
    while cs < ce and text[cs] in EDGE_MARKUP:
        cs += 1
    while ce > cs and text[ce - 1] in EDGE_MARKUP:
        ce -= 1
    return cs, ce


def _lemma_index() -> Any:
    """The lookup lemmatizer's index (part of speech -> words), or {} without one."""
    from newsquarry.search.ingest.enrich.nlp import load_nlp  # lazy: start-up time (spaCy)

    nlp = load_nlp()
    if "lemmatizer" not in nlp.pipe_names:
        return {}
    lookups = nlp.get_pipe("lemmatizer").lookups
    return lookups.get_table("lemma_index") if lookups.has_table("lemma_index") else {}


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """English dictionary words (the lemmatizer's index): not a dropped first name.

    Empty when the pipeline has no lookup lemmatizer; then names are not extended.
    """
    table = _lemma_index()
    return frozenset(w for key in table for w in table[key])


@lru_cache(maxsize=1)
def common_nouns() -> frozenset[str]:
    """English common nouns (the lemmatizer's noun index): "bank", "commission", "house"."""
    table = _lemma_index()
    return frozenset(table["noun"]) if "noun" in table else frozenset()


_NUMBER = re.compile(
    r"(?<![\w.])\d[\d,.]*(?![\w])|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|nil)\b"
)


def _table_lines(doc: Doc, text: str) -> set[int]:
    """Token indexes on table rows: a line with no verb and at least two numbers.

    Lines are found on the text (cheap); only a line with two numbers has its
    tokens looked at.
    """
    out: set[int] = set()
    pos = 0
    for line in text.split("\n"):
        start, pos = pos, pos + len(line) + 1
        if len(_NUMBER.findall(line)) < 2:
            continue
        span = doc.char_span(start, start + len(line), alignment_mode="expand")
        if span is None or any(t.pos_ in ("VERB", "AUX") for t in span):
            continue
        out.update(range(span.start, span.end))
    return out


def _is_quantity_unit(doc: Doc, s: int, e: int) -> bool:
    """ "100 mln U.S. Dlrs", "1430 GMT": the span follows a number and does not modify a noun."""
    if s == 0:
        return False
    prev = doc[s - 1]
    counted = prev.like_num or prev.pos_ == "NUM" or any(c.dep_ == "nummod" for c in prev.children)
    if not counted or prev.is_space:
        return False
    last = doc[e - 1]
    return not (last.dep_ in ("compound", "amod", "nmod") and last.head.i >= e)


def _lowercase_elsewhere(doc: Doc, lowered: set[str], tok: Token) -> bool:
    """A capitalised word the article also writes in lower case, unknown to the dictionary."""
    w = tok.lower_
    return (
        tok.text != w
        and w in lowered
        and w not in common_words()
        and tok.is_alpha
        and not tok.text.isupper()
    )


def _is_code(text: str) -> bool:
    """ "M-1", "M3", "P": no run of two letters, and a single letter, a hyphen or a digit."""
    if re.search(r"[^\W\d_]{2}", text):
        return False
    return len(text) == 1 or "-" in text or any(c.isdigit() for c in text)


def _publisher_words(publisher: str | None) -> frozenset[str]:
    if not publisher:
        return frozenset()
    return frozenset(re.findall(r"[a-z0-9]+", fold(publisher)))


def _addressee_or_self(doc: Doc, s: int, e: int) -> bool:
    """ "told Reuters", "said in an interview with Reuters", "a Reuters survey"."""
    root = doc[s:e].root
    head = root.head
    if root.dep_ in ("dobj", "dative", "iobj") and head.lemma_.lower() in SPEECH_TO:
        return True
    if root.dep_ == "pobj" and head.lower_ in ("to", "with"):
        up = head.head
        return up.lemma_.lower() in SPEECH_TO or up.lemma_.lower() in ("interview", "statement")
    return root.dep_ in ("compound", "nmod", "poss") and head.i >= e and head.pos_ == "NOUN"


def _extend_person_left(doc: Doc, start: int, taken: set[int]) -> int:
    """Take back a capitalised proper noun the model left out of a person name.

    Only a word that is not an English dictionary word ("Raúl" but not
    "Billionaire" or "Editor"), at most two of them.
    """
    words = common_words()
    limit = start - 2
    while start > max(0, limit) and words:
        prev = doc[start - 1]
        if (
            prev.pos_ == "PROPN"
            and prev.lower_ not in words
            and prev.text[:1].isupper()
            and prev.is_alpha
            and not _is_title(prev)
            and prev.i not in taken
            and prev.ent_type_ in ("", "PERSON")
        ):
            start -= 1
        else:
            break
    return start


# words that open a name without being a first name ("St John Stevas", "Al Gore")
NAME_PARTICLES = frozenset("st de del della di da van von der al el bin ibn abu mac mc o".split())


def _person_bounds(doc: Doc, s: int, e: int, taken: set[int]) -> tuple[int, int]:
    """A person's span where the model cut it between a word before the name and the
    surname ("Tory Dominic" + "Grieve" for "Tory Dominic Grieve"): the surname the
    last word modifies joins the span, and a dictionary word before a first name that is
    no first name itself (a party, a nationality) leaves it."""
    while (
        e < len(doc)
        and e not in taken
        and doc[e - 1].dep_ == "compound"
        and doc[e - 1].head.i == e
        and doc[e].pos_ == "PROPN"
        and doc[e].text[:1].isupper()
        and doc[e].is_alpha
        and doc[e].ent_type_ in ("", "PERSON")
    ):
        e += 1
    if (
        e - s >= 3
        and doc[s].text[:1].isupper()
        and not given_name(doc[s])
        and given_name(doc[s + 1])
        and doc[s].lower_ not in NAME_PARTICLES
        and doc[s].lower_ in common_words()  # "Tory", "Labour"; never "Raúl" Daniel Alvarenga
    ):
        s += 1
    return s, e


def _institution_head(doc: Doc, span: Span) -> Token | None:
    """The institution noun a person name modifies ("Trump" in "Trump campaign")."""
    root = span.root
    head = root.head
    if (
        root.dep_ in ("compound", "nmod", "amod")
        and head.i >= span.end
        and head.pos_ == "NOUN"
        and head.lemma_.lower() in INSTITUTION_NOUNS
        and all(t.dep_ in ("compound", "amod", "nmod", "punct") for t in doc[span.end : head.i])
    ):
        return head
    return None


def _has_place_apposition(span: Span) -> bool:
    for child in span.root.children:
        if child.dep_ == "appos" and child.lemma_.lower() in PLACE_NOUNS:
            return True
    head = span.root
    return bool(head.dep_ == "appos" and head.head.lemma_.lower() in PLACE_NOUNS)


_NAME_QUOTES = "'\"‘’“”"


@lru_cache(maxsize=8192)
def _name_key(text: str) -> tuple[str, ...]:
    words = fold(text).replace("’", "'").split()
    # a nickname's marks are no part of it: Ahmed 'Mido' Hossam is also "Mido"
    return tuple(w.strip(_NAME_QUOTES) if w[:1] in _NAME_QUOTES else w for w in words)


def _title_words(doc: Doc, s: int, e: int) -> bool:
    """ "Finance" in "Finance Minister Kiichi Miyazawa": common words before a title."""
    return (
        e < len(doc)
        and doc[e].lower_ in TITLES
        and doc[e].text[:1].isupper()
        and all(t.lower_ in common_words() for t in doc[s:e])
    )


def _named_as_company(doc: Doc, s: int, e: int) -> bool:
    """ "the state oil company Petrobras", "the company, Petrobras,": a name in
    apposition to a company noun is the company's."""
    k = s - 1
    if k >= 0 and doc[k].text == ",":
        k -= 1
    if k >= 0 and doc[k].lemma_.lower() in COMPANY_NOUNS and doc[k].pos_ == "NOUN":
        return True
    root = doc[s:e].root
    return root.dep_ == "appos" and root.head.lemma_.lower() in COMPANY_NOUNS


def _retype(doc: Doc, raw: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """One type per name in a story, where the model gave a name two.

    A name the story names as a company ("the oil company Petrobras") is an org
    everywhere in it; a name tagged both as a place and as a person is a place
    unless most of its mentions are people ("in Sri Lanka" and "Sri Lanka's output").
    """
    keys = [_name_key(doc[s:e].text) for s, e, _ in raw]
    firms = {k for k, (s, e, lab) in zip(keys, raw, strict=True)
             if lab == "PERSON" and _named_as_company(doc, s, e)}  # fmt: skip
    places: Counter[tuple[str, ...]] = Counter()
    people: Counter[tuple[str, ...]] = Counter()
    for k, (_, _, lab) in zip(keys, raw, strict=True):
        if lab in ("GPE", "LOC"):
            places[k] += 1
        elif lab == "PERSON":
            people[k] += 1
    out = []
    for k, (s, e, lab) in zip(keys, raw, strict=True):
        if lab == "PERSON" and k in firms:
            lab = "ORG"
        elif lab == "PERSON" and places[k] >= people[k]:
            lab = "GPE"
        out.append((s, e, lab))
    return out


def _keep(
    doc: Doc, raw: list[tuple[int, int, str]], publisher: str | None, text: str
) -> list[tuple[int, int, str]]:
    """Drop spans that are not names: table rows, units, codes, the publisher as addressee."""
    table = _table_lines(doc, text)
    lowered = set(re.findall(r"\b[a-z]+\b", text))
    pub = _publisher_words(publisher)
    out = []
    for s, e, label in raw:
        span = doc[s:e]
        if any(k in table for k in range(s, e)):
            continue
        if _is_code(span.text):
            continue
        if label != "INSTITUTION" and _is_quantity_unit(doc, s, e):
            continue
        if _lowercase_elsewhere(doc, lowered, doc[e - 1]):
            continue
        if label == "ORG" and _title_words(doc, s, e):
            continue
        if (
            pub
            and label != "PERSON"
            and set(_name_key(span.text)) <= pub
            and _addressee_or_self(doc, s, e)
        ):
            continue
        out.append((s, e, label))
    return out


def _join_partners(
    doc: Doc, start: int, end: int, taken: set[int], raw: list[tuple[int, int, str]]
) -> int:
    """New start of an ORG span cut at a coordination inside a firm's name.

    "Standard and Poor's Corp" (the model keeps "Poor's Corp"): a capitalised
    name word right before "and"/"&" joins. "J.P. Morgan and Co Inc" (a person
    and "Co Inc"): a span of corporate suffixes only takes the name before it.
    """
    if start < 2 or doc[start - 1].lower_ not in ("and", "&"):
        return start
    words = [t.lower_.rstrip(".") for t in doc[start:end] if not t.is_punct]
    if words and all(w in CORPORATE_SUFFIXES for w in words):
        if raw and raw[-1][1] == start - 1:
            prev_start = raw[-1][0]
            raw.pop()
            return prev_start
        return start
    # "American Telephone" + "and" + "Telegraph Co": a name without a suffix, then
    # one word and its corporate suffix, is one firm (not "General Motors and Ford Motor Co")
    if (
        raw
        and raw[-1][1] == start - 1
        and raw[-1][2] == "ORG"
        and len(words) >= 2
        and words[0] not in CORPORATE_SUFFIXES
        and all(w in CORPORATE_SUFFIXES for w in words[1:])
        and not any(t.lower_.rstrip(".") in CORPORATE_SUFFIXES for t in doc[raw[-1][0] : start - 1])
    ):
        prev_start = raw[-1][0]
        raw.pop()
        return prev_start
    prev = doc[start - 2]
    linked = prev.head.i in range(start, end) or any(t.head.i == prev.i for t in doc[start:end])
    if (
        prev.pos_ == "PROPN"
        and prev.text[:1].isupper()
        and prev.tag_ not in ("NNS", "NNPS")
        and prev.i not in taken
        and linked
    ):
        return start - 2
    return start


def _generic_head(tok: Token) -> bool:
    """A capitalised common noun standing alone ("Bank", "Commission"), or "Co".

    The dictionary also lists some proper names ("caracas"), so callers ask for a
    determiner in front ("the Bank") as well."""
    w = tok.lower_.rstrip(".")
    if w in CORPORATE_SUFFIXES:
        return True
    return (
        tok.text[:1].isupper() and not tok.text.isupper() and tok.is_alpha and w in common_nouns()
    )


def extract_mentions(
    doc: Doc, publisher: str | None = None, text: str | None = None
) -> list[Mention]:
    """All person/org/place mentions of the document with canonical names, in order.

    ``publisher``: the name of the article's source, if known; its mentions as
    the addressee of speech ("told Reuters") are dropped. ``text``: ``doc.text`` if
    the caller has it (spaCy rebuilds it on every access).
    """
    doc_text = doc.text if text is None else text
    raw: list[tuple[int, int, str]] = []  # token start, end, label
    named = names_the_model_split(doc)
    raw.extend((s, e, "PERSON") for s, e in named)
    inside = {i for s, e in named for i in range(s, e)}
    ents = [e for e in doc.ents if not any(t.i in inside for t in e)]
    taken = {t.i for e in ents for t in e} | inside
    skip_next = False
    for k, ent in enumerate(ents):
        if skip_next:
            skip_next = False
            continue
        label = ent.label_
        if label not in LABEL_TYPES:
            continue
        start, end = ent.start, ent.end
        # "the National Guard of" + "Venezuela": re-join the cut complement.
        if (
            label == "ORG"
            and doc[end - 1].lower_ == "of"
            and k + 1 < len(ents)
            and ents[k + 1].start == end
            and ents[k + 1].label_ in LABEL_TYPES
        ):
            end = ents[k + 1].end
            skip_next = True
        start, end = _cut_prefixes(doc, start, end)
        if label == "ORG":
            start = _join_partners(doc, start, end, taken, raw)
        if label in ("PERSON", "ORG"):
            head = _institution_head(doc, ent)
            if head is not None and head.i >= start:
                s, e = _clean_span(doc, start, head.i + 1, "ORG")
                if s < e:
                    raw.append((s, e, "INSTITUTION"))
                continue
        if (
            label == "ORG"
            and end < len(doc)
            and given_name(doc[end - 1])
            and doc[end - 1].dep_ == "compound"
            and doc[end - 1].head.i == end
            and doc[end].pos_ == "PROPN"
            and doc[end].ent_type_ == ""
        ):
            label = "PERSON"  # "Tory Dominic" + "Grieve": a first name and its surname
        s, e = _clean_span(doc, start, end, label)
        if label == "PERSON" and s < e:
            s = _extend_person_left(doc, s, taken - set(range(start, end)))
            s, e = _person_bounds(doc, s, e, taken - set(range(start, end)))
        if s < e:
            if label == "ORG" and _has_place_apposition(ent):
                label = "GPE"
            last = doc[e - 1].lower_.rstrip(".")
            if label == "PERSON" and e - s > 1 and last in CORPORATE_SUFFIXES:
                label = "ORG"  # "ChemLawn Corp": a firm, whatever the model says
            elif label in ("GPE", "LOC", "FAC") and e - s > 1 and last in INSTITUTION_HEADS:
                label = "ORG"  # "Illinois Environmental Protection Agency"
            raw.append((s, e, label))
    raw = _retype(doc, _keep(doc, sorted(raw), publisher, doc_text))

    # Person names known in the article, fullest first.
    person_keys: Counter[tuple[str, ...]] = Counter()
    for s, e, label in raw:
        if label == "PERSON":
            person_keys[_name_key(doc[s:e].text)] += 1
    full_names = sorted(person_keys, key=lambda k: (-len(k), -person_keys[k]))

    def candidates(key: tuple[str, ...]) -> list[tuple[str, ...]]:
        """Longer person names containing this (partial) name."""
        out = []
        for full in full_names:
            if len(full) <= len(key):
                continue
            if key[-1] == full[-1] and set(key) <= set(full) or len(key) == 1 and key[0] in full:
                out.append(full)
        return out

    # Display form of each folded full name: its most common written form.
    written: dict[tuple[str, ...], Counter[str]] = {}
    for s, e, label in raw:
        if label == "PERSON":
            written.setdefault(_name_key(doc[s:e].text), Counter())[doc[s:e].text] += 1

    # Organisation names: a short form joins the full one that only adds a
    # corporate suffix ("BankAmerica" -> "BankAmerica Corp").
    org_full: dict[tuple[str, ...], str] = {}
    for s, e, label in sorted(raw, key=lambda r: -(r[1] - r[0])):
        if label != "ORG":
            continue
        key = _name_key(doc[s:e].text)
        core = key
        while len(core) > 1 and core[-1].rstrip(".") in CORPORATE_SUFFIXES:
            core = core[:-1]
        org_full.setdefault(core, doc[s:e].text)

    # Multi-word organisation names, for short forms ("the Bank", "J.P. Morgan").
    orgs = [
        (s, e, _name_key(doc[s:e].text), doc[s:e])
        for s, e, label in raw
        if label == "ORG" and e - s > 1
    ]

    def org_for_short(s: int, e: int) -> tuple[str, ...] | None:
        """The org name this generic head stands for: its head word, nearest first."""
        w = doc[s].lower_.rstrip(".")
        found = [
            (abs(os_ - s) + (0 if os_ < s else 10**6), okey)
            for os_, oe, okey, ospan in orgs
            if ospan.root.lower_.rstrip(".") == w or okey[-1].rstrip(".") == w
        ]
        return min(found)[1] if found else None

    def clips(s: int) -> bool:
        """ "Fed": the start of a longer first word of an org name of the article."""
        w = doc[s].lower_
        return any(okey[0] != w and okey[0].startswith(w) for _, _, okey, _ in orgs)

    def org_starting_with(key: tuple[str, ...]) -> tuple[str, ...] | None:
        for _, _, okey, _ in orgs:
            if len(okey) > len(key) and okey[: len(key)] == key:
                return okey
        return None

    def core_of(key: tuple[str, ...]) -> tuple[str, ...]:
        while len(key) > 1 and key[-1].rstrip(".") in CORPORATE_SUFFIXES:
            key = key[:-1]
        return key

    mentions: list[Mention] = []
    last_seen: dict[tuple[str, ...], int] = {}
    for s, e, label in raw:
        cs, ce = _char_bounds(doc, doc_text, s, e)
        text = doc_text[cs:ce]
        if not any(c.isupper() for c in text):
            continue  # "cts", "dlrs": lower-case words are not names
        key = _name_key(text)
        if label == "INSTITUTION":
            typ, name = "org", text
        elif (
            e - s == 1
            and label in ("ORG", "FAC")
            and key not in person_keys
            and (
                doc[s].lower_.rstrip(".") in CORPORATE_SUFFIXES
                or (s > 0 and doc[s - 1].lower_ in DETERMINERS and _generic_head(doc[s]))
            )
        ):
            # "the Bank": the article's short form of a full name, or nothing
            full_key = org_for_short(s, e)
            if full_key is not None:
                typ, name = "org", org_full.get(core_of(full_key), text)
            elif clips(s):
                typ, name = "org", text
            else:
                continue
        elif (
            orgs
            and label != "ORG"
            and (e - s > 1 or (label == "PERSON" and not candidates(key)))
            and org_starting_with(key) is not None
        ):
            # "J.P. Morgan" in a story about J.P. Morgan and Co Inc
            typ, name = "org", org_full.get(core_of(org_starting_with(key)), text)
        elif (
            label == "PERSON"
            and e - s == 1
            and not candidates(key)
            and doc[s].dep_ == "compound"
            and doc[s].head.pos_ == "NOUN"
            and doc[s].head.i >= e
        ):
            continue  # "the Bahia cocoa zone": a modifier no person of the article is called
        else:
            is_person_name = key in person_keys or bool(candidates(key) and label == "PERSON")
            if label != "PERSON" and key in person_keys:
                label = "PERSON"
            elif (
                label in ("ORG", "GPE", "LOC", "FAC")
                and not is_person_name
                and len(key) == 1
                and any(key[0] == full[-1] for full in candidates(key))
                and (label == "ORG" or not where(doc[s]))
            ):
                # a lone surname the model called ORG or a place, matching the surname of
                # a person the article names ("a nomination for Staunton, 49, who told"
                # after "Imelda Staunton"), unless it says where ("in Staunton")
                label = "PERSON"
            typ = LABEL_TYPES.get(label, "org")
            name = text
            if typ == "org":
                core = key
                while len(core) > 1 and core[-1].rstrip(".") in CORPORATE_SUFFIXES:
                    core = core[:-1]
                name = org_full.get(core, text)
                if name == text and e - s == 1:
                    # "GM" in a story that names General Motors: the fullest name it gives
                    name = expansion(text, org_full.values()) or text
            if typ == "person":
                full = key
                cands = candidates(key)
                if cands:
                    longest = len(cands[0])
                    best = [c for c in cands if len(c) == longest] or cands
                    if len(best) > 1:
                        seen = [c for c in best if c in last_seen]
                        best = sorted(seen, key=lambda c: -last_seen[c]) if seen else best
                    full = best[0]
                last_seen[full] = s
                name = written[full].most_common(1)[0][0] if full in written else text
        mentions.append(
            Mention(
                start=cs,
                end=ce,
                text=text,
                type=typ,
                name=name,
                tok_start=s,
                tok_end=e,
            )
        )
    return _outside_capitals(mentions, doc_text)

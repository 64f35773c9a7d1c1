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
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from spacy.tokens import Doc, Span, Token

from newsquarry.search.textnorm import fold

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
            and start + 1 < end
            and (_is_title(doc[start + 1]) or doc[start + 1].lower_ in words)
            and end - start > 2
        )
        or doc[start].is_punct
        or doc[start].is_space
    ):
        start += 1
    while end > start and (
        doc[end - 1].lower_ in TRAILING_JUNK or doc[end - 1].is_punct or doc[end - 1].is_space
    ):
        end -= 1
    return start, end


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """English dictionary words (the lemmatizer's index): not a dropped first name.

    Empty when the pipeline has no lookup lemmatizer; then names are not extended.
    """
    from newsquarry.search.enrich.nlp import load_nlp

    nlp = load_nlp()
    if "lemmatizer" not in nlp.pipe_names:
        return frozenset()
    lookups = nlp.get_pipe("lemmatizer").lookups
    if not lookups.has_table("lemma_index"):
        return frozenset()
    table = lookups.get_table("lemma_index")
    return frozenset(w for key in table for w in table[key])


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


def _name_key(text: str) -> tuple[str, ...]:
    return tuple(fold(text).replace("’", "'").split())


def extract_mentions(doc: Doc) -> list[Mention]:
    """All person/org/place mentions of the document with canonical names, in order."""
    raw: list[tuple[int, int, str]] = []  # token start, end, label
    ents = list(doc.ents)
    taken = {t.i for e in ents for t in e}
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
        if label in ("PERSON", "ORG"):
            head = _institution_head(doc, ent)
            if head is not None:
                s, e = _clean_span(doc, start, head.i + 1, "ORG")
                raw.append((s, e, "INSTITUTION"))
                continue
        s, e = _clean_span(doc, start, end, label)
        if label == "PERSON" and s < e:
            s = _extend_person_left(doc, s, taken - set(range(start, end)))
        if s < e:
            if label == "ORG" and _has_place_apposition(ent):
                label = "GPE"
            raw.append((s, e, label))

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

    mentions: list[Mention] = []
    last_seen: dict[tuple[str, ...], int] = {}
    for s, e, label in raw:
        span = doc[s:e]
        text = span.text
        if not any(c.isupper() for c in text):
            continue  # "cts", "dlrs": lower-case words are not names
        key = _name_key(text)
        if label == "INSTITUTION":
            typ, name = "org", text
        else:
            is_person_name = key in person_keys or bool(candidates(key) and label == "PERSON")
            if label != "PERSON" and key in person_keys:
                label = "PERSON"
            elif (
                label == "ORG"
                and not is_person_name
                and len(key) == 1
                and any(key[0] == full[-1] for full in candidates(key))
            ):
                # a lone surname the model called ORG, matching a person's surname
                label = "PERSON"
            typ = LABEL_TYPES.get(label, "org")
            name = text
            if typ == "org":
                core = key
                while len(core) > 1 and core[-1].rstrip(".") in CORPORATE_SUFFIXES:
                    core = core[:-1]
                name = org_full.get(core, text)
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
                start=span.start_char,
                end=span.end_char,
                text=text,
                type=typ,
                name=name,
                tok_start=s,
                tok_end=e,
            )
        )
    return mentions

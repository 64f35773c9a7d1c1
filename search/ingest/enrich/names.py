"""Person and organisation names where the model cuts them or the article abbreviates
them: first names given to one gender, nicknames and calendar-word surnames, places
named by preposition, acronyms spelt from an organisation's name.

Word-level rules with no knowledge of the article's other mentions (``entities``
applies them); the first-name table is package data (``first_names.txt``)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from importlib import resources

from spacy.tokens import Doc, Token


@functools.cache
def first_name_genders() -> dict[str, str]:
    """Lower-cased first name -> 'm' or 'f', for names given almost only to one (package data)."""
    text = resources.files(__package__).joinpath("first_names.txt").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            gender, _, names = line.partition(" ")
            out.update(dict.fromkeys(names.split(), gender))
    return out


def first_name_gender(name: str) -> str | None:
    """'m' or 'f' from the first word of a person's name of two words or more, else None."""
    words = name.split()
    if len(words) < 2:
        return None  # a lone word may be a surname that is also a first name ("Owen")
    return first_name_genders().get(words[0].lower().strip(".,"))


CALENDAR_WORDS = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april "
    "may june july august september october november december".split()
)
OPENING_MARKS = frozenset({"'", '"', "‘", "“", "`", "``"})
CLOSING_MARKS = frozenset({"'", '"', "’", "”", "''"})


def given_name(tok: Token) -> bool:
    """A capitalised word that is a first name given almost only to men or to women."""
    return tok.text[:1].isupper() and tok.is_alpha and tok.lower_ in first_name_genders()


def _capitalised(tok: Token) -> bool:
    return tok.text[:1].isupper() and tok.is_alpha and not tok.is_sent_start


def names_the_model_split(doc: Doc) -> list[tuple[int, int]]:
    """Person names the model cuts apart, by two conventions of news writing.

    * A nickname in quote marks between the first name and the surname:
      Ahmed 'Mido' Hossam, Earvin "Magic" Johnson (the model makes an
      organisation of the first half and a place of the surname).
    * A first name followed by a surname that is also a day or month: "coach
      Mike Friday" (the model tags "Friday" a date). English writes the day of
      an event with a preposition ("on Friday"), so a bare calendar word right
      after a first name, and not followed by a number ("March 3"), is a surname.
    Both need a first name known as one (``first_names.txt``) or tagged a person.
    """
    out: list[tuple[int, int]] = []
    n = len(doc)
    i = 0
    while i < n:
        tok = doc[i]
        first = (
            tok.text[:1].isupper()
            and tok.is_alpha
            and (tok.ent_type_ == "PERSON" or given_name(tok))
        )
        if not first:
            i += 1
            continue
        if (
            i + 4 < n
            and doc[i + 1].text in OPENING_MARKS
            and _capitalised(doc[i + 2])
            and doc[i + 3].text in CLOSING_MARKS
            and _capitalised(doc[i + 4])
            and doc[i + 4].lower_ not in CALENDAR_WORDS
            and doc[i + 1].whitespace_ == ""
            and doc[i + 2].whitespace_ == ""
        ):
            end = i + 5
            while end < n and _capitalised(doc[end]) and doc[end].ent_type_ in ("", "PERSON"):
                end += 1
            out.append((i, end))
            i = end
            continue
        if (
            i + 1 < n
            and tok.ent_type_ == "PERSON"
            and (i + 1 == n or doc[i + 1].ent_iob_ == "B")
            and doc[i].ent_iob_ == "B"
            and given_name(tok)
            and _capitalised(doc[i + 1])
            and doc[i + 1].lower_ in CALENDAR_WORDS
            and doc[i + 1].ent_type_ == "DATE"
            and (i + 2 >= n or doc[i + 2].ent_type_ != "DATE")
            and (i + 2 >= n or not doc[i + 2].like_num)
        ):
            out.append((i, i + 2))
            i += 2
            continue
        i += 1
    return out


# prepositions that make the name after them a place: "in Staunton", "from Washington"
WHERE_PREPOSITIONS = frozenset(
    "in at from to into near across outside inside around through via toward towards "
    "throughout within".split()
)


def where(tok: Token) -> bool:
    """Whether a name is the object of a preposition of place ("in", "from", ...)."""
    while tok.dep_ in ("compound", "flat") and tok.head.i != tok.i:
        tok = tok.head
    return tok.dep_ == "pobj" and tok.head.lower_ in WHERE_PREPOSITIONS


_INITIAL_SKIP = frozenset({"of", "and", "for", "the", "&", "de", "du", "des", "la"})


def expansion(acronym: str, names: Iterable[str]) -> str | None:
    """The one name of ``names`` whose initials spell ``acronym`` ("GM" -> "General Motors",
    "MPAA" -> "Motion Picture Association of America"), or None.

    Initials of the capitalised words, function words ("of", "and") left out; an
    acronym is written in capitals (2 to 6 letters, dots allowed). Two names that
    both fit leave it as written."""
    letters = acronym.replace(".", "")
    if not (2 <= len(letters) <= 6 and letters.isalpha() and letters.isupper()):
        return None
    found = set()
    for name in names:
        words = [w for w in re.split(r"[\s\-]+", name) if w]
        caps = [w for w in words if w.lower() not in _INITIAL_SKIP and w[:1].isupper()]
        if len(caps) >= 2 and "".join(w[0] for w in caps).upper() == letters:
            found.add(name)
    return found.pop() if len(found) == 1 else None

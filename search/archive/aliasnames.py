"""The words of names, as the alias table reads them (``archive.aliases``): normal forms
(spelling variants), initials and acronyms, and the tests its rules make on one name or a
pair of names ("IRB Rugby Aid" spells IRBRA; "BBC2" extends BBC; "rang Lucy" is no
person's name as news writes one). No state: functions of folded keys and written forms.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

ENTITY_FACETS = ("person", "org", "place")  # a name moves between these by its type
CORPORATE = frozenset(
    "inc corp corporation co ltd llc plc ag sa nv bv gmbh lp llp group holdings cos".split()
)
# the governing body of an institution goes by the institution's name
GOVERNING_BODIES = frozenset({"board", "system"})
LINK_WORDS = frozenset({"and", "of", "the", "for", "&", "de", "du", "des", "la", "le", "del"})
# particles that stay lower case inside a person's name ("Ludwig van Beethoven")
NAME_PARTICLES = frozenset(
    "van von der den de da di du dos das del della bin ibn al el le la ter".split()
)


@lru_cache(maxsize=1 << 17)
def _words(key: str) -> tuple[str, ...]:
    return tuple(key.replace("’", "'").split())


@lru_cache(maxsize=1 << 17)
def normal_form(key: str) -> str:
    """Spelling-variant key of a folded name: dots, middle initials, corporate suffixes."""
    words = [w.replace(".", "") for w in _words(key)]
    words = [w[:-2] if w.endswith("'s") else w for w in words]
    words = [w for w in words if w]
    suffixed = False
    # "goldman sachs & co" -> "goldman sachs"; a link word with no suffix after it ends a
    # span cut short ("office of the"), a name of its own
    while len(words) > 1 and (words[-1] in CORPORATE or (suffixed and words[-1] in LINK_WORDS)):
        suffixed = True
        words.pop()
    if len(words) >= 3 and words[-1] in GOVERNING_BODIES:
        words.pop()  # "federal reserve board" / "federal reserve"
    if len(words) >= 3:
        middle = [w for w in words[1:-1] if len(w) > 1]
        words = [words[0], *middle, words[-1]]
    if words and all(len(w) == 1 for w in words):
        return "".join(words)  # "u s" -> "us"
    return " ".join(words)


@lru_cache(maxsize=1 << 17)
def initials(key: str) -> str:
    """Initials of a name's significant words: "securities and exchange commission" -> "sec"."""
    out = []
    for w in _words(key):
        w = w.strip(".,'")
        if not w or w in LINK_WORDS or w in CORPORATE:
            continue
        if "." in w:  # "u.s." -> "us"
            out.extend(p for p in w.split(".") if p)
            continue
        out.append(w[0])
    return "".join(x[0] for x in out)


@lru_cache(maxsize=1 << 17)
def short_letters(key: str) -> str | None:
    """The letters of an acronym ("sec", "s and p" -> "sp", "u.s." -> "us"), else None."""
    words = [w for w in _words(key) if w not in ("and", "&")]
    if len(words) == 1:
        w = words[0].replace(".", "")
        return w if 2 <= len(w) <= 6 and w.isalpha() else None
    if words and all(len(w.strip(".")) == 1 for w in words):
        return "".join(w.strip(".") for w in words)
    return None


@lru_cache(maxsize=1 << 17)
def _acronym_form(written: str) -> bool:
    """Written as an acronym: capitals and dots, words joined by "and"/"&" ("S and P")."""
    words = [w for w in written.split() if w not in ("and", "&")]
    return bool(words) and all(re.fullmatch(r"(?:[A-Z]\.?){1,6}|[A-Z]{2,6}", w) for w in words)


def _alike(a: str, b: str) -> bool:
    """Two names sharing at least half the words of the longer: variants of one name
    ("international coffee organisation" / "international coffee organization")."""
    wa, wb = set(_words(a)), set(_words(b))
    return 2 * len(wa & wb) >= max(len(wa), len(wb))


def _dominant(t: Counter, least: int = 1) -> str | None:
    """The entity facet of at least two thirds of a name's entity tags (and ``least`` of
    them), if one is."""
    n = sum(t[f] for f in ENTITY_FACETS)
    for f in ENTITY_FACETS:
        if n and 3 * t[f] >= 2 * n and t[f] >= least:
            return f
    return None


def _suffixed(key: str) -> bool:
    """A name written with a corporate suffix ("eton corporation", "rank group")."""
    ws = _words(key)
    return len(ws) > 1 and ws[-1].rstrip(".") in CORPORATE


@lru_cache(maxsize=1 << 16)
def _written_as_name(written: str) -> bool:
    """Every word capitalised (particles apart) and not all capitals: a person's name as
    news writes it; not "rang Lucy" or "athough Reagan" (a span cut wrong), nor "AK"."""
    words = written.replace("’", "'").split()
    if not words or not any(ch.islower() for ch in written):
        return False
    return all(w[0].isupper() or w in NAME_PARTICLES for w in words)


def _persons_retyped(group_types: dict[str, Counter], full_people: Iterable[str]) -> dict[str, str]:
    """One-word names the tagger calls a person in some stories and an org in others, which
    no person of the archive is called (no full person name ends with the word): orgs. News names a person in full at least once; a word never so named that is also
    read as a body ("Labour", "Chelsea", "Yukos" as a sentence's subject) is a party, a
    club or a firm."""
    # surnames only: "Labour MPs" (tagged a person twice) is no one called Labour
    held = {_words(norm)[-1] for norm in full_people}
    out = {}
    for norm, t in group_types.items():
        if len(_words(norm)) != 1 or norm in held or not t["person"]:
            continue
        n = t["person"] + t["org"] + t["place"]
        if t["org"] >= 2 and 5 * t["org"] >= n and t["org"] >= t["place"]:
            out[norm] = "org"
    return out


def _acronym_of(letters: str, long_norm: str, long_written: str | None = None) -> bool:
    if long_written is not None and _has_acronym_word(long_written):
        # "IRB Rugby Aid" spells "irbra", not "ira"; "UK Independence Party" spells "ukip"
        return _spelt_initials(long_written, long_norm) == letters
    ini = initials(long_norm)
    if len(ini) >= 2 and (ini == letters or sorted(ini) == sorted(letters)):
        return True
    # the corporate word counted too: "AMC" / "American Motors Corp"
    whole = "".join(w[0] for w in _words(long_norm) if w not in LINK_WORDS and w[0].isalpha())
    return len(whole) >= 2 and whole == letters


@lru_cache(maxsize=1 << 16)
def _has_acronym_word(written: str) -> bool:
    """A word written in capitals (two letters or more) inside a longer name: "IRB Rugby Aid"."""
    words = written.split()
    return len(words) > 1 and any(re.fullmatch(r"[A-Z]{2,}[0-9]*", w) for w in words)


@lru_cache(maxsize=1 << 16)
def _spelt_initials(written: str, key: str) -> str:
    """The letters a name's words spell, an acronym word giving all its letters ("IRB Rugby
    Aid" -> "irbra"); ``initials(key)`` for a name with no acronym word in it."""
    if not _has_acronym_word(written):
        return initials(key)
    out = []
    for w in written.replace("’", "'").split():
        low = w.lower().strip(".,'")
        if not low or low in LINK_WORDS or low in CORPORATE:
            continue
        if re.fullmatch(r"[A-Z]{2,}[0-9]*", w):
            out.append("".join(ch for ch in low if ch.isalpha()))
        elif "." in low:
            out.extend(p[0] for p in low.split(".") if p)
        else:
            out.append(low[0])
    return "".join(out)


def _leads(short_norm: str, long_norm: str, long_key: str) -> bool:
    """ "Moody's" / "Moody's Investors Service", "House" / "House of Representatives",
    "Dome" / "Dome Petroleum Ltd": one word that starts a longer org name as its owner,
    its head or a firm's name; not a modifier ("House" / "House Banking Committee", a
    committee of the House)."""
    ws, lw = _words(short_norm), _words(long_norm)
    if not (len(ws) == 1 and len(ws[0]) >= 3 and len(lw) > 1 and lw[0] == ws[0]):
        return False
    kw = _words(long_key)
    return kw[0].endswith(("'s", "’s")) or lw[1] in LINK_WORDS or kw[-1].rstrip(".") in CORPORATE


def _letters_in(letters: str, long_norm: str) -> bool:
    """ "vw" / "volkswagen": an acronym whose letters all occur, in order, in the first
    word of a one-word (plus suffix) name, starting with its first letter."""
    lw = _words(long_norm)
    if len(lw) != 1 or len(letters) < 2 or not lw[0].startswith(letters[0]):
        return False
    if not lw[0].isalpha() or lw[0].startswith(letters):
        return False  # "BBC2" / "BBC", "ITV1" / "ITV": the acronym extended, another entity
    rest = iter(lw[0][1:])
    return all(ch in rest for ch in letters[1:])


def _place_prefix(short_norm: str, long_norm: str) -> str | None:
    """ "treasury" / "us treasury" -> "us": the words the long name has before the short one."""
    ws, lw = _words(short_norm), _words(long_norm)
    if len(lw) > len(ws) and lw[len(lw) - len(ws) :] == ws:
        return " ".join(lw[: len(lw) - len(ws)])
    return None


def _clips(short_norm: str, long_norm: str) -> bool:
    """ "fed" / "federal reserve": a short clipping (3 or 4 letters) of a much longer
    first word; not "congress" / "congressional budget office"."""
    ws = _words(short_norm)
    lw = _words(long_norm)
    return (
        len(ws) == 1
        and 3 <= len(ws[0]) <= 4
        and ws[0].isalpha()
        and len(lw) >= 2
        and len(lw[0]) >= len(ws[0]) + 3
        and lw[0].startswith(ws[0])
    )

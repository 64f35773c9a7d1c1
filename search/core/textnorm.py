"""Text normalisation shared by indexing, querying and facets.

``fold`` is the one definition of "accents and case never matter": it is used
for facet keys, for the Whoosh analyzers and for facet value search, so that a
value folds the same way wherever it is compared.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_SPACES = re.compile(r"\s+")


def fold(text: str) -> str:
    """Lower-case, strip accents and collapse whitespace: "Guaidó " -> "guaido"."""
    if text.isascii():  # nothing to decompose or strip; casefold is lower on ASCII
        return _SPACES.sub(" ", text.lower()).strip()
    return _fold_name(text) if len(text) <= 120 else _fold_unicode(text)


def _fold_unicode(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _SPACES.sub(" ", stripped.casefold()).strip()


# names with accents recur (every hit of a page shows its names) and the decomposition runs
# per character in Python: each distinct short text is folded once (at most 16,384 of at
# most 120 characters are kept: ~4 MB)
_fold_name = lru_cache(maxsize=1 << 14)(_fold_unicode)


def slugify(text: str, max_len: int = 80) -> str:
    """A URL- and id-safe slug: folded, non-alphanumerics turned into dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", fold(text)).strip("-")
    return slug[:max_len].strip("-")


# Text that enters the index (article text, title, source, author, url) is checked here,
# at every entrance (readers, API, library): ``text_problem`` names what cannot be stored,
# ``clean_text`` removes what must not be stored.
#
# - Lone surrogates (U+D800-U+DFFF, e.g. "\ud800" in JSON) are not characters: they cannot
#   be encoded as UTF-8, so nothing could store, hash or return them. The article is
#   refused with the position, never repaired (a replacement character would silently
#   change the text).
# - Control characters (C0, DEL, C1) but tab, line feed and carriage return are removed:
#   they carry no text and break the output of every tool downstream; the line-breaking
#   ones (VT, FF, the separators U+001C-U+001F, NEL) become a line break, so words they
#   separated stay apart. An article whose text is empty once they are gone is refused.
# - Noncharacters (U+FFFE, U+FDD0, ...) are kept: they are valid Unicode scalar values,
#   encodable as UTF-8, and Unicode allows their interchange (Corrigendum #9).
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL_BREAKS = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
_CONTROLS = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (a lone surrogate, where), or None."""
    m = _SURROGATE.search(value)
    if m:
        return (
            f"holds a lone surrogate (U+{ord(m.group()):04X}) at character {m.start()}: "
            "not valid Unicode text"
        )
    return None


def clean_text(value: str, line_break: str = "\n") -> str:
    """``value`` without control characters (tab, line feed and carriage return kept);
    the line-breaking ones become ``line_break``."""
    if value.isascii() and value.isprintable():
        return value  # the common case: nothing to do
    return _CONTROLS.sub("", _CONTROL_BREAKS.sub(line_break, value))


def echo_safe(value: str) -> str:
    """``value`` as it may be echoed in a report or a message: lone surrogates written as
    ``\\udXXX`` escapes (they cannot be printed, encoded as UTF-8 or put in JSON)."""
    if not _SURROGATE.search(value):
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")

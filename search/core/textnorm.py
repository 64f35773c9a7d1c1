"""Text normalisation shared by indexing, querying and facets.

``fold`` is the one definition of "accents and case never matter": it is used
for facet keys, for the Whoosh analyzers and for facet value search, so that a
value folds the same way wherever it is compared.
"""

from __future__ import annotations

import re
import unicodedata

_SPACES = re.compile(r"\s+")


def fold(text: str) -> str:
    """Lower-case, strip accents and collapse whitespace: "Guaidó " -> "guaido"."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _SPACES.sub(" ", stripped.casefold()).strip()


def slugify(text: str, max_len: int = 80) -> str:
    """A URL- and id-safe slug: folded, non-alphanumerics turned into dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", fold(text)).strip("-")
    return slug[:max_len].strip("-")

"""The Whoosh schema: one index holding three kinds of document.

``doctype`` says which:
- ``article``: one per article; holds the full text and ``content_hash``
  (stored only), so an article and its passages commit together, and the
  article's distinct words in ``spell`` (spelling suggestions, wildcards).
- ``passage``: the unit of search; text, title and quotes searchable,
  entity, speaker and metadata fields for filters and facets.
- ``quote``: one per quotation, so a quote search ("what did Alvarenga say
  about torture") matches one speaker's words and only theirs.

Facet fields (``person``, ``org``, ``place``, ``speaker``, ``source``,
``quote_kind``) are KEYWORD fields holding the values *as written*
(canonical display forms), each value one term given as a list item, so no
character is a separator (``store.facet_terms``); accent- and
case-insensitive matching is done by
folding the field's lexicon (see ``facets``), so the most common written
form of a folded key can be shown without a side table.
"""

from __future__ import annotations

import re

from whoosh.analysis import (
    CharsetFilter,
    Filter,
    LowercaseFilter,
    RegexTokenizer,
    SpaceSeparatedTokenizer,
    StemFilter,
)
from whoosh.fields import ID, KEYWORD, NUMERIC, STORED, TEXT, Schema
from whoosh.support.charset import accent_map

# Facet name -> Whoosh field. "article" and "date" are facets too.
KEYWORD_FACETS = ("person", "org", "place", "speaker", "source", "quote_kind")
FACETS = KEYWORD_FACETS + ("article", "date")
FACET_FIELDS = {name: name for name in KEYWORD_FACETS} | {"article": "article_id", "date": "date"}
SCHEMA_VERSION = 2


WORD = r"\w+(?:['’]\w+)*"
_WORD_RE = re.compile(WORD)
_POSSESSIVE = ("'s", "’s", "'S", "’S")


class PossessiveFilter(Filter):
    """Drops a possessive ending, so "Guaidó's" is indexed as "Guaidó"."""

    def __call__(self, tokens):  # type: ignore[no-untyped-def]
        for t in tokens:
            if t.text.endswith(_POSSESSIVE):
                t.text = t.text[:-2]
            yield t


# Whoosh pickles the schema, with this class's import path, into every table of contents.
# The path stays the one it had before the library moved into subpackages
# (``search/schema.py`` re-exports the class there): indexes written before open, and
# releases before read indexes written now.
PossessiveFilter.__module__ = "newsquarry.search.schema"


def text_analyzer():
    """Words, lower-cased, accents folded, Porter-stemmed: "Tortured" ~ "torture"."""
    return (
        RegexTokenizer(WORD)
        | PossessiveFilter()
        | LowercaseFilter()
        | CharsetFilter(accent_map)
        | StemFilter(cachesize=50000)
    )


def spelling_analyzer():
    """Like ``text_analyzer`` without stemming: spelling suggestions are real words."""
    return RegexTokenizer(WORD) | PossessiveFilter() | LowercaseFilter() | CharsetFilter(accent_map)


def spelling_words(text: str) -> str:
    """The distinct words ``spelling_analyzer`` finds in ``text``, space-separated.

    The ``spell`` field needs each word once per document (suggestions and
    wildcard expansion ask only whether a word occurs), so the store indexes
    this list with a plain space tokenizer instead of running Whoosh's token
    chain over every passage again (with the missing-column fix in
    ``whoosh_fixes``: 5.6-5.8 -> 5.1-5.2 ms of writing per article).
    An index made before this change (field analyzer ``spelling_analyzer``)
    turns the list into the same terms.
    """
    words = set()
    for word in set(_WORD_RE.findall(text)):
        if word.endswith(_POSSESSIVE):
            word = word[:-2]
        words.add(word.lower().translate(accent_map))
    return " ".join(words)


# the fields ``build_schema`` makes, as it lists them: what opening an index checks its schema
# has, without building the analyzers (0.4 ms of a fresh process's open); the schema tests
# check that the two agree
FIELD_NAMES = (
    "id", "doctype", "article_id", "passage_id", "position", "start", "end", "text", "title",
    "quote", "spell", "person", "org", "place", "speaker", "source", "quote_kind", "date",
    "url", "author", "content_hash", "data",
)  # fmt: skip


def build_schema() -> Schema:
    """The index schema (version ``SCHEMA_VERSION``)."""
    ana = text_analyzer()
    return Schema(
        id=ID(stored=True, unique=True),
        doctype=ID(stored=True),
        article_id=ID(stored=True, sortable=True),
        passage_id=ID(stored=True),
        position=NUMERIC(stored=True, sortable=True),
        start=STORED(),
        end=STORED(),
        text=TEXT(analyzer=ana, stored=True, phrase=True),
        title=TEXT(analyzer=ana, stored=True, phrase=True, field_boost=2.0),
        quote=TEXT(analyzer=ana, stored=True, phrase=True, field_boost=1.5),
        spell=TEXT(analyzer=SpaceSeparatedTokenizer(), phrase=False, spelling=True),
        person=KEYWORD(commas=True, scorable=False),
        org=KEYWORD(commas=True, scorable=False),
        place=KEYWORD(commas=True, scorable=False),
        speaker=KEYWORD(commas=True, scorable=False, stored=True),
        source=KEYWORD(commas=True, scorable=False, stored=True),
        quote_kind=KEYWORD(commas=True, scorable=False, stored=True),
        date=ID(stored=True, sortable=True),
        url=STORED(),
        author=STORED(),
        content_hash=STORED(),
        data=STORED(),
    )

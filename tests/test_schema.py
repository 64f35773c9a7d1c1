"""The schema's word lists: the fast spelling word list matches Whoosh's analyzer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from newsquarry.search.engine.schema import spelling_analyzer, spelling_words

_ALPHABET = st.sampled_from(list("aAzZéÉøßæ019_ '’s\n\t-.,\"Ǆﬁ"))


@settings(max_examples=300, deadline=None)
@given(st.text(_ALPHABET, max_size=60))
def test_spelling_words_are_the_analyzers_distinct_terms(text):
    expected = {t.text for t in spelling_analyzer()(text)}
    assert set(spelling_words(text).split()) == expected


def test_spelling_words_of_a_sentence():
    words = spelling_words("Guaidó's men said: \"Don't go\", and the MEN went.")
    assert sorted(words.split()) == ["and", "don't", "go", "guaido", "men", "said", "the", "went"]


def test_the_schema_is_pickled_under_the_import_path_every_index_has_used(tmp_path):
    """Whoosh pickles the schema into each table of contents: the analyzer's class keeps
    the path indexes were written with before the library moved into subpackages, so an
    index of any release opens with this one and the other way round."""
    import glob

    from newsquarry.search.engine.store import WhooshStore

    store = WhooshStore(tmp_path / "ix")
    try:
        toc = sorted(glob.glob(str(tmp_path / "ix" / "_newsquarry_*.toc")))[-1]
        data = open(toc, "rb").read()
    finally:
        store.close()
    assert b"cnewsquarry.search.schema\nPossessiveFilter\n" in data
    assert b"newsquarry.search.engine" not in data


def test_the_field_names_an_opening_checks_are_the_schemas():
    """``FIELD_NAMES`` (what opening an index checks its schema holds) are the fields
    ``build_schema`` makes."""
    from newsquarry.search.engine.schema import FIELD_NAMES, build_schema

    assert sorted(FIELD_NAMES) == build_schema().names()  # (Whoosh lists them sorted)
    assert len(set(FIELD_NAMES)) == len(FIELD_NAMES)

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

"""``core.textnorm.fold``: one definition of "accents and case never matter"."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from newsquarry.search.core.textnorm import fold


def _by_definition(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return re.sub(r"\s+", " ", stripped.casefold()).strip()


def test_names_fold_as_a_reader_expects():
    assert fold("Guaidó ") == "guaido"
    assert fold("  Harry\tSOLANO\n") == "harry solano"
    assert fold("Straße") == "strasse"
    assert fold("ﬁnance") == "finance"


@given(st.text(max_size=300))
def test_every_text_folds_as_the_definition_says(text):
    # the ASCII shortcut and the kept folds of short names give the definition's answer
    assert fold(text) == _by_definition(text)
    assert fold(text) == _by_definition(text)  # a second time: from the kept folds


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=300))
def test_ascii_text_folds_as_the_definition_says(text):
    assert fold(text) == _by_definition(text)

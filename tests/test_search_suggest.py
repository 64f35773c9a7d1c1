"""Did you mean, on the seed article: correct questions stay silent, misspellings are fixed.

The queries are written as people type them: questions in the README's style, names and
topics of the article, words the article lacks (a correct word is no misspelling because
this archive lacks it), and typos of the kinds people make (a letter dropped, doubled,
swapped with its neighbour or mistyped).
"""

from __future__ import annotations

import time

import pytest

from newsquarry.search.core.errors import QueryTooLong
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.query import searching, suggest
from newsquarry.search.query.searching import run_search

CORRECT = [
    "what did Harry Solano say about torture",
    "what did Trump say about Venezuela",
    "what did Tony Blair say about Iraq",
    "who said the army would change sides",
    "who is quoted most on the aid delivery",
    "has anyone said this before",
    "torture",
    "soldiers",
    "Guaido",
    "Guaidó",
    "Maduro",
    "Solano",
    "Alvarenga",
    "Venezuela",
    "Colombia",
    "Cucuta",
    "Caracas",
    "Cotiza",
    "Miraflores",
    "military intelligence",
    "National Guard",
    "opposition leader",
    "presidential palace",
    "failed uprising",
    "defections",
    "deserters",
    "army deserters",
    "desertion",
    "sergeant",
    "generals",
    "exile",
    "hotels",
    "spies",
    "border",
    "police",
    "interim president",
    "United States",
    "Trump administration",
    "PDVSA",
    "oil company",
    "rewarding loyalty",
    "senior officers",
    "former soldiers",
    "risk a false trip",
    "they will torture you",
    "safe harbor",
    "human rights",
    "election fraud",
    "economic sanctions",
    "humanitarian aid",
    "refugees",
    "Guaido AND army",
    "Maduro NOT Guaido",
    "torture OR exile",
    '"National Guard"',
    "tortur*",
    "speaker:Solano",
    "person:Guaidó",
    "place:Colombia",
    "date:2019",
    "say",
    "says",
    "said",
    "tell",
    "told",
    "where",
    "when",
    "why",
    "how",
    "did the generals defect",
    "does Maduro still control the army",
    "who commands the armed forces",
]

MISSPELT = {
    "tortrue": "torture",
    "toture": "torture",
    "tortture": "torture",
    "soldeirs": "soldiers",
    "soliders": "soldiers",
    "Venezuala": "Venezuela",
    "Venezeula": "Venezuela",
    "Venezulea soldiers": "Venezuela soldiers",
    "Guiado": "Guaido",
    "Guaiod": "Guaido",
    "Madura": "Maduro",
    "Maudro": "Maduro",
    "Solanno": "Solano",
    "Alvarnega": "Alvarenga",
    "Alverenga": "Alvarenga",
    "Colmbia": "Colombia",
    "Columbia border": "Colombia border",
    "Caracsa": "Caracas",
    "Miraflorez": "Miraflores",
    "militray": "military",
    "militery": "military",
    "inteligence": "intelligence",
    "intelligance": "intelligence",
    "oppositon": "opposition",
    "opposistion": "opposition",
    "uprisng": "uprising",
    "upirsing": "uprising",
    "sergaent": "sergeant",
    "sargeant": "sergeant",
    "generlas": "generals",
    "presidental palace": "presidential palace",
    "palcae": "palace",
    "overthorw": "overthrow",
    "conspiritors": "conspirators",
    "dissidnets": "dissidents",
    "infiltarted": "infiltrated",
    "defectros": "defectors",
    "persaude": "persuade",
    "sufficent": "sufficient",
    "predecesor": "predecessor",
    "lucratvie": "lucrative",
    "distribting": "distributing",
    "scrutinzing": "scrutinizing",
    "splintr group": "splinter group",
    "arrestd": "arrested",
    "publcly": "publicly",
    "dificult": "difficult",
    "importnat": "important",
    "countires": "countries",
    "Harry Solaon torture": "Harry Solano torture",
    "what did Harry Solaon say about tortrue": "what did Harry Solano say about torture",
}


def _suggestion(store, q: str) -> str | None:
    return run_search(store, SearchRequest(q=q, per_page=1)).suggestion


@pytest.fixture(scope="module")
def seed(seed_index):
    return seed_index


def test_a_long_query_is_refused_before_any_spelling_work(seed_store, monkeypatch):
    """Spelling a 1,000-character query cost up to 6.5 s of CPU: the query cap refuses it
    before a word is looked at, so suggestions stay bounded."""
    calls = []
    monkeypatch.setattr(searching, "corrected_text", lambda *a, **k: calls.append(a))
    typos = ("Solaon tortrue Caracsa soldeirs Venezeula " * 30)[:1000]
    with pytest.raises(QueryTooLong):
        run_search(seed_store, SearchRequest(q=typos, suggest=True))
    assert calls == []


def test_spelling_stops_at_the_deadline(seed_store, monkeypatch):
    """Past the search's deadline (expired by hand, not by waiting) no word is looked up:
    the search is answered, whole, without a suggestion, and says partial."""
    real, looked = suggest.corrected_text, []

    def expire_then_correct(text, tokens, searcher, view, deadline=None):
        deadline.at = time.monotonic() - 1.0
        return real(text, tokens, searcher, view, deadline)

    monkeypatch.setattr(searching, "corrected_text", expire_then_correct)
    monkeypatch.setattr(suggest, "_correct_word", lambda *a: looked.append(a))
    r = run_search(seed_store, SearchRequest(q="Harry Solaon tortrue", suggest=True))
    assert looked == [] and r.suggestion is None
    assert r.partial is True and "suggestion" in r.cut_short
    assert r.total == run_search(seed_store, SearchRequest(q="Harry Solaon tortrue")).total


def test_the_set_is_large_enough():
    assert len(CORRECT) >= 50 and len(MISSPELT) >= 50


@pytest.mark.parametrize("q", CORRECT)
def test_a_correct_query_gets_no_suggestion(seed, q):
    assert _suggestion(seed, q) is None


def test_most_misspellings_are_fixed(seed):
    wrong = {q: _suggestion(seed, q) for q in MISSPELT}
    fixed = [
        q for q, got in wrong.items() if got is not None and got.lower() == MISSPELT[q].lower()
    ]
    misled = {q: got for q, got in wrong.items() if got is not None and q not in fixed}
    assert len(fixed) >= 0.8 * len(MISSPELT), {q: g for q, g in wrong.items() if q not in fixed}
    assert misled == {}  # a suggestion is right or absent, never another wrong query


@pytest.mark.parametrize(
    ("q", "want"),
    [
        ("Solano NOT tortrue", None),  # the only misspelling is left out of the hits anyway
        ("Solano -tortrue", None),
        ("Solaon NOT torture", "Solano NOT torture"),
        ("Solaon NOT (tortrue OR armmy)", "Solano NOT (tortrue OR armmy)"),
        ("(Solaon) NOT tortrue", "(Solano) NOT tortrue"),
        ("NOT tortrue Solaon", "NOT tortrue Solano"),
    ],
)
def test_a_word_under_not_is_never_respelt(seed, q, want):
    """Respelling an excluded word cannot find what was asked for, only change what is
    left out ("Maduro NOT Guaido" was offered as "Mauro NOT Guard" on BBC News)."""
    assert _suggestion(seed, q) == want

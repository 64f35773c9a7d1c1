"""Co-occurrence (search/cooccurrence.py) against an independent count over every passage,
through the library, the API and the CLI."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from api_support import NAMES, TagEnricher
from click.testing import CliRunner

from newsquarry.api.app import create_app
from newsquarry.search.cli.app import cli
from newsquarry.search.core.errors import InvalidRequest, UnknownFacet
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.core.textnorm import fold
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.readers import article_from_mapping
from newsquarry.search.query.cooccurrence import cooccurrence

SECRET = "a-secret-of-thirty-two-characters-or-more"
WORDS = "aid border oil bridge trucks army talks harbour election court".split()
PEOPLE = [n for n, t in NAMES.items() if t == "person"]


def _corpus(seed: int, n: int = 40) -> list[dict]:
    rnd = random.Random(seed)
    names = list(NAMES)
    out = []
    for i in range(n):
        paragraphs = []
        for _ in range(rnd.randint(1, 4)):
            mentioned = rnd.sample(names, rnd.randint(0, 3))
            words = " ".join(rnd.choices(WORDS, k=6))
            text = f"Report on {words} with " + ", ".join(mentioned or ["nobody"]) + "."
            if mentioned and rnd.random() < 0.4 and NAMES[mentioned[0]] == "person":
                text += f' "We will see about the {rnd.choice(WORDS)}," said {mentioned[0]}.'
            paragraphs.append(text + " " + "More words follow here. " * rnd.randint(8, 20))
        out.append({"id": f"g{seed}-{i:03d}", "title": f"Story {i}", "source": rnd.choice(
            ["Wire A", "Wire B"]), "date": f"2020-01-{1 + i % 28:02d}",
            "text": "\n\n".join(paragraphs)})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> WhooshStore:
    """A generated corpus written in three commits (several segments), one article deleted."""
    path = tmp_path_factory.mktemp("co")
    st = WhooshStore(path)
    items = [article_from_mapping(a) for a in _corpus(7)]
    for chunk in (items[:15], items[15:30], items[30:]):
        index_articles(st, chunk, enricher=TagEnricher())
    st.delete(items[3].id)
    return st


def _all_passages(store: WhooshStore) -> list[dict]:
    out = []
    for a in _corpus(7):
        try:
            out.extend(store.get_article(a["id"])["passages"])
        except Exception:  # the deleted one
            continue
    return out


def _values(p: dict, facet: str) -> set[str]:
    if facet == "speaker":
        return {fold(s) for s in p.get("speakers") or []}
    return {fold(e["name"]) for e in p.get("entities") or [] if e["type"] == facet}


def _independent(store, subject_facet: str, subject: str, target: str, q_word: str | None):
    passages = _all_passages(store)
    key = fold(subject)

    def matches(p: dict) -> bool:
        return key in _values(p, subject_facet) and (q_word is None or q_word in p["text"])

    hit = [p for p in passages if matches(p)]
    by_passage = Counter(v for p in hit for v in _values(p, target) if v != key)
    articles = {p["article_id"] for p in hit}
    by_article: Counter = Counter()
    for aid in articles:
        vals = set().union(*(_values(p, target) for p in passages if p["article_id"] == aid))
        by_article.update(v for v in vals if v != key)
    return len(hit), len(articles), by_passage, by_article


@pytest.mark.parametrize("subject_facet,subject", [
    ("person", "Juan Guaidó"), ("person", "Harry Solano"), ("place", "Caracas"),
    ("org", "PDVSA"), ("speaker", "Nicolás Maduro"),
])  # fmt: skip
@pytest.mark.parametrize("q_word", [None, "bridge"])
def test_counts_equal_an_independent_count_over_every_passage(store, subject_facet, subject,
                                                              q_word):  # fmt: skip
    for target in ("person", "org", "place", "speaker"):
        n_hit, n_art, by_passage, by_article = _independent(
            store, subject_facet, subject, target, q_word
        )
        req = SearchRequest(q=q_word or "", filters={subject_facet: [subject]})
        result = cooccurrence(store, req, [target], size=100)
        assert (result.passages, result.articles) == (n_hit, n_art)
        got_p = {fold(v.value): v.count for v in result.facets[target].passage}
        got_a = {fold(v.value): v.count for v in result.facets[target].article}
        assert got_p == dict(by_passage), (target, "passage")
        assert got_a == dict(by_article), (target, "article")


def test_values_come_most_frequent_first_and_size_limits_them(store):
    result = cooccurrence(store, SearchRequest(filters={"person": ["Juan Guaidó"]}), size=2)
    for facet in result.facets.values():
        for level in (facet.passage, facet.article):
            assert len(level) <= 2
            assert [v.count for v in level] == sorted((v.count for v in level), reverse=True)
    assert all(fold(v.value) != fold("Juan Guaidó") for v in result.facets["person"].passage)


def test_bad_targets_and_sizes_are_library_errors(store):
    with pytest.raises(UnknownFacet):
        cooccurrence(store, SearchRequest(), ["date"])
    with pytest.raises(InvalidRequest):
        cooccurrence(store, SearchRequest(), ["person"], size=0)


def test_api_answers_like_the_library_and_a_key_limits_it(store):
    app = create_app({"index": str(store.path), "secret": SECRET}, store=store)
    c = app.test_client()
    r = c.get("/v1/cooccurrence?person=Juan%20Guaid%C3%B3&facet=place&facet=speaker&size=5")
    assert r.status_code == 200, r.data
    body = r.get_json()
    lib = cooccurrence(store, SearchRequest(filters={"person": ["Juan Guaidó"]}),
                       ["place", "speaker"], 5).to_dict()  # fmt: skip
    assert body["facets"] == lib["facets"] and body["passages"] == lib["passages"]
    assert c.get("/v1/cooccurrence?facet=date").status_code == 400
    assert c.get("/v1/cooccurrence?size=0").status_code == 400
    spec = c.get("/openapi.json").get_json()
    assert "/v1/cooccurrence" in spec["paths"]

    from newsquarry.search.query.keys import Scope, make_key

    key = make_key(SECRET, Scope(filters={"source": ["Wire A"]}))
    keyed = c.get(f"/v1/cooccurrence?person=Juan%20Guaid%C3%B3&facet=source&key={key}")
    assert keyed.status_code == 200
    sources = {v["value"] for lvl in ("passage", "article")
               for v in keyed.get_json()["facets"]["source"][lvl]}  # fmt: skip
    assert "Wire B" not in sources
    # the article counts under the key look only at in-scope passages
    scoped = cooccurrence(store, SearchRequest(filters={"person": ["Juan Guaidó"],
                                                        "source": ["Wire A"]}),
                          ["place"], 100).to_dict()  # fmt: skip
    keyed_place = c.get(f"/v1/cooccurrence?person=Juan%20Guaid%C3%B3&facet=place&key={key}")
    assert keyed_place.get_json()["facets"]["place"] == scoped["facets"]["place"]


def test_cli_prints_csv_json_and_a_readable_list(store):
    runner = CliRunner()
    base = ["--index", str(store.path), "cooccur", "--person", "Juan Guaidó", "--facet", "place"]
    out = runner.invoke(cli, [*base, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    lib = cooccurrence(store, SearchRequest(filters={"person": ["Juan Guaidó"]}), ["place"])
    assert data["facets"] == lib.to_dict()["facets"]
    csv_out = runner.invoke(cli, [*base, "--csv"])
    lines = csv_out.output.splitlines()
    assert lines[0] == "facet,level,value,count" and len(lines) > 1
    text = runner.invoke(cli, base)
    assert "same passage" in text.output and "same article" in text.output
    nothing = runner.invoke(cli, ["--index", str(store.path), "cooccur", "--person", "Nobody X"])
    assert nothing.exit_code == 1


def test_empty_index_has_no_cooccurrence(tmp_path: Path):
    st = WhooshStore(tmp_path / "empty")
    result = cooccurrence(st, SearchRequest(filters={"person": ["Anyone"]}))
    assert result.passages == 0 and all(not f.passage for f in result.facets.values())

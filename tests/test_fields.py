"""A newsroom's own fields (issue 36): extra JSONL fields kept, declared ones filterable,
facetable, exported, in the API schema and writes; declaring one rewrites nothing."""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter

import pytest
from click.testing import CliRunner
from conftest import PassThrough

import newsquarry.search  # noqa: F401  (plugs the features)
from newsquarry.search.cli.app import cli
from newsquarry.search.core import fields
from newsquarry.search.core.config import load_settings
from newsquarry.search.core.errors import InvalidRequest, UnknownFacet
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.readers import article_from_mapping
from newsquarry.search.query.export import Export, records

RECORDS = [
    {"id": "s1", "title": "Late winner", "text": "The striker scored a late goal.",
     "category": "Sport", "pages": 3, "published": "2020-01-02", "desk": "night"},
    {"id": "s2", "title": "Derby", "text": "A goal in the derby.\n\nThe fans sang after the goal.",
     "category": ["sport", "Local"], "pages": 12, "published": "2020-03-01"},
    {"id": "b1", "title": "Rates", "text": "The bank raised rates and no goal was set.",
     "category": "business", "pages": 10},
    {"id": "n1", "title": "Plain", "text": "Nothing declared here about a goal."},
]  # fmt: skip
SPECS = ["category:keyword", "pages:number", "published:date"]


def _index(path, records=RECORDS, declare=SPECS):
    store = WhooshStore(path)
    if declare:
        fields.declare(path, [fields.parse_spec(s) for s in declare])
    index_articles(store, [article_from_mapping(r) for r in records], enricher=PassThrough())
    return store


def _counts(result, name):
    return {v.value: v.count for v in result.facets[name].values}


@pytest.fixture
def store(tmp_path):
    s = _index(tmp_path / "ix")
    yield s
    s.close()


def test_specs_parse_and_refuse():
    assert fields.parse_spec("category") == fields.FieldSpec("category", "keyword")
    assert fields.parse_spec("pages:number").kind == "number"
    for bad in ("source:keyword", "Category", "x:text", "q", "a-b"):
        with pytest.raises(fields.FieldError):
            fields.parse_spec(bad)


def test_extra_fields_are_kept_in_the_stored_article(store):
    art = store.get_article("s1")
    assert art["fields"] == {
        "category": "Sport", "pages": 3, "published": "2020-01-02", "desk": "night"
    }  # fmt: skip
    assert "fields" not in store.get_article("n1")


def test_keyword_facet_counts_every_passage_of_its_articles(store):
    r = store.search(SearchRequest(facets=["category"]))
    # passages: s1 has 1, s2 has 2 (split at the blank line only if long enough)
    per_article = {a: len(store.get_article(a)["passages"]) for a in ("s1", "s2", "b1")}
    want = Counter()
    for rec in RECORDS:
        for v in fields.keyword_values(rec.get("category")):
            want[v.lower()] += per_article.get(rec["id"], 0)
    got = {k.lower(): v for k, v in _counts(r, "category").items()}
    assert got == dict(want)


def test_filter_by_keyword_folds_case_and_keeps_multiselect_counts(store):
    r = store.search(SearchRequest(q="goal", filters={"category": ["SPORT"]}, facets=["category"]))
    assert {h.article_id for h in r.hits} == {"s1", "s2"}
    values = {v.value.lower(): (v.count, v.selected) for v in r.facets["category"].values}
    assert values["sport"][1] is True
    assert values["business"] == (1, False)  # its own filter is not applied to its counts
    assert r.hits[0].fields["category"] in ("Sport", ["sport", "Local"])


def test_number_and_date_filters_and_facets(store):
    r = store.search(SearchRequest(filters={"pages": ["10..20"]}))
    assert {h.article_id for h in r.hits} == {"s2", "b1"}
    r = store.search(SearchRequest(filters={"pages": ["..5"]}))
    assert {h.article_id for h in r.hits} == {"s1"}
    r = store.search(SearchRequest(filters={"published": ["2020-03"]}))
    assert {h.article_id for h in r.hits} == {"s2"}
    r = store.search(SearchRequest(filters={"published": ["2020-01..2020-02"]}))
    assert {h.article_id for h in r.hits} == {"s1"}
    r = store.search(SearchRequest(facets=["published"], date_interval="year"))
    assert set(_counts(r, "published")) == {"2020"}
    with pytest.raises(InvalidRequest):
        store.search(SearchRequest(filters={"pages": ["many"]}))


def test_undeclared_fields_are_refused_as_filters_and_listed_by_stats(store):
    with pytest.raises(UnknownFacet):
        store.search(SearchRequest(filters={"desk": ["night"]}))
    st = store.stats()["fields"]
    assert {f["name"]: f["articles"] for f in st["declared"]} == {
        "category": 3, "pages": 3, "published": 2
    }  # fmt: skip
    assert st["undeclared"] == [{"name": "desk", "articles": 1}]


def test_declaring_later_rewrites_nothing(tmp_path):
    path = tmp_path / "ix"
    store = _index(path, declare=[])
    gen = store.generation
    store.search(SearchRequest())  # what any search leaves (the state's stories) is there
    before = sorted(os.listdir(path))
    fields.declare(path, [fields.parse_spec("desk:keyword")])
    r = store.search(SearchRequest(filters={"desk": ["Night"]}, facets=["desk"]))
    assert {h.article_id for h in r.hits} == {"s1"}
    assert store.generation == gen
    assert sorted(os.listdir(path)) == sorted(before + [fields.FIELDS_FILE])
    store.close()


def test_fields_survive_a_merge_and_a_replacement(tmp_path):
    path = tmp_path / "ix"
    store = _index(path, records=RECORDS[:2])
    index_articles(store, [article_from_mapping(r) for r in RECORDS[2:]], enricher=PassThrough())
    changed = dict(RECORDS[0], category="business")
    index_articles(store, [article_from_mapping(changed)], enricher=PassThrough())
    store.optimize()
    r = store.search(SearchRequest(facets=["category"], filters={"category": ["business"]}))
    assert {h.article_id for h in r.hits} == {"s1", "b1"}
    assert {k.lower() for k in _counts(r, "category")} == {"business", "sport", "local"}
    store.close()
    reopened = WhooshStore(path)  # a new process: the column is read from its file
    r = reopened.search(SearchRequest(filters={"category": ["sport"]}))
    assert {h.article_id for h in r.hits} == {"s2"}
    reopened.close()


def test_a_change_of_fields_alone_is_a_replacement(tmp_path):
    store = _index(tmp_path / "ix")
    again = index_articles(
        store, [article_from_mapping(r) for r in RECORDS], enricher=PassThrough()
    )
    assert sorted(again.unchanged) == ["b1", "n1", "s1", "s2"]
    rep = index_articles(
        store, [article_from_mapping(dict(RECORDS[2], category="economy"))], enricher=PassThrough()
    )
    assert rep.replaced == ["b1"]
    store.close()


def test_export_has_a_column_per_declared_field(store):
    ex = Export(store, SearchRequest(q="goal"), load_settings(max_per_page=2))
    body = b"".join(records(ex.hits(), "csv", "passages", ex.fields)).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0])[-3:] == ["category", "pages", "published"]
    by_article = {r["article_id"]: r for r in rows}
    assert by_article["s2"]["category"] == "sport; Local"
    assert by_article["b1"]["pages"] == "10"
    assert by_article["n1"]["category"] == ""
    lines = b"".join(
        records(Export(store, SearchRequest(q="goal"), load_settings()).hits(), "jsonl", "passages")
    )
    recs = [json.loads(x) for x in lines.splitlines()]
    assert {r["article_id"]: r["fields"].get("pages") for r in recs}["s1"] == 3


def test_cli_declares_filters_and_lists(tmp_path, monkeypatch):
    from newsquarry.search.ingest import indexer

    monkeypatch.setattr(indexer, "default_enricher", lambda **kw: PassThrough())
    src = tmp_path / "a.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n", encoding="utf-8")
    ix = str(tmp_path / "ix")
    runner = CliRunner()
    r = runner.invoke(cli, ["--index", ix, "index", str(src), "--field", "category:keyword",
                            "--no-count", "--processes", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["--index", ix, "search", "goal", "--where", "category=sport",
                            "--csv"])  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert {x["article_id"] for x in rows} == {"s1", "s2"}
    assert "category" in rows[0]
    r = runner.invoke(cli, ["--index", ix, "stats"])
    assert "field category (keyword)  3 articles" in r.stdout
    assert "undeclared field desk  1 article" in r.stdout
    r = runner.invoke(cli, ["--index", ix, "index", "--field", "pages:number"])
    assert r.exit_code == 0 and "pages (number)" in r.output
    r = runner.invoke(cli, ["--index", ix, "index", "--field", "source:keyword"])
    assert r.exit_code == 2


def test_api_parameters_facets_schema_and_writes(tmp_path):
    from newsquarry.api.app import create_app

    store = _index(tmp_path / "ix")
    app = create_app({"index": str(tmp_path / "ix"), "write_token": "t"}, store=store,
                     enricher=PassThrough())  # fmt: skip
    c = app.test_client()
    r = c.get("/v1/search?q=goal&category=sport&facet=category&facet=pages")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert {h["article_id"] for h in body["hits"]} == {"s1", "s2"}
    assert all("category" in h["fields"] for h in body["hits"])
    assert r.status_code == 200
    r = c.get("/v1/search?desk=night")
    assert r.status_code == 400
    spec = c.get("/openapi.json").get_json()
    params = {p["name"] for p in spec["paths"]["/v1/search"]["get"]["parameters"]}
    assert {"category", "pages", "published"} <= params
    hit = spec["components"]["schemas"]["Hit"]["properties"]["fields"]
    assert set(hit["properties"]) == {"category", "pages", "published"}
    assert "category" in spec["components"]["schemas"]["ArticleIn"]["properties"]
    r = c.put("/v1/articles/w1", json={"title": "Put", "text": "A goal put over the API.",
              "category": "Sport"}, headers={"Authorization": "Bearer t"})  # fmt: skip
    assert r.status_code in (200, 201), r.get_json()
    r = c.get("/v1/search?category=sport&facet=category")
    assert "w1" in {h["article_id"] for h in r.get_json()["hits"]}
    r = c.get("/v1/search?q=goal&category=sport&format=csv")
    assert r.data.decode().splitlines()[0].endswith(",category,pages,published")
    r = c.get("/v1/facets/category?prefix=sp")
    assert r.status_code == 200, r.get_json()
    assert [v["value"].lower() for v in r.get_json()["values"]] == ["sport"]
    store.close()

"""Query-string reading (``api.arguments``): the same answers webargs' own proxy gives."""

from __future__ import annotations

import pytest
from api_support import TOKEN, TagEnricher, build_index
from webargs.flaskparser import FlaskParser

from newsquarry.api import create_app
from newsquarry.api.arguments import QueryParser, multi_keys
from newsquarry.api.schemas import search_args_schema
from newsquarry.search.core.config import load_settings


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("api-arguments-index")
    build_index(path)
    app = create_app({"index": str(path), "write_token": TOKEN}, enricher=TagEnricher())
    return app.test_client()


@pytest.mark.parametrize(
    "query",
    [
        "q=Caracas&facet=person&facet=place&person=Juan+Guaid%C3%B3&person=Nicol%C3%A1s+Maduro",
        "q=oil&q=army&per_page=3&per_page=50",  # a repeated single value: the first one
        "q=&page=2&sort=date&highlight=false",
        "facet=date&date_interval=year&date_from=2019&date_to=2019-12",
        "",
    ],
)
def test_query_parser_reads_what_webargs_reads(client, query):
    """Each parameter, repeated or not, reaches marshmallow as webargs' proxy gives it."""
    schema = search_args_schema(client.application.extensions["newsquarry"].settings, "passages")()
    with client.application.test_request_context("/v1/search?" + query):
        from flask import request

        ours = QueryParser().load_querystring(request, schema)
        theirs = FlaskParser().load_querystring(request, schema)
        assert schema.load(ours) == schema.load(dict(theirs.items()))
        assert {k: theirs[k] for k in theirs} == ours


def test_list_fields_are_the_repeatable_parameters():
    schema = search_args_schema(load_settings(), "passages")()
    keys = multi_keys(schema)
    assert {"facet", "person", "place", "org", "speaker"} <= keys
    assert not {"q", "page", "per_page", "sort"} & keys


def test_repeated_single_parameter_and_unknown_parameter_over_http(client):
    first = client.get("/v1/search?q=oil&per_page=2").get_json()
    repeated = client.get("/v1/search?q=oil&q=zzzz&per_page=2&per_page=99").get_json()
    assert repeated["total"] == first["total"] and repeated["per_page"] == 2
    bad = client.get("/v1/search?q=oil&colour=red")
    assert bad.status_code == 400
    assert "colour" in bad.get_json()["errors"]

"""Property-based conformance: schemathesis against the served /openapi.json.

A real gunicorn server on loopback; every operation of the document is
called with generated requests (valid and invalid ones) and every answer must
be free of server errors and match the documented status codes, content types,
headers and schemas. The search endpoints get 100 examples each, the others
fewer to keep the run within about a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from api_support import TOKEN, LiveServer, build_index
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
SEARCH_PATHS = r"^/v1/(search|quotes|facets/)"


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("schemathesis-index")
    build_index(path)
    server = LiveServer("api_wsgi:app", {"NEWSQUARRY_INDEX": str(path),
                                          "NEWSQUARRY_WRITE_TOKEN": TOKEN})
    yield server
    logs = server.stop()
    assert "Traceback" not in logs, logs[-5000:]


@pytest.fixture(scope="module")
def api_schema(live_server):
    return schemathesis.openapi.from_url(live_server.url + "/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")
COMMON = {
    "deadline": None,
    "suppress_health_check": list(HealthCheck),
    "derandomize": True,
}


@schema.include(path_regex=SEARCH_PATHS).parametrize()
@settings(max_examples=100, **COMMON)
def test_search_endpoints_conform(case, live_server):
    case.call_and_validate(base_url=live_server.url, checks=CHECKS)


@schema.exclude(path_regex=SEARCH_PATHS).parametrize()
@settings(max_examples=30, **COMMON)
def test_other_endpoints_conform(case, live_server):
    headers = {"Authorization": f"Bearer {TOKEN}"} if case.method in ("POST", "PUT", "DELETE") \
        else None
    case.call_and_validate(base_url=live_server.url, headers=headers, checks=CHECKS)

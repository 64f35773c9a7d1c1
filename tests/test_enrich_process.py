"""The enrichment of API writes in a process of its own (search/ingest/enrichproc.py; issue 33).

A real child process (``spawn``), a real crash (SIGKILL from inside the enricher, as the
kernel's out-of-memory killer would), a real server (gunicorn + waitress) on loopback.
"""

from __future__ import annotations

import os

import pytest
import requests
from api_support import CRASH_MARK, TOKEN, CrashingEnricher, LiveServer, TagEnricher, build_index

from newsquarry.api import create_app
from newsquarry.search.core.errors import EnrichmentUnavailable
from newsquarry.search.ingest.enrichproc import EnrichmentProcess
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import article_from_mapping

AUTH = {"Authorization": f"Bearer {TOKEN}"}
TEXT = '"The army must choose," said Juan Guaidó in Caracas, where Nicolás Maduro rules.'


def _items(texts: list[str]) -> list:
    arts = [article_from_mapping({"id": f"a{i}", "text": t}) for i, t in enumerate(texts)]
    return [(a, split_passages(a)) for a in arts]


def _found(pairs) -> list:
    return [
        (a.id, [(e.name, e.start) for p in ps for e in p.entities],
         [(q.speaker, q.text) for p in ps for q in p.quotes])
        for a, ps in pairs
    ]  # fmt: skip


@pytest.fixture
def process():
    proc = EnrichmentProcess(CrashingEnricher())
    yield proc
    proc.close()


def test_the_child_finds_what_the_enricher_finds_here(process):
    texts = [TEXT, "PDVSA pumped less oil.", TEXT + " Ana Ruiz agreed."] * 7  # 21: two chunks
    assert _found(process.enrich(_items(texts))) == _found(TagEnricher().enrich(_items(texts)))
    assert process.pid is not None and process.pid != os.getpid()


def test_a_crash_is_a_clear_error_and_the_next_call_starts_a_new_child(process):
    list(process.enrich(_items([TEXT])))
    first = process.pid
    with pytest.raises(EnrichmentUnavailable, match="killed by signal 9.*starts it again"):
        list(process.enrich(_items([TEXT, f"{CRASH_MARK} here"])))
    assert process.pid is None  # gone, and not waited for
    assert _found(process.enrich(_items([TEXT]))) == _found(TagEnricher().enrich(_items([TEXT])))
    assert process.pid not in (None, first) and process.starts == 2


def test_the_setting_chooses_where_writes_enrich(tmp_path):
    injected = TagEnricher()
    inline = create_app({"index": str(tmp_path / "a"), "write_token": TOKEN,
                         "enrich_process": False}, enricher=injected)  # fmt: skip
    assert inline.extensions["newsquarry"].enricher() is injected
    apart = create_app({"index": str(tmp_path / "b"), "write_token": TOKEN}, enricher=injected)
    backend = apart.extensions["newsquarry"]
    assert isinstance(backend.enricher(), EnrichmentProcess)
    backend.enricher().close()


def test_over_http_a_crash_is_a_503_problem_and_writes_go_on(tmp_path):
    build_index(tmp_path)
    server = LiveServer("api_wsgi_crash:app", {"NEWSQUARRY_INDEX": str(tmp_path),
                                               "NEWSQUARRY_WRITE_TOKEN": TOKEN})  # fmt: skip
    try:
        url = server.url + "/v1/articles/"
        crash = requests.put(url + "crash-1", json={"text": f"Flamingos. {CRASH_MARK}"},
                             headers=AUTH, timeout=120)  # fmt: skip
        assert crash.status_code == 503
        assert crash.headers["Content-Type"] == "application/problem+json"
        assert crash.headers["Retry-After"]
        assert "enrichment process stopped" in crash.json()["detail"]
        # the worker that answered is alive and its next write enriches in a new child;
        # enough writes to reach both workers (the kernel spreads new connections)
        for i in range(6):
            ok = requests.put(url + f"ok-{i}", json={"text": f"Flamingos in Caracas, said Ana Ruiz {i}."},
                              headers=AUTH, timeout=120)  # fmt: skip
            assert ok.status_code == 200, ok.text
            assert ok.json()["added"] == [f"ok-{i}"]
        found = requests.get(server.url + "/v1/search?q=flamingos&facet=place", timeout=60).json()
        assert found["total"] == 6  # the crashed write committed nothing
        assert requests.get(url + "crash-1", timeout=60).status_code == 404
        assert requests.get(server.url + "/health/live", timeout=60).status_code == 200
    finally:
        logs = server.stop()
    assert "Traceback" not in logs

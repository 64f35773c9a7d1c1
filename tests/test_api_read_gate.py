"""One read at a time per worker (``api.concurrency.ReadGate``), through the real app.

The library's search is wrapped (not replaced) to count how many run at once
and to hold one open; every request still runs the real search on a real index.
"""

from __future__ import annotations

import threading
import time

import pytest
from api_support import TOKEN, TagEnricher, build_index

import newsquarry.api.views.search as search_views
from newsquarry.api import create_app
from newsquarry.api.concurrency import ReadGate

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("api-gate-index")
    build_index(path)
    return path


def make_app(index_dir, **config):
    return create_app(
        {"index": str(index_dir), "write_token": TOKEN, "response_cache_size": 0, **config},
        enricher=TagEnricher(),
    )


class Watch:
    """Wraps the library's search: counts searches running at once; can hold them."""

    def __init__(self, monkeypatch, pause: float = 0.0) -> None:
        self.real = search_views.search_library
        self.pause = pause
        self.now = self.most = 0
        self.lock = threading.Lock()
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        monkeypatch.setattr(search_views, "search_library", self)

    def __call__(self, store, req, settings):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        self.entered.set()
        try:
            self.release.wait(10)
            time.sleep(self.pause)
            return self.real(store, req, settings)
        finally:
            with self.lock:
                self.now -= 1


def search_in_threads(app, n: int) -> list[int]:
    statuses: list[int] = []

    def one(i: int) -> None:
        statuses.append(app.test_client().get(f"/v1/search?q=oil&page={1 + i % 3}").status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return statuses


@pytest.mark.parametrize("limit, expected", [(1, 1), (2, 2), (0, 6)])
def test_searches_at_once_never_exceed_the_limit(index_dir, monkeypatch, limit, expected):
    # without a gate all six must overlap: each holds on long enough that the last one
    # starts before the first ends on a loaded machine (0.05 s gave 5 of 6 at load 12)
    watch = Watch(monkeypatch, pause=0.05 if limit else 0.5)
    app = make_app(index_dir, read_concurrency=limit)
    assert search_in_threads(app, 6) == [200] * 6
    assert watch.most == expected  # 0 = no gate: all six overlap while each pauses


def test_default_is_one_read_per_worker(index_dir):
    app = make_app(index_dir)
    assert isinstance(app.wsgi_app, ReadGate) and app.wsgi_app.limit == 1
    assert not isinstance(make_app(index_dir, read_concurrency=0).wsgi_app, ReadGate)


def test_health_and_writes_pass_a_held_gate_reads_wait(index_dir, monkeypatch):
    watch = Watch(monkeypatch)
    watch.release.clear()
    app = make_app(index_dir)
    held = threading.Thread(target=lambda: app.test_client().get("/v1/search?q=oil"))
    held.start()
    assert watch.entered.wait(10)  # a search holds the gate
    try:
        client = app.test_client()
        assert client.get("/health/live").status_code == 200
        assert client.get("/health/ready").get_json()["ready"] is True
        put = client.put("/v1/articles/gate-test", json={"text": "Oil in Caracas."}, headers=AUTH)
        assert put.status_code == 200
        waiting: list[int] = []
        reader = threading.Thread(
            target=lambda: waiting.append(app.test_client().get("/v1/stats").status_code)
        )
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not waiting  # a read waits for the gate
    finally:
        watch.release.set()
    held.join(10)
    reader.join(10)
    assert waiting == [200]


def test_gate_refuses_a_limit_below_one():
    with pytest.raises(ValueError):
        ReadGate(lambda environ, start_response: [], 0)

"""End to end: the app under gunicorn on a free loopback port, over real HTTP."""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import time

import pytest
import requests
from api_support import ROOT, TOKEN, LiveServer, build_index, free_port

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    path = tmp_path_factory.mktemp("live-index")
    build_index(path)
    server = LiveServer(
        "api_wsgi:app",
        {
            "NEWSQUARRY_INDEX": str(path),
            "NEWSQUARRY_WRITE_TOKEN": TOKEN,
            "NEWSQUARRY_MAX_BODY_BYTES": "20000",
        },
    )
    server.index = str(path)
    yield server
    server.logs = server.stop()


def test_search_over_http(live):
    resp = requests.get(live.url + "/v1/search", params={"q": "torture", "facet": "person"})
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("application/json")
    body = resp.json()
    assert body["total"] == 1
    toggle = body["facets"]["person"]["values"][0]["toggle_url"]
    assert toggle.startswith("/v1/search?")  # relative: no base_url configured
    assert requests.get(live.url + toggle).json()["request"]["filters"]


def test_etag_over_http(live):
    first = requests.get(live.url + "/v1/search?q=oil")
    again = requests.get(
        live.url + "/v1/search?q=oil", headers={"If-None-Match": first.headers["ETag"]}
    )
    assert again.status_code == 304


def test_write_read_delete_over_http(live):
    doc = {"articles": [{"id": "live-1", "title": "Live", "text": "Flamingos seen in Caracas."}]}
    assert requests.post(live.url + "/v1/articles", json=doc).status_code == 401
    assert (
        requests.post(
            live.url + "/v1/articles", json=doc, headers={"Authorization": "Bearer wrong"}
        ).status_code
        == 403
    )
    added = requests.post(live.url + "/v1/articles", json=doc, headers=AUTH)
    assert added.status_code == 200 and added.json()["added"] == ["live-1"]
    # every worker sees the commit
    for _ in range(6):
        assert requests.get(live.url + "/v1/search?q=flamingos").json()["total"] == 1
    assert requests.delete(live.url + "/v1/articles/live-1", headers=AUTH).status_code == 200
    for _ in range(6):
        assert requests.get(live.url + "/v1/search?q=flamingos").json()["total"] == 0


def test_body_limit_over_http(live):
    big = {"articles": [{"text": "x" * 30000}]}
    resp = requests.post(live.url + "/v1/articles", json=big, headers=AUTH)
    assert resp.status_code == 413
    assert resp.headers["Content-Type"] == "application/problem+json"


def test_streamed_jsonl_over_http(live):
    with requests.get(
        live.url + "/v1/search",
        params={"q": "oil", "format": "jsonl", "export": "true"},
        stream=True,
    ) as resp:
        assert resp.headers["Content-Type"].startswith("application/x-ndjson")
        assert resp.headers.get("Transfer-Encoding") == "chunked"
        lines = [json.loads(line) for line in resp.iter_lines() if line]
    assert len(lines) == int(resp.headers["X-Total-Count"])


def test_cors_preflight_over_http(live):
    resp = requests.options(
        live.url + "/v1/search",
        headers={"Origin": "https://embed.example", "Access-Control-Request-Method": "GET"},
    )
    assert resp.status_code == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "*"


def test_concurrent_requests(live):
    urls = [live.url + f"/v1/search?q=oil&page={1 + i % 3}&facet=person" for i in range(40)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda u: requests.get(u).status_code, urls))
    assert statuses == [200] * 40


def test_request_id_in_access_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("live-log-index")
    build_index(path)
    server = LiveServer(
        "newsquarry.api.wsgi:app", {"NEWSQUARRY_INDEX": str(path)}, workers=1, threads=2
    )
    try:
        resp = requests.get(server.url + "/v1/stats", headers={"X-Request-Id": "trace-me-42"})
        assert resp.headers["X-Request-Id"] == "trace-me-42"
        assert requests.get(server.url + "/health/ready").json()["ready"] is True
        assert requests.get(server.url + "/v1/search?q=oil").json()["total"] > 0
        put = requests.put(server.url + "/v1/articles/x", json={"text": "x"}, headers=AUTH)
        assert put.status_code == 403  # no token configured: writes disabled
    finally:
        logs = server.stop()
    assert "rid=trace-me-42" in logs
    assert "Traceback" not in logs


def test_cli_remote_client_matches_the_library(live):
    """``newsquarry --url`` (search.cli.remote) gets what the library gives locally."""
    from newsquarry.search.cli.remote import RemoteClient
    from newsquarry.search.core.requests import SearchRequest
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.query.searching import facet_values, run_search

    store = WhooshStore(live.index, create=False)
    req = SearchRequest(q="Caracas", facets=["person", "source"], per_page=5)
    local = run_search(store, req).to_dict()
    remote = RemoteClient(live.url).search(req)
    for key in ("total", "suggestion", "partial", "page", "per_page", "total_pages"):
        assert remote[key] == local[key]
    assert [h["id"] for h in remote["hits"]] == [h["id"] for h in local["hits"]]
    assert remote["hits"][0]["snippet"] == local["hits"][0]["snippet"]
    for name, facet in local["facets"].items():
        assert [(v["value"], v["count"]) for v in remote["facets"][name]["values"]] == [
            (v["value"], v["count"]) for v in facet["values"]
        ]
    values = RemoteClient(live.url).facet_values("person", "ha", req, 5)
    lib_values = facet_values(store, "person", "ha", req, 5)
    assert [v["value"] for v in values["values"]] == [v.value for v in lib_values.values]
    assert RemoteClient(live.url).passage("solano-exile#p1")["id"] == "solano-exile#p1"
    store.close()


def test_one_thread_per_worker_still_buffers_clients(tmp_path_factory):
    """``serve --threads 1``: one request at a time per worker, clients still read by waitress's loop.

    gunicorn's own workers stay selectable (``NEWSQUARRY_WORKER_CLASS=sync``: its sync worker for
    one thread, gthread for more), answering the same.
    """
    path = tmp_path_factory.mktemp("live-sync-index")
    build_index(path)
    for worker_class, logged in (("", "WaitressWorker"), ("sync", "Using worker: sync")):
        server = LiveServer("newsquarry.api.wsgi:app", {"NEWSQUARRY_INDEX": str(path),
                                                        "NEWSQUARRY_WORKER_CLASS": worker_class},
                            workers=2, threads=1)  # fmt: skip
        try:
            urls = [
                server.url + f"/v1/search?q=oil&page={1 + i % 2}&facet=person" for i in range(24)
            ]
            with concurrent.futures.ThreadPoolExecutor(6) as pool:
                answers = list(pool.map(lambda u: requests.get(u, timeout=30), urls))
            assert [a.status_code for a in answers] == [200] * 24
            assert {a.json()["total"] for a in answers} == {answers[0].json()["total"]}
        finally:
            logs = server.stop()
        assert logged in logs
        assert "Traceback" not in logs


def test_serve_runs_gunicorn_and_refuses_a_port_in_use(tmp_path_factory):
    """``newsquarry serve`` serves; a second one on the same port stops with a message.

    The workers listen with SO_REUSEPORT (``api/gunicorn_conf.py``), which the kernel
    would let a second server share silently, splitting requests between two indexes.
    """
    path = tmp_path_factory.mktemp("serve-index")
    build_index(path)
    port = free_port()
    env = dict(os.environ, NEWSQUARRY_INDEX=str(path), NEWSQUARRY_ACCESS_LOG="-")
    cmd = [
        sys.executable,
        "-m",
        "newsquarry.search.cli",
        "serve",
        "--port",
        str(port),
        "--threads",
        "2",
    ]
    first = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(url + "/health/ready", timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline and first.poll() is None, "serve did not start"
            time.sleep(0.2)
        second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert f"port {port} on 127.0.0.1 is in use" in second.stderr
        assert "Traceback" not in second.stderr
        totals = {requests.get(url + "/v1/search?q=oil").json()["total"] for _ in range(10)}
        assert len(totals) == 1 and totals.pop() > 0
    finally:
        first.terminate()
        first.wait(20)


@pytest.mark.parametrize(
    "binds, env, expected",
    [
        (["127.0.0.1:8000"], {}, True),
        (["127.0.0.1:8000", "[::1]:8001"], {}, True),
        (["unix:/run/newsquarry.sock"], {}, False),
        (["127.0.0.1:8000", "fd://3"], {}, False),
        (["127.0.0.1:8000"], {"LISTEN_FDS": "1"}, False),
    ],
)
def test_reuse_port_only_for_tcp_sockets_gunicorn_opens(monkeypatch, binds, env, expected):
    """A socket per worker would let each worker replace a Unix socket file in turn."""
    from types import SimpleNamespace

    from gunicorn.config import Config

    from newsquarry.api import gunicorn_conf

    monkeypatch.delenv("LISTEN_FDS", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    cfg = Config()
    cfg.set("bind", binds)
    cfg.set("reuse_port", gunicorn_conf.reuse_port)
    gunicorn_conf.on_starting(SimpleNamespace(cfg=cfg))
    assert cfg.reuse_port is expected


def test_serves_on_a_unix_socket(tmp_path_factory):
    """Behind a proxy on a Unix socket (beside TCP): searches answered through the socket file.

    ``on_starting`` turned SO_REUSEPORT off for this server (the test above checks how).
    """
    import http.client
    import socket

    path = tmp_path_factory.mktemp("unix-index")
    build_index(path)
    sock_path = str(path / "nq.sock")

    class UnixConnection(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(sock_path)

    server = LiveServer(
        "newsquarry.api.wsgi:app",
        {"NEWSQUARRY_INDEX": str(path)},
        workers=2,
        threads=2,
        extra=["--bind", f"unix:{sock_path}"],
    )
    try:
        for _ in range(5):
            conn = UnixConnection("localhost")
            conn.request("GET", "/v1/search?q=oil")
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read())["total"] > 0
            conn.close()
    finally:
        logs = server.stop()
    assert "Traceback" not in logs


def test_chunked_body_over_the_limit_is_413_over_http(live):
    def chunks():
        yield b'{"articles": [{"text": "'
        for _ in range(120):  # 1.2 MB without a Content-Length (the limit here: 20,000 bytes)
            yield b"x" * 10_000
        yield b'"}]}'

    resp = requests.post(live.url + "/v1/articles", data=chunks(),
                         headers={**AUTH, "Content-Type": "application/json"})  # fmt: skip
    assert resp.status_code == 413
    assert resp.headers["Content-Type"] == "application/problem+json"


def test_a_huge_key_header_is_a_json_error_over_http(live):
    for size in (9_000, 60_000):
        resp = requests.get(live.url + "/v1/search", headers={"X-Newsquarry-Key": "k" * size})
        assert resp.status_code == 431, size
        assert resp.headers["Content-Type"] == "application/problem+json"


def test_health_answers_while_every_worker_runs_searches(tmp_path_factory):
    path = tmp_path_factory.mktemp("held-index")
    build_index(path)
    hold = tmp_path_factory.mktemp("hold")
    # every search is held busy in its thread (tests/api_wsgi_hold.py) until released: the
    # health checks are asked while all six run, known by state, not by a delay
    server = LiveServer("api_wsgi_hold:app", {"NEWSQUARRY_INDEX": str(path),
                                              "NEWSQUARRY_TEST_HOLD": str(hold),
                                              "NEWSQUARRY_READ_CONCURRENCY": "8"},
                        workers=2, threads=8)  # fmt: skip
    try:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            # six searches on six connections: the kernel spreads them over both workers
            # (8 threads each: six searches never take every thread of one)
            slow = [pool.submit(requests.get, server.url + "/v1/search",
                                params={"q": "army"}, timeout=600) for _ in range(6)]  # fmt: skip
            deadline = time.monotonic() + 300  # a bound on a state that must come
            while len(list(hold.glob("started-*"))) < 6:
                assert not any(f.done() for f in slow), [f.result() for f in slow if f.done()]
                assert time.monotonic() < deadline, "the searches never all started"
                time.sleep(0.05)  # polling a state
            busy = {p.name.split("-")[1] for p in hold.glob("started-*")}
            for path_ in ("/v1/health", "/health/live", "/health/ready", "/openapi.json"):
                for _ in range(6):
                    # a bound for a check that would wait for the searches: they never end
                    resp = requests.get(server.url + path_, timeout=120)
                    assert resp.status_code == 200, (path_, resp.text)
            # every answer came while all six searches were still running: none waited
            assert not any(f.done() for f in slow)
            (hold / "release").touch()
            assert [f.result().status_code for f in slow] == [200] * 6
        assert busy  # the pids of the workers that were searching (both, but for 1 in 32)
    finally:
        logs = server.stop()
    assert "Traceback" not in logs

"""Slow and stalled clients against the real server (gunicorn + waitress workers) on loopback.

Issue 33: 8-16 connections that send a partial request and drip a header line every few
seconds held every thread of gunicorn's threaded workers, ``/health/live`` included. The
waitress workers (``api/waitress_worker.py``) read each request whole before a thread
takes it, drop a request whose headers or body take too long, and answer waitress's own
errors as problem+json. No assertion here is about time: answers must *come* (with
generous client limits) while the slow sockets are held open, and closes are waited for.
"""

from __future__ import annotations

import concurrent.futures
import socket

import pytest
import requests
from api_support import TOKEN, LiveServer, build_index

SLOW = 200
PARTIAL = b"GET /v1/search?q=oil HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n"


def _slow_sockets(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        s.sendall(PARTIAL)
        socks.append(s)
    return socks


def _still_open(s: socket.socket) -> bool:
    """True when the server has not closed ``s`` (nothing to read, no EOF)."""
    s.setblocking(False)
    try:
        return s.recv(1) != b""  # data would be an answer to a request never finished
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    path = tmp_path_factory.mktemp("slow-clients-index")
    build_index(path)
    return path


def test_searches_and_liveness_answer_while_200_slow_connections_are_held(index):
    # the header and idle limits far away: every slow socket is still held while the probes run
    server = LiveServer("api_wsgi:app", {"NEWSQUARRY_INDEX": str(index),
                                         "NEWSQUARRY_HEADER_TIMEOUT": "3600",
                                         "NEWSQUARRY_IDLE_TIMEOUT": "3600"})  # fmt: skip
    socks: list[socket.socket] = []
    try:
        socks = _slow_sockets(server.port, SLOW)
        for s in socks:  # one more line each: every connection has begun a request
            s.sendall(b"X-Drip: 1\r\n")
        urls = [server.url + "/v1/search?q=oil&facet=person"] * 24 + [
            server.url + "/health/live"
        ] * 24
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda u: requests.get(u, timeout=60), urls))
        assert [a.status_code for a in answers] == [200] * len(urls)
        assert {a.json()["total"] for a in answers[:24]} == {answers[0].json()["total"]} != {0}
        assert all(_still_open(s) for s in socks)  # held all along, not dropped to make room
    finally:
        for s in socks:
            s.close()
        logs = server.stop()
    assert "Traceback" not in logs


def test_a_request_too_slow_to_arrive_is_dropped(index):
    server = LiveServer("api_wsgi:app", {"NEWSQUARRY_INDEX": str(index),
                                         "NEWSQUARRY_HEADER_TIMEOUT": "1",
                                         "NEWSQUARRY_BODY_TIMEOUT": "1",
                                         "NEWSQUARRY_WRITE_TOKEN": TOKEN})  # fmt: skip
    try:
        headers = socket.create_connection(("127.0.0.1", server.port), timeout=120)
        headers.sendall(PARTIAL)  # headers never finished
        body = socket.create_connection(("127.0.0.1", server.port), timeout=120)
        body.sendall(
            b"POST /v1/articles HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
            b'Content-Length: 1000\r\n\r\n{"articles": ['
        )  # body never finished
        # the server closes both (a blocking read returns at the close: no timing here)
        assert headers.recv(65536) == b""
        assert body.recv(65536) == b""
        headers.close()
        body.close()
        assert requests.get(server.url + "/health/live", timeout=60).status_code == 200
    finally:
        logs = server.stop()
    assert "Traceback" not in logs


def test_limits_waitress_answers_are_problem_json(index):
    server = LiveServer("api_wsgi:app", {"NEWSQUARRY_INDEX": str(index),
                                         "NEWSQUARRY_MAX_HEADER_BYTES": "20000",
                                         "NEWSQUARRY_MAX_BODY_BYTES": "20000",
                                         "NEWSQUARRY_WRITE_TOKEN": TOKEN})  # fmt: skip
    try:
        huge = requests.get(server.url + "/v1/search", timeout=60,
                            headers={f"X-Pad-{i}": "p" * 1000 for i in range(30)})  # fmt: skip
        assert huge.status_code == 431
        assert huge.headers["Content-Type"] == "application/problem+json"
        assert huge.json()["status"] == 431
        big = requests.post(server.url + "/v1/articles", data=b"[" + b" " * 30000 + b"]",
                            timeout=60, headers={"Authorization": f"Bearer {TOKEN}",
                                                 "Content-Type": "application/json"})  # fmt: skip
        assert big.status_code == 413
        assert big.headers["Content-Type"] == "application/problem+json"
        assert requests.get(server.url + "/v1/search?q=oil", timeout=60).status_code == 200
    finally:
        logs = server.stop()
    assert "Traceback" not in logs

"""Two writers and many readers against one index, through the HTTP API under gunicorn.

gunicorn runs 2 worker processes x 4 threads (the ``newsquarry serve``
defaults) with the real app (``api_wsgi``: the tag enricher instead of spaCy).
Two writer threads add articles at the same time, one with batched POSTs and
one with PUTs, and both keep replacing one shared article; six reader threads
search and fetch articles on fresh connections (so both workers serve them)
the whole time. Checked:

- no request fails: writers get 200 (a 503 "Index busy" would be retried after
  its Retry-After, and counted; none is expected with the default lock wait);
  readers get 200 on every search, never a 5xx;
- every article confirmed written is served by any worker from then on: readers
  ask for ids whose write was answered before the reader's request was sent and
  must get 200 (an order of events, not a delay: a worker searches the newest
  state that adds or replaces anything at once, docs/reliability.md);
  per reader, totals never go back to an older commit;
- at the end the index holds exactly the articles written, each with all its
  passages and none twice, and the shared article is the version of the last
  commit.
"""

from __future__ import annotations

import random
import threading
import time

import requests
from _integrity import assert_exact, expected_passage_ids, index_contents
from _synthetic import articles
from api_support import ARTICLES, TOKEN, LiveServer, build_index

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _shared(version: str) -> dict:
    text = (
        f"Version {version} of the shared story. The council met again on Monday to talk "
        "about the harbor and the budget, and nobody agreed on anything at all.\n\n"
        f"Version {version}, second paragraph: the mayor said the river bridge would stay "
        "closed for another month while engineers finished their inspection."
    )
    return {"id": "shared", "title": f"Shared {version}", "source": "Other Wire", "text": text}


def test_two_api_writers_and_many_readers(tmp_path):
    path = tmp_path / "ix"
    build_index(path)
    server = LiveServer(
        "api_wsgi:app",
        env={"NEWSQUARRY_INDEX": str(path), "NEWSQUARRY_WRITE_TOKEN": TOKEN},
        workers=2,
        threads=4,
    )
    batch_arts = articles(30, seed=11, prefix="wa")
    put_arts = articles(20, seed=12, prefix="wb")
    confirmed: dict[str, float] = {}
    shared_versions: list[tuple[int, str]] = []  # (generation, version) per confirmed PUT
    problems: list[str] = []
    busy_retries = [0]
    writers_done = threading.Event()
    lock = threading.Lock()

    def send(method: str, url: str, body) -> dict:
        for _ in range(50):
            r = requests.request(method, server.url + url, json=body, headers=AUTH, timeout=60)
            if r.status_code == 503:
                busy_retries[0] += 1
                time.sleep(min(float(r.headers.get("Retry-After", 1)), 0.2))
                continue
            if r.status_code != 200:
                problems.append(f"{method} {url}: {r.status_code} {r.text[:200]}")
                return {}
            return r.json()
        problems.append(f"{method} {url}: still busy after 50 tries")
        return {}

    def confirm(ids) -> None:
        now = time.monotonic()
        with lock:
            for i in ids:
                confirmed[i] = now

    def writer_batches() -> None:
        for n in range(0, len(batch_arts), 3):
            chunk = batch_arts[n : n + 3]
            body = send("POST", "/v1/articles", {"articles": chunk})
            if body:
                assert sorted(body["added"]) == sorted(a["id"] for a in chunk), body
                confirm(a["id"] for a in chunk)
            if n % 9 == 0:
                v = f"A{n}"
                body = send("PUT", "/v1/articles/shared", _shared(v))
                if body:
                    shared_versions.append((body["generation"], v))

    def writer_puts() -> None:
        for n, art in enumerate(put_arts):
            body = send("PUT", f"/v1/articles/{art['id']}", art)
            if body:
                assert body["added"] == [art["id"]], body
                confirm([art["id"]])
            if n % 5 == 0:
                v = f"B{n}"
                body = send("PUT", "/v1/articles/shared", _shared(v))
                if body:
                    shared_versions.append((body["generation"], v))

    def reader(seed: int, stats: dict) -> None:
        rng = random.Random(seed)
        last_total = -1
        while not writers_done.is_set():
            try:
                r = requests.get(server.url + "/v1/search",
                                 params={"q": "", "source": "Test Wire", "per_page": 3},
                                 timeout=30)  # fmt: skip
                if r.status_code != 200:
                    problems.append(f"search: {r.status_code} {r.text[:200]}")
                    continue
                total = int(r.headers["X-Total-Count"])
                if total < last_total:
                    problems.append(f"a reader went back from {last_total} to {total} hits")
                last_total = total
                stats["searches"] += 1
                with lock:
                    old = list(confirmed)  # each answered before this request is sent
                if old:
                    aid = rng.choice(old)
                    r = requests.get(f"{server.url}/v1/articles/{aid}", timeout=30)
                    stats["fetches"] += 1
                    if r.status_code != 200:
                        problems.append(f"{aid} confirmed before it was asked for: {r.status_code}")
            except requests.RequestException as exc:
                problems.append(f"reader: {exc!r}")

    try:
        stats = [{"searches": 0, "fetches": 0} for _ in range(6)]
        readers = [threading.Thread(target=reader, args=(i, stats[i])) for i in range(6)]
        writers = [threading.Thread(target=writer_batches), threading.Thread(target=writer_puts)]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join()
        writers_done.set()
        for t in readers:
            t.join()
        # every written article, from any worker (fresh connections), with all its passages
        written = batch_arts + put_arts
        expected = expected_passage_ids(written + [_shared("x")])
        for art in written:
            r = requests.get(f"{server.url}/v1/articles/{art['id']}", timeout=30)
            assert r.status_code == 200, art["id"]
            assert [p["id"] for p in r.json()["passages"]] == expected[art["id"]]
        final_shared = requests.get(f"{server.url}/v1/articles/shared", timeout=30).json()
    finally:
        log = server.stop()

    assert not problems, problems[:5]
    assert "Traceback" not in log and "LockError" not in log
    assert sum(s["searches"] for s in stats) > 20 and sum(s["fetches"] for s in stats) > 5
    # the shared article is the version of the last commit, with its passages once
    assert final_shared["title"] == f"Shared {max(shared_versions)[1]}"
    expected.update(expected_passage_ids(ARTICLES))
    assert_exact(index_contents(path), expected,
                 {a["id"] for a in ARTICLES + written} | {"shared"})  # fmt: skip
    print(f"busy retries: {busy_retries[0]}, reads: {stats}")

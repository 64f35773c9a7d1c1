"""The follower's own cost: following a feed of N pages against indexing the same pages as
files, same run, no NLP (a pass-through enricher: enrichment costs the same either way).

A static site is written to a temporary folder and served on loopback by ``python -m
http.server`` in its own process (it answers ``If-Modified-Since`` with 304), so the
CPU measured is this process's: the follower's requests, feed parsing, extraction, state
and indexing. Runs are interleaved (files, follow, files, follow, ...) and medians
reported:

- ``files``: ``index_paths`` over the N ``.html`` files into a new index;
- ``follow``: one ``Follower.poll`` of a feed listing the N pages into a new index;
- ``repoll``: a second poll of the same feed: one conditional request, a 304.

Usage::

    python -m benchmarks.bench_follow --pages 200 --repeat 3
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from html import escape
from pathlib import Path

WORDS = (
    "harbour council budget minister river election court strike vaccine bridge festival "
    "drought tariff museum railway senate protest hospital wildfire pension airport treaty "
    "factory reservoir orchestra stadium refinery glacier embassy lottery satellite harvest"
).split()


class PassThrough:
    """The enricher protocol without NLP."""

    def enrich(self, items):  # noqa: ANN001, ANN201
        yield from items


def write_site(root: Path, pages: int, base: str) -> None:
    rng = random.Random(7)
    (root / "news").mkdir(parents=True)
    items = []
    for n in range(pages):
        paras = "".join(
            "<p>" + " ".join(rng.choice(WORDS) for _ in range(60)) + ".</p>" for _ in range(5)
        )
        url = f"{base}/news/{n}.html"
        (root / "news" / f"{n}.html").write_text(
            f"<html><head><title>Story {n}</title><link rel='canonical' href='{url}'></head>"
            f"<body><article><h1>Story {n}</h1>{paras}</article></body></html>"
        )
        items.append(f"<item><title>Story {n}</title><link>{escape(url)}</link>"
                     f"<guid>story-{n}</guid></item>")  # fmt: skip
    (root / "feed.xml").write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>Bench</title>'
        + "".join(items)
        + "</channel></rss>"
    )
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn) -> tuple[float, float]:  # noqa: ANN001
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.follow import fetch
    from newsquarry.search.ingest.follow.follower import Follower
    from newsquarry.search.ingest.indexer import index_paths

    # wall time spent in requests (waiting on the server process, loopback)
    waited = [0.0]
    request = fetch.Fetcher._request

    def timed_request(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        t = time.perf_counter()
        try:
            return request(self, *a, **kw)
        finally:
            waited[0] += time.perf_counter() - t

    fetch.Fetcher._request = timed_request

    tmp = Path(tempfile.mkdtemp(prefix="bench-follow-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    write_site(tmp / "site", args.pages, base)
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
         "--directory", str(tmp / "site")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(100):  # the server is up when it accepts a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        results: dict[str, list[tuple[float, float]]] = {"files": [], "follow": [], "repoll": []}
        waits: list[float] = []
        for r in range(args.repeat):
            store = WhooshStore(tmp / f"files-{r}")
            results["files"].append(timed(lambda s=store: index_paths(
                s, [str(tmp / "site" / "news")], enricher=PassThrough())))  # fmt: skip
            store.close()
            store = WhooshStore(tmp / f"follow-{r}")
            follower = Follower(store, enricher=PassThrough(), rate=0, interval=0)
            follower.add([f"{base}/feed.xml"])
            waited[0] = 0.0
            results["follow"].append(timed(follower.poll))
            waits.append(waited[0])
            assert store.stats()["articles"] == args.pages
            results["repoll"].append(timed(follower.poll))
            follower.close()
            store.close()
    finally:
        server.terminate()
        server.wait()
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in results.items()}  # fmt: skip
    n = args.pages
    for k in ("files", "follow"):
        wall, cpu = med[k]
        print(f"{k:7s} wall {wall:6.2f} s ({1000 * wall / n:5.1f} ms/article), "
              f"CPU {cpu:6.2f} s ({1000 * cpu / n:5.1f} ms/article)")  # fmt: skip
    print(f"follow: of its wall time, {statistics.median(waits):.2f} s in requests "
          f"({1000 * statistics.median(waits) / n:.1f} ms/request)")  # fmt: skip
    print(f"repoll  wall {1000 * med['repoll'][0]:6.1f} ms, CPU {1000 * med['repoll'][1]:6.1f} ms")
    print(f"follow / files: wall {med['follow'][0] / med['files'][0]:.2f}x, "
          f"CPU {med['follow'][1] / med['files'][1]:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()

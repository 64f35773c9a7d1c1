"""Reads under writes: search latency with and without a write every second.

Usage::

    python -m benchmarks.bench_mixed --index /tmp/reuters-16 --copy-to /tmp/nq-mixed --seconds 30

The index is copied, opened once (``warm_up`` as a server worker does), then
two phases of ``--seconds`` each run in one process, as in one API worker:
``--readers`` threads search without pause (two filters, four facets, ten
newswire words cycled); in the second phase one more thread adds or replaces
one article per second through ``WhooshStore.add`` (a commit per write, as
``PUT /v1/articles/<id>``; merges then run in the background). Reported: read
p50/p99 per phase, write p50/p99/max, merges done, and a check that every
written article is found afterwards at its newest version.

``--http``: the same two phases against ``newsquarry serve``'s server (gunicorn, the
default 2 workers x 4 threads, writes enabled) on the copy: ``--readers`` client
threads send ``GET /v1/search`` with the same filters and facets over kept-alive
connections, and one more sends ``PUT /v1/articles/<id>`` once a second (enriched by
spaCy in the worker that takes it, committed, answered). The clients run on the same
two cores as the server.

``--timeline FILE`` (library only): what ran when in the mixed phase, each read at or over
the p99 beside the writes, merge processes, cluster linking, refresher warms, alias
learning and garbage-collector passes around it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import threading
import time
from collections.abc import Callable

from newsquarry.search.core.models import Article, Entity
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.query.searching import run_search, warm_up

WORDS = ["oil", "bank", "trade", "dollar", "wheat", "profit", "shares", "tax", "gold", "coffee"]


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else float("nan")


def article(n: int) -> tuple[Article, list]:
    art = Article(id=f"mixed-{n % 20}", title=f"Oil report {n}", source="Bench",
                  date="1987-04-01", text=f"U.S. oil officials met OPEC, round {n}.\n\n"
                  "Talks on oil output and prices went on in Vienna.")  # fmt: skip
    passages = split_passages(art)
    p = passages[0]
    p.entities.append(Entity("OPEC", "OPEC", "org", p.text.index("OPEC"), p.text.index("OPEC") + 4))
    return art, passages


class Timeline:
    """What ran when during a phase (``--timeline``): every read and write, and the
    background jobs of the process (merge processes, cluster linking, the refresher's
    warms, alias learning) and the garbage collector's passes over 5 ms, recorded by
    wrapping those jobs' entry points for the run."""

    def __init__(self) -> None:
        import gc

        from newsquarry.search.archive import aliasfiles, quoteclusters
        from newsquarry.search.engine import merging, refresh

        self.t0 = time.perf_counter()
        self.events: list[tuple[float, str]] = []
        self.reads: list[tuple[float, float, float, int, int, bool]] = []
        for cls, name, label in ((merging.Merger, "_in_process", "merge process"),
                                 (quoteclusters._Linker, "run_once", "cluster linking"),
                                 (refresh.Refresher, "check", "refresher"),
                                 (aliasfiles.AliasLearner, "run_once", "alias learning")):  # fmt: skip
            self._wrap(cls, name, label)
        self._gc: dict[int, float] = {}
        gc.callbacks.append(self._on_gc)

    def _wrap(self, cls: type, name: str, label: str) -> None:
        original = getattr(cls, name)

        def timed(obj: object, *args: object, **kw: object) -> object:
            t, c = time.perf_counter(), time.thread_time()
            try:
                return original(obj, *args, **kw)
            finally:
                self.event(label, t, time.thread_time() - c)

        setattr(cls, name, timed)

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc[threading.get_ident()] = time.perf_counter()
        elif (t := self._gc.pop(threading.get_ident(), None)) is not None:
            if time.perf_counter() - t > 0.005:
                self.event(f"gc generation {info['generation']}", t, 0.0)

    def event(self, label: str, start: float, cpu: float, extra: str = "") -> None:
        dur = time.perf_counter() - start
        if label == "refresher" and dur < 0.005:  # a look that found nothing new to warm
            return
        self.events.append((start - self.t0, f"{label:<16} {(start - self.t0):7.2f} s "
                            f"{dur * 1000:6.0f} ms, CPU {cpu * 1000:4.0f} ms {extra}"))  # fmt: skip

    def write(self, path: str) -> None:
        lat = sorted(r[1] for r in self.reads)
        p99 = pct(lat, 99)
        lines = list(self.events)
        for start, dur, cpu, k, gen, first in self.reads:
            if dur >= p99:
                lines.append((start, f"{'read':<16} {start:7.2f} s {dur * 1000:6.0f} ms, CPU "
                              f"{cpu * 1000:4.0f} ms thread {k}, generation {gen}"
                              f"{' (its first search on it)' if first else ''}"))  # fmt: skip
        with open(path, "w") as fh:
            fh.write(f"# {len(lat)} reads, p99 {p99 * 1000:.0f} ms; reads at or over it, and "
                     "every write and background job, by start time\n")  # fmt: skip
            fh.writelines(text + "\n" for _, text in sorted(lines))


def phase(store: WhooshStore, seconds: float, readers: int, writes: bool,
          timeline: Timeline | None = None) -> dict:  # fmt: skip
    stop = time.monotonic() + seconds
    reads: list[float] = []
    wlat: list[float] = []
    wcpu: list[float] = []
    written: list[str] = []

    def reader(k: int) -> None:
        i, last = k, None
        while time.monotonic() < stop:
            req = SearchRequest(q=WORDS[i % len(WORDS)], filters={"place": ["U.S."]},
                                date_from="1987-03", facets=["person", "org", "place", "date"])  # fmt: skip
            t0, c0 = time.perf_counter(), time.thread_time()
            run_search(store, req)
            reads.append(time.perf_counter() - t0)
            if timeline is not None:
                gen = store.searcher().ixreader.generation()
                timeline.reads.append((t0 - timeline.t0, reads[-1], time.thread_time() - c0,
                                       k, gen, gen != last))  # fmt: skip
                last = gen
            i += 1

    def write(n: int) -> None:
        t0, c0 = time.perf_counter(), time.thread_time()
        store.add([article(n)])
        wlat.append(time.perf_counter() - t0)
        wcpu.append(time.thread_time() - c0)  # the writer thread's own CPU
        if timeline is not None:
            timeline.event("write", t0, wcpu[-1], f"-> generation {store.generation}")
        written.append(f"Oil report {n}")

    run_threads(reader, lambda: once_a_second(stop, write), readers, writes)
    return {"reads": reads, "writes": wlat, "written": written, "write_cpu": wcpu}


def once_a_second(stop: float, write: Callable[[int], None]) -> None:
    """Call ``write(0)``, ``write(1)``, ... once a second until ``stop`` (monotonic)."""
    n = 0
    while time.monotonic() < stop:
        t_next = time.monotonic() + 1.0
        write(n)
        n += 1
        time.sleep(max(0.0, t_next - time.monotonic()))


def run_threads(reader: Callable[[int], None], writer: Callable[[], None], readers: int,
                writes: bool) -> None:  # fmt: skip
    """``readers`` threads of ``reader`` (numbered) and, with ``writes``, one of ``writer``."""
    threads = [threading.Thread(target=reader, args=(k,)) for k in range(readers)]
    if writes:
        threads.append(threading.Thread(target=writer))
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def http_phase(url: str, token: str, seconds: float, readers: int, writes: bool) -> dict:
    """``phase`` through the HTTP API: the same searches and writes as requests."""
    import requests

    stop = time.monotonic() + seconds
    reads: list[float] = []
    wlat: list[float] = []
    written: list[str] = []
    errors: list[str] = []

    def reader(k: int) -> None:
        i = k
        with requests.Session() as http:
            while time.monotonic() < stop:
                params = [("q", WORDS[i % len(WORDS)]), ("place", "U.S."), ("date_from", "1987-03")]
                params += [("facet", f) for f in ("person", "org", "place", "date")]
                t0 = time.perf_counter()
                r = http.get(url + "/v1/search", params=params, timeout=60)
                reads.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    errors.append(f"GET {r.status_code}")
                i += 1

    http_writes = requests.Session()

    def write(n: int) -> None:
        art, _ = article(n)
        body = {"title": art.title, "text": art.text, "source": art.source, "date": art.date}
        t0 = time.perf_counter()
        r = http_writes.put(f"{url}/v1/articles/{art.id}", json=body, timeout=60,
                            headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        wlat.append(time.perf_counter() - t0)
        if r.status_code != 200:
            errors.append(f"PUT {r.status_code} {r.text[:200]}")
        written.append(art.title)

    try:
        run_threads(reader, lambda: once_a_second(stop, write), readers, writes)
    finally:
        http_writes.close()
    return {"reads": reads, "writes": wlat, "written": written, "write_cpu": [], "errors": errors}


def print_phases(quiet: dict, mixed: dict) -> None:
    ms = 1000
    print(
        "| phase | reads | read p50 ms | read p99 ms | writes | write p50 ms | write p99 ms | write max ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in (("reads only", quiet), ("reads + 1 write/s", mixed)):
        w = r["writes"]
        wcols = (f"{statistics.median(w) * ms:.0f} | {pct(w, 99) * ms:.0f} | {max(w) * ms:.0f}"
                 if w else "- | - | -")  # fmt: skip
        print(f"| {name} | {len(r['reads'])} | {statistics.median(r['reads']) * ms:.0f} | "
              f"{pct(r['reads'], 99) * ms:.0f} | {len(w)} | {wcols} |")  # fmt: skip


def background_done(root: int, timeout: float = 300) -> None:
    """Wait until no background process (a merge, the alias learner) runs under ``root``."""
    from pathlib import Path

    from benchmarks.memwatch import tree_pids

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = False
        for pid in tree_pids(root):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            busy |= b"search.merging" in cmd or b"search.aliases" in cmd
        if not busy:
            return
        time.sleep(0.2)


def main_http(args: argparse.Namespace) -> None:
    """The two phases against a real server on the copy (``--http``)."""
    import os
    import secrets

    import requests

    from benchmarks.bench_api import Server

    token = secrets.token_urlsafe(16)
    before_segments = len([n for n in os.listdir(args.copy_to) if n.endswith(".seg")])
    server = Server(args.copy_to, workers=2, threads=4, cache_size=0,
                    env={"NEWSQUARRY_WRITE_TOKEN": token})  # fmt: skip
    try:
        # every worker has opened and warmed the index and loaded spaCy for writes (new
        # connections spread over the workers): the phases measure a server in service
        for n in range(8):
            art, _ = article(1000 + n)
            requests.put(f"{server.url}/v1/articles/warm-{n}", timeout=120,
                         json={"title": art.title, "text": art.text, "date": art.date},
                         headers={"Authorization": f"Bearer {token}"}).raise_for_status()  # fmt: skip
        background_done(server.proc.pid)  # the merges those writes started: not in a phase
        http_phase(server.url, token, 3, args.readers, writes=False)  # connections, caches
        load0 = os.getloadavg()[0]
        quiet = http_phase(server.url, token, args.seconds, args.readers, writes=False)
        mixed = http_phase(server.url, token, args.seconds, args.readers, writes=True)
        load1 = os.getloadavg()[0]
        print_phases(quiet, mixed)
        ratio = pct(mixed["reads"], 99) / pct(quiet["reads"], 99)
        print(
            f"\nread p99 with writes / without: {ratio:.2f}x; load average {load0:.1f} -> {load1:.1f}"
        )
        errors = quiet["errors"] + mixed["errors"]
        print(f"errors: {len(errors)} {errors[:3]}")
        newest = {f"mixed-{n % 20}": t for n, t in enumerate(mixed["written"])}
        found = 0
        for aid, title in newest.items():
            r = requests.get(f"{server.url}/v1/articles/{aid}", timeout=30)
            found += r.status_code == 200 and r.json().get("title") == title
        print(
            f"writes visible afterwards: {found} of {len(newest)} articles at their newest version"
        )
        background_done(server.proc.pid)
        segments = requests.get(f"{server.url}/v1/stats", timeout=30).json().get("segments")
        print(f"segments: {before_segments} in the copy, {segments} at the end (merges keep up)")
    finally:
        server.stop()
        shutil.rmtree(args.copy_to, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--copy-to", required=True)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--http", action="store_true", help="through a real server (gunicorn)")
    ap.add_argument("--timeline", metavar="FILE",
                    help="write what ran when in the mixed phase (library only)")  # fmt: skip
    args = ap.parse_args(argv)
    shutil.rmtree(args.copy_to, ignore_errors=True)
    shutil.copytree(args.index, args.copy_to)
    if args.http:
        main_http(args)
        return
    store = WhooshStore(args.copy_to)
    try:
        warm_up(store, writes=True)  # as an API worker with writes enabled
    except TypeError:  # the code before ``writes`` (a baseline run through PYTHONPATH)
        warm_up(store)
    q0 = time.process_time()
    quiet = phase(store, args.seconds, args.readers, writes=False)
    quiet_cpu = time.process_time() - q0
    import os
    import resource

    own0, kids0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()[0]
    timeline = Timeline() if args.timeline else None
    mixed = phase(store, args.seconds, args.readers, writes=True, timeline=timeline)
    own1, kids1 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    load1 = os.getloadavg()[0]
    store.wait_for_merges(600)
    if timeline is not None:
        timeline.write(args.timeline)
    ms = 1000
    print_phases(quiet, mixed)
    if mixed["write_cpu"]:
        c = mixed["write_cpu"]
        print(f"\nwriter thread CPU per write: p50 {statistics.median(c) * ms:.0f} ms, "
              f"p99 {pct(c, 99) * ms:.0f} ms (the rest of a write's time is waiting: for the "
              "GIL held by the readers, a core, the disk)")  # fmt: skip
    kids = (kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime)
    print(f"CPU of this process in the reads-only phase: {quiet_cpu:.1f} s")
    print(f"CPU during the mixed phase: this process {own1 - own0:.1f} s, background processes "
          f"(merges, alias learning) finished in it {kids:.1f} s; load average "
          f"{load0:.1f} -> {load1:.1f}")  # fmt: skip
    ratio = pct(mixed["reads"], 99) / pct(quiet["reads"], 99)
    print(
        f"\nread p99 with writes / without: {ratio:.2f}x; background merges: {store.merger.merges}"
    )
    # every write is visible: each article written holds its newest version (a write
    # replaces ``mixed-{n % 20}``), found by its title
    newest = {f"mixed-{n % 20}": title for n, title in enumerate(mixed["written"])}
    found = sum(
        run_search(store, SearchRequest(q=f'title:"{t}"')).total > 0 for t in newest.values()
    )
    print(f"writes visible afterwards: {found} of {len(newest)} articles at their newest version")
    store.close()
    shutil.rmtree(args.copy_to, ignore_errors=True)


if __name__ == "__main__":
    main()

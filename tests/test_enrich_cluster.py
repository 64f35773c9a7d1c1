"""Enrichment on a real Dask cluster: `newsquarry index --cluster` (search/enrich/cluster.py).

A scheduler and worker processes (`dask scheduler`, `dask worker --no-nanny`)
run on loopback as subprocesses; the CLI runs as a subprocess too, as a user
would run it. The index it builds must be identical, document for document
(ids, passages, entities, quotations), to the index a local run builds from
the same corpus, also when a worker is killed with SIGKILL in the middle.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _synthetic import articles, write_jsonl
from click.testing import CliRunner

from newsquarry.search.cli.app import cli
from newsquarry.search.engine.store import WhooshStore
from tests._signals import default_sigint

ROOT = Path(__file__).resolve().parent.parent
N_ARTICLES = 100
RUN = ["--batch-size", "2", "--commit-every", "20"]  # many small jobs, several commits
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore", "NO_COLOR": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Started first in each scheduler and worker process: SIGKILL it when pytest dies, even
# without teardown (Linux's PR_SET_PDEATHSIG, kept across exec), then become the command.
# Done in the child after exec, not in a preexec_fn: that runs between fork and exec in a
# copy of the multi-threaded test process, where an import can wait forever on a lock
# another thread held at the fork.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


class Cluster:
    """A Dask scheduler on loopback, and workers started, stopped and killed on demand.

    One per module: ``ensure(n)`` gives each test the live workers it needs,
    reusing those a previous test left, so worker processes (each loading
    spaCy) are started only when needed.
    """

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        self._spawn("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--no-dashboard"])  # fmt: skip
        self._wait_log("scheduler", "Scheduler at")

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = (self.tmp / f"{name}.log").open("w")
        p = subprocess.Popen([sys.executable, "-c", _DIE_WITH_PARENT, "-m", "dask", *args],
                             stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp,
                             env=ENV)  # fmt: skip
        self.procs.append(p)
        return p

    def _wait_log(self, name: str, text: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        log = self.tmp / f"{name}.log"
        while text not in log.read_text():
            assert time.monotonic() < deadline, f"{name} did not start:\n{log.read_text()}"
            time.sleep(0.2)

    def live(self) -> list[subprocess.Popen]:
        return [w for w in self.workers if w.poll() is None]

    def ensure(self, n: int) -> list[subprocess.Popen]:
        """Exactly ``n`` live single-threaded workers (no nanny: a killed one stays dead)."""
        for extra in self.live()[n:]:
            extra.terminate()
            extra.wait(timeout=30)
        names = []
        while len(self.live()) < n:
            name = f"worker{len(self.workers) + 1}"
            self.workers.append(self._spawn(name, [
                "worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                "--name", name, "--local-directory", str(self.tmp / name),
            ]))  # fmt: skip
            names.append(name)
        for name in names:
            self._wait_log(name, "Registered to")
        return self.live()

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "news.jsonl", articles(N_ARTICLES))


def dump(index_dir: Path) -> list[dict]:
    """Every stored document of an index (articles, passages, quotations), sorted by id."""
    store = WhooshStore(index_dir, create=False)
    try:
        with store.ix.searcher() as s:
            docs = [dict(f) for f in s.reader().all_stored_fields()]
    finally:
        store.close()
    return sorted(docs, key=lambda d: (d["doctype"], d["id"]))


@pytest.fixture(scope="module")
def local_dump(corpus, tmp_path_factory) -> list[dict]:
    """The index of a local run (this process, no cluster)."""
    ix = tmp_path_factory.mktemp("local") / "ix"
    r = CliRunner().invoke(
        cli, ["--index", str(ix), "index", str(corpus), "--processes", "1", *RUN]
    )
    assert r.exit_code == 0, r.output
    docs = dump(ix)
    kinds = {d["doctype"] for d in docs}
    assert len([d for d in docs if d["doctype"] == "article"]) == N_ARTICLES
    assert kinds == {"article", "passage", "quote"}  # the corpus has quotations to find
    passages = [json.loads(d["data"]) for d in docs if d["doctype"] == "passage"]
    assert sum(len(p["entities"]) for p in passages) > N_ARTICLES  # and entities
    return docs


def index_cmd(ix: Path, corpus: Path, address: str | None, *extra: str) -> list[str]:
    cluster = ["--cluster", address] if address else []
    return [sys.executable, "-m", "newsquarry.search.cli", "--index", str(ix), "index", str(corpus),
            *cluster, *RUN, *extra]  # fmt: skip


def test_cluster_run_builds_the_same_index_as_a_local_run(cluster, corpus, local_dump, tmp_path):
    cluster.ensure(2)
    ix = tmp_path / "ix"
    r = subprocess.run(index_cmd(ix, corpus, cluster.address), capture_output=True, text=True,
                       cwd=ROOT, env=ENV, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "(2 workers, 2 threads)" in r.stderr
    assert f"{N_ARTICLES} added" in r.stdout and "0 failed" in r.stdout
    assert dump(ix) == local_dump


def test_the_scheduler_reads_the_jobs_without_importing_spacy(cluster, corpus, tmp_path):
    """Dask's scheduler unpickles every task: the jobs name their functions, so it needs
    neither spaCy nor the model (it imported both, a second of CPU, before)."""
    from distributed import Client

    def heavy_modules() -> list[str]:  # a local function: sent by value, run on the scheduler
        import sys

        return [
            m for m in ("spacy", "newsquarry.search.ingest.enrich.pipeline") if m in sys.modules
        ]

    cluster.ensure(1)
    few = write_jsonl(tmp_path / "few.jsonl", articles(6))
    r = subprocess.run(index_cmd(tmp_path / "ix", few, cluster.address), capture_output=True,
                       text=True, cwd=ROOT, env=ENV, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "6 added" in r.stdout
    with Client(cluster.address, set_as_default=False) as client:
        assert client.run_on_scheduler(heavy_modules) == []


def test_a_worker_killed_mid_run_loses_nothing_and_writes_nothing_twice(
    cluster, corpus, local_dump, tmp_path
):
    victim, _ = cluster.ensure(2)
    ix = tmp_path / "ix"
    p = subprocess.Popen(index_cmd(ix, corpus, cluster.address), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT, env=ENV)  # fmt: skip
    err = []
    for line in p.stderr:
        err.append(line)
        if "articles/s" in line:  # the first article is back; nearly all the work is still to do
            os.kill(victim.pid, signal.SIGKILL)
            break
    out, rest = p.communicate(timeout=300)
    err.append(rest)
    stderr = "".join(err)
    assert p.returncode == 0, stderr
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert "left; its work is re-run on the others (1 left)" in stderr
    assert f"{N_ARTICLES} added" in out and "0 failed" in out
    assert dump(ix) == local_dump  # nothing lost, nothing twice, same enrichment


def test_every_worker_gone_stops_cleanly_then_the_same_command_resumes(
    cluster, corpus, local_dump, tmp_path
):
    (only,) = cluster.ensure(1)
    ix = tmp_path / "ix"
    cmd = index_cmd(ix, corpus, cluster.address, "--cluster-wait", "2")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=ROOT, env=ENV)  # fmt: skip
    err = []
    for line in p.stderr:
        err.append(line)
        if " 20 committed" in line:
            os.kill(only.pid, signal.SIGKILL)
            break
    out, rest = p.communicate(timeout=120)
    stderr = "".join(err) + rest
    assert p.returncode == 5, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("Error: every worker of the Dask cluster at tcp://127.0.0.1:")
    assert "has gone (waited 2 s for one to join)" in last
    assert "articles committed before that are kept" in last
    committed = int(last.split(". ")[1].split()[0])
    assert committed >= 20 and committed % 20 == 0 and committed < N_ARTICLES
    assert WhooshStore(ix, create=False).stats()["articles"] == committed
    # workers back: the same command adds exactly the rest
    cluster.ensure(1)
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{N_ARTICLES - committed} added" in r.stdout
    assert f"{committed} unchanged" in r.stdout
    assert dump(ix) == local_dump


def test_in_flight_work_on_the_cluster_is_bounded(cluster):
    """The executor takes at most ``max_in_flight`` jobs ahead of what it has yielded."""
    from newsquarry.search.ingest.enrich.cluster import DaskExecutor

    cluster.ensure(1)
    taken = 0

    def jobs():
        nonlocal taken
        for i in range(200):
            taken += 1
            yield i, "x" * i

    with DaskExecutor(cluster.address, prefetch=3) as executor:
        assert executor.max_in_flight == 3  # 3 jobs per worker thread, one thread
        ahead = []
        for n, (keep, result) in enumerate(executor.map(len, jobs()), start=1):
            assert result == keep  # in order, each result once
            ahead.append(taken - n)
    assert n == 200 and max(ahead) <= 3


def test_ctrl_c_keeps_committed_batches_and_the_same_command_resumes(
    cluster, corpus, local_dump, tmp_path
):
    cluster.ensure(1)
    from tests._writegate import FirstCommitGate

    ix = tmp_path / "ix"
    cmd = index_cmd(ix, corpus, cluster.address)
    # by state: the run commits once, then waits for the lock until the signal is sent (sent
    # on reading the first commit's line, it could come after the run had finished)
    with FirstCommitGate(ix) as gate:
        with default_sigint():
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 cwd=ROOT, env={**ENV, "NEWSQUARRY_LOCK_TIMEOUT": "600"})  # fmt: skip
        gate.let_one_commit_through(p)
        for line in p.stderr:
            if " committed" in line and " 0 committed" not in line:
                break
        assert p.poll() is None
        p.send_signal(signal.SIGINT)
        _, rest = p.communicate(timeout=120)
    assert p.returncode == 130, rest
    assert "Traceback" not in rest and "Run the same command again to continue" in rest
    committed = WhooshStore(ix, create=False).stats()["articles"]
    assert 20 <= committed < N_ARTICLES and committed % 20 == 0
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{N_ARTICLES - committed} added" in r.stdout
    assert f"{committed} unchanged" in r.stdout
    assert dump(ix) == local_dump


def test_an_unreachable_scheduler_is_one_line_and_exit_5(tmp_path, corpus):
    import dask

    address = f"tcp://127.0.0.1:{free_port()}"
    args = ["--index", str(tmp_path / "ix"), "index", str(corpus)]
    runner = CliRunner()
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        r = runner.invoke(cli, [*args, "--cluster", address])
        assert r.exit_code == 5
        assert r.stderr.startswith(f"Error: cannot reach the Dask scheduler at {address}")
        assert len(r.stderr.strip().splitlines()) == 1
        # the cluster may also come from the environment
        r = runner.invoke(cli, args, env={"NEWSQUARRY_CLUSTER": address})
        assert r.exit_code == 5 and "cannot reach the Dask scheduler" in r.stderr
    assert not (tmp_path / "ix").exists() or WhooshStore(tmp_path / "ix").stats()["articles"] == 0


def test_cluster_without_distributed_installed_says_what_to_install(tmp_path, corpus):
    # as if the optional extra were not installed: importing distributed fails
    code = (
        "import sys; sys.modules['distributed'] = None; from search.cli.app import main; "
        f"sys.argv = ['newsquarry', '--index', {str(tmp_path / 'ix')!r}, 'index', "
        f"{str(corpus)!r}, '--cluster', 'tcp://127.0.0.1:1']; main()"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=ENV, timeout=60)  # fmt: skip
    assert r.returncode == 2
    assert "pip install 'newsquarry[cluster]'" in r.stderr and "Traceback" not in r.stderr


def test_processes_and_cluster_together_is_a_usage_error(tmp_path, corpus):
    r = CliRunner().invoke(cli, ["--index", str(tmp_path / "ix"), "index", str(corpus),
                                 "--cluster", "tcp://127.0.0.1:1", "--processes", "2"])  # fmt: skip
    assert r.exit_code == 2 and "--cluster uses the cluster's" in r.output


def test_api_writes_stay_local_whatever_the_cluster_setting(tmp_path, monkeypatch):
    """A single article is enriched in the API worker, never on a cluster (none is reachable)."""
    from newsquarry.api import create_app

    monkeypatch.setenv("NEWSQUARRY_CLUSTER", "tcp://127.0.0.1:1")
    app = create_app({"index": str(tmp_path / "ix"), "write_token": "t"})
    c = app.test_client()
    text = '"We will rebuild the bridge," Maria Lopez said in Lisbon on Monday.'
    put = c.put("/v1/articles/one", json={"title": "Bridge", "text": text},
                headers={"Authorization": "Bearer t"})  # fmt: skip
    assert put.status_code == 200, put.get_data(as_text=True)
    passage = c.get("/v1/passages/one%23p1").get_json()
    assert passage["quotes"][0]["speaker"] == "Maria Lopez"


def test_a_worker_started_by_dasks_nanny_parses_without_its_malloc_trimming(cluster):
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which makes every block
    over 128 KB a fresh mmap (page faults on each touch). The plugin sets the worker's malloc
    back to keeping big blocks in its heap: receiving 4 MB jobs then costs few page faults."""
    import resource
    import zlib

    from newsquarry.search.ingest.enrich.cluster import DaskExecutor

    cluster.ensure(0)
    name = "nannied"
    worker = cluster._spawn(name, ["worker", cluster.address, "--nthreads", "1", "--no-dashboard",
                                   "--name", name, "--local-directory", str(cluster.tmp / name)])  # fmt: skip
    try:
        cluster._wait_log(name, "Registered to")
        with DaskExecutor(cluster.address, prefetch=1) as executor:  # one job at a time

            def faults() -> int:
                ((_, usage),) = executor.map(resource.getrusage, [(0, resource.RUSAGE_SELF)])
                return usage.ru_minflt

            before = faults()
            jobs = ((i, bytes(4 << 20)) for i in range(20))
            crcs = [crc for _, crc in executor.map(zlib.crc32, jobs)]
            after = faults()
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert crcs == [zlib.crc32(bytes(4 << 20))] * 20
    # a 4 MB block mapped afresh faults in 1,024 pages: 20 jobs would be > 20,480 (51,409
    # measured without the tuning); with it, the heap grows once and is reused (2,000-5,200)
    assert after - before < 12_000, after - before


def test_vectors_are_encoded_on_the_workers_with_the_semantic_extra(cluster, tmp_path):
    """With the semantic extra, the workers encode the passages and quotations too (in the
    same job as the parse): every one gets its vector, the vector the model gives here."""
    import numpy as np

    from newsquarry.search.archive import vectors
    from newsquarry.search.core import embedding

    cluster.ensure(1)
    small = write_jsonl(tmp_path / "small.jsonl", articles(6))
    ix = tmp_path / "ix"
    env = {**ENV, "NEWSQUARRY_EMBED": "1"}
    r = subprocess.run(index_cmd(ix, small, cluster.address), capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    store = WhooshStore(ix, create=False)
    try:
        searcher = store.searcher()
        have, lack = vectors.coverage(store, searcher)
        assert have > 6 and lack == 0
        for reader, _off in searcher.ixreader.leaf_readers():
            seg = reader.segment()
            sv = vectors.segment_vectors(ix, seg.segment_id(), seg.doc_count_all())
            texts = vectors._texts(reader, sv.docs.astype(np.int64))
            here = embedding.encode(texts).astype(np.float32)
            assert np.allclose(np.asarray(sv.vecs, np.float32), here, atol=2e-2)
    finally:
        store.close()

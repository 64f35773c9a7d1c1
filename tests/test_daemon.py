"""The resident searcher (``search.cli.daemon``) and the script that talks to it
(``search.cli.launch``): real processes, a real Unix socket, a real index under tmp_path.

Each test runs the console script's entry (``python -m newsquarry.search.cli.launch``) as a
user would run ``newsquarry``, with its own runtime folder (so its own resident
searcher), and compares what the user sees (stdout, stderr, exit code) with the same
command run in its own process (``NEWSQUARRY_DAEMON=0``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from api_support import TagEnricher, build_index

from newsquarry.search.cli import launch
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.ingest.readers import article_from_mapping
from tests._signals import default_sigint

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = [sys.executable, "-m", "newsquarry.search.cli.launch"]


@pytest.fixture
def env(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    env = dict(os.environ, XDG_RUNTIME_DIR=str(run), NEWSQUARRY_DAEMON="1",
               NEWSQUARRY_DAEMON_IDLE="120", COLUMNS="100")  # fmt: skip
    env.pop("NEWSQUARRY_URL", None)
    env.pop("NEWSQUARRY_INDEX", None)
    yield env
    subprocess.run([*SCRIPT, "daemon", "stop"], env=env, capture_output=True, timeout=30)
    sock = launch.socket_path(env)
    wait_for(lambda: not sock.exists(), "the daemon to stop")


@pytest.fixture
def ix(tmp_path) -> str:
    path = tmp_path / "index"
    build_index(path)
    return str(path)


def nq(env: dict, *args: str, daemon: bool = True, **kw) -> subprocess.CompletedProcess:
    e = dict(env, NEWSQUARRY_DAEMON="1" if daemon else "0")
    kw.setdefault("cwd", ROOT)
    return subprocess.run([*SCRIPT, *args], env=e, capture_output=True, text=True, timeout=120,
                          **kw)  # fmt: skip


def status(env: dict) -> dict | None:
    r = nq(env, "daemon", "status", "--json")
    return json.loads(r.stdout) if r.returncode == 0 else None


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def ready(env: dict, ix: str) -> dict:
    """The status once the resident searcher holds ``ix`` open."""
    return wait_for(
        lambda: (s := status(env)) and any(i["folder"] == ix for i in s["indexes"]) and s,
        "the resident searcher to hold the index",
    )


def same(a: subprocess.CompletedProcess, b: subprocess.CompletedProcess) -> None:
    """Same output and exit code (timings aside)."""

    def clean(text: str) -> str:
        return re.sub(r'("took_ms": )[0-9.]+|· \d+ ms', r"\1", text)

    assert (b.returncode, clean(b.stdout), b.stderr) == (a.returncode, clean(a.stdout), a.stderr)


def test_command_of_reads_arguments_as_click_does():
    assert launch.command_of(["search", "oil"]) == ("search", False, None)
    assert launch.command_of(["--index", "/x", "quotes", "-q", "y"]) == ("quotes", False, "/x")
    assert launch.command_of(["--index=/x", "search", "oil", "--index", "/y"]) == (
        "search", False, "/y")  # fmt: skip
    assert launch.command_of(["--url", "http://h", "stats"]) == ("stats", True, None)
    assert launch.command_of(["--debug", "facets", "person"])[0] == "facets"
    assert launch.command_of(["--help"])[0] is None
    assert launch.command_of(["search", "--", "--index"]) == ("search", False, None)


def test_first_command_starts_it_and_the_next_ones_are_served_alike(env, ix):
    assert status(env) is None
    first = nq(env, "--index", ix, "search", "oil", "--facet", "place", "--json")
    assert first.returncode == 0, first.stderr
    assert ready(env, ix)["served"] == 0  # the first ran in its own process
    cases = [
        ("search", "oil", "--facet", "place", "--facet", "org", "--json"),
        ("search", "oil", "-n", "2"),  # human output (not a terminal)
        ("quotes", "torture"),
        ("facets", "person", "--json"),
        ("stats", "--json"),
        ("search", "zzzqqqx"),  # nothing found: exit 1
        ("search", "oil AND (", "--json"),  # a bad query: exit 2, one line on stderr
        ("search", "oil", "--facet", "nope"),
        ("show", "no-such-article"),  # exit 3
    ]
    for args in cases:
        here = nq(env, "--index", ix, *args, daemon=False)
        served = nq(env, "--index", ix, *args)
        same(here, served)
    assert status(env)["served"] == len(cases)
    assert [nq(env, "--index", ix, *c).returncode for c in cases[-4:]] == [1, 2, 2, 3]


def test_index_after_the_command_and_from_the_environment(env, ix, tmp_path):
    nq(env, "search", "oil", "--index", ix)
    ready(env, ix)
    served = nq(dict(env, NEWSQUARRY_INDEX=ix), "search", "oil", "--json")
    assert served.returncode == 0
    same(nq(env, "search", "oil", "--index", ix, "--json", daemon=False), served)
    assert status(env)["served"] == 1
    # the working folder is the client's: a relative --index means the same folder
    rel = nq(env, "search", "oil", "--index", "index", "--json", cwd=tmp_path)
    assert rel.returncode == 0 and json.loads(rel.stdout)["total"] > 0
    assert status(env)["served"] == 2


def test_writes_by_other_processes_are_seen_at_once(env, ix):
    nq(env, "--index", ix, "search", "oil")
    before = ready(env, ix)["indexes"][0]["generation"]
    assert nq(env, "--index", ix, "search", "zanzibarite").returncode == 1
    store = WhooshStore(ix)
    art = article_from_mapping({"id": "late", "title": "Late news", "source": "Wire",
                                "date": "2021-05-05", "text": "Zanzibarite found in Caracas."})  # fmt: skip
    index_articles(store, [art], enricher=TagEnricher())
    store.close()
    found = nq(env, "--index", ix, "search", "zanzibarite", "--json")
    assert found.returncode == 0, found.stderr
    assert [h["article_id"] for h in json.loads(found.stdout)["hits"]] == ["late"]
    assert status(env)["indexes"][0]["generation"] > before


def test_a_removed_index_gives_the_error_it_gives_without_it(env, ix):
    nq(env, "--index", ix, "search", "oil")
    ready(env, ix)
    shutil.rmtree(ix)
    here = nq(env, "--index", ix, "search", "oil", daemon=False)
    assert here.returncode == 5 and "no index" in here.stderr.lower()
    same(here, nq(env, "--index", ix, "search", "oil"))


def test_other_code_never_answers(env, ix):
    """A resident searcher started from other code (an upgrade since) serves nothing: the
    command runs in its own process, and the old searcher exits."""
    sock = launch.socket_path(env)
    assert launch.private_folder(sock.parent)
    old = subprocess.Popen([sys.executable, "-m", "newsquarry.search.cli.daemon", "--socket",
                            str(sock), "--warm", ix, "--stamp", "other-code"], env=env)  # fmt: skip
    ready(env, ix)
    r = nq(env, "--index", ix, "search", "oil", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["total"] > 0
    assert old.wait(timeout=30) == 0  # it left


def test_ctrl_c_reaches_the_command_and_a_second_command_runs_meanwhile(env, tmp_path):
    """A command blocked writing to a full pipe is interrupted by Ctrl-C sent to the
    script (exit 130); while it runs, another command runs in its own process."""
    ix = str(tmp_path / "big")
    store = WhooshStore(ix)
    # ~900 kB of text: more than the pipe (64 kB) and the socket's buffers on both ends
    # (~208 kB each) hold, so the command cannot finish until its output is read (at 190 kB
    # it could, on a machine busy enough for the signal to come late)
    text = "\n\n".join(f"Paragraph {i} on oil in Caracas, long enough to fill a pipe." * 8
                       for i in range(1800))  # fmt: skip
    assert len(text) > 2 * 212992 + 65536
    big = article_from_mapping({"id": "big", "title": "Big", "source": "Wire",
                                "date": "2021-01-01", "text": text})  # fmt: skip
    index_articles(store, [big], enricher=TagEnricher())
    store.close()
    nq(env, "--index", ix, "stats")
    ready(env, ix)
    e = dict(env, NEWSQUARRY_DAEMON="1")
    with default_sigint():
        client = subprocess.Popen([*SCRIPT, "--index", ix, "show", "big"], env=e,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    wait_for(lambda: status(env)["served"] == 1, "the command to start")
    other = nq(env, "--index", ix, "stats", "--json")  # the resident one is busy
    assert other.returncode == 0 and json.loads(other.stdout)["articles"] == 1
    assert status(env)["served"] == 1
    assert client.poll() is None  # blocked on its full pipe: a state, not a delay
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert (client.returncode, err.decode().strip()) == (130, "Interrupted.")
    assert len(out) > 0


def _residents(sock: Path) -> list[int]:
    """Pids of processes running a resident searcher on ``sock`` (from their command lines)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not a process
            continue
        if b"newsquarry.search.cli.daemon" in argv and str(sock).encode() in argv:
            pids.append(int(proc.name))
    return pids


def test_off_and_stop(env, ix):
    off = dict(env, NEWSQUARRY_DAEMON="0")
    subprocess.run([*SCRIPT, "--index", ix, "search", "oil"], env=off, capture_output=True)
    # a state, not a delay: a client starts the resident searcher with Popen, whose process
    # exists (exec'd) before Popen returns, so had the search started one it would be listed
    assert _residents(launch.socket_path(env)) == []  # none was started
    assert status(env) is None
    r = nq(env, "--index", ix, "daemon", "start")
    assert r.returncode == 0, r.stderr
    assert "running" in r.stdout
    assert _residents(launch.socket_path(env)) == [status(env)["pid"]]  # the look finds one
    assert nq(env, "daemon").returncode == 0
    stopped = nq(env, "daemon", "stop")
    assert stopped.returncode == 0 and "stopping" in stopped.stdout
    wait_for(lambda: status(env) is None, "it to stop")
    again = nq(env, "daemon", "stop")
    assert again.returncode == 3 and "No resident searcher" in again.stdout

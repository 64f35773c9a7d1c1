"""Writers take turns: a waiting writer gets the lock within one commit of the holder.

Writers are forked processes committing small batches back to back (no NLP:
the lock and the commits are what is tested). Each logs when it asked for the
lock, when it got it and when it let go; from the log, no writer may wait
while the other completes two commits in a row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _integrity import assert_exact, expected_passage_ids, index_contents
from _synthetic import articles

from newsquarry.search.core.errors import IndexBusy
from newsquarry.search.engine.locking import WriteLock, holder_note
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import article_from_mapping

ROOT = Path(__file__).resolve().parents[1]


def _writer(path: Path, raw: list[dict], per_commit: int, log: Path, timeout: float) -> int:
    """Fork a writer committing ``raw`` ``per_commit`` at a time; logs (asked, got, done)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            store = WhooshStore(path, lock_timeout=timeout)
            arts = [article_from_mapping(a) for a in raw]
            with open(log, "w") as fh:
                for i in range(0, len(arts), per_commit):
                    asked = time.monotonic()
                    with store.writer() as w:
                        got = time.monotonic()
                        for art in arts[i : i + per_commit]:
                            w.put(art, split_passages(art))
                    fh.write(json.dumps([asked, got, time.monotonic()]) + "\n")
            code = 0
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def _two_writers(path: Path, tmp: Path, n: int, per_commit: int, timeout: float, tag: str):
    WhooshStore(path).close()
    raws = [articles(n, seed=s, prefix=f"{tag}{s}") for s in (1, 2)]
    logs = [tmp / f"{tag}-w{s}.log" for s in (1, 2)]
    pids = [
        _writer(path, raw, per_commit, log, timeout) for raw, log in zip(raws, logs, strict=True)
    ]
    codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
    holds = [[json.loads(line) for line in log.read_text().splitlines()] for log in logs]
    return codes, holds, raws[0] + raws[1]


def _overtakes(mine: list, theirs: list) -> int:
    """The most commits ``theirs`` completed while one of ``mine`` waited for the lock."""
    worst = 0
    for asked, got, _ in mine:
        worst = max(worst, sum(1 for a, g, d in theirs if asked < g and d < got))
    return worst


def test_two_writers_committing_back_to_back_take_turns(tmp_path):
    """Fast variant: 2 x 12 commits of 2 articles; each waits at most one commit of the other."""
    path = tmp_path / "ix"
    codes, holds, raw = _two_writers(path, tmp_path, 24, 2, timeout=20, tag="t")
    assert codes == [0, 0]
    assert [len(h) for h in holds] == [12, 12]
    assert _overtakes(holds[0], holds[1]) <= 1 and _overtakes(holds[1], holds[0]) <= 1
    assert_exact(index_contents(path), expected_passage_ids(raw), {a["id"] for a in raw})


@pytest.mark.slow
def test_two_writers_with_small_commits_both_finish_ten_runs_out_of_ten(tmp_path):
    """The report's case: two long runs committing every few articles, ten times."""
    for run in range(10):
        path = tmp_path / f"ix{run}"
        codes, holds, raw = _two_writers(path, tmp_path, 150, 5, timeout=30, tag=f"r{run}")
        assert codes == [0, 0], f"run {run}"
        assert _overtakes(holds[0], holds[1]) <= 1 and _overtakes(holds[1], holds[0]) <= 1
        assert_exact(index_contents(path), expected_passage_ids(raw), {a["id"] for a in raw})


def test_a_timed_out_writer_says_how_long_it_waited_for_what_and_who_holds_it(tmp_path):
    path = tmp_path / "ix"
    WhooshStore(path).close()
    holder = WriteLock(path, command="newsquarry index feed.jsonl")
    holder.acquire(1)
    try:
        assert holder_note(path).startswith(f"pid {os.getpid()} since ")
        started = time.monotonic()
        with pytest.raises(IndexBusy) as busy:
            WhooshStore(path, lock_timeout=0.3).delete("x")
        assert 0.3 <= time.monotonic() - started < 3
        msg = busy.value.message
        assert "gave up after waiting 0.3 s for the write lock" in msg
        assert f"(held by pid {os.getpid()} since " in msg and "newsquarry index feed.jsonl" in msg
        assert "lock_timeout setting (NEWSQUARRY_LOCK_TIMEOUT)" in msg
        # the API's answer leaves out the folder, the pid and the command (issue 17)
        public = busy.value.public_message
        assert str(path) not in public and str(os.getpid()) not in public
        assert "feed.jsonl" not in public and "0.3 s" in public
    finally:
        holder.release()
    assert holder_note(path) == ""  # no stale holder named once it is gone


def test_optimize_records_its_pid_and_command_while_it_holds_the_lock(tmp_path):
    """`optimize` held the lock without saying so: "index busy" named a process long gone."""
    path = tmp_path / "ix"
    store = WhooshStore(path)
    for s in range(3):
        with store.writer() as w:
            for a in articles(2, seed=s, prefix=f"o{s}"):
                art = article_from_mapping(a)
                w.put(art, split_passages(art))
    store.close()
    # the real CLI command, its commit slowed down so it is caught holding the lock
    driver = (
        "import sys, time, whoosh.writing as ww\n"
        "orig = ww.SegmentWriter.commit\n"
        "def slow(self, *a, **kw):\n"
        "    print('holding', flush=True); time.sleep(3); return orig(self, *a, **kw)\n"
        "ww.SegmentWriter.commit = slow\n"
        f"sys.argv = ['newsquarry', '--index', {str(path)!r}, 'optimize']\n"
        "from search.cli.app import main\n"
        "main()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", driver], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "holding"
        note = holder_note(path)
        assert note.startswith(f"pid {proc.pid} since ") and note.endswith("optimize"), note
        with pytest.raises(IndexBusy, match=f"held by pid {proc.pid} since .*optimize"):
            WhooshStore(path, lock_timeout=0.2).delete("o0-0000")
    finally:
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Optimized: 3 -> 1 segments" in out

"""Crash safety: kill -9 an indexer at 20 seeded random points, then re-run it.

What "committed" means here: a commit is complete when Whoosh has renamed its
new table of contents (TOC) into place; that rename is the atomic step. The
indexer runs in a forked child with the spaCy model already loaded (so 20 runs
fit in seconds instead of 20 model loads), through the real ``newsquarry index``
command, instrumented only to *log* each commit to a file before it starts
("start", generation, article ids) and after it returns ("done", generation).
After each kill the test opens the index like any reader and checks, exactly:

- the index opens and its generation G is at least that of the last completed
  commit;
- the articles in the index are exactly those of the completed commits
  (accumulated over all runs) and, of the commit a kill cut short, all of its
  articles or none: all when killed after its TOC rename, none when killed
  before it or when G never reached its generation. (A generation number alone
  does not say whose commit it was: the dead indexer's background merge runs
  until it sees its parent gone and may commit a merge under the number the
  killed commit would have had, which once failed CI.) Each article has all
  its passages, no document twice, no orphan quotation, and ``stats()`` agrees;
- the lock left by the killed process does not block the next writer.

Kill points are half "at a random time" (the parent sends SIGKILL after a
random delay) and half "inside a commit" (the child SIGKILLs itself at a
chosen phase of its k-th commit: while assembling the segment file, before
writing the TOC, with the TOC written but not renamed, after the rename but
before old files are cleaned, after cleaning but before the lock is released).
The kill plan comes from a seeded RNG: set NEWSQUARRY_CRASH_SEED to vary it;
a failure message names the seed and the kill.

Finally the same command is re-run as a real ``python -m search.cli index``
subprocess: it must complete the rest with no duplicate passage.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from _integrity import assert_exact, expected_passage_ids, index_contents
from _synthetic import articles, write_jsonl

from newsquarry.search.engine.store import WhooshStore

ROOT = Path(__file__).resolve().parents[1]
SEED = int(os.environ.get("NEWSQUARRY_CRASH_SEED", "20260"))
N_ARTICLES = 240
COMMIT_EVERY = 8
KILLS = 20
COMMIT_PHASES = ("assemble", "before_toc", "before_rename", "before_clean", "before_unlock")


def _instrument(log_path: str, phase: str | None, at_commit: int) -> None:
    """In the child: log commits; SIGKILL ourselves at ``phase`` of commit ``at_commit``."""
    import whoosh.index
    import whoosh.writing
    from whoosh.filedb.filestore import FileStorage

    from newsquarry.search.engine.store import WhooshStore

    logfd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    state = {"n": 0}

    def log(*parts: object) -> None:
        os.write(logfd, (json.dumps(parts) + "\n").encode())

    def maybe_die(where: str) -> None:
        if where == phase and state["n"] == at_commit:
            os.kill(os.getpid(), signal.SIGKILL)

    orig_writer = WhooshStore.writer

    @contextlib.contextmanager
    def writer(self, timeout=None):
        with orig_writer(self, timeout) as session:
            yield session
            state["n"] += 1
            log("start", session._writer.generation, session.report.added + session.report.replaced)
        log("done", self.generation)

    WhooshStore.writer = writer

    def before(fn, where):
        def wrapped(*a, **kw):
            maybe_die(where)
            return fn(*a, **kw)

        return wrapped

    SW = whoosh.writing.SegmentWriter
    SW._assemble_segment = before(SW._assemble_segment, "assemble")
    whoosh.index.TOC.write = before(whoosh.index.TOC.write, "before_toc")
    orig_rename = FileStorage.rename_file

    def rename_file(self, frm, to, safe=False):
        if to.endswith(".toc"):
            maybe_die("before_rename")
        return orig_rename(self, frm, to, safe)

    FileStorage.rename_file = rename_file
    orig_clean = whoosh.index.clean_files

    def clean_files(*a, **kw):
        maybe_die("before_clean")
        orig_clean(*a, **kw)
        maybe_die("before_unlock")

    whoosh.index.clean_files = clean_files


def _index_args(index_dir: Path, corpus: Path) -> list[str]:
    return [
        "--index",
        str(index_dir),
        "index",
        str(corpus),
        "--commit-every",
        str(COMMIT_EVERY),
        "--processes",
        "1",
        "--batch-size",
        str(COMMIT_EVERY),
    ]


def _fork_indexer(index_dir: Path, corpus: Path, log_path: Path, out_path: Path,
                  phase: str | None, at_commit: int) -> int:  # fmt: skip
    """Fork a child running ``newsquarry index`` (model inherited); returns its pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        out = open(out_path, "w", buffering=1)  # noqa: SIM115
        sys.stdout = sys.stderr = out
        _instrument(str(log_path), phase, at_commit)
        from newsquarry.search.cli.app import cli

        cli.main(args=_index_args(index_dir, corpus), prog_name="newsquarry")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:  # noqa: BLE001 - the child must never return into pytest
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)


def _read_log(log_path: Path, offset: int) -> tuple[list[list], int]:
    data = log_path.read_bytes() if log_path.exists() else b""
    lines = [json.loads(x) for x in data[offset:].decode().splitlines() if x.strip()]
    return lines, len(data)


def test_kill_indexer_at_20_random_points_then_rerun(tmp_path):
    from newsquarry.search.ingest.enrich import load_nlp

    load_nlp()  # loaded once here; every forked indexer inherits it
    rng = random.Random(SEED)
    raw = articles(N_ARTICLES, seed=SEED)
    corpus = write_jsonl(tmp_path / "feed.jsonl", raw)
    expected = expected_passage_ids(raw)
    index_dir = tmp_path / "index"
    log_path = tmp_path / "commits.log"
    committed: set[str] = set()
    offset, last_gen, kills, runs = 0, -1, [], 0
    started = time.monotonic()

    while len(kills) < KILLS:
        runs += 1
        assert runs <= 3 * KILLS, f"seed {SEED}: too many runs finished before being killed"
        if rng.random() < 0.5:
            phase, at_commit, delay = None, 0, rng.uniform(0.0, 1.0)
        else:
            phase, at_commit, delay = rng.choice(COMMIT_PHASES), rng.randint(1, 3), None
        what = f"seed {SEED}, kill {len(kills) + 1}: " + (
            f"SIGKILL after {delay:.3f} s" if phase is None else f"{phase} of commit {at_commit}"
        )
        out_path = tmp_path / f"run{runs}.out"
        pid = _fork_indexer(index_dir, corpus, log_path, out_path, phase, at_commit)
        if phase is None:
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and os.waitpid(pid, os.WNOHANG) == (0, 0):
                time.sleep(0.005)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        if not killed:
            code = os.waitstatus_to_exitcode(status)
            assert code == 0, f"{what}: indexer failed ({code}): {out_path.read_text()}"

        entries, offset = _read_log(log_path, offset)
        contents = index_contents(index_dir)  # must open
        gen = contents["generation"]
        dones = [e[1] for e in entries if e[0] == "done"]
        assert gen >= last_gen, what
        if dones:
            assert gen >= max(dones), f"{what}: a completed commit is missing"
        pending = None  # the commit this run started and did not see return (killed in it)
        for e in entries:
            if e[0] == "start":
                assert pending is None, f"{what}: a commit started inside another"
                pending = (e[1], e[2])
            else:
                committed.update(pending[1])
                pending = None
        if pending is not None:
            g, ids = pending
            present = set(ids) & contents["articles"]
            if phase in ("before_clean", "before_unlock"):  # killed after its TOC rename
                assert present == set(ids), f"{what}: a commit killed after its rename is missing"
            elif phase is not None or g > gen:  # killed before the rename, or it never came
                assert not present, f"{what}: articles of a commit that never came"
            else:  # a random kill: all of the commit or none of it. Its generation number
                # alone cannot tell: a background merge (the dead indexer's, which runs
                # until it sees its parent gone) may commit under the number it would have had
                assert present in (set(), set(ids)), f"{what}: half a commit"
            committed.update(present)
        assert_exact(contents, expected, committed)
        # the kernel released the dead writer's lock: the next writer gets it. Not always at
        # once: the dead indexer's background merge process outlives it for as long as its
        # merge takes and commits the merge under the same lock (a LockError with timeout=0
        # once in a full run); a lock still held by the dead process would time out here
        store_probe = WhooshStore(index_dir)
        try:
            store_probe.ix.writer(timeout=10, delay=0.05).cancel()
        finally:
            store_probe.close()
        last_gen = gen
        if killed:
            kills.append((what, gen, len(committed)))
            print(
                f"{time.monotonic() - started:6.2f}s {what} -> gen {gen}, {len(committed)} committed"
            )

    # the same command, as a real process, completes the rest
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "newsquarry.search.cli", *_index_args(index_dir, corpus)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    before = len(committed)
    assert f"{N_ARTICLES - before} added, 0 replaced, {before} unchanged" in proc.stdout
    assert_exact(index_contents(index_dir), expected, set(expected))
    leftovers = [n for n in os.listdir(index_dir) if ".toc." in n or n.endswith(".tmp")]
    assert leftovers == [], "files of killed writers were not cleaned up"


def test_a_commit_reaches_the_disk_before_it_counts(tmp_path, monkeypatch):
    """Power loss, as far as a test can tell: every file a commit refers to is fsynced
    before the TOC rename (the commit point), and the rename is fsynced after it."""
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import article_from_mapping

    events: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd):
        events.append("fsync " + os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def rename(a, b):
        events.append(f"rename {os.path.basename(a)} {os.path.basename(b)}")
        real_rename(a, b)

    class NoNLP:
        def enrich(self, items):
            yield from items

    store = WhooshStore(tmp_path / "ix")
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    index_articles(store, [article_from_mapping(a) for a in articles(3)], enricher=NoNLP())
    monkeypatch.undo()
    (toc_rename,) = [i for i, e in enumerate(events) if e.startswith("rename")]
    before, after = events[:toc_rename], events[toc_rename + 1 :]
    live = {f.name for f in (tmp_path / "ix").iterdir() if f.suffix == ".seg"}
    temp_toc = events[toc_rename].split()[1]
    assert {f"fsync {name}" for name in live} <= set(before), "segment data not on disk"
    assert f"fsync {temp_toc}" in before and "fsync ix" in before
    # then the alias table's files (search.aliases) are put in place, the folder synced again
    assert after in (["fsync ix"], ["fsync ix", "fsync ix"]), "the rename itself not on disk"

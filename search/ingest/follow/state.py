"""The follower's memory, in the index folder: ``newsquarry_FOLLOW.sqlite``.

What it keeps: each source (its validators, schedule, last poll, last error and counts),
each article the follower made (its id, address, first-seen and last-changed times, the
hash of its text and the listing's signature of the version indexed), the keys that
identify an article (``guid:``, ``url:``, ``fp:`` -> id), and hosts that asked to wait.

Why SQLite: every change is a transaction (written to its write-ahead log first, so a
process killed with SIGKILL mid-write leaves the last complete state, never half of one)
and one article's change does not rewrite the whole state. The log and its index sit
beside it (``-wal``, ``-shm``). Only one follower runs per index at
a time (``follow_lock``), so there is one writer; ``--status`` reads beside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATE_FILE = "newsquarry_FOLLOW.sqlite"
LOCK_FILE = "newsquarry_FOLLOW.lock"
MAX_ERRORS_KEPT = 5  # recent errors listed per source
COUNTS = ("polls", "not_modified", "errors", "entries", "fetched", "added", "replaced",
          "unchanged", "failed", "robots", "rate_limited")  # fmt: skip

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    url TEXT PRIMARY KEY, parent TEXT, kind TEXT, title TEXT, interval REAL NOT NULL,
    etag TEXT, last_modified TEXT, added REAL, last_poll REAL, last_ok REAL,
    next_poll REAL NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
    errors TEXT NOT NULL DEFAULT '[]', counts TEXT NOT NULL DEFAULT '{}',
    active INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS articles (
    id TEXT PRIMARY KEY, url TEXT NOT NULL, source TEXT, first_seen TEXT NOT NULL,
    last_changed TEXT NOT NULL, core_hash TEXT, signature TEXT, page_etag TEXT,
    page_last_modified TEXT, status TEXT NOT NULL, tries INTEGER NOT NULL DEFAULT 0,
    last_error TEXT, words INTEGER
);
CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS listings (
    source TEXT NOT NULL, id TEXT NOT NULL, signature TEXT, PRIMARY KEY (source, id)
);
CREATE TABLE IF NOT EXISTS hosts (host TEXT PRIMARY KEY, blocked_until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS robots (host TEXT PRIMARY KEY, body TEXT NOT NULL, fetched REAL);
CREATE INDEX IF NOT EXISTS articles_status ON articles(status);
"""


class FollowBusy(Exception):
    """Another follower (a ``follow`` command, or a server's) is following this index."""


@contextlib.contextmanager
def follow_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold the index's follow lock (a file lock: released when the process ends, however
    it ends); FollowBusy at once when another follower holds it."""
    path = Path(folder) / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise FollowBusy(
                f"another follower is following this index (pid {other or '?'})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@dataclass
class Source:
    """A followed address as the state holds it."""

    url: str
    interval: float
    parent: str | None = None
    kind: str | None = None
    title: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    added: float | None = None
    last_poll: float | None = None
    last_ok: float | None = None
    next_poll: float = 0.0
    failures: int = 0  # consecutive failed polls (the backoff)
    errors: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    active: bool = True

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def error(self, when: float, message: str) -> None:
        self.errors = ([{"at": when, "error": message}] + self.errors)[:MAX_ERRORS_KEPT]
        self.count("errors")

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["counts"] = {k: self.counts.get(k, 0) for k in COUNTS}
        return d


@dataclass
class Known:
    """An article the follower made, as the state holds it."""

    id: str
    url: str
    first_seen: str
    last_changed: str
    source: str | None = None
    core_hash: str | None = None
    signature: str | None = None
    page_etag: str | None = None
    page_last_modified: str | None = None
    # "pending": sent to the index, its commit not known; "indexed"; "failed" (``tries``)
    status: str = "pending"
    tries: int = 0
    last_error: str | None = None
    words: int | None = None  # of the version indexed (a stub never replaces an article)


class State:
    """The SQLite file of one index folder (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.path = Path(folder) / STATE_FILE
        # one connection, used by the thread that polls and the one that commits (a local
        # pool's feeder thread pulls the articles): ``transaction`` serialises them
        self.db = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        self._lock = threading.RLock()
        # write-ahead log: a commit is in the log before it returns (a process killed
        # after it keeps it, one killed before keeps the state before it), without an
        # fsync per transaction (several per article: a round of 200 pages took 3x the
        # wall time with a rollback journal and synchronous=FULL, docs/benchmarks.md).
        # A power cut may lose the last transactions, never the file: the articles they
        # named are fetched again, under the same ids (``urls.article_id``).
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic change: all of it is kept, or (killed, failed) none of it."""
        with self._lock:
            if self.db.in_transaction:  # nested: part of the outer one
                yield
                return
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # -- sources ------------------------------------------------------------
    def sources(self) -> list[Source]:
        rows = self.db.execute("SELECT * FROM sources ORDER BY added, url").fetchall()
        names = [c[0] for c in self.db.execute("SELECT * FROM sources LIMIT 0").description]
        out = []
        for row in rows:
            d = dict(zip(names, row, strict=True))
            d["errors"] = json.loads(d["errors"])
            d["counts"] = json.loads(d["counts"])
            d["active"] = bool(d["active"])
            out.append(Source(**d))
        return out

    def source(self, url: str) -> Source | None:
        return next((s for s in self.sources() if s.url == url), None)

    def save_source(self, s: Source) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO sources VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (s.url, s.parent, s.kind, s.title, s.interval, s.etag, s.last_modified, s.added,
             s.last_poll, s.last_ok, s.next_poll, s.failures, json.dumps(s.errors),
             json.dumps(s.counts), int(s.active)),
        )  # fmt: skip

    # -- articles and keys --------------------------------------------------
    def lookup(self, keys: list[str]) -> str | None:
        """The article id of the first of ``keys`` the state knows, or None."""
        for key in keys:
            row = self.db.execute("SELECT id FROM keys WHERE key=?", (key,)).fetchone()
            if row:
                return row[0]
        return None

    def add_keys(self, article_id: str, keys: list[str]) -> None:
        """Record ``keys`` as naming ``article_id`` (a key already naming one stays)."""
        self.db.executemany("INSERT OR IGNORE INTO keys VALUES (?,?)",
                            [(k, article_id) for k in keys])  # fmt: skip

    def article(self, article_id: str) -> Known | None:
        cur = self.db.execute("SELECT * FROM articles WHERE id=?", (article_id,))
        row = cur.fetchone()
        if row is None:
            return None
        return Known(**dict(zip([c[0] for c in cur.description], row, strict=True)))

    def save_article(self, k: Known) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO articles VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (k.id, k.url, k.source, k.first_seen, k.last_changed, k.core_hash, k.signature,
             k.page_etag, k.page_last_modified, k.status, k.tries, k.last_error, k.words),
        )  # fmt: skip

    def pending(self) -> list[Known]:
        """Articles sent to the index without the commit known (a follower killed midway)."""
        cur = self.db.execute("SELECT * FROM articles WHERE status='pending' ORDER BY id")
        names = [c[0] for c in cur.description]
        return [Known(**dict(zip(names, row, strict=True))) for row in cur.fetchall()]

    def article_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT status, COUNT(*) FROM articles GROUP BY status")
        return dict(rows.fetchall())

    def listing(self, source: str, article_id: str) -> str | None:
        """The signature ``source`` last gave the article (None: it never listed it)."""
        row = self.db.execute("SELECT signature FROM listings WHERE source=? AND id=?",
                              (source, article_id)).fetchone()  # fmt: skip
        return row[0] if row else None

    def save_listing(self, source: str, article_id: str, signature: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO listings VALUES (?,?,?)",
                        (source, article_id, signature))  # fmt: skip

    # -- hosts --------------------------------------------------------------
    def blocked_hosts(self) -> dict[str, float]:
        return dict(self.db.execute("SELECT host, blocked_until FROM hosts").fetchall())

    def block_host(self, host: str, until: float) -> None:
        self.db.execute("INSERT OR REPLACE INTO hosts VALUES (?,?)", (host, until))

    def robots(self) -> dict[str, tuple[str, float]]:
        """host -> (robots.txt as last fetched, when)."""
        rows = self.db.execute("SELECT host, body, fetched FROM robots").fetchall()
        return {host: (body, fetched) for host, body, fetched in rows}

    def save_robots(self, fresh: dict[str, tuple[str, float]]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO robots VALUES (?,?,?)",
                            [(h, body, at) for h, (body, at) in fresh.items()])  # fmt: skip

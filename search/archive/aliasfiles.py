"""The alias table's files and lifecycle: evidence, learning, overrides, and the feature
that plugs them into the engine (``engine.hooks``).

Each commit's names (``aliases.article_names``) become evidence written beside the commit;
the table is learnt from it in the commit (small archives) or by a background process
(``python -m newsquarry.search.archive.aliasfiles FOLDER``); see ``archive.aliases`` for
the table itself and the rules that make it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from newsquarry.search.archive.aliasresolve import (
    BACKGROUND_FROM,
    EVIDENCE_FILE,
    JOURNAL_FILE,
    JOURNAL_MIN,
    JOURNAL_SHARE,
    LEARN_LOCK,
    LEARNER_DUTY,
    NAME_FACETS,
    OVERRIDE_FILE,
    TABLE_FILE,
    Resolver,
    parse_overrides,
    with_overrides,
)
from newsquarry.search.core.background import Coalescing, background_priority, exit_with_parent
from newsquarry.search.core.durability import fsync_path
from newsquarry.search.core.errors import IndexDamaged, InvalidRequest
from newsquarry.search.engine import hooks
from newsquarry.search.engine.storage import reading

if TYPE_CHECKING:
    from newsquarry.search.archive.aliases import AliasTable


def _rules() -> Any:
    """``archive.aliases``: the table's rules, which only learning it needs (writers, the
    learner process, ``newsquarry aliases``); a process that only searches reads the learnt
    table (``aliasresolve``) and never imports them."""
    # lazy: start-up time (2 ms of a fresh process's first search on Reuters)
    from newsquarry.search.archive import aliases

    return aliases


TABLE_VERSION = 2  # 2: the file carries the CRC-32 of its content (1: none, trusted as read)
# made once a table with a checksum is in place: from then on a table without one is damage
# (an old copy put back), not an index from before checksums
TABLE_MARK = "aliases.summed"


class TableDamaged(ValueError):
    """The alias table file is there but cannot be trusted (the message says why)."""


_CRC_MEMBER = b',"crc32":'


def _table_text(data: dict[str, Any]) -> bytes:
    """The canonical form of a table's content: what its CRC-32 covers."""
    body = {k: data.get(k) for k in ("version", "canon", "display", "types")}
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.encode("utf-8")


def _table_crc(data: dict[str, Any]) -> int:
    return zlib.crc32(_table_text(data))


def table_bytes(data: dict[str, Any]) -> bytes:
    """The table file as written: the canonical text its CRC covers, with the CRC added as
    its last member, so a reader checks the bytes it read (``_intact_as_written``) instead
    of serialising the whole table again (3 ms of every new process's first search on
    Reuters). Still JSON: any JSON reader, an older newsquarry's included, reads it."""
    return _table_text(data)[:-1] + _CRC_MEMBER + str(data["crc32"]).encode() + b"}"


def _intact_as_written(raw: bytes, data: dict[str, Any]) -> bool:
    """Whether ``raw`` is a ``table_bytes`` file whose bytes match its CRC (then its
    content is what the CRC was computed on: no canonical form to compute)."""
    at = raw.rfind(_CRC_MEMBER)
    if at < 0 or not raw.endswith(b"}"):
        return False
    tail = raw[at + len(_CRC_MEMBER) : -1]
    return (
        tail.isdigit()
        and data.get("crc32") == int(tail)
        and zlib.crc32(raw[:at] + b"}") == int(tail)
    )


def table_data(r: Resolver) -> dict[str, Any]:
    """What the table file holds for the learnt mapping ``r``, with its checksum."""
    data: dict[str, Any] = {
        "version": TABLE_VERSION,
        "canon": r.canon,
        "display": r.display,
        "types": r.types,
    }
    data["crc32"] = _table_crc(data)
    return data


def read_table(path: Path) -> dict[str, Any] | None:
    """The table file's content, verified; None when there is none.

    Raises ``TableDamaged`` for a file cut short, garbled or edited (its CRC-32 no longer
    matches). A version 1 file (written before tables had checksums) is taken as read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TableDamaged(f"cannot be read: {exc.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        raise TableDamaged("cannot be parsed (cut short or overwritten)") from None
    if not isinstance(data, dict) or not all(
        isinstance(data.get(k), dict) for k in ("canon", "display", "types")
    ):
        raise TableDamaged("does not hold an alias table")
    if data.get("version") == 1 and "crc32" not in data:
        if path.with_name(TABLE_MARK).exists():
            raise TableDamaged("has no checksum, though this index's tables have one")
        return data  # an index made before tables had checksums
    if not _intact_as_written(raw, data) and data.get("crc32") != _table_crc(data):
        raise TableDamaged("does not match its checksum")
    return data


def _install_table(tmp: Path, path: Path) -> None:
    """Put a table file written by ``table_data`` in place (and the mark, the first time)."""
    os.replace(tmp, path)
    mark = path.with_name(TABLE_MARK)
    if not mark.exists():  # after the table: a crash between leaves no false damage
        mark.touch()


def table_damage(folder: str | os.PathLike) -> tuple[str | None, str | None]:
    """(damage, note) about the alias table of ``folder``: why it cannot be trusted, and
    what could not be verified (None, None when it is sound or there is none to have)."""
    store = AliasStore(folder)
    try:
        data = read_table(store.table_path)
    except TableDamaged as exc:
        return str(exc), None
    if data is None:
        if store.evidence_path.exists() or store.journal_path.exists():
            # every commit that saves names writes the table first (``_prepare``)
            return "is missing (the names it is learnt from are there)", None
        return None, None
    if "crc32" not in data:
        return None, (
            f"{TABLE_FILE} was written before alias tables had checksums: not verified "
            "(the next commit that changes names, or `newsquarry aliases --rebuild`, adds one)"
        )
    return None, None


def damaged_table_error(problem: str) -> IndexDamaged:
    return IndexDamaged(
        f"the index is damaged: its alias table {TABLE_FILE} {problem}, so names would be "
        "counted and filtered apart. Run `newsquarry check` for the details and "
        "`newsquarry repair` to rebuild it"
    )


class AliasStore:
    """The alias table of one index folder: evidence, learnt table and override file.

    Writers (under the index's write lock) call ``prepare`` before a commit and
    the function it returns after the commit succeeded: the new evidence and
    table are written to temporary files first and renamed into place only
    then, so a failed commit leaves the old ones. Searches read only the small
    table file and the overrides, again whenever either file changes.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple | None = None
        self._resolver = Resolver()
        self._evidence: tuple[tuple, dict[str, list]] | None = None  # (stamp, articles)
        # the last commit's table with its summed evidence (stamp of the evidence file):
        # the next commit of this process updates it article by article
        self._kept: tuple[tuple, AliasTable] | None = None
        self._table_written: tuple | None = None  # (table file stamp, the Resolver in it)
        self.background_from = BACKGROUND_FROM
        self.stale = False  # a commit appended names the table file has not learnt yet

    @property
    def evidence_path(self) -> Path:
        return self.path / EVIDENCE_FILE

    @property
    def table_path(self) -> Path:
        return self.path / TABLE_FILE

    @property
    def override_path(self) -> Path:
        return self.path / OVERRIDE_FILE

    @staticmethod
    def _file_stamp(p: Path) -> tuple:
        """(mtime, size, inode) of a file, (0, 0, 0) if it is missing: the inode tells a
        file replaced in place (the journal folded and begun again) from one that grew."""
        try:
            st = p.stat()
        except OSError:
            return (0, 0, 0)
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _overrides(self) -> dict[str, str]:
        try:
            return parse_overrides(self.override_path.read_text(encoding="utf-8"))
        except OSError:
            return {}
        except InvalidRequest:
            return {}  # shown by `newsquarry aliases`; searches go on without them

    def resolver(self) -> Resolver:
        """The mapping searches apply: the learnt table and the overrides (reloaded on change)."""
        stamp = (self._file_stamp(self.table_path), self._file_stamp(self.override_path))
        with self._lock:
            if stamp != self._stamp:
                learnt = Resolver()
                # a damaged table is refused, not read as no table (names would silently
                # be counted apart); the stamp stays, so every search says so until repaired
                try:
                    data = read_table(self.table_path)
                except TableDamaged as exc:
                    raise damaged_table_error(str(exc)) from None
                if data is None and stamp[0] == (0, 0, 0) and self.evidence_path.exists():
                    if not self.table_path.exists():  # not installed meanwhile
                        raise damaged_table_error("is missing")
                if data is not None:  # none yet: names stay as indexed
                    learnt.canon = dict(data["canon"])
                    learnt.display = dict(data["display"])
                    learnt.types = dict(data["types"])
                version = ".".join(str(x) for part in stamp for x in part)
                new = with_overrides(learnt, self._overrides(), version)
                old = self._resolver
                # the table file was rewritten (or the overrides edited); when it maps
                # names as before, the same resolver goes on, so the segments it already
                # mapped (``remap``) and the caches keyed by its version stay valid
                if not (
                    old is not None
                    and old.canon == new.canon
                    and old.display == new.display
                    and old.types == new.types
                ):
                    self._resolver = new
                self._stamp = stamp
            return self._resolver

    @property
    def journal_path(self) -> Path:
        return self.path / JOURNAL_FILE

    def _evidence_stamp(self) -> tuple:
        return (self._file_stamp(self.evidence_path), self._file_stamp(self.journal_path))

    def _replay_tail(self, stamp: tuple) -> dict[str, list] | None:
        """The cached evidence brought up to ``stamp`` by replaying only the journal lines
        appended since it was read (another worker's commits), or None when that is not
        possible (the evidence file was replaced, the journal is another file, or a line
        is cut short): then the caller reads both files whole."""
        if self._evidence is None:
            return None
        (old_ev, old_j), articles = self._evidence
        new_ev, new_j = stamp
        same_journal = old_j[2] == new_j[2] or old_j == (0, 0, 0)
        if old_ev != new_ev or not same_journal or new_j[1] <= old_j[1]:
            return None
        try:
            with open(self.journal_path, "rb") as fh:
                fh.seek(old_j[1])
                tail = fh.read(new_j[1] - old_j[1])
            if not tail.endswith(b"\n"):
                return None
            changes = [json.loads(line) for line in tail.splitlines()]
            for change in changes:  # checked whole before any is applied
                if not isinstance(change["deleted"], list) or not isinstance(change["put"], dict):
                    return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        for change in changes:
            for aid in change["deleted"]:
                articles.pop(aid, None)
            articles.update(change["put"])
        self._evidence = (stamp, articles)
        return articles

    def evidence(self) -> dict[str, list] | None:
        """Article id -> its [facet, value] name pairs, as saved (the evidence file with the
        journal's commits replayed on it); None when the file is missing or either is
        unreadable (the caller rebuilds it from the stored passages).

        Kept between calls: when only the journal grew (another worker's commits in a
        server), only its new lines are replayed, not the whole evidence parsed again
        (~150 ms of CPU on Reuters, in each write of a multi-worker server)."""
        stamp = self._evidence_stamp()
        if self._evidence is not None and self._evidence[0] == stamp:
            return self._evidence[1]
        replayed = self._replay_tail(stamp)
        if replayed is not None:
            return replayed
        try:
            with open(self.evidence_path, encoding="utf-8") as fh:
                articles = json.load(fh)["articles"]
            if not isinstance(articles, dict):
                raise ValueError("not a mapping")
            if stamp[1] != (0, 0, 0):
                with open(self.journal_path, encoding="utf-8") as fh:
                    for line in fh:
                        # a line cut short by a crash is a commit whose names are not
                        # all here: rebuilt from the index rather than half replayed
                        change = json.loads(line)
                        for aid in change["deleted"]:
                            articles.pop(aid, None)
                        articles.update(change["put"])
        except FileNotFoundError as exc:
            if exc.filename != str(self.journal_path):
                return None
            return self.evidence()  # folded into the evidence file meanwhile
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        self._evidence = (stamp, articles)
        return articles

    def table(self) -> AliasTable:
        """The whole table (evidence and overrides), for listing the aliases."""
        t = _rules().AliasTable()
        t.articles = self.evidence() or {}
        t.overrides = self._overrides()
        return t

    def prepare(
        self,
        learnt: dict[str, list[tuple[str, str]]],
        deleted: Iterable[str],
        stored: Callable[[], dict[str, list]],
    ) -> Callable[[], None]:
        """Write one commit's evidence (articles put and deleted) and the new table to
        temporary files; returns the function that puts them in place (after the commit).

        ``stored()`` gives the evidence of the index as committed, read from its stored
        passages: used when the evidence file is missing (an index made before the
        alias table) or damaged, so no article's names are lost.
        """
        before = self.evidence()
        if before is not None and len(before) >= self.background_from:
            return self._prepare_change(before, learnt, deleted)
        table = self._kept
        if table is None or before is None or table[0] != self._evidence_stamp():
            # first commit of this process (or the files changed under it): sum the
            # evidence once; later commits of the process update the sums per article
            t = _rules().AliasTable()
            for aid, values in (before if before is not None else stored()).items():
                t.articles[aid] = values
            table = (None, t)
        t = table[1]
        self._kept = None  # until this commit is in place (a failed one leaves no sums)
        deleted = [aid for aid in deleted if aid not in learnt]
        for aid in deleted:
            t.forget(aid)
        put = {}
        for aid, values in learnt.items():
            t.learn(((f, v) for f, v in values if f in NAME_FACETS and v), aid)
            put[aid] = t.articles[aid]
        # the saved evidence was read whole (we hold the write lock, so it is current):
        # this commit's change is appended to it
        change = {"deleted": deleted, "put": put} if before is not None else None
        return self._prepare(t, change)

    def _prepare_change(
        self, before: dict[str, list], learnt: dict[str, list[tuple[str, str]]],
        deleted: Iterable[str],
    ) -> Callable[[], None]:  # fmt: skip
        """A large archive's commit: its names appended to the evidence, nothing learnt.

        Learning the table from every article's names takes about a second of CPU per
        commit at the size of Reuters (16,735 articles): held by a server's writing
        thread, that is read latency. The commit sets ``stale``; the store then has an
        ``AliasLearner`` process learn the table from the saved evidence.
        """
        pairs = _rules()._pairs
        put = {aid: pairs(v) for aid, v in learnt.items()}
        put = {aid: v for aid, v in put.items() if before.get(aid) != v}
        gone = [aid for aid in deleted if aid not in learnt and aid in before]
        self._kept = None  # sums kept by earlier small-archive commits are stale now
        if not put and not gone:
            return lambda: None  # the same names: evidence and table stay as they are
        articles = before  # the cached dict: changed in place once the commit stood
        line = (json.dumps({"deleted": gone, "put": put}, ensure_ascii=False) + "\n").encode()
        base = self._file_stamp(self.evidence_path)[1]
        journal = self._file_stamp(self.journal_path)[1]
        evidence = None
        if journal + len(line) > max(JOURNAL_MIN, JOURNAL_SHARE * base):
            merged = dict(before)
            for aid in gone:
                merged.pop(aid, None)
            merged.update(put)
            evidence = _write_tmp(self.evidence_path, {"version": 1, "articles": merged})

        def install() -> None:
            self._evidence = None
            if evidence is not None:
                os.replace(evidence, self.evidence_path)
                _remove(self.journal_path)
                fsync_path(self.path)
            elif not self._append(line):
                return
            for aid in gone:
                articles.pop(aid, None)
            articles.update(put)
            self._evidence = (self._evidence_stamp(), articles)
            self.stale = True

        return install

    def _append(self, line: bytes) -> bool:
        """Append one commit's line to the journal; on failure drop the evidence (the next
        commit rebuilds it from the stored passages) and say so."""
        try:
            with open(self.journal_path, "ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            return True
        except OSError:
            _remove(self.evidence_path)
            _remove(self.journal_path)
            return False

    def replace(self, learnt: dict[str, list[tuple[str, str]]]) -> None:
        """Replace all evidence and the table (``WhooshStore.rebuild_aliases``)."""
        t = _rules().AliasTable()
        t.articles = {aid: [list(p) for p in values] for aid, values in learnt.items()}
        self._prepare(t)()

    def _prepare(self, t: AliasTable, change: dict | None = None) -> Callable[[], None]:
        """Write the new table (and the evidence: the whole of it, or ``change``, one line
        for the journal, when the journal is still small) to temporary files."""
        articles = t.articles
        r = t.learnt()
        line = None
        if change is not None:
            line = (json.dumps(change, ensure_ascii=False) + "\n").encode("utf-8")
            base = self._file_stamp(self.evidence_path)[1]
            journal = self._file_stamp(self.journal_path)[1]
            if journal + len(line) > max(JOURNAL_MIN, JOURNAL_SHARE * base):
                line = None  # the journal has grown: fold it into a new evidence file
        evidence = None
        if line is None:
            evidence = _write_tmp(self.evidence_path, {"version": 1, "articles": articles})
        table_stamp = self._file_stamp(self.table_path)
        table = None
        if self._table_written is None or self._table_written != (table_stamp, r):
            table = _write_table_tmp(self.table_path, table_data(r))

        def install() -> None:
            # the table first: evidence without a table is a lost table (``table_damage``)
            if table is not None:
                _install_table(table, self.table_path)
            if evidence is not None:
                os.replace(evidence, self.evidence_path)
                # the journal's changes are in the new file (replaying them again on it
                # would give the same evidence, should this removal not happen)
                _remove(self.journal_path)
            else:
                self._append(line)
            fsync_path(self.path)
            # an unchanged table keeps its file (and its time: searches keep their views)
            self._table_written = (self._file_stamp(self.table_path), r)
            stamp = self._evidence_stamp()
            self._evidence = (stamp, articles)
            self._kept = (stamp, t)

        return install

    def discard(self) -> None:
        """Remove temporary files a failed commit left (and forget the sums it changed)."""
        self._kept = None
        self._evidence = None
        self._table_written = None
        for p in (self.evidence_path, self.table_path):
            _remove(p.with_name(p.name + ".tmp"))

    def check_overrides(self) -> None:
        """Raise InvalidRequest if the override file has a malformed line."""
        try:
            parse_overrides(self.override_path.read_text(encoding="utf-8"))
        except OSError:
            return


def _remove(path: Path) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _write_tmp(path: Path, data: dict[str, Any]) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def _write_table_tmp(path: Path, data: dict[str, Any]) -> Path:
    """``_write_tmp`` for a table (``table_data``): written as ``table_bytes``."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(table_bytes(data))
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def learn_table(folder: str | os.PathLike, tries: int = 40) -> bool:
    """Learn the table of ``folder`` from its saved evidence and put it in place unless
    it is the same (what an ``AliasLearner`` process runs). One learner at a time per
    folder (a file lock), so the last to finish read the newest evidence; False when
    there is no evidence to read (a writer rebuilds it from the index at its next
    commit)."""
    store = AliasStore(folder)
    with open(store.path / LEARN_LOCK, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for _ in range(tries):  # a line being appended right now reads as cut short
            stamp = store._evidence_stamp()
            articles = store.evidence()
            if articles is not None and store._evidence_stamp() == stamp:
                break
            time.sleep(0.05)
        else:
            return False
        try:
            old = read_table(store.table_path)
        except TableDamaged:
            old = None
        t = _rules().AliasTable()
        t.articles = articles
        r = t.learnt()
        table = table_data(r)
        if old == table:
            # the same table: the file (and its time, by which searches keep their name
            # facets) stays
            return True
        tmp = _write_table_tmp(store.table_path, table)
        _install_table(tmp, store.table_path)
        fsync_path(store.path)
    return True


class AliasLearner(Coalescing):
    """Learns a large archive's alias table in a separate process after commits.

    ``request()`` (after a commit that appended names) returns at once; a thread
    runs ``python -m newsquarry.search.archive.aliases FOLDER`` and waits for it, again
    while commits asked meanwhile (requests made during a run make one more run,
    not one each). Until it is done, searches use the table as it was: names new
    to the archive count as indexed for a few seconds.

    A run learns from the whole archive's evidence (1.4 s of CPU on Reuters), so under
    a steady stream of writes (one a second) it took ~half a core, beside the searches:
    a run now waits ``LEARNER_DUTY - 1`` times the last one's duration after it, and
    each covers every commit made meanwhile. ``wait()`` (``close``, tests) skips the wait.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.runs = 0
        self.errors: list[str] = []
        self._next = 0.0  # monotonic time before which no run starts (unless hurried)
        self._hurry = threading.Event()
        super().__init__()

    thread_name = "newsquarry-aliases"

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no run is going or asked for (runs start at once meanwhile)."""
        self._hurry.set()
        try:
            return super().wait(timeout)
        finally:
            self._hurry.clear()

    def before_run(self) -> None:
        """Wait out the rest of the last run's pause (commits meanwhile join the run)."""
        delay = self._next - time.monotonic()
        if delay > 0:
            self._hurry.wait(delay)

    def run_once(self) -> None:
        """One learning process for every commit asked so far."""
        import subprocess  # lazy: start-up time (only the learner's run needs it)

        t0 = time.monotonic()
        cmd = [sys.executable, "-m", __name__, str(self.path), "--parent", str(os.getpid())]
        done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        took = time.monotonic() - t0
        self._next = time.monotonic() + (LEARNER_DUTY - 1) * took
        self.runs += 1
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            self.errors.append(lines[-1] if lines else f"exit {done.returncode}")
            logging.getLogger(__name__).warning(
                "learning the alias table failed (the table stays as it was): %s",
                self.errors[-1],
            )


def main(argv: list[str] | None = None) -> int:
    """``python -m newsquarry.search.archive.aliases FOLDER``: learn the folder's alias table."""
    import argparse  # lazy: start-up time (only ``python -m`` needs it)

    ap = argparse.ArgumentParser(prog="python -m newsquarry.search.archive.aliases")
    ap.add_argument("folder")
    ap.add_argument("--parent", type=int, default=0, help="exit when this process is gone")
    args = ap.parse_args(argv)
    if args.parent:
        exit_with_parent(args.parent)
        # background work: the serving process's searches and writes come first
        background_priority()
    try:
        learn_table(args.folder)
    except Exception as exc:  # noqa: BLE001 - one line for the parent's log
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def stored_names(searcher: Any) -> dict[str, list]:
    """Article id -> the [facet, value] names of its stored passages (alias evidence)."""
    names: dict[str, set[tuple[str, str]]] = {}
    for doc in searcher.documents(doctype="passage"):
        try:
            data = json.loads(doc.get("data") or "{}")
        except ValueError:
            continue
        found = names.setdefault(doc["article_id"], set())
        for e in data.get("entities", []):
            if e.get("type") in ("person", "org", "place") and e.get("name"):
                found.add((e["type"], e["name"]))
        for q in data.get("quotes", []):
            if q.get("speaker"):
                found.add(("speaker", q["speaker"]))
    for doc in searcher.documents(doctype="article"):
        names.setdefault(doc["article_id"], set())
    return {aid: [list(p) for p in sorted(v)] for aid, v in names.items()}


def rebuild_aliases(store: Any) -> int:
    """Recompute the alias evidence and table from the stored passages (an index made
    before the alias table existed, or whose evidence file was lost).

    Runs under the write lock; returns the number of articles read.
    """
    with store.write_lock():
        with reading(store.path):
            searcher = store.ix.searcher()
        try:
            names = stored_names(searcher)
        finally:
            searcher.close()
        store.aliases.replace(names)
    return len(names)


class AliasFeature(hooks.Feature):
    """The alias table as an engine feature: evidence per commit, the table learnt after it.

    Lends the store ``aliases`` (its ``AliasStore``), ``alias_learner``, ``alias_resolver()``
    and ``rebuild_aliases()``; its resolver is the store's key resolver (doc values count,
    filter and show names through it).
    """

    name = "aliases"

    def open(self, store: Any) -> dict[str, Any]:
        table = AliasStore(store.path)  # one name per entity
        return {
            "aliases": table,
            "alias_learner": AliasLearner(store.path),  # learns a large archive's table
            "alias_resolver": table.resolver,
            "rebuild_aliases": lambda: rebuild_aliases(store),
        }

    def _notes(self, session: Any) -> tuple[dict[str, list], set[str]]:
        # this commit's alias evidence: names per article put, ids deleted
        return session.notes.setdefault(self.name, ({}, set()))

    def put(self, session: Any, article: Any, passages: list[Any]) -> None:
        self._notes(session)[0][article.id] = _rules().article_names(passages)

    def delete(self, session: Any, article_id: str) -> None:
        learnt, forgotten = self._notes(session)
        forgotten.add(article_id)
        learnt.pop(article_id, None)

    def prepare_commit(self, store: Any, session: Any) -> Any:
        learnt, forgotten = self._notes(session)
        return store.aliases.prepare(learnt, forgotten, lambda: stored_names(session._searcher))

    def abort_commit(self, store: Any) -> None:
        store.aliases.discard()

    def committed(self, store: Any) -> None:
        if store.aliases.stale:  # a large archive: its table is learnt in the background
            store.aliases.stale = False
            store.alias_learner.request()

    def key_resolver(self, store: Any) -> Any:
        return store.aliases.resolver()

    def wait(self, store: Any, timeout: float | None) -> bool:
        return store.alias_learner.wait(timeout)

    def verify(self, folder: Any) -> list[hooks.Finding]:
        damage, note = table_damage(folder)
        found = []
        if damage:
            found.append(hooks.Finding(TABLE_FILE, damage))
        if note:
            found.append(hooks.Finding(TABLE_FILE, note, damage=False))
        return found

    def rebuild(self, folder: Any, searcher: Any) -> None:
        # the table is relearnt from the names stored with the passages (``rebuild_aliases``)
        AliasStore(folder).replace(stored_names(searcher))


hooks.register(AliasFeature())


if __name__ == "__main__":
    raise SystemExit(main())

"""The resident searcher: one process per user that keeps indexes open and warm, and runs
each read command of the ``newsquarry`` tool in a child forked from that warm state.

Why: the costs of a new process are the interpreter, its imports (click, numpy,
Whoosh) and the index's first state (segments, doc values, key tables, name words):
~0.3-0.4 s on Reuters, paid by every command. A fork of a process that has them costs
a few milliseconds, and the child shares the parent's mapped arrays. ``search.cli.launch``
(the console script) is the client; see its docstring for what the user sees. The socket
and its messages are ``wire``'s; ``control`` starts this process and asks it to stop.

How: the parent is single-threaded (no lock can be held by another thread at a fork)
and serves one command at a time; a command that arrives while another runs is
answered "busy" and runs in its own process, as it would without a resident searcher
(children never share open files: two of them could move the same file offset). For
each command, the parent:

1. checks that the client's code is its own (a digest of the installed modules): else
   it answers "stale" and exits;
2. makes sure the index is open here and holds its newest committed state (warmed the
   way a server warms a state another process committed), or answers "cold" and warms
   it after the client has gone on alone;
3. answers "ready"; the client answers with its standard streams (SCM_RIGHTS); only
   then is a child forked, so a command that was given up on never runs;
4. the child takes the client's streams, folder, environment and arguments, runs the
   click command and exits with its exit code, which the parent passes back.

The socket lives in a folder only the user can enter, and the parent also checks the
peer's user id. An idle parent exits after ``--idle`` seconds; so does one whose socket
was taken over or removed.
"""

from __future__ import annotations

import argparse
import fcntl
import io
import logging
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from newsquarry.search.cli.wire import (
    HANDSHAKE_TIMEOUT,
    code_stamp,
    private_folder,
    recv_message,
    send_message,
    socket_path,
)

log = logging.getLogger("newsquarry.daemon")

DEFAULT_IDLE = 600.0  # seconds without a command before the resident searcher exits
MAX_INDEXES = 2  # indexes kept open at once (least recently used is closed)


class Resident:
    """One index kept open and warm: its store, the folder's identity and the generation
    warmed last."""

    def __init__(self, folder: str) -> None:
        from newsquarry.search.engine.light import install  # lazy: start-up time

        install()
        # lazy: start-up time (after install: Whoosh without the modules it never uses)
        from newsquarry.search.engine.store import WhooshStore
        from newsquarry.search.query.searching import warm_up

        self.folder = folder
        self.inode = os.stat(folder).st_ino
        self.store = WhooshStore(folder, create=False)
        warm_up(self.store, refresh=False)  # no refresher thread: this process forks
        self.generation = self.store.generation

    def same_folder(self) -> bool:
        """Whether the folder is still the one opened (not removed, not made anew)."""
        try:
            return os.stat(self.folder).st_ino == self.inode
        except OSError:
            return False

    def refresh(self) -> None:
        """Warm the newest committed state if another process committed since."""
        from newsquarry.search.query.searching import warm_refreshed  # lazy: start-up time

        if self.store.generation != self.generation:  # links here: no thread may run
            self.generation = warm_refreshed(self.store, background_links=False)

    def close(self) -> None:
        try:
            self.store.close()
        except Exception:  # noqa: BLE001 - closing a store we are dropping anyway
            pass


class Daemon:
    """The parent: accepts commands on the socket, forks a child for each."""

    def __init__(self, path: Path, idle: float, stamp: str | None = None) -> None:
        self.path = path
        self.idle = idle
        self.stamp = stamp or code_stamp()
        self.residents: dict[str, Resident] = {}
        self.served = 0
        self.started = time.time()
        self.last = time.monotonic()
        self.stopping = False
        self.child: tuple[int, socket.socket, int | None] | None = None  # pid, client, pidfd
        self.selector = selectors.DefaultSelector()
        self.listener: socket.socket | None = None
        self.ident: tuple[int, int] | None = None

    # -- the loop ---------------------------------------------------------------------

    def listen(self) -> None:
        try:
            self.path.unlink()  # a stale socket: the lock says no other daemon runs
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.path))
        os.chmod(self.path, 0o600)
        sock.listen(16)
        st = os.stat(self.path)
        self.ident = (st.st_dev, st.st_ino)
        self.listener = sock
        self.selector.register(sock, selectors.EVENT_READ, "listen")

    def run(self) -> None:
        while True:
            if self.child is None and (self.stopping or self.idle_for() > self.idle):
                return
            if self.child is None and not self.socket_is_mine():
                return  # removed, or another daemon listens there now
            for key, _ in self.selector.select(timeout=1.0):
                if key.data == "listen":
                    self.accept()
                else:
                    self.reap()

    def idle_for(self) -> float:
        return time.monotonic() - self.last

    def socket_is_mine(self) -> bool:
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.ident

    def accept(self) -> None:
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        conn.settimeout(HANDSHAKE_TIMEOUT)
        try:
            if not self.same_user(conn):
                conn.close()
                return
            self.last = time.monotonic()
            message, _ = recv_message(conn)
            if message is not None:
                self.handle(conn, message)
                return
        except (OSError, ValueError) as exc:
            log.warning("request dropped: %s", exc)
        conn.close()

    @staticmethod
    def same_user(conn: socket.socket) -> bool:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        return uid == os.getuid()

    def handle(self, conn: socket.socket, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "status":
            send_message(conn, self.status())
            conn.close()
            return
        if op == "stop":
            self.stopping = True
            send_message(conn, {"status": "stopping", "pid": os.getpid()})
            conn.close()
            return
        if message.get("stamp") != self.stamp:
            self.stopping = True  # other code is installed: let a new daemon start
            self.reply_and_close(conn, "stale")
            return
        if self.child is not None or self.stopping:
            self.reply_and_close(conn, "busy")
            return
        folder = str(message.get("index") or "")
        resident = self.residents.get(folder)
        if resident is not None and not resident.same_folder():
            self.drop(folder)
            resident = None
        if resident is None:
            self.reply_and_close(conn, "cold")  # the client runs it; warm for the next
            if os.path.isdir(folder):
                self.open(folder)
            return
        try:
            resident.refresh()
        except Exception as exc:  # noqa: BLE001 - the client runs it and reports it
            log.warning("refresh of %s failed: %s", folder, exc)
            self.drop(folder)
            self.reply_and_close(conn, "cold")
            return
        self.residents[folder] = self.residents.pop(folder)  # most recently used last
        send_message(conn, {"status": "ready"})
        go, fds = recv_message(conn, want_fds=3)
        if not go or not go.get("go") or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        self.fork(conn, message, fds)

    def reply_and_close(self, conn: socket.socket, status: str) -> None:
        try:
            send_message(conn, {"status": status})
        except OSError:
            pass
        conn.close()

    def fork(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        """Run the command in a child. From the fork on, the client is told the child's pid
        and then its exit code, whatever fails here: it must never run the command too."""
        pid = os.fork()
        if pid == 0:  # the child: never returns
            run_child(message, fds, [self.listener, conn], self.residents)
        for fd in fds:
            os.close(fd)
        self.served += 1
        self.child = (pid, conn, None)
        try:
            send_message(conn, {"pid": pid})
        except OSError:
            pass  # the client went away: the child finds its streams closed
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:  # cannot watch it from the loop: wait for it here
            log.warning("pidfd_open(%d) failed (%s): waiting for the command", pid, exc)
            self.reap()
            return
        self.child = (pid, conn, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, "child")

    def reap(self) -> None:
        assert self.child is not None
        pid, conn, pidfd = self.child
        if pidfd is not None:
            self.selector.unregister(pidfd)
            os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            code = 128 - code  # killed by a signal, as a shell reports it
        try:
            send_message(conn, {"exit": code})
        except OSError:
            pass
        conn.close()
        self.child = None
        self.last = time.monotonic()

    # -- indexes ----------------------------------------------------------------------

    def open(self, folder: str) -> None:
        """Open and warm an index (dropping the least recently used beyond MAX_INDEXES)."""
        try:
            resident = Resident(folder)
        except Exception as exc:  # noqa: BLE001 - not an index, damaged: commands say so
            log.warning("cannot keep %s open: %s", folder, exc)
            return
        self.residents[folder] = resident
        while len(self.residents) > MAX_INDEXES:
            self.drop(next(iter(self.residents)))
        self.last = time.monotonic()

    def drop(self, folder: str) -> None:
        resident = self.residents.pop(folder, None)
        if resident is not None:
            resident.close()

    def status(self) -> dict[str, Any]:
        return {
            "status": "running",
            "pid": os.getpid(),
            "started": self.started,
            "served": self.served,
            "idle_seconds": round(self.idle_for(), 1),
            "idle_limit": self.idle,
            "indexes": [
                {"folder": r.folder, "generation": r.generation} for r in self.residents.values()
            ],
        }


def _text_stream(fd: int, mode: str, info: list[str | None], line: bool) -> io.TextIOWrapper:
    raw = io.open(fd, mode + "b", closefd=False)  # noqa: UP020 - a descriptor, not a path
    encoding, errors = (info + [None, None])[:2]
    return io.TextIOWrapper(raw, encoding=encoding or "utf-8", errors=errors or "strict",
                            line_buffering=line)  # fmt: skip


def run_child(message: dict[str, Any], fds: list[int], close: list[Any],
              residents: dict[str, Resident]) -> None:  # fmt: skip
    """In the forked child: become the client's command, run it, exit with its code."""
    code: int = 1
    try:
        for sock in close:
            if sock is not None:
                sock.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(message["cwd"])
        os.environ.clear()
        os.environ.update(message["env"])
        streams = message.get("streams") or [[None, None]] * 3
        sys.stdin = sys.__stdin__ = _text_stream(0, "r", streams[0], False)
        sys.stdout = sys.__stdout__ = _text_stream(1, "w", streams[1], os.isatty(1))
        sys.stderr = sys.__stderr__ = _text_stream(2, "w", streams[2], True)
        sys.argv = ["newsquarry", *message["argv"]]
        # lazy: start-up time (serve() imported them before any fork: a lookup here)
        from newsquarry.search.cli.app import main as run_command
        from newsquarry.search.cli.common import RESIDENT

        RESIDENT.update({folder: r.store for folder, r in residents.items()})
        try:
            run_command()
            code = 0
        except SystemExit as done:
            if done.code is None:
                code = 0
            elif isinstance(done.code, int):
                code = done.code
            else:
                sys.stderr.write(f"{done.code}\n")
                code = 1
    except BaseException:  # noqa: BLE001 - the child must never return into the parent's loop
        try:
            traceback.print_exc()
        except Exception:  # noqa: BLE001
            pass
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed pipe: nothing more to say
                pass
        os._exit(code)


def serve(path: Path, warm: list[str], idle: float, stamp: str | None = None) -> int:
    """Run a resident searcher at ``path`` until idle or stopped; 0, or 1 when another one
    holds the lock (it serves)."""
    if not private_folder(path.parent):
        return 1
    lock = open(str(path) + ".lock", "a")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 1
    logging.basicConfig(
        filename=str(path.with_suffix(".log")),
        filemode="w",
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    # lazy: start-up time (one that loses the lock exits without it); once here, not per child
    from newsquarry.search.cli import app  # noqa: F401

    daemon = Daemon(path, idle, stamp)
    for folder in warm:
        if os.path.isdir(folder):
            daemon.open(os.path.abspath(folder))
    daemon.listen()
    log.info("listening at %s (pid %d)", path, os.getpid())
    try:
        daemon.run()
    finally:
        if daemon.socket_is_mine():
            path.unlink(missing_ok=True)
        log.info("exiting after %d commands", daemon.served)
    return 0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="newsquarry's resident searcher")
    ap.add_argument("--socket", default=str(socket_path()))
    ap.add_argument("--warm", action="append", default=[], help="index folder to open first")
    ap.add_argument("--idle", type=float, default=None,
                    help=f"seconds without a command before exiting (default: "
                         f"$NEWSQUARRY_DAEMON_IDLE or {DEFAULT_IDLE:.0f})")  # fmt: skip
    # tests: act as a resident searcher started from other code (an upgrade since)
    ap.add_argument("--stamp", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    idle = args.idle
    if idle is None:
        try:
            idle = float(os.environ.get("NEWSQUARRY_DAEMON_IDLE", DEFAULT_IDLE))
        except ValueError:
            idle = DEFAULT_IDLE
    sys.exit(serve(Path(args.socket), args.warm, idle, args.stamp))


if __name__ == "__main__":
    main()

"""The ``newsquarry`` command's entry point: hand read commands to the resident searcher.

Why: a new Python process that imports click, numpy and Whoosh and maps an index
pays ~0.3-0.4 s before it answers anything (3.4-3.7x ``newsquarry --help`` on
Reuters, docs/benchmarks.md), whatever the index stores on disk. Tools that are
asked many small questions in a row keep a warm process instead (Gradle's daemon,
Nailgun, ``dmypy``, Watchman): so does newsquarry. ``search``, ``quotes``,
``facets``, ``cooccur``, ``show`` and ``stats`` on a local index are passed to a
resident process (``search.cli.daemon``) that holds the index open and warm; it forks a
child that runs the very same click command with this process's standard input,
output and error (passed over a Unix socket), working folder, environment and
arguments, so output, colours, pipes, exit codes and Ctrl-C behave as if the
command ran here.

This module imports only the standard library (and ``wire`` and ``control``, which do
the same): the client costs a bare interpreter. It imports the click commands
(``app``) only when it runs one here.

When no resident searcher runs, the command runs here, in this process, as before,
and then starts one in the background for the next command (it warms the index the
command used and exits after ``NEWSQUARRY_DAEMON_IDLE`` seconds without a request,
600 by default). Whenever the resident searcher cannot serve a command at once (it
runs another command, is still warming, or was started from other code: an upgrade),
the command runs here: it is never answered by stale code, and never twice.
``NEWSQUARRY_DAEMON=0`` turns all of this off; ``newsquarry daemon status|stop``.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

from newsquarry.search.cli.control import start_resident
from newsquarry.search.cli.wire import (  # noqa: F401 - re-exported: the client's view of the socket folder
    HANDSHAKE_TIMEOUT,
    code_stamp,
    enabled,
    private_folder,
    recv_message,
    send_message,
    socket_path,
)

# commands that only read a local index: the ones the resident searcher runs
SERVED = frozenset({"search", "quotes", "facets", "cooccur", "show", "stats"})
# options of the group that take a value (what follows them is not the command)
GROUP_VALUE_OPTIONS = frozenset({"--index", "--url"})


def command_of(argv: list[str]) -> tuple[str | None, bool, str | None]:
    """(command, whether --url was given, --index given last or None) from the arguments,
    as click reads them: group options, then the command; --index may follow it."""
    command = None
    url = False
    index = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        if name in GROUP_VALUE_OPTIONS:
            if not eq:
                i += 1
                value = argv[i] if i < len(argv) else ""
            if name == "--url":
                url = True
            else:
                index = value
        elif command is None and not arg.startswith("-"):
            command = arg
        i += 1
    return command, url, index


def index_folder(index: str | None, env: dict[str, str] | os._Environ = os.environ) -> str:
    """The index folder a command uses (``search.config``'s rule, without importing it)."""
    folder = index or env.get("NEWSQUARRY_INDEX")
    if not folder:
        base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        folder = str(Path(base) / "newsquarry" / "index")
    return os.path.abspath(os.path.expanduser(folder))


def _stream_info(stream: object) -> list[str | None]:
    return [getattr(stream, "encoding", None), getattr(stream, "errors", None)]


def try_resident(argv: list[str], index: str) -> tuple[int | None, bool]:
    """Run the command in the resident searcher: (its exit code, or None when it did not
    take the command: then nothing of it ran, and the caller runs it here; whether none
    was listening)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        sock.connect(str(socket_path()))
    except OSError:
        sock.close()
        return None, True
    try:
        request = {
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "index": index,
            "stamp": code_stamp(),
            "streams": [_stream_info(s) for s in (sys.stdin, sys.stdout, sys.stderr)],
        }
        send_message(sock, request)
        reply, _ = recv_message(sock)
        if not reply or reply.get("status") != "ready":
            sock.close()
            return None, False
        # only now does the command exist anywhere: the streams go with the go-ahead. From
        # here the resident searcher may have started it, however long its answer takes on
        # a busy machine: wait for the answer (running it here too would run it twice)
        send_message(sock, {"go": True}, [0, 1, 2])
        sock.settimeout(None)
        started, _ = recv_message(sock)
    except (OSError, ValueError):
        started = None
    if not started or "pid" not in started:
        sock.close()
        return None, False  # nothing ran: the child was never made
    sock.settimeout(None)
    return _wait_for(sock, int(started["pid"])), False


def _wait_for(sock: socket.socket, pid: int) -> int:
    """Wait for the child running the command: Ctrl-C and termination go to it."""

    def forward(signum: int, _frame: object) -> None:
        try:
            os.kill(pid, signum)
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    while True:
        try:
            done, _ = recv_message(sock)
            break
        except InterruptedError:
            continue
        except OSError:
            done = None
            break
    if done is None or "exit" not in done:
        sys.stderr.write("Error: the resident searcher stopped before the command ended\n")
        return 5
    return int(done["exit"])


def main() -> None:
    """Console-script entry point: the resident searcher when it can, else the CLI here."""
    argv = sys.argv[1:]
    command, url, index = command_of(argv)
    resident = (
        command in SERVED
        and not url
        and enabled()
        and not os.environ.get("NEWSQUARRY_URL")
        and not os.environ.get("_NEWSQUARRY_COMPLETE")
    )
    folder = index_folder(index) if resident else ""
    absent = False
    if resident:
        code, absent = try_resident(argv, folder)
        if code is not None:
            sys.exit(code)
    # lazy: start-up time (this client is stdlib only)
    from newsquarry.search.cli.app import main as cli_main

    try:
        cli_main()
    except SystemExit as done:
        if absent and done.code in (0, 1, None):
            start_resident(folder)  # for the next command
        raise


if __name__ == "__main__":
    main()

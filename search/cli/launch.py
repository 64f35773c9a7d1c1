"""The ``newsquarry`` command's entry point: hand read commands to the resident searcher.

Why: a new Python process that imports click, numpy and Whoosh and maps an index
pays ~0.3-0.4 s before it answers anything (3.4-3.7x ``newsquarry --help`` on
Reuters, docs/benchmarks.md), whatever the index stores on disk. Tools that are
asked many small questions in a row keep a warm process instead (Gradle's daemon,
Nailgun, ``dmypy``, Watchman): so does newsquarry. ``search``, ``quotes``,
``facets``, ``cooccur``, ``show`` and ``stats`` on a local index are passed to a
resident process (``search.daemon``) that holds the index open and warm; it forks a
child that runs the very same click command with this process's standard input,
output and error (passed over a Unix socket), working folder, environment and
arguments, so output, colours, pipes, exit codes and Ctrl-C behave as if the
command ran here.

This module imports only the standard library: the client costs a bare interpreter.

When no resident searcher runs, the command runs here, in this process, as before,
and then starts one in the background for the next command (it warms the index the
command used and exits after ``NEWSQUARRY_DAEMON_IDLE`` seconds without a request,
600 by default). Whenever the resident searcher cannot serve a command at once (it
runs another command, is still warming, or was started from other code: an upgrade),
the command runs here: it is never answered by stale code, and never twice.
``NEWSQUARRY_DAEMON=0`` turns all of this off; ``newsquarry daemon status|stop``.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

# commands that only read a local index: the ones the resident searcher runs
SERVED = frozenset({"search", "quotes", "facets", "cooccur", "show", "stats"})
# options of the group that take a value (what follows them is not the command)
GROUP_VALUE_OPTIONS = frozenset({"--index", "--url"})
OFF = frozenset({"0", "off", "no", "false"})
HANDSHAKE_TIMEOUT = 2.0  # seconds to wait for the resident searcher to take a command
PACKAGE = Path(__file__).resolve().parent.parent  # newsquarry.search: the code it runs
HEADER = struct.Struct("!I")  # length of the JSON message that follows


def enabled(env: dict[str, str] | os._Environ = os.environ) -> bool:
    """Whether commands may go to the resident searcher (``NEWSQUARRY_DAEMON``)."""
    return env.get("NEWSQUARRY_DAEMON", "1").strip().lower() not in OFF


def socket_path(env: dict[str, str] | os._Environ = os.environ) -> Path:
    """Where this user's resident searcher of this installation listens:
    ``$XDG_RUNTIME_DIR/newsquarry/`` (a folder only the user can enter), else
    ``/tmp/newsquarry-<uid>/``; one per interpreter and package folder, so two virtual
    environments do not take turns stopping each other's."""
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        folder = Path(runtime) / "newsquarry"
    else:
        folder = Path("/tmp") / f"newsquarry-{os.getuid()}"
    install = hashlib.sha1(f"{sys.executable}\n{PACKAGE}".encode()).hexdigest()[:12]
    return folder / f"daemon-{install}.sock"


def private_folder(folder: Path) -> bool:
    """Create ``folder`` (mode 0700) if needed; whether it is this user's alone (a
    socket in a folder others can write to could be someone else's)."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def code_stamp() -> str:
    """A digest of this installation's code (each module's path, size and mtime) and
    interpreter: a resident searcher started from other code does not serve."""
    h = hashlib.sha1(sys.executable.encode() + sys.version.encode())
    for folder, dirs, files in os.walk(PACKAGE):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


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


def send_message(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """One length-prefixed JSON message, with file descriptors if any (SCM_RIGHTS)."""
    data = json.dumps(message).encode("utf-8")
    data = HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    sock.sendall(data)


def recv_message(sock: socket.socket, want_fds: int = 0) -> tuple[dict | None, list[int]]:
    """The next message (None when the other side closed) and the descriptors it carried."""
    fds: list[int] = []
    buf = b""
    if want_fds:
        data, fds, _flags, _addr = socket.recv_fds(sock, 65536, want_fds)
        buf = data
    while len(buf) < HEADER.size or len(buf) < HEADER.size + HEADER.unpack_from(buf)[0]:
        if len(buf) > 16 * 1024 * 1024:
            raise ValueError("message too long")
        chunk = sock.recv(65536)
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None, []
        buf += chunk
    size = HEADER.unpack_from(buf)[0]
    return json.loads(buf[HEADER.size : HEADER.size + size]), fds


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
        # only now does the command exist anywhere: the streams go with the go-ahead
        send_message(sock, {"go": True}, [0, 1, 2])
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


def start_resident(index: str) -> None:
    """Start a resident searcher in the background, warming ``index``; it exits by itself
    when idle. Quiet: it only makes later commands faster."""
    path = socket_path()
    if not private_folder(path.parent):
        return
    try:
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "newsquarry.search.cli.daemon",
                "--socket",
                str(path),
                "--warm",
                index,
            ],  # fmt: skip
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not in the terminal's process group: no Ctrl-C
            close_fds=True,
        )
    except OSError:
        pass


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
    from .app import main as cli_main

    try:
        cli_main()
    except SystemExit as done:
        if absent and done.code in (0, 1, None):
            start_resident(folder)  # for the next command
        raise


if __name__ == "__main__":
    main()

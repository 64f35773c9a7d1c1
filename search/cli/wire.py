"""The resident searcher's socket, shared by its client (``launch``, ``control``) and the
searcher itself (``daemon``): where it listens, which code it is, and the length-prefixed
JSON messages (with file descriptors) that go over it. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
from pathlib import Path

OFF = frozenset({"0", "off", "no", "false"})
HANDSHAKE_TIMEOUT = 2.0  # seconds to wait for the resident searcher to take a command
PACKAGE = Path(__file__).resolve().parent.parent  # newsquarry.search: the code it runs
HEADER = struct.Struct("!I")  # length of the JSON message that follows
MAX_MESSAGE = 16 * 1024 * 1024  # bytes: a command's environment and arguments fit many times


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


def send_message(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """One length-prefixed JSON message, with file descriptors if any (SCM_RIGHTS)."""
    data = json.dumps(message).encode("utf-8")
    data = HEADER.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:  # nothing left is nothing to send: an empty send to a peer that has read
        sock.sendall(data)  # it all and closed since fails with EPIPE


def recv_message(sock: socket.socket, want_fds: int = 0) -> tuple[dict | None, list[int]]:
    """The next message (None when the other side closed) and the descriptors it carried.

    Reads exactly one message's bytes, never into the next: the resident searcher sends
    a command's pid and then its exit code, which can arrive together."""
    fds: list[int] = []
    if want_fds:
        head, fds, _flags, _addr = socket.recv_fds(sock, HEADER.size, want_fds)
    else:
        head = sock.recv(HEADER.size)
    head = _recv_exactly(sock, head, HEADER.size) if head else None
    size = HEADER.unpack(head)[0] if head is not None else 0
    too_long = size > MAX_MESSAGE
    body = _recv_exactly(sock, b"", size) if head is not None and not too_long else None
    if body is None:
        for fd in fds:
            os.close(fd)
        if too_long:
            raise ValueError("message too long")
        return None, []
    return json.loads(body), fds


def _recv_exactly(sock: socket.socket, buf: bytes, size: int) -> bytes | None:
    """``buf`` completed to ``size`` bytes from ``sock``; None when the other side closed."""
    while len(buf) < size:
        chunk = sock.recv(size - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf

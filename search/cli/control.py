"""Starting the resident searcher in the background and asking it for its status or to
stop: what ``launch`` and the ``daemon`` command do to it. Standard library only.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from typing import Any

from newsquarry.search.cli.wire import (
    HANDSHAKE_TIMEOUT,
    private_folder,
    recv_message,
    send_message,
    socket_path,
)


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


def ask(op: str) -> dict[str, Any] | None:
    """Send ``status`` or ``stop`` to the running resident searcher; its answer, or None
    when none runs."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        sock.connect(str(socket_path()))
        send_message(sock, {"op": op})
        reply, _ = recv_message(sock)
        return reply
    except (OSError, ValueError):
        return None
    finally:
        sock.close()

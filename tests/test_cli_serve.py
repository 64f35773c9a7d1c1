"""`newsquarry serve` as a person starts it: a real gunicorn in a subprocess.

Its log names the address it listens at; it opens no control socket shared by every
server of the user (gunicorn's default path), so a second server replaces nothing;
at a folder other than the default one it serves a new, empty index, and says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gunicorn
import pytest
import requests
from api_support import free_port

ROOT = Path(__file__).resolve().parent.parent


class Served:
    """``newsquarry serve`` on a free port; its output in a file."""

    def __init__(self, tmp: Path, index: Path, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        full = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        full.update(HOME=str(tmp), NEWSQUARRY_INDEX=str(index), **env)
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "newsquarry.search.cli", "serve", "--port", str(self.port),
             "--workers", "1", "--threads", "2"],
            cwd=tmp, env=full, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                requests.get(self.url + "/health/live", timeout=5)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("newsquarry serve did not start:\n" + self.output())

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture()
def servers():
    started: list[Served] = []
    yield started
    for server in started:
        server.stop()


def test_serve_logs_its_address_and_shares_no_control_socket(tmp_path, servers):
    first = Served(tmp_path, tmp_path / "first")
    servers.append(first)
    out = first.output()
    assert f"No index at {tmp_path / 'first'}: serving a new, empty index." in out
    assert f"Listening at: http://127.0.0.1:{first.port} (" in out
    assert "Listening at:  (" not in out
    assert requests.get(first.url + "/v1/stats", timeout=10).json()["articles"] == 0
    assert not (tmp_path / ".gunicorn").exists() and not list(tmp_path.glob("*.ctl"))
    if gunicorn.version_info < (25, 1):
        return  # no control socket before gunicorn 25.1
    # a control socket only where asked, one per server
    second = Served(
        tmp_path, tmp_path / "second", NEWSQUARRY_CONTROL_SOCKET=str(tmp_path / "b.ctl")
    )
    servers.append(second)
    deadline = time.monotonic() + 10
    while not (tmp_path / "b.ctl").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (tmp_path / "b.ctl").exists() and not (tmp_path / ".gunicorn").exists()
    assert requests.get(first.url + "/health/live", timeout=10).ok

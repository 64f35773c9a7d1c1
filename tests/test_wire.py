"""The resident searcher's messages (``search.cli.wire``) over a real Unix socket pair."""

from __future__ import annotations

import os
import socket

import pytest

from newsquarry.search.cli.wire import HEADER, recv_message, send_message


def test_two_messages_sent_together_are_read_one_at_a_time():
    # the resident searcher sends a command's pid, then its exit code: on a busy
    # machine the client finds both waiting, and must not lose the second
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    b.settimeout(10)  # a lost message would leave the read waiting
    with a, b:
        send_message(a, {"pid": 1234})
        send_message(a, {"exit": 3})
        assert recv_message(b) == ({"pid": 1234}, [])
        assert recv_message(b) == ({"exit": 3}, [])
        a.close()
        assert recv_message(b) == (None, [])


def test_the_go_ahead_with_its_streams_to_a_peer_that_read_it_and_left_is_sent():
    # the resident searcher can read the go-ahead, run the command, answer and close
    # before the client's send returns: that send succeeded, and must not say otherwise
    # (the client would run the command a second time)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    r, w = os.pipe()
    try:
        with a:
            real_send_fds = socket.send_fds

            def send_then_peer_leaves(sock, buffers, fds, *args):
                sent = real_send_fds(sock, buffers, fds, *args)
                message, got = recv_message(b, want_fds=3)
                assert message == {"go": True} and len(got) == 1
                for fd in got:
                    os.close(fd)
                b.close()
                return sent

            socket.send_fds = send_then_peer_leaves
            try:
                send_message(a, {"go": True}, [w])
            finally:
                socket.send_fds = real_send_fds
    finally:
        os.close(r)
        os.close(w)


def test_descriptors_come_with_the_message_they_were_sent_with():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    r, w = os.pipe()
    with a, b:
        send_message(a, {"go": True}, [w])
        send_message(a, {"next": 1})
        message, fds = recv_message(b, want_fds=3)
        assert message == {"go": True} and len(fds) == 1
        os.write(fds[0], b"through the passed pipe")
        os.close(fds[0])
        os.close(w)
        assert os.read(r, 100) == b"through the passed pipe"
        os.close(r)
        assert recv_message(b) == ({"next": 1}, [])


def test_a_message_longer_than_the_limit_is_refused_without_reading_it():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    b.settimeout(10)
    with a, b:
        a.sendall(HEADER.pack(1 << 30))
        with pytest.raises(ValueError, match="too long"):
            recv_message(b)

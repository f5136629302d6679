"""When a ZooKeeper counts as ready, and what a session request it leaves unanswered costs: against
small servers on loopback that answer as ZooKeeper does while it starts (no Docker)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from harness import zkstate
from harness.zkstate import ZkStateReader, zookeeper_serving

NOT_SERVING = "This ZooKeeper instance is not currently serving requests\n"
SERVING = "Zookeeper version: 3.8.4\nLatency min/avg/max: 0/0.0/0\nMode: standalone\nNode count: 5\n"


@contextmanager
def loopback_server(serve: Callable[[socket.socket, int], None]) -> Iterator[int]:
    """A server on a free loopback port calling `serve(connection, n)` for its n-th connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        n = 0
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=serve, args=(conn, n), daemon=True).start()
            n += 1

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def answering_srvr(answer: str) -> Callable[[socket.socket, int], None]:
    def serve(conn: socket.socket, _: int) -> None:
        with conn:
            assert conn.recv(4) == b"srvr"
            conn.sendall(answer.encode())

    return serve


def test_a_zookeeper_that_accepts_but_does_not_serve_yet_is_not_ready_and_says_so() -> None:
    with loopback_server(answering_srvr(NOT_SERVING)) as port:
        assert zookeeper_serving("127.0.0.1", port) == NOT_SERVING.strip()


def test_a_zookeeper_whose_srvr_answer_has_a_mode_is_ready() -> None:
    with loopback_server(answering_srvr(SERVING)) as port:
        assert zookeeper_serving("127.0.0.1", port) is None


def test_a_whole_answer_counts_even_when_the_connection_then_times_out() -> None:
    def answer_and_hold(conn: socket.socket, _: int) -> None:
        with conn:
            conn.recv(4)
            conn.sendall(SERVING.encode())
            conn.recv(4096)  # kept open until the client gives up

    with loopback_server(answer_and_hold) as port:
        assert zookeeper_serving("127.0.0.1", port) is None


def test_a_closed_port_is_not_ready_and_the_reason_is_the_socket_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    assert zookeeper_serving("127.0.0.1", port) == "Connection refused"


def silent_then_answering(conn: socket.socket, n: int) -> None:
    """The first session request gets no answer (ZooKeeper 3.8 before it serves); later ones get a
    ConnectResponse: protocol version, timeout, session id, password, read-only."""
    with conn:
        request = conn.recv(4096)
        if n == 0 or not request:
            conn.recv(4096)  # until the client gives up on this connection and closes it
            return
        password = b"p" * 16
        body = struct.pack(">iiq", 0, 1_000, 42) + struct.pack(">i", len(password)) + password + b"\x00"
        conn.sendall(struct.pack(">i", len(body)) + body)
        while conn.recv(4096):  # pings, then the close
            pass


def test_an_unanswered_session_request_costs_one_session_timeout_not_the_whole_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(zkstate, "SESSION_TIMEOUT_S", 1.0)
    with loopback_server(silent_then_answering) as port:
        started = time.monotonic()
        reader = ZkStateReader(f"127.0.0.1:{port}", timeout_s=20.0).__enter__()
        try:
            connected_after_s = time.monotonic() - started
            assert reader._zk.connected
        finally:
            reader.close()
    # the silent attempt is given up after the 1-s session timeout, not after the 20-s wait
    assert 0.9 < connected_after_s < 5.0

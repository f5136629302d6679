"""Cluster state as ZooKeeper holds it: controller, live brokers, and each partition's leader and ISR.

This is what the controller decided, which is what faults are judged against (a paused broker may
still believe it leads; ZooKeeper says who really does).
"""

from __future__ import annotations

import json
import logging
import re
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, KazooException, NoNodeError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError

from contract.errors import ClusterError
from harness.broker_config import ZK_CLIENT_PORT
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.retrying import bounded, kinds

logging.getLogger("kazoo").setLevel(logging.CRITICAL)  # it logs every reconnect attempt as a warning

SESSION_TIMEOUT_S = 30.0
"""The reader's ZooKeeper session timeout, asked for when it connects (a session outlives a pause of
ZooKeeper shorter than that; kazoo opens a new one after a longer one)."""


class ZkStateReader:
    """Reads cluster state through one kazoo session. Use as a context manager.

    The session reconnects by itself for as long as it lives, but no read waits for that longer than
    `request_timeout_s`: a paused or cut-off ZooKeeper makes a read fail with ClusterError, it does
    not hang the caller.
    """

    def __init__(self, zk_connect: str, timeout_s: float = 10.0, request_timeout_s: float = 10.0) -> None:
        # kazoo waits up to the session timeout (divided among the hosts) for each connection
        # attempt's answer, so it is kept apart from `timeout_s`, the wait for a session: a request
        # ZooKeeper leaves unanswered costs that much, then kazoo tries again (kazoo issue 517).
        self._zk = KazooClient(
            hosts=zk_connect, timeout=SESSION_TIMEOUT_S, connection_retry={"max_tries": -1}
        )
        self._timeout_s = timeout_s
        self._request_timeout_s = request_timeout_s
        self.zk_connect = zk_connect

    def __enter__(self) -> ZkStateReader:
        try:
            self._zk.start(timeout=self._timeout_s)
        except KazooTimeoutError:
            self._zk.stop()
            raise ClusterError(
                f"ZooKeeper at {self.zk_connect} did not answer within {self._timeout_s} s"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._zk.stop()
        self._zk.close()

    def _read(self, send: Callable[[str], Any], path: str) -> Any:
        """One read of `path` (`send` is a kazoo *_async method), retried on a lost connection or an
        expired session (kazoo opens a new one), within `request_timeout_s` in all; NoNodeError
        passes, anything else becomes ClusterError."""
        deadline = time.monotonic() + self._request_timeout_s

        def attempt() -> Any:
            return send(path).get(timeout=max(0.05, deadline - time.monotonic()))

        retrying = bounded(
            kinds(ConnectionLoss, SessionExpiredError),
            attempts=50,
            within_s=self._request_timeout_s,
            wait_s=0.2,
        )
        try:
            return retrying(attempt)
        except NoNodeError:
            raise
        except (KazooException, KazooTimeoutError) as exc:
            raise ClusterError(
                f"ZooKeeper {self.zk_connect} did not answer a read of {path} within "
                f"{self._request_timeout_s:g} s; last seen: session {self._zk.state}, {type(exc).__name__}"
            ) from None

    def _json(self, path: str) -> Any:
        try:
            data, _ = self._read(self._zk.get_async, path)
        except NoNodeError:
            return None
        return json.loads(data) if data else None

    def _children(self, path: str) -> list[str]:
        try:
            return list(self._read(self._zk.get_children_async, path))
        except NoNodeError:
            return []

    def live_brokers(self) -> tuple[int, ...]:
        return tuple(sorted(int(b) for b in self._children("/brokers/ids")))

    def topics(self) -> list[str]:
        return sorted(self._children("/brokers/topics"))

    def replica_counts(self, topic: str) -> tuple[int, ...]:
        """How many replicas each partition of `topic` has (empty when it does not exist)."""
        assignment = (self._json(f"/brokers/topics/{topic}") or {}).get("partitions", {})
        return tuple(len(assignment[number]) for number in sorted(assignment, key=int))

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        """Read the whole state once. Raises ClusterError when ZooKeeper cannot be read in time."""
        controller = self._json("/controller")
        epoch = self._json("/controller_epoch")
        partitions: list[PartitionState] = []
        for topic in sorted(topics) if topics is not None else self.topics():
            assignment = (self._json(f"/brokers/topics/{topic}") or {}).get("partitions", {})
            for number in sorted(assignment, key=int):
                state = self._json(f"/brokers/topics/{topic}/partitions/{number}/state") or {}
                partitions.append(
                    PartitionState(
                        topic,
                        int(number),
                        int(state.get("leader", -1)),
                        int(state.get("leader_epoch", -1)),
                        tuple(state.get("isr", ())),
                        tuple(assignment[number]),
                    )
                )
        return ClusterSnapshot(
            controller=controller.get("brokerid") if isinstance(controller, dict) else None,
            controller_epoch=int(epoch) if epoch is not None else None,
            live_brokers=self.live_brokers(),
            partitions=tuple(partitions),
        )


def zookeeper_serving(ip: str, port: int = ZK_CLIENT_PORT) -> str | None:
    """None when the ZooKeeper at `ip`:`port` serves requests (its `srvr` answer has a Mode:
    standalone, leader or follower), else what it said instead. `srvr` is the one four-letter command
    every release answers (3.5 and later allow only it by default)."""
    answer = b""
    try:
        with socket.create_connection((ip, port), timeout=2.0) as conn:
            conn.sendall(b"srvr")
            while chunk := conn.recv(4096):
                answer += chunk
    except OSError as exc:
        if not answer:
            return str(exc.strerror or exc)
    text = answer.decode(errors="replace")
    if re.search(r"^Mode: \w+", text, re.MULTILINE):
        return None
    return text.strip().splitlines()[0] if text.strip() else "no answer to srvr"

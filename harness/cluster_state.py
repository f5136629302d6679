"""Cluster state in one shape whatever holds it (ZooKeeper, or a KRaft quorum): the controller and
its epoch, the live brokers, and each partition's leader, leader epoch, ISR and replicas; and the
sampler that appends it to history/cluster.jsonl. `harness.zkstate` and `harness.kraft_state` read
it; faults are judged against it and checkers read its samples.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from contract.errors import ClusterError
from contract.events import cluster_sample, partition_state
from contract.history import HistoryWriter, RunClock


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    leader: int  # -1 when there is none
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    elr: tuple[int, ...] | None = None
    """Eligible Leader Replicas (KIP-966, KRaft from 3.8); None where the cluster gives none."""
    last_known_elr: tuple[int, ...] | None = None

    @property
    def isr_full(self) -> bool:
        return self.leader >= 0 and set(self.isr) == set(self.replicas)

    def to_event(self) -> dict[str, Any]:
        return partition_state(
            self.topic,
            self.partition,
            self.leader,
            self.leader_epoch,
            self.isr,
            self.elr,
            self.last_known_elr,
        )


@dataclass(frozen=True)
class ClusterSnapshot:
    controller: int | None
    """None: ZooKeeper names no controller (an election), or no KRaft node could say which."""
    controller_epoch: int | None
    live_brokers: tuple[int, ...]
    partitions: tuple[PartitionState, ...]
    controller_unknown: str | None = None
    """Why the controller is None in KRaft: what each node asked answered (None otherwise)."""

    def partition(self, topic: str, partition: int) -> PartitionState | None:
        return next((p for p in self.partitions if (p.topic, p.partition) == (topic, partition)), None)

    def to_event(self, time_ns: int) -> dict[str, Any]:
        """One line of history/cluster.jsonl."""
        partitions = [p.to_event() for p in self.partitions]
        return cluster_sample(
            time_ns,
            self.controller,
            self.controller_epoch,
            self.live_brokers,
            partitions,
            controller_unknown=self.controller_unknown,
        )

    def describe(self) -> str:
        parts = [f"controller={self.controller}", f"live_brokers={list(self.live_brokers)}"]
        parts += [
            f"{p.topic}/{p.partition}: leader={p.leader} isr={list(p.isr)} replicas={list(p.replicas)}"
            for p in self.partitions
        ]
        return "; ".join(parts)


class MetadataReader(Protocol):
    """What the cluster's metadata says now. Each read raises ClusterError when it cannot be had in
    time (the metadata nodes paused or cut off): it never hangs the caller."""

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot: ...

    def live_brokers(self) -> tuple[int, ...]: ...

    def topics(self) -> list[str]: ...

    def replica_counts(self, topic: str) -> tuple[int, ...]:
        """How many replicas each partition of `topic` has (empty when it does not exist)."""
        ...

    def close(self) -> None: ...


class ClusterSampler:
    """Appends a cluster.jsonl sample every `interval_s` from a background thread until stopped.

    Samples that cannot be taken (the metadata nodes paused or cut off by a fault) are skipped: the gap in
    the timeline is itself the evidence.
    """

    def __init__(
        self,
        reader: MetadataReader,
        writer: HistoryWriter,
        clock: RunClock,
        topics: list[str],
        interval_s: float = 0.5,
    ) -> None:
        self._reader, self._writer, self._clock = reader, writer, clock
        self._topics, self._interval_s = topics, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cluster-sampler", daemon=True)
        self.samples = 0
        self.last: ClusterSnapshot | None = None

    def __enter__(self) -> ClusterSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                snapshot = self._reader.snapshot(self._topics)
            except ClusterError:
                snapshot = None
            if snapshot is not None:
                self._writer.write(snapshot.to_event(self._clock.now_ns()))
                self.samples += 1
                self.last = snapshot
            self._stop.wait(self._interval_s)

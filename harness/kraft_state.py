"""Cluster state of a KRaft cluster, in the shape ZooKeeper's is read in (`harness.cluster_state`).

The active controller and its epoch come from DescribeQuorum, asked of every controller (the answer
of the newest epoch wins: a controller just woken from a pause may still answer as an old leader),
else of the brokers, which forward it, else of every controller again with a longer wait (a
controller slowed by a loaded machine: `QUORUM_RETRY_TIMEOUT_S`); when none could say, a snapshot
says so (`ClusterSnapshot.controller_unknown`: what each node answered); partitions and live brokers
from Metadata v8, asked of every broker; with `elr`, each partition's Eligible Leader Replicas from
DescribeTopicPartitions (Kafka 3.8+), asked of the first broker that answers, kept where its leader
epoch is the merged one. A broker cut off or paused by a fault still answers from its own stale
view, so the answers are merged: per partition the highest leader epoch wins (epochs only grow), and
among equal epochs, and for the live brokers, what most brokers say. No read waits longer than
`timeout_s` per node (QUORUM_RETRY_TIMEOUT_S in the quorum's last round).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from contract.errors import ClusterError
from harness import kafka_protocol
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.kafka_protocol import EligibleLeaders, Metadata, PartitionMetadata, Quorum, Reader

UNKNOWN_TOPIC = 3
QUORUM_RETRY_TIMEOUT_S = 2.0
"""How long each controller is given to describe the quorum once every node failed to in the
reader's `timeout_s`: a sample stays bounded (a few seconds), and a controller that is merely slow
is heard."""
T = TypeVar("T")


@dataclass(frozen=True)
class Endpoint:
    node_id: int
    ip: str
    port: int


def merge_partitions(answers: Sequence[Metadata]) -> list[PartitionState]:
    """One state per partition from every broker's answer: the highest leader epoch, then the most
    common (leader, ISR, replicas) among the answers with that epoch."""
    seen: dict[tuple[str, int], list[PartitionMetadata]] = {}
    for answer in answers:
        for part in answer.partitions:
            seen.setdefault((part.topic, part.partition), []).append(part)
    states = []
    for (topic, number), parts in sorted(seen.items()):
        newest = max(p.leader_epoch for p in parts)
        votes = Counter((p.leader, p.isr, p.replicas) for p in parts if p.leader_epoch == newest)
        leader, isr, replicas = votes.most_common(1)[0][0]
        states.append(PartitionState(topic, number, leader, newest, isr, replicas))
    return states


def with_eligible_leaders(
    partitions: Sequence[PartitionState], eligible: Sequence[EligibleLeaders]
) -> list[PartitionState]:
    """`partitions` with the ELR of `eligible` where it describes the same leader epoch (a broker's
    stale view of an older epoch is left out)."""
    by_partition = {(e.topic, e.partition): e for e in eligible}
    merged = []
    for state in partitions:
        found = by_partition.get((state.topic, state.partition))
        if found is not None and found.leader_epoch == state.leader_epoch:
            state = dataclasses.replace(state, elr=found.elr, last_known_elr=found.last_known_elr)
        merged.append(state)
    return merged


def merge_brokers(answers: Sequence[Metadata]) -> tuple[int, ...]:
    """The live brokers most answers name (the first answer's among equally common ones)."""
    return Counter(a.brokers for a in answers).most_common(1)[0][0]


class KRaftStateReader:
    def __init__(
        self,
        brokers: Sequence[Endpoint],
        controllers: Sequence[Endpoint],
        timeout_s: float = 0.5,
        *,
        elr: bool = False,
    ) -> None:
        self.brokers, self.controllers, self.timeout_s = list(brokers), list(controllers), timeout_s
        self.elr = elr

    def _ask(
        self,
        node: Endpoint,
        message: bytes,
        parse: Callable[[Reader], T],
        *,
        flexible: bool,
        timeout_s: float | None = None,
    ) -> T:
        """One request to `node`, its answer parsed; ClusterError when none comes in `timeout_s`
        (the reader's by default)."""
        wait_s = self.timeout_s if timeout_s is None else timeout_s
        return parse(kafka_protocol.exchange((node.ip, node.port), message, wait_s, flexible=flexible))

    def _metadata(self, topics: list[str] | None) -> list[Metadata]:
        answers, failures = [], []
        request = kafka_protocol.metadata_request(topics)
        for broker in self.brokers:
            try:
                answers.append(self._ask(broker, request, kafka_protocol.parse_metadata, flexible=False))
            except ClusterError as exc:
                failures.append(f"broker {broker.node_id}: {exc}")
        if not answers:
            raise ClusterError(f"no broker answered a Metadata request: {'; '.join(failures)}")
        return answers

    def quorum(self) -> Quorum:
        """The metadata quorum as its leader of the newest epoch describes it: every controller is
        asked, since a controller that was paused or cut off may still answer as the leader of an
        older epoch; the brokers (which forward the request) only when no controller answers; every
        controller again, with QUORUM_RETRY_TIMEOUT_S to answer, when no broker could either.
        ClusterError naming what each node answered when none could say."""
        unanswered: list[str] = []
        retry_s = max(self.timeout_s, QUORUM_RETRY_TIMEOUT_S)
        rounds = [
            (self.controllers, self.timeout_s),
            (self.brokers, self.timeout_s),
            (self.controllers, retry_s),
        ]
        for nodes, timeout_s in rounds:
            answers = []
            for node in nodes:
                seen = quorum_answer(node, timeout_s)
                if isinstance(seen, Quorum) and not seen.error_code and seen.leader >= 0:
                    answers.append(seen)
                else:
                    role = "controller" if nodes is self.controllers else "broker"
                    unanswered.append(f"{role} {node.node_id} in {timeout_s:g} s: {_why_not_described(seen)}")
            if answers:
                return max(answers, key=lambda q: q.leader_epoch)
        raise ClusterError(f"no node named the active controller ({'; '.join(unanswered) or 'no nodes'})")

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        named = sorted(topics) if topics is not None else None
        answers = self._metadata(named)
        partitions = merge_partitions(answers)
        if self.elr and named:
            partitions = with_eligible_leaders(partitions, self._eligible_leaders(named))
        try:
            quorum: Quorum | None = self.quorum()
            unknown = None
        except ClusterError as exc:  # the sample is still of the partitions and brokers it read
            quorum, unknown = None, str(exc)
        return ClusterSnapshot(
            controller=quorum.leader if quorum else None,
            controller_epoch=quorum.leader_epoch if quorum else None,
            live_brokers=merge_brokers(answers),
            partitions=tuple(partitions),
            controller_unknown=unknown,
        )

    def _eligible_leaders(self, topics: list[str]) -> list[EligibleLeaders]:
        """The first broker's answer (none when no broker answers: the sample goes without)."""
        request = kafka_protocol.describe_topic_partitions_request(topics)
        for broker in self.brokers:
            try:
                return self._ask(
                    broker, request, kafka_protocol.parse_describe_topic_partitions, flexible=True
                )
            except ClusterError:
                continue
        return []

    def live_brokers(self) -> tuple[int, ...]:
        return merge_brokers(self._metadata([]))

    def topics(self) -> list[str]:
        answers = self._metadata(None)
        return sorted({name for a in answers for name, error in a.topics.items() if error == 0})

    def replica_counts(self, topic: str) -> tuple[int, ...]:
        parts = merge_partitions([a for a in self._metadata([topic]) if a.topics.get(topic) != UNKNOWN_TOPIC])
        return tuple(len(p.replicas) for p in parts)

    def close(self) -> None:
        """Nothing to close: every request has its own connection."""


def quorum_answer(node: Endpoint, timeout_s: float) -> Quorum | str:
    """`node`'s answer to DescribeQuorum (a controller that does not lead answers with an error
    code), or why none came in `timeout_s`."""
    try:
        request = kafka_protocol.describe_quorum_request()
        answer = kafka_protocol.exchange((node.ip, node.port), request, timeout_s, flexible=True)
        return kafka_protocol.parse_describe_quorum(answer)
    except ClusterError as exc:
        return str(exc)


def _why_not_described(seen: Quorum | str) -> str:
    if isinstance(seen, str):
        return seen
    return f"error code {seen.error_code}" if seen.error_code else "no leader"

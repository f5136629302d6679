"""The smoke test behind `kchaos cluster smoke`: a real round trip through a fresh cluster of one
release, across the crash and restart of a leader."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from contract.errors import ClusterError
from faults.process import restart
from harness.clients import client_config
from harness.cluster import ClusterSpec, KafkaCluster
from harness.cluster_state import ClusterSnapshot
from harness.waiting import wait_until

SMOKE_TOPIC = "kchaos-smoke"
PARTITIONS = 3


@dataclass(frozen=True)
class SmokeResult:
    kafka_version: str
    sent: int
    acked: int
    read_back: int
    killed_leader: int
    """The broker that led partition 0 when half the writes were acknowledged, killed and restarted."""
    new_leader: int
    """The leader partition 0 had while it was down."""
    state: ClusterSnapshot
    """After the restart, every replica back in sync."""
    seconds: float

    @property
    def ok(self) -> bool:
        return self.acked == self.sent == self.read_back and self.new_leader != self.killed_leader


def run_smoke(
    messages: int = 1000, timeout_s: float = 60.0, kafka: str | None = None, metadata: str | None = None
) -> SmokeResult:
    """3 brokers and their metadata quorum (`metadata`: ClusterSpec.metadata), RF 3 and
    min.insync.replicas 2, on the release `kafka` names (ClusterSpec.kafka): half of `messages`
    acks=all writes, partition 0's leader killed, the other half written while it is down, the
    leader restarted and back in the ISR, every write read back."""
    started = time.monotonic()
    with KafkaCluster(
        ClusterSpec(brokers=3, broker_config={"min.insync.replicas": 2}, kafka=kafka, metadata=metadata),
        run_id=None,
    ) as cluster:
        cluster.create_topic(SMOKE_TOPIC, partitions=PARTITIONS, replication_factor=3)
        base = client_config(cluster.bootstrap_servers, cluster.kafka_version)
        producer = Producer({**base, "acks": "all", "message.timeout.ms": int(timeout_s * 1000)})
        acked: list[int] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                acked.append(int(msg.offset() or 0))

        def write(numbers: range) -> None:
            for i in numbers:
                producer.produce(
                    SMOKE_TOPIC, f"smoke-{i}".encode(), partition=i % PARTITIONS, on_delivery=delivered
                )
                producer.poll(0)
            producer.flush(timeout_s)

        half = messages // 2
        write(range(half))
        leader = cluster.leader_of(SMOKE_TOPIC, 0)
        leader.kill()
        new_leader = _wait_for_new_leader(cluster, leader.broker_id, timeout_s)
        write(range(half, messages))
        restart(cluster, [leader])
        cluster.wait_for_isr([SMOKE_TOPIC], timeout_s=timeout_s)
        read_back = _read_all(base, len(acked), timeout_s)
        return SmokeResult(
            str(cluster.kafka_version),
            messages,
            len(acked),
            read_back,
            leader.broker_id,
            new_leader,
            cluster.state([SMOKE_TOPIC]),
            time.monotonic() - started,
        )


def _wait_for_new_leader(cluster: KafkaCluster, old: int, timeout_s: float) -> int:
    def probe() -> tuple[bool, str]:
        try:
            state = cluster.state([SMOKE_TOPIC]).partition(SMOKE_TOPIC, 0)
        except ClusterError as exc:
            return False, str(exc)
        leader = state.leader if state else -1
        return leader not in (-1, old), f"partition 0 led by {leader}"

    seen = wait_until(probe, what=f"a leader other than {old} for {SMOKE_TOPIC}/0", timeout_s=timeout_s)
    return int(seen.rsplit(" ", 1)[1])


def _read_all(base: dict[str, object], expected: int, timeout_s: float) -> int:
    consumer = Consumer({**base, "group.id": "kchaos-smoke", "enable.auto.commit": False})
    consumer.assign([TopicPartition(SMOKE_TOPIC, p, 0) for p in range(PARTITIONS)])
    seen: set[bytes] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(seen) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                value = msg.value()
                if msg.error() is None and value is not None:
                    seen.add(value)
    finally:
        consumer.close()
    return len(seen)

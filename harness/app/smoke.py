"""The smoke test behind `kchaos cluster smoke`: a real round trip through a fresh cluster."""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from harness.clients import client_config
from harness.cluster import ClusterSpec, KafkaCluster
from harness.zkstate import ClusterSnapshot

SMOKE_TOPIC = "kchaos-smoke"


@dataclass(frozen=True)
class SmokeResult:
    sent: int
    acked: int
    read_back: int
    state: ClusterSnapshot
    seconds: float

    @property
    def ok(self) -> bool:
        return self.acked == self.sent == self.read_back


def run_smoke(messages: int = 1000, timeout_s: float = 60.0) -> SmokeResult:
    """3 brokers + ZooKeeper, RF 3 and min.insync.replicas 2, `messages` acks=all writes read back."""
    started = time.monotonic()
    with KafkaCluster(
        ClusterSpec(brokers=3, broker_config={"min.insync.replicas": 2}), run_id=None
    ) as cluster:
        cluster.create_topic(SMOKE_TOPIC, partitions=3, replication_factor=3)
        base = client_config(cluster.bootstrap_servers, cluster.kafka_version)
        acked: list[int] = []

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is None:
                acked.append(int(msg.offset() or 0))

        producer = Producer({**base, "acks": "all", "message.timeout.ms": int(timeout_s * 1000)})
        for i in range(messages):
            producer.produce(SMOKE_TOPIC, value=f"smoke-{i}".encode(), partition=i % 3, on_delivery=delivered)
            producer.poll(0)
        producer.flush(timeout_s)

        consumer = Consumer({**base, "group.id": "kchaos-smoke", "enable.auto.commit": False})
        consumer.assign([TopicPartition(SMOKE_TOPIC, p, 0) for p in range(3)])
        seen: set[bytes] = set()
        deadline = time.monotonic() + timeout_s
        while len(seen) < len(acked) and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                value = msg.value()
                if msg.error() is None and value is not None:
                    seen.add(value)
        consumer.close()
        return SmokeResult(
            messages, len(acked), len(seen), cluster.state([SMOKE_TOPIC]), time.monotonic() - started
        )

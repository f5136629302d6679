"""Helpers for fault tests: a replicated topic, state probes and real connectivity checks."""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import Producer

from contract.errors import ClusterError
from harness.broker_config import BROKER_PORT
from harness.clients import client_config
from harness.cluster import KafkaCluster
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.services import Node
from harness.waiting import wait_until

TOPIC = "chaos"


def make_topic(cluster: KafkaCluster, partitions: int = 1) -> PartitionState:
    """Create TOPIC (RF 3) and return partition 0's state with a full ISR."""
    cluster.create_topic(TOPIC, partitions=partitions, replication_factor=3)
    state = cluster.state([TOPIC]).partition(TOPIC, 0)
    assert state is not None and state.isr_full
    return state


def wait_leading(cluster: KafkaCluster, broker: int, timeout_s: float = 60.0) -> None:
    """Wait until `broker` acks an acks=1 write to TOPIC/0: it has finished becoming its leader.
    ZooKeeper names a leader before the broker has made itself one, which reads the topic's config
    from ZooKeeper: cut off from ZooKeeper in between, it never serves the partition."""

    def probe() -> tuple[bool, str]:
        acked, errors = produce(cluster, f"{cluster.broker(broker).ip}:{BROKER_PORT}", "1", timeout_ms=5000)
        return bool(acked), f"errors: {errors}"

    wait_until(probe, what=f"broker {broker} to ack a write to {TOPIC}/0 as its leader", timeout_s=timeout_s)


def wait_state(
    cluster: KafkaCluster, holds: Callable[[ClusterSnapshot], bool], what: str, timeout_s: float = 40.0
) -> ClusterSnapshot:
    """Wait until ZooKeeper's view of the cluster satisfies `holds`; return that view."""
    seen: list[ClusterSnapshot] = []

    def probe() -> tuple[bool, str]:
        try:
            snapshot = cluster.state([TOPIC])
        except ClusterError as exc:
            return False, str(exc)
        seen[:] = [snapshot]
        return holds(snapshot), snapshot.describe()

    wait_until(probe, what=what, timeout_s=timeout_s)
    return seen[0]


def p0(snapshot: ClusterSnapshot) -> PartitionState:
    state = snapshot.partition(TOPIC, 0)
    assert state is not None
    return state


def can_connect(source: Node, dest: Node) -> bool:
    """A real TCP connect from inside `source` to a listening port of `dest` (2 s timeout)."""
    port = 2181 if dest.role == "zookeeper" else BROKER_PORT
    code, _ = source.exec(["nc", "-z", "-w", "2", dest.ip, str(port)], timeout_s=5)
    return code == 0


UDP_PROBE_PORT = 9999


def udp_arrives(source: Node, dest: Node, within_s: float = 3.0) -> bool:
    """Does a UDP datagram sent from inside `source` reach `dest`? The one probe that sees a one-way
    cut: a TCP connect needs packets both ways. `dest` listens for one datagram, `source` sends one
    every 0.3 s, and the answer is whether `dest` received one within `within_s`."""
    got = "/tmp/kchaos-udp-probe"
    listen = f"rm -f {got}; (timeout {within_s + 2:g} nc -u -l -W 1 {UDP_PROBE_PORT} > {got} 2>&1 &)"
    code, output = dest.exec(["bash", "-c", listen], timeout_s=10)
    assert code == 0, output
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        source.exec(["bash", "-c", f"echo probe | nc -u -w 1 -q 0 {dest.ip} {UDP_PROBE_PORT}"], timeout_s=5)
        code, _ = dest.exec(["grep", "-q", "probe", got], timeout_s=5)
        if code == 0:
            return True
        time.sleep(0.3)  # the pace of the probe's datagrams, not a wait for readiness
    return False


def produce(
    cluster: KafkaCluster,
    bootstrap: str,
    acks: str,
    count: int = 1,
    timeout_ms: int = 5000,
    value: bytes = b"v",
) -> tuple[list[float], list[str]]:
    """Send `count` writes to TOPIC/0; return (latency in seconds of each ack, errors of the others)."""
    producer = Producer(
        client_config(
            bootstrap,
            cluster.kafka_version,
            acks=acks,
            **{"message.timeout.ms": timeout_ms, "retries": 0, "linger.ms": 0},
        )
    )
    latencies: list[float] = []
    errors: list[str] = []

    def sent_at(start: float) -> Callable[[object, object], None]:
        def done(err: object, _msg: object) -> None:
            if err is None:
                latencies.append(time.monotonic() - start)
            else:
                errors.append(str(err))

        return done

    for _ in range(count):
        producer.produce(TOPIC, value=value, partition=0, on_delivery=sent_at(time.monotonic()))
        producer.poll(0)
    producer.flush(timeout_ms / 1000 + 5)
    return latencies, errors

"""Link faults against a real cluster: measured produce latency, measured connection loss, and what
the kernel offers (the netem path is skipped, with the reason, on kernels without sch_netem)."""

from __future__ import annotations

import random
import statistics

import pytest
from faultkit import TOPIC, make_topic, produce

from faults import make_fault
from faults.base import FaultContext
from faults.iptables import leftover_rules
from faults.links import DEVICE, host_kernel_capabilities, kernel_capabilities
from harness.cluster import KafkaCluster
from harness.images import KafkaImage

pytestmark = pytest.mark.docker

VALUE_KB = 64


def _acks_all_latency(cluster: KafkaCluster, count: int = 8) -> float:
    """Median time to an acks=all ack of a 64 KB write (the leader must ship it to both followers)."""
    latencies, errors = produce(
        cluster,
        cluster.bootstrap_servers,
        acks="all",
        count=count,
        timeout_ms=30000,
        value=b"x" * VALUE_KB * 1024,
    )
    assert len(latencies) == count, errors
    return statistics.median(latencies)


def _qdisc(cluster: KafkaCluster, name: str) -> str:
    return cluster.node(name).exec(["tc", "qdisc", "show", "dev", DEVICE, "root"], timeout_s=10)[1]


def test_kernel_capabilities_are_probed_for_real(cluster: KafkaCluster, kafka_image: KafkaImage) -> None:
    caps = kernel_capabilities(cluster)
    print(caps.describe())  # shown with -s: what this machine's kernel offers
    assert caps.tbf and caps.statistic  # what every kernel this project targets has
    assert caps.netem or any("netem" in note for note in caps.notes)
    # What `kchaos doctor` says without a cluster (a scratch container's loopback) is the same.
    host = host_kernel_capabilities(kafka_image.tag)
    assert (host.netem, host.tbf, host.statistic) == (caps.netem, caps.tbf, caps.statistic), host.describe()
    assert all(
        "tbf" not in line and "netem" not in line for line in (_qdisc(cluster, n.name) for n in cluster.nodes)
    )  # probes leave nothing behind


def test_slow_leader_raises_acks_all_latency_and_heal_restores_it(cluster: KafkaCluster) -> None:
    make_topic(cluster)
    baseline = _acks_all_latency(cluster)
    fault = make_fault("slow", {"target": "leader", "topic": TOPIC, "rate_kbit": 2000})
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        leader = fault.targets[0]
        assert "tbf" in _qdisc(cluster, leader)
        slowed = _acks_all_latency(cluster)
    finally:
        fault.heal(FaultContext(cluster))
    # Two followers fetch 64 KB each through a 2 Mbit/s link: about 0.5 s more per write. Judged by
    # the rise alone: on a loaded machine the baseline itself can be seconds, and no multiple of it
    # is what the link adds.
    assert slowed - baseline > 0.2, f"median latency {baseline:.3f} s before, {slowed:.3f} s slowed"
    assert "tbf" not in _qdisc(cluster, leader)
    assert _acks_all_latency(cluster) < (baseline + slowed) / 2


def test_slow_with_netem_delay_and_jitter(cluster: KafkaCluster) -> None:
    caps = kernel_capabilities(cluster)
    if not caps.netem:
        pytest.skip(f"kernel has no sch_netem, so no delay/jitter path to test: {caps.describe()}")
    make_topic(cluster)
    fault = make_fault("slow", {"target": "all", "rate_kbit": 1_000_000, "delay_ms": 200, "jitter_ms": 20})
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        assert fault.detail["netem"] is True and "netem" in _qdisc(cluster, "kafka-1")
        assert _acks_all_latency(cluster, count=3) > 0.3  # request + replication fetch, each delayed
    finally:
        fault.heal(FaultContext(cluster))


def test_lossy_drops_a_share_of_connection_attempts(cluster: KafkaCluster) -> None:
    fault = make_fault("lossy", {"target": "kafka-1", "probability": 0.3})
    fault.start(FaultContext(cluster), random.Random(1))
    target, source = cluster.node("kafka-1"), cluster.node("kafka-2")
    try:
        # 30 fresh connects from another broker, each given 1 s (no retransmission comes that soon):
        # a connect needs the SYN in and the SYN-ACK out of the lossy node, so each gets through with
        # probability 0.7 * 0.7 = 0.49. The bounds below fail by chance about once in 4 million runs
        # (none through: 0.51^30; fewer than 3 lost: about 2.5e-7).
        script = f"for i in $(seq 30); do nc -z -w 1 {target.ip} 9092 && echo ok || echo lost; done"
        _, output = source.exec(["bash", "-c", script], timeout_s=90)
        _, counters = target.exec(["iptables", "-L", "-v", "-x", "-n"], timeout_s=10)  # our chain among all
    finally:
        fault.heal(FaultContext(cluster))
    ok, lost = output.count("ok\n"), output.count("lost\n")
    assert ok + lost == 30 and ok > 0 and lost >= 3, f"{ok} connects got through, {lost} were lost"
    dropped = int(next(line for line in counters.splitlines() if "statistic" in line).split()[0])
    assert dropped > 0
    assert not leftover_rules(target)
    assert all(source.exec(["nc", "-z", "-w", "2", target.ip, "9092"], timeout_s=5)[0] == 0 for _ in range(5))

"""Process faults against real clusters: effects checked in ZooKeeper's view of the cluster."""

from __future__ import annotations

import random
import time

import pytest
from faultkit import TOPIC, make_topic, p0, wait_state

from faults import make_fault
from faults.base import FaultContext
from harness import docker_env
from harness.cluster import KafkaCluster

pytestmark = pytest.mark.docker


def test_kill_leader_moves_leadership_and_restarted_broker_rejoins_isr(cluster: KafkaCluster) -> None:
    old = make_topic(cluster).leader
    fault = make_fault("kill", {"target": "leader", "topic": TOPIC, "partition": 0})
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        assert fault.targets == [f"kafka-{old}"]
        assert fault.detail == {"target": "leader", "topic": TOPIC, "partition": 0}
        assert cluster.broker(old).status() == "exited"
        moved = wait_state(
            cluster,
            lambda s: p0(s).leader not in (-1, old) and old not in p0(s).isr,
            f"leadership to move away from killed broker {old}",
        )
        assert old not in moved.live_brokers
    finally:
        fault.heal(FaultContext(cluster))
    after = cluster.wait_for_isr([TOPIC], timeout_s=60)
    assert old in p0(after).isr and old in after.live_brokers


def test_stop_deregisters_cleanly_and_heal_restarts(cluster: KafkaCluster) -> None:
    make_topic(cluster)
    fault = make_fault("stop", {"target": "kafka-2"})
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        # SIGTERM runs Kafka's controlled shutdown: by the time stop returns it has moved leadership off.
        state = cluster.state([TOPIC])
        assert 2 not in state.live_brokers and p0(state).leader not in (-1, 2)
    finally:
        fault.heal(FaultContext(cluster))
    assert 2 in cluster.wait_for_isr([TOPIC], timeout_s=60).partitions[0].isr


def test_pause_past_session_timeout_elects_new_leader_and_broker_reregisters(cluster: KafkaCluster) -> None:
    old = make_topic(cluster).leader
    fault = make_fault("pause", {"target": "leader", "topic": TOPIC})
    began = time.monotonic()
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        assert cluster.broker(old).status() == "paused"
        # zookeeper.session.timeout.ms is 6000: the frozen broker's session expires and the controller
        # elects another leader while the old one is still frozen, believing it leads.
        moved = wait_state(
            cluster,
            lambda s: old not in s.live_brokers and p0(s).leader not in (-1, old),
            f"ZooKeeper to drop paused broker {old} and elect a new leader",
            timeout_s=30,
        )
        assert old not in p0(moved).isr
        time.sleep(max(0.0, 10 - (time.monotonic() - began)))  # the fault's own duration: a 10 s pause
    finally:
        fault.heal(FaultContext(cluster))
    assert old in cluster.state([TOPIC]).live_brokers  # heal waits for re-registration
    assert old in p0(cluster.wait_for_isr([TOPIC], timeout_s=60)).isr


def _started_at(cluster: KafkaCluster, name: str) -> str:
    container = docker_env.client().containers.get(cluster.node(name).container_name)
    return str(container.attrs["State"]["StartedAt"])


def test_rolling_restart_restarts_every_broker_and_ends_with_full_isr(cluster: KafkaCluster) -> None:
    make_topic(cluster, partitions=3)
    before = {b.name: _started_at(cluster, b.name) for b in cluster.brokers}
    fault = make_fault("rolling-restart", {})
    fault.start(FaultContext(cluster), random.Random(1))
    fault.heal(FaultContext(cluster))
    assert sorted(fault.targets) == ["kafka-1", "kafka-2", "kafka-3"]
    assert all(_started_at(cluster, name) != started for name, started in before.items())
    state = cluster.state([TOPIC])
    assert state.live_brokers == (1, 2, 3) and all(p.isr_full for p in state.partitions)


def test_overlapping_process_faults_heal_in_any_order(cluster: KafkaCluster) -> None:
    # Each heal waits for its own broker only: the first one must not fail on the brokers another
    # fault still holds down (it did: "kafka-2 exited during startup").
    make_topic(cluster)
    faults = {
        name: make_fault(kind, {"target": name})
        for name, kind in (("kafka-1", "kill"), ("kafka-2", "kill"), ("kafka-3", "pause"))
    }
    for fault in faults.values():
        fault.start(FaultContext(cluster), random.Random(1))
    try:
        assert [cluster.node(n).status() for n in faults] == ["exited", "exited", "paused"]
        faults["kafka-1"].heal(FaultContext(cluster))  # while kafka-2 is dead and kafka-3 frozen
        assert 1 in cluster.state([TOPIC]).live_brokers
        assert cluster.node("kafka-2").status() == "exited"
        faults["kafka-3"].heal(FaultContext(cluster))
        assert cluster.node("kafka-3").status() == "running"
    finally:
        for fault in faults.values():
            fault.heal(FaultContext(cluster))  # idempotent: a second heal of a healed fault does nothing
    state = cluster.wait_for_isr([TOPIC], timeout_s=90)
    assert state.live_brokers == (1, 2, 3) and p0(state).isr_full

"""Network partitions against real clusters: links checked by real TCP connects, effects in ZooKeeper."""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from itertools import permutations

import pytest
from faultkit import TOPIC, can_connect, make_topic, p0, produce, udp_arrives, wait_leading, wait_state

from contract.errors import TargetError
from faults import make_fault
from faults.base import FaultContext
from faults.iptables import leftover_rules
from harness.cluster import KafkaCluster

pytestmark = pytest.mark.docker


def reachability(cluster: KafkaCluster) -> dict[tuple[str, str], bool]:
    """Every ordered pair of nodes -> can the first open a TCP connection to the second."""
    pairs = list(permutations(cluster.nodes, 2))
    with ThreadPoolExecutor(max_workers=len(pairs)) as pool:
        results = list(pool.map(lambda pair: can_connect(*pair), pairs))
    return {(a.name, b.name): ok for (a, b), ok in zip(pairs, results, strict=True)}


def assert_cuts_exactly(cluster: KafkaCluster, cut: set[frozenset[str]]) -> None:
    seen = reachability(cluster)
    wrong = {pair: ok for pair, ok in seen.items() if ok == (frozenset(pair) in cut)}
    assert not wrong, (
        f"links not as claimed (pair -> reachable): {wrong}; claimed cuts: {sorted(map(sorted, cut))}"
    )


def test_shapes_cut_exactly_their_links_and_heal_restores_all(cluster: KafkaCluster) -> None:
    make_topic(cluster)
    rng = random.Random(7)
    for shape, target in (
        ("halves", "kafka-1"),
        ("ring", None),
        ("bridge", "kafka-2"),
        ("isolate-from-zookeeper", "kafka-3"),
    ):
        fault = make_fault("partition", {"shape": shape} | ({"target": target} if target else {}))
        fault.start(FaultContext(cluster), rng)
        try:
            claimed = {frozenset(c.split("|")) for c in fault.detail["cuts"]}
            if shape == "halves":
                assert claimed == {frozenset(("kafka-1", n)) for n in ("kafka-2", "kafka-3", "zk-1")}
            if shape == "ring":  # 4 nodes in a ring: each is cut from exactly the one opposite it
                order = fault.detail["ring"]
                assert claimed == {frozenset((order[0], order[2])), frozenset((order[1], order[3]))}
            assert_cuts_exactly(cluster, claimed)
        finally:
            fault.heal(FaultContext(cluster))
        assert all(reachability(cluster).values()), f"after healing {shape} some link is still cut"
    assert all(not leftover_rules(node) for node in cluster.nodes)
    assert p0(cluster.wait_for_isr([TOPIC], timeout_s=60)).isr_full


def test_overlapping_partitions_heal_independently(cluster: KafkaCluster) -> None:
    # Explicit timelines may overlap: both faults put rules on zk-1, and healing the first must
    # leave the second's there (each side of a cut drops, so only the rules show a half-healed cut).
    make_topic(cluster)
    first, second = (
        make_fault("partition", {"shape": "isolate-from-zookeeper", "target": target})
        for target in ("kafka-1", "kafka-2")
    )
    first_ip, second_ip = (f"{cluster.node(name).ip}/32" for name in ("kafka-1", "kafka-2"))
    first.start(FaultContext(cluster), random.Random(1))
    try:
        second.start(FaultContext(cluster), random.Random(2))
        try:
            assert_cuts_exactly(cluster, {frozenset(("kafka-1", "zk-1")), frozenset(("kafka-2", "zk-1"))})
            first.heal(FaultContext(cluster))
            rules = {node.name: leftover_rules(node) for node in cluster.nodes}
            assert not [rule for node_rules in rules.values() for rule in node_rules if first_ip in rule]
            assert [rule for rule in rules["zk-1"] if second_ip in rule], rules
            assert_cuts_exactly(cluster, {frozenset(("kafka-2", "zk-1"))})
        finally:
            second.heal(FaultContext(cluster))
    finally:
        first.heal(FaultContext(cluster))
    assert all(reachability(cluster).values()), "after healing both partitions some link is still cut"
    assert all(not leftover_rules(node) for node in cluster.nodes)
    assert p0(cluster.wait_for_isr([TOPIC], timeout_s=90)).isr_full


def test_cuts_among_targets_and_one_way_cuts(cluster: KafkaCluster) -> None:
    state = make_topic(cluster)
    followers = {f"kafka-{b}" for b in state.replicas if b != state.leader}
    leader, zk = cluster.broker(state.leader), cluster.node("zk-1")
    among = make_fault("partition", {"shape": "among", "topic": TOPIC, "partition": 0})
    among.start(FaultContext(cluster), random.Random(1))
    try:
        assert set(among.targets) == followers and among.detail["leader"] == leader.name
        assert_cuts_exactly(cluster, {frozenset(followers)})  # the followers' one link, nothing else
    finally:
        among.heal(FaultContext(cluster))
    assert all(reachability(cluster).values()), "after healing `among` some link is still cut"
    one_way = make_fault(
        "partition",
        {"shape": "between", "target": "leader", "peers": "followers", "direction": "out", "topic": TOPIC},
    )
    one_way.start(FaultContext(cluster), random.Random(1))
    try:
        assert one_way.targets == [leader.name]
        assert one_way.detail["cuts"] == sorted(f"{leader.name}>{f}" for f in followers)
        for follower in (cluster.node(f) for f in followers):
            assert udp_arrives(follower, leader), f"{follower.name} -> {leader.name} should still arrive"
            assert not udp_arrives(leader, follower), f"{leader.name} -> {follower.name} should be dropped"
        assert udp_arrives(leader, zk) and udp_arrives(zk, leader), "the leader's ZooKeeper link is not cut"
    finally:
        one_way.heal(FaultContext(cluster))
    assert all(not leftover_rules(node) for node in cluster.nodes)
    assert all(udp_arrives(leader, cluster.node(f)) for f in followers), "after heal the leader reaches all"


def test_isolate_from_followers_shrinks_isr_to_the_leader(cluster: KafkaCluster) -> None:
    leader = make_topic(cluster).leader
    fault = make_fault("partition", {"shape": "isolate-from-followers", "topic": TOPIC, "partition": 0})
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        assert fault.targets == [f"kafka-{leader}"]
        node = cluster.broker(leader)
        assert can_connect(node, cluster.node("zk-1"))
        assert not any(can_connect(node, b) for b in cluster.brokers if b.broker_id != leader)
        # Followers stop fetching; after replica.lag.time.max.ms the leader, which still reaches
        # ZooKeeper, shrinks the ISR to itself and stays leader.
        shrunk = wait_state(cluster, lambda s: p0(s).isr == (leader,), "the ISR to shrink to the leader", 45)
        assert p0(shrunk).leader == leader
        # Now both followers lag: the roles that name them resolve from this live state.
        followers = {f"kafka-{b}" for b in p0(shrunk).replicas if b != leader}
        lagging = make_fault("pause", {"target": "lagging-follower", "pick": "isr-shrunk", "topic": TOPIC})
        lagging.resolve(FaultContext(cluster), random.Random(3))  # type: ignore[attr-defined]
        assert lagging.targets[0] in followers and lagging.detail["pick"] == ["isr-shrunk"]
        with pytest.raises(TargetError, match="no partition chaos/\\* is isr-full now"):
            make_fault("kill", {"target": "leader", "pick": "isr-full", "topic": TOPIC}).start(
                FaultContext(cluster), random.Random(1)
            )
    finally:
        fault.heal(FaultContext(cluster))
    assert p0(cluster.wait_for_isr([TOPIC], timeout_s=60)).isr_full


def test_isolated_leader_is_replaced_but_still_acks_acks1_writes(
    cluster_factory: Callable[..., KafkaCluster],
) -> None:
    # A long replica lag keeps the old leader from trying to shrink its ISR through the ZooKeeper it
    # cannot reach (which would block its writes) during the test: we want the split brain visible.
    # Longer than the waits below together (90 s for the new leader, 30 s for the writes), however
    # slow the machine: the old leader cannot begin to shrink while it is still being asked.
    cluster = cluster_factory(
        brokers=3, broker_config={"min.insync.replicas": 2, "replica.lag.time.max.ms": 300_000}
    )
    old = make_topic(cluster).leader
    wait_leading(cluster, old)  # isolated mid-way through becoming leader, it never acked (seen in CI)
    fault = make_fault("partition", {"shape": "isolate", "target": "leader", "topic": TOPIC})
    fault.start(FaultContext(cluster), random.Random(1))
    try:
        assert not any(can_connect(cluster.broker(old), n) for n in cluster.nodes if n.name != f"kafka-{old}")
        moved = wait_state(
            cluster,
            lambda s: p0(s).leader not in (-1, old),
            f"the controller to elect a leader other than isolated broker {old}",
            90,  # session timeout (6 s) plus the controller's work, on a machine that may be loaded
        )
        assert old not in moved.live_brokers
        acked, errors = produce(
            cluster, f"{cluster.broker(old).ip}:9092", acks="1", count=5, timeout_ms=30000
        )
        assert len(acked) == 5, (
            f"the isolated old leader should still ack acks=1 writes (zombie leader): {errors}"
        )
    finally:
        fault.heal(FaultContext(cluster))
    after = cluster.wait_for_isr([TOPIC], timeout_s=90)
    assert old in after.live_brokers and p0(after).isr_full


def test_unknown_target_is_a_clear_error(cluster: KafkaCluster) -> None:
    with pytest.raises(TargetError, match=r"kafka-9.*kafka-1, kafka-2, kafka-3, zk-1"):
        make_fault("partition", {"target": "kafka-9"}).start(FaultContext(cluster), random.Random(1))
    with pytest.raises(TargetError, match="no partition nope/"):
        make_fault("kill", {"target": "leader", "topic": "nope"}).start(
            FaultContext(cluster), random.Random(1)
        )
    assert all(node.status() == "running" for node in cluster.nodes)

"""Unit tests (no Docker): target resolution on a fake snapshot, partition shapes, the registry,
and the schedule's determinism."""

from __future__ import annotations

import math
import random
import re
from itertools import pairwise
from types import SimpleNamespace

import pytest

from contract.coordinators import (
    coordinator_partition,
    group_offsets_partition,
    java_string_hash,
    offsets_partitions,
)
from contract.errors import ConfigError, FaultError, TargetError
from faults import Fault, available, make_fault
from faults.base import FaultContext
from faults.iptables import drop_to, new_chain
from faults.network import cut_links, link, one_way
from faults.schedule import Schedule, ScheduleEntry
from faults.targets import (
    TARGETS,
    choose,
    confirmed_coordinator,
    coordinated_group,
    coordinated_transactional_id,
    resolve,
    validate_target,
)
from harness.broker_config import KafkaVersion
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.kafka_protocol import Coordinator
from harness.workload import WorkloadHandles

BROKERS = ["kafka-1", "kafka-2", "kafka-3", "kafka-4", "kafka-5"]
ZKS = ["zk-1"]
SNAPSHOT = ClusterSnapshot(
    controller=2,
    controller_epoch=4,
    live_brokers=(1, 2, 3, 5),
    partitions=(
        PartitionState("t", 0, 3, 1, (3, 1), (3, 1, 2)),
        PartitionState("t", 1, -1, 2, (), (1, 2, 4)),
        PartitionState("u", 0, 5, 0, (5,), (5, 4, 3)),
    ),
)


def pick(target: str, seed: int = 1, **where: object) -> list[str]:
    return choose(target, SNAPSHOT, BROKERS, ZKS, random.Random(seed), **where).names  # type: ignore[arg-type]


def test_leader_of_given_partition_and_detail() -> None:
    choice = choose("leader", SNAPSHOT, BROKERS, ZKS, random.Random(1), topic="t", partition=0)
    assert choice.names == ["kafka-3"] and choice.detail == {"topic": "t", "partition": 0}


def test_random_leader_only_among_partitions_with_a_leader() -> None:
    assert {pick("leader", seed)[0] for seed in range(40)} == {"kafka-3", "kafka-5"}


def test_leaderless_and_missing_partitions_are_target_errors() -> None:
    with pytest.raises(TargetError, match="no leader now for t/1"):
        pick("leader", topic="t", partition=1)
    with pytest.raises(TargetError, match=r"no partition t/7; partitions are t/0, t/1, u/0"):
        pick("leader", topic="t", partition=7)


def test_follower_is_an_in_sync_follower_of_a_led_partition() -> None:
    choice = choose("follower", SNAPSHOT, BROKERS, ZKS, random.Random(1), topic="t", partition=0)
    # kafka-2 is a replica of t/0 but out of sync; t/1 has no leader; u/0's leader is alone in its ISR.
    assert choice.names == ["kafka-1"]
    assert choice.detail == {"topic": "t", "partition": 0, "leader": "kafka-3"}
    assert {pick("follower", seed)[0] for seed in range(40)} == {"kafka-1"}
    with pytest.raises(TargetError, match="no in-sync follower of a leader now for u/0"):
        pick("follower", topic="u")
    with pytest.raises(TargetError, match=r"target 'follower': no partition v/\*"):
        pick("follower", topic="v")


def test_followers_lagging_follower_and_replicas_of_a_partition() -> None:
    assert pick("followers", topic="t", partition=0) == ["kafka-1"]
    lagging = choose("lagging-follower", SNAPSHOT, BROKERS, ZKS, random.Random(1), topic="t")
    assert lagging.names == ["kafka-2"] and lagging.detail == {
        "topic": "t",
        "partition": 0,
        "leader": "kafka-3",
    }
    # u/0: kafka-4 and kafka-3 are out of sync; each is picked by some seed.
    assert {pick("lagging-follower", s, topic="u")[0] for s in range(40)} == {"kafka-3", "kafka-4"}
    assert pick("replicas", topic="u") == ["kafka-5", "kafka-4", "kafka-3"]
    assert pick("replicas", topic="t", partition=1) == ["kafka-1", "kafka-2", "kafka-4"]  # leaderless too
    with pytest.raises(TargetError, match="no in-sync follower of a leader now for t/1"):
        pick("followers", topic="t", partition=1)


WIDE = ClusterSnapshot(
    controller=2,
    controller_epoch=1,
    live_brokers=(1, 2, 3),
    partitions=(
        PartitionState("w", 0, 2, 0, (2, 1, 3), (2, 1, 3)),  # the controller leads
        PartitionState("w", 1, 3, 0, (3, 2, 1), (3, 2, 1)),  # the controller follows
        PartitionState("w", 2, 1, 0, (1,), (1, 3)),  # the controller is no replica; ISR shrunk
    ),
)


def wide(target: str, seed: int = 1, pick: tuple[str, ...] = ()) -> tuple[list[str], int]:
    choice = choose(target, WIDE, ["kafka-1", "kafka-2", "kafka-3"], ZKS, random.Random(seed), pick=pick)
    return choice.names, choice.detail["partition"]


def test_pick_chooses_the_partition_by_the_roles_of_its_replicas() -> None:
    for seed in range(20):
        assert wide("followers", seed, ("controller-follows",)) == (["kafka-2", "kafka-1"], 1)
        assert wide("leader", seed, ("controller-leads",)) == (["kafka-2"], 0)
        assert wide("replicas", seed, ("controller-apart",)) == (["kafka-1", "kafka-3"], 2)
        assert wide("lagging-follower", seed, ("isr-shrunk",)) == (["kafka-3"], 2)
        assert wide("leader", seed, ("isr-full", "controller-follows")) == (["kafka-3"], 1)
    assert {wide("leader", seed, ("isr-full",))[1] for seed in range(40)} == {0, 1}
    with pytest.raises(
        TargetError,
        match=r"no partition \*/\* is controller-leads and isr-shrunk now "
        r"\(controller=2; w/0 leader=2 isr=\[2, 1, 3\]",
    ):
        wide("leader", pick=("controller-leads", "isr-shrunk"))


def test_controller_trails_when_the_leaders_death_elects_another_follower() -> None:
    def trails(isr: tuple[int, ...]) -> bool:
        state = PartitionState("w", 0, isr[0], 0, isr, (1, 2, 3))
        snapshot = ClusterSnapshot(2, 1, (1, 2, 3), (state,))
        try:
            choose(
                "leader",
                snapshot,
                ["kafka-1", "kafka-2", "kafka-3"],
                ZKS,
                random.Random(1),
                pick=("controller-trails",),
            )
        except TargetError:
            return False
        return True

    assert trails((3, 1, 2)) and trails((1, 3, 2))  # 1 or 3 is elected; the controller, 2, is left
    assert not trails((3, 2, 1))  # the controller itself is elected
    assert not trails((2, 1, 3)) and not trails((3, 1))  # it leads; it is out of sync


def test_pick_is_checked_when_the_fault_is_made() -> None:
    assert make_fault("kill", {"target": "leader", "pick": "controller-follows, isr-full"}).pick == (  # type: ignore[attr-defined]
        "controller-follows",
        "isr-full",
    )
    with pytest.raises(ConfigError, match=r"pick must be words among controller-leads, .*got 'bossy'"):
        make_fault("kill", {"target": "leader", "pick": "bossy"})
    with pytest.raises(ConfigError, match="pick chooses a partition: target must be one of leader, follower"):
        make_fault("pause", {"target": "controller", "pick": "isr-full"})


def test_keywords() -> None:
    assert pick("controller") == ["kafka-2"]
    assert {pick("one", s)[0] for s in range(60)} == {"kafka-1", "kafka-2", "kafka-3", "kafka-5"}  # live only
    assert len(pick("minority")) == 2 and len(pick("majority")) == 3
    assert pick("all") == BROKERS and pick("zookeeper") == ZKS
    assert pick("kafka-4, zk-1") == ["kafka-4", "zk-1"]


def test_unknown_node_lists_what_exists() -> None:
    with pytest.raises(TargetError, match=r"no node named kafka-9; targets are leader, .*kafka-1, .*zk-1"):
        pick("kafka-1,kafka-9")


def test_same_seed_same_choice() -> None:
    assert [pick("minority", 3) for _ in range(3)] == [pick("minority", 3)] * 3


def test_shapes_cut_the_links_they_claim() -> None:
    every = [*BROKERS, *ZKS]
    rng = random.Random(5)
    isolate, _ = cut_links("isolate", ["kafka-1"], BROKERS, ZKS, rng)
    assert isolate == {link("kafka-1", n) for n in every if n != "kafka-1"}
    from_zk, _ = cut_links("isolate-from-zookeeper", ["kafka-1"], BROKERS, ZKS, rng)
    assert from_zk == {link("kafka-1", "zk-1")}
    from_followers, _ = cut_links("isolate-from-followers", ["kafka-1"], BROKERS, ZKS, rng)
    assert from_followers == {link("kafka-1", b) for b in BROKERS[1:]}
    halves, detail = cut_links("halves", ["kafka-1", "kafka-2"], BROKERS, ZKS, rng)
    assert len(halves) == 2 * 4 and detail["sides"][0] == ["kafka-1", "kafka-2"]
    ring, detail = cut_links("ring", every, BROKERS, ZKS, rng)
    order = detail["ring"]
    for i, node in enumerate(order):  # each node keeps exactly its two neighbours
        kept = {n for n in every if n != node and link(node, n) not in ring}
        assert kept == {order[i - 1], order[(i + 1) % len(order)]}
    bridge, detail = cut_links("bridge", ["kafka-3"], BROKERS, ZKS, rng)
    left, right = detail["sides"]
    assert bridge == {link(a, b) for a in left for b in right} and "kafka-3" not in left + right
    among, _ = cut_links("among", ["kafka-1", "kafka-2", "kafka-3"], BROKERS, ZKS, rng)
    assert among == {link("kafka-1", "kafka-2"), link("kafka-1", "kafka-3"), link("kafka-2", "kafka-3")}
    between, detail = cut_links(
        "between", ["kafka-1"], BROKERS, ZKS, rng, peers=["kafka-1", "kafka-4", "zk-1"]
    )
    assert (
        between == {link("kafka-1", "kafka-4"), link("kafka-1", "zk-1")} and detail["peers"][1] == "kafka-4"
    )


def test_one_way_cuts_drop_only_what_the_targets_send() -> None:
    cuts = {link("kafka-1", "kafka-4"), link("kafka-1", "kafka-2"), link("kafka-2", "zk-1")}
    assert one_way(cuts, ["kafka-1"]) == [("kafka-1", "kafka-2"), ("kafka-1", "kafka-4")]
    assert one_way(cuts, ["kafka-1", "kafka-2"]) == [
        ("kafka-1", "kafka-2"),
        ("kafka-1", "kafka-4"),
        ("kafka-2", "kafka-1"),
        ("kafka-2", "zk-1"),
    ]
    assert drop_to(["10.0.0.4"]) == ["-d 10.0.0.4 -j DROP"]  # on OUTPUT only can a packet go to a peer


def test_partition_params_are_checked_when_the_fault_is_made() -> None:
    fault = make_fault("partition", {"shape": "between", "target": "leader", "peers": "followers"})
    assert fault.peers == "followers" and fault.direction == "both"  # type: ignore[attr-defined]
    assert make_fault("partition", {"shape": "among"}).target == "followers"  # type: ignore[attr-defined]
    assert "still receive" in make_fault("partition", {"shape": "isolate", "direction": "out"}).describe()
    for params, error in [
        ({"shape": "between"}, "'peers' .* is needed by shape 'between', and only by it"),
        ({"shape": "halves", "peers": "one"}, "'peers' .* is needed by shape 'between', and only by it"),
        ({"shape": "among", "direction": "out"}, "shape 'among' cuts links with no target side"),
        ({"shape": "isolate", "direction": "in"}, "'direction' must be one of both, out, got 'in'"),
    ]:
        with pytest.raises(ConfigError, match=error):
            make_fault("partition", params)


def test_every_fault_gets_an_iptables_chain_of_its_own() -> None:
    names = [new_chain("PART"), new_chain("PART"), new_chain("LOSS")]
    assert len(set(names)) == 3
    assert all(re.fullmatch(r"KCHAOS-(PART|LOSS)-\d+-\d+", name) for name in names), names
    # With Linux's largest process id and many faults, still within iptables' 28 characters.
    assert len(re.sub(r"\d+-\d+$", "4194304-99999", names[2])) <= 28


def test_registry_and_param_validation() -> None:
    names = [name for name, _ in available()]
    assert names == sorted(
        [
            *("kill", "stop", "pause", "rolling-restart", "partition", "slow", "lossy", "power-loss"),
            *("kill-member", "freeze-member", "leave-member", "freeze-producer"),
            *("disk-full", "fsync-error", "slow-fsync"),
        ]
    )
    assert all(isinstance(make_fault(name, {}), Fault) for name in names)
    with pytest.raises(
        ConfigError, match=r"no param 'rate'; valid params: target, topic, partition, pick, rate_kbit"
    ):
        make_fault("slow", {"rate": 5})
    with pytest.raises(ConfigError, match=r"shape.*must be one of isolate"):
        make_fault("partition", {"shape": "square"})
    with pytest.raises(ConfigError, match=r"probability.*expected a number from 0 to 1, got 2"):
        make_fault("lossy", {"probability": "2"})
    with pytest.raises(
        ConfigError, match="unknown fault 'melt'; known faults: disk-full, freeze-member, freeze-producer"
    ):
        make_fault("melt", {})


FAULTS = [("kill", {"target": "leader"}), ("partition", {"shape": "halves"}), ("pause", {})]


def test_same_seed_same_schedule_and_other_seed_differs() -> None:
    def plan(seed: int) -> Schedule:
        return Schedule.generate(seed, duration_s=600, faults=FAULTS, interval_s=10, fault_duration_s=5)

    assert plan(7) == plan(7)
    assert plan(7) != plan(8)
    entries = plan(7).entries
    assert {e.fault for e in entries} == {"kill", "partition", "pause"}
    assert all(e.stop_s - e.start_s == pytest.approx(5) and e.stop_s <= 600 for e in entries)
    assert all(b.start_s - a.stop_s >= 5 - 1e-9 for a, b in pairwise(entries))


def test_sequence_mode_round_robin() -> None:
    entries = Schedule.generate(1, 100, FAULTS, interval_s=4, fault_duration_s=2, mode="sequence").entries
    assert [e.fault for e in entries[:6]] == ["kill", "partition", "pause"] * 2


def test_schedule_validation() -> None:
    with pytest.raises(ConfigError, match="no param 'colour'"):
        Schedule.generate(1, 60, [("kill", {"colour": "red"})], 5, 5)
    with pytest.raises(ConfigError, match="mode 'shuffle'"):
        Schedule.generate(1, 60, FAULTS, 5, 5, mode="shuffle")
    with pytest.raises(ConfigError, match="start_s < stop_s"):
        Schedule.from_entries([{"start_s": 5, "stop_s": 5, "fault": "kill"}])
    for stop in (math.inf, math.nan, 10**400):
        with pytest.raises(ConfigError, match="schedule entry 0"):
            Schedule.from_entries([{"start_s": 5, "stop_s": stop, "fault": "kill"}])


@pytest.mark.parametrize(
    ("duration_s", "interval_s", "fault_duration_s"),
    [(math.inf, 5, 5), (math.nan, 5, 5), (60, math.nan, 5), (60, 5, math.inf), (1e300, 5, 5)],
)
def test_generate_rejects_endless_schedules(
    duration_s: float, interval_s: float, fault_duration_s: float
) -> None:
    # Each of these used to loop until memory ran out.
    with pytest.raises(ConfigError, match="must be above 0 and at most 604800"):
        Schedule.generate(1, duration_s, FAULTS, interval_s, fault_duration_s)


def test_generate_caps_the_number_of_faults() -> None:
    with pytest.raises(ConfigError, match="more than 10000 faults"):
        Schedule.generate(1, 604800, FAULTS, 0.1, 0.1)
    explicit = Schedule.from_entries(
        [
            {"start_s": 9, "stop_s": 12, "fault": "pause"},
            ScheduleEntry(1, 3, "kill", {"target": "controller"}),
        ]
    )
    assert [e.fault for e in explicit.entries] == ["kill", "pause"]


def test_a_coordinator_target_names_its_group_when_there_are_several() -> None:
    assert coordinated_group("coordinator", ["g-alo"]) == "g-alo"
    assert coordinated_group("coordinator:g-amo", ["g-alo", "g-amo"]) == "g-amo"
    assert coordinated_group("leader", ["g-alo"]) is None
    with pytest.raises(TargetError, match="say whose, one of coordinator:g-alo, coordinator:g-amo"):
        coordinated_group("coordinator", ["g-alo", "g-amo"])
    with pytest.raises(TargetError, match="no group 'g-x'"):
        coordinated_group("coordinator:g-x", ["g-alo"])
    with pytest.raises(TargetError, match="no consumer groups"):
        coordinated_group("coordinator", [])


def test_the_coordinator_partition_is_kafkas_abs_of_the_java_hash() -> None:
    assert java_string_hash("g-alo") == 96559934
    assert java_string_hash("g-zombie") == -292557236  # negative: Math.abs, not a mask
    assert coordinator_partition("g-zombie", 5) == 1  # DescribeGroups on 0.9.0.1 named partition 1's leader
    assert coordinator_partition("g-alo", 50) == 96559934 % 50


def test_a_txn_coordinator_target_names_its_transactional_id_when_there_are_several() -> None:
    assert coordinated_transactional_id("txn-coordinator", ["kchaos-tx-0"]) == "kchaos-tx-0"
    assert coordinated_transactional_id("txn-coordinator:tx-b", ["tx-a", "tx-b"]) == "tx-b"
    assert coordinated_transactional_id("coordinator:g-alo", ["tx-a"]) is None  # the group's, not this
    assert coordinated_group("txn-coordinator:tx-a", ["g-alo"]) is None
    with pytest.raises(TargetError, match="say whose, one of txn-coordinator:tx-a, txn-coordinator:tx-b"):
        coordinated_transactional_id("txn-coordinator", ["tx-a", "tx-b"])
    with pytest.raises(
        TargetError, match=r"'txn-coordinator:tx-x': no transactional.id 'tx-x' \(transactional.ids: tx-a\)"
    ):
        coordinated_transactional_id("txn-coordinator:tx-x", ["tx-a"])
    with pytest.raises(TargetError, match="runs no transactional producer"):
        coordinated_transactional_id("txn-coordinator:tx-a", [])


def test_txn_coordinator_targets_are_valid_at_config_time() -> None:
    assert validate_target(" txn-coordinator:kchaos-tx-0 ") == "txn-coordinator:kchaos-tx-0"
    assert validate_target("txn-coordinator") == "txn-coordinator" and "txn-coordinator" in TARGETS
    with pytest.raises(ValueError, match=r"txn-coordinator:T for transactional\.id T"):
        validate_target("txn-coordinatr:kchaos-tx-0")
    with pytest.raises(ValueError, match="got 'txn:kchaos-tx-0'"):
        validate_target("txn:kchaos-tx-0")


def test_the_transaction_coordinator_partition_hashes_as_the_groups_does() -> None:
    # Java's "kchaos-tx-0".hashCode() is 48116735 and "pipe-tx".hashCode() -566251773 (jshell).
    assert coordinator_partition("kchaos-tx-0", 50) == 35  # 50: transaction.state.log.num.partitions
    assert coordinator_partition("pipe-tx", 50) == 23  # Math.abs of a negative hash


def test_findcoordinator_must_name_the_partitions_leader() -> None:
    named_2 = Coordinator(0, None, 2, "10.0.0.2", 9092)
    partition = "__transaction_state/35"
    assert confirmed_coordinator("txn-coordinator:t", named_2, "kafka-2", partition) == "kafka-2"
    with pytest.raises(
        TargetError,
        match=r"^target txn-coordinator:t: FindCoordinator names kafka-2 \(10.0.0.2:9092\) but "
        r"__transaction_state/35 is led by kafka-3$",
    ):
        confirmed_coordinator("txn-coordinator:t", named_2, "kafka-3", partition)
    unavailable = Coordinator(15, "The coordinator is not available.", -1, "", -1)
    with pytest.raises(
        TargetError,
        match=r"FindCoordinator answered COORDINATOR_NOT_AVAILABLE: The coordinator is not available. "
        r"\(__transaction_state/35 is led by kafka-1\)",
    ):
        confirmed_coordinator("txn-coordinator:t", unavailable, "kafka-1", partition)


def test_a_release_without_transactions_has_no_txn_coordinator() -> None:
    before = SimpleNamespace(kafka_version=KafkaVersion.parse("0.10.2.2"))
    context = FaultContext(before, WorkloadHandles(transactional_ids=["t"]))  # type: ignore[arg-type]
    with pytest.raises(TargetError, match=r"txn-coordinator:t: Kafka 0\.10\.2\.2 has no transactions"):
        resolve(context, "txn-coordinator", random.Random(1))


def test_a_groups_offsets_partition_counts_run_json_partitions_over_the_sampled_ones() -> None:
    declared = offsets_partitions({"offsets_topic": {"partitions": 50, "replication_factor": 3}})
    assert declared == 50
    # Only two partitions were sampled: the count is still run.json's 50, not 8.
    assert group_offsets_partition("g-alo", declared, [3, 7]) == 96559934 % 50
    # An older run.json without the count: the sampled partitions are all there is.
    assert offsets_partitions({"offsets_topic": {"error": "ZooKeeper gone"}}) is None
    assert group_offsets_partition("g-alo", None, [0, 4]) == 96559934 % 5
    assert group_offsets_partition("g-alo", None, []) is None


# -- KRaft: the controller is a quorum voter, dedicated (controller-N, node id 100+N) or a broker -----
CONTROLLERS = ["controller-1", "controller-2", "controller-3"]
KRAFT = ClusterSnapshot(
    controller=102, controller_epoch=9, live_brokers=(1, 2, 3), partitions=SNAPSHOT.partitions
)


def pick_kraft(
    target: str, seed: int = 1, voters: list[str] = CONTROLLERS, metadata: list[str] = CONTROLLERS
) -> list[str]:
    return choose(target, KRAFT, BROKERS, metadata, random.Random(seed), voters=voters).names


def test_kraft_controller_and_quorum_targets() -> None:
    assert pick_kraft("controller") == ["controller-2"]  # the active controller, node id 102
    assert {pick_kraft("quorum-follower", s)[0] for s in range(40)} == {"controller-1", "controller-3"}
    majorities = {tuple(pick_kraft("quorum-majority", s)) for s in range(40)}
    assert majorities == {
        ("controller-1", "controller-2"),
        ("controller-1", "controller-3"),
        ("controller-2", "controller-3"),
    }
    assert pick_kraft("controller-3,kafka-1") == ["controller-3", "kafka-1"]
    with pytest.raises(
        TargetError, match="runs KRaft; its controllers are controller-1, controller-2, controller-3"
    ):
        pick_kraft("zookeeper")


def test_combined_kraft_controller_is_a_broker() -> None:
    combined = ClusterSnapshot(controller=2, controller_epoch=3, live_brokers=(1, 2, 3), partitions=())
    voters = ["kafka-1", "kafka-2", "kafka-3"]
    choice = choose("controller", combined, BROKERS, [], random.Random(1), voters=voters)
    assert choice.names == ["kafka-2"]
    followers = {
        choose("quorum-follower", combined, BROKERS, [], random.Random(s), voters=voters).names[0]
        for s in range(40)
    }
    assert followers == {"kafka-1", "kafka-3"}


def test_quorum_targets_need_a_kraft_cluster() -> None:
    with pytest.raises(TargetError, match="no KRaft quorum"):
        pick("quorum-follower")
    unknown = ClusterSnapshot(controller=None, controller_epoch=None, live_brokers=(1,), partitions=())
    with pytest.raises(TargetError, match="active controller unknown"):
        choose("quorum-follower", unknown, BROKERS, CONTROLLERS, random.Random(1), voters=CONTROLLERS)


def test_isolating_from_the_metadata_nodes_cuts_the_controllers() -> None:
    cuts, _ = cut_links("isolate-from-zookeeper", ["kafka-1"], BROKERS[:3], CONTROLLERS, random.Random(1))
    assert cuts == {link("kafka-1", c) for c in CONTROLLERS}


class _Producer:
    """What freeze-producer needs of a transactional producer."""

    def __init__(self, process: str) -> None:
        self.process, self.transactional_id, self.frozen = process, f"kchaos-{process}", False

    def freeze(self) -> None:
        self.frozen = True

    def thaw(self) -> None:
        self.frozen = False


def test_freeze_producer_holds_the_named_producer_and_heal_lets_it_go() -> None:
    producers = [_Producer("tx-0"), _Producer("tx-1")]
    # A workload's handles as faults see them; no cluster is needed to freeze a producer.
    context = SimpleNamespace(workload=SimpleNamespace(transactional_producers=producers))
    fault = make_fault("freeze-producer", {"producer": "tx-1"})
    fault.start(context, random.Random(0))  # type: ignore[arg-type]
    assert [p.frozen for p in producers] == [False, True]
    assert fault.targets == ["tx-1"] and fault.detail == {"transactional_ids": ["kchaos-tx-1"]}
    fault.heal(context)  # type: ignore[arg-type]
    assert not any(p.frozen for p in producers)
    with pytest.raises(FaultError, match=r"no producer 'tx-9' \(producers: tx-0, tx-1\)"):
        make_fault("freeze-producer", {"producer": "tx-9"}).start(context, random.Random(0))  # type: ignore[arg-type]
    empty = SimpleNamespace(workload=SimpleNamespace(transactional_producers=[]))
    with pytest.raises(FaultError, match="no transactional producers"):
        make_fault("freeze-producer", {}).start(empty, random.Random(0))  # type: ignore[arg-type]

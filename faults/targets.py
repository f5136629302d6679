"""Target resolution: which nodes a fault hits, decided from live cluster state at start time.

A target is one of these words, or a comma-separated list of node names (`kafka-2,zk-1`):

- `leader`            the leader of `topic`/`partition` (a random partition with a leader when not given)
- `follower`          an in-sync follower of that partition's leader (random, as for `leader`)
- `followers`         every in-sync follower of that partition's leader
- `lagging-follower`  a replica of that partition that its leader has dropped from the ISR
- `replicas`          every replica of that partition, leader or not
- `controller`        the broker ZooKeeper names as controller
- `one`               one random live broker
- `minority`          a random minority of the brokers (at least one)
- `majority`          a random majority of the brokers
- `all`               every broker
- `zookeeper`         every ZooKeeper node
- `coordinator`       the group coordinator of a consumer group (`coordinator:<group>`, the pipeline's
                      `kchaos-pipe` too; alone, the workload's only group): the leader of the group's
                      __consumer_offsets partition
- `txn-coordinator`   the transaction coordinator of a transactional.id (`txn-coordinator:<id>`;
                      alone, the workload's only one): the leader of the id's __transaction_state
                      partition, checked against the broker's own FindCoordinator answer

The partition roles (the first five) take `pick`: words that the chosen partition must match, by
the roles of its replicas (`PICKS`), e.g. `controller-follows` for a partition one of whose
followers is the controller.

`choose` is pure (a snapshot and node names in, names out) so it is unit-tested without Docker;
`resolve` reads the live state and returns the node objects.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.coordinators import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, coordinator_partition
from contract.errors import ClusterError, ReadinessTimeout, TargetError
from contract.nodes import broker_name, node_name
from faults.base import FaultContext, coerce_int, text_param
from harness import kafka_protocol
from harness.broker_config import BROKER_PORT
from harness.cluster import KafkaCluster
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.kafka_protocol import Coordinator
from harness.services import Node
from harness.waiting import wait_until

PARTITION_ROLES = {
    "leader": "leader",
    "follower": "in-sync follower of a leader",
    "followers": "in-sync follower of a leader",
    "lagging-follower": "out-of-sync follower of a leader",
    "replicas": "replica",
}
"""Targets that are roles in one partition -> what a member is, for errors."""
SINGLE_ROLES = ("leader", "follower", "lagging-follower")
"""Roles of which a target is one member (picked at random), not all of them."""
TARGETS = {
    "leader": "the leader of topic/partition (a random led partition when not given)",
    "follower": "an in-sync follower of that partition's leader",
    "followers": "every in-sync follower of that partition's leader",
    "lagging-follower": "a replica of that partition out of its ISR",
    "replicas": "every replica of that partition",
    "controller": "the controller: the broker ZooKeeper names, or the active KRaft controller",
    "quorum-follower": "a KRaft voter that is not the active controller",
    "quorum-majority": "a random majority of the KRaft voters (their loss stops the quorum)",
    "one": "one random live broker",
    "minority": "a random minority of the brokers",
    "majority": "a random majority of the brokers",
    "all": "every broker",
    "zookeeper": "every ZooKeeper node",
    "coordinator": "the group coordinator of consumer group G (coordinator:G, the pipeline's kchaos-pipe "
    "too; alone, the workload's only group): the leader of G's __consumer_offsets partition",
    "txn-coordinator": "the transaction coordinator of transactional.id T (txn-coordinator:T; alone, the "
    "workload's only one): the leader of T's __transaction_state partition, as FindCoordinator names it",
}
"""Target word -> what it resolves to (`kchaos faults` lists them)."""
KEYWORDS = tuple(TARGETS)
PICK_MEANINGS = {
    "controller-leads": "the controller is its leader",
    "controller-follows": "the controller is one of its followers",
    "controller-trails": "the controller is an in-sync follower, after another in ISR order: the one "
    "the leader's death leaves behind (Kafka 0.9 elects the first live replica of the ISR)",
    "controller-apart": "the controller holds no replica of it",
    "isr-full": "every replica is in its ISR",
    "isr-shrunk": "it has a leader and a replica out of its ISR",
}
PICKS: dict[str, Callable[[PartitionState, int | None], bool]] = {
    "controller-leads": lambda p, controller: controller is not None and p.leader == controller,
    "controller-follows": lambda p, controller: (
        controller is not None and p.leader != controller and controller in p.replicas
    ),
    "controller-trails": lambda p, controller: _trails(p, controller),
    "controller-apart": lambda p, controller: controller is None or controller not in p.replicas,
    "isr-full": lambda p, _: p.isr_full,
    "isr-shrunk": lambda p, _: p.leader >= 0 and not p.isr_full,
}
"""`pick` words: what the chosen partition's replicas must be, read from ZooKeeper at start."""
MAX_PARTITION = 2**31 - 1  # Kafka numbers partitions with 32-bit integers
FIND_COORDINATOR_TIMEOUT_S = 1.0
"""How long one broker has to answer FindCoordinator before the next is asked."""
COORDINATOR_AGREEMENT_S = 15.0
"""How long a txn-coordinator target waits for FindCoordinator to agree with the partition's leader."""
_NODE_NAME = re.compile(r"(kafka|zk|controller)-[0-9]{1,9}")
"""A node's name: `kafka-<broker id>`, `zk-<number>` or `controller-<number>` (`harness.services`)."""


def _trails(p: PartitionState, controller: int | None) -> bool:
    followers = [r for r in p.isr if r != p.leader]
    return p.leader >= 0 and controller in followers[1:]


@dataclass
class Choice:
    """Resolved node names, plus what was picked along the way (topic/partition of a leader)."""

    names: list[str]
    detail: dict[str, Any] = field(default_factory=dict)


def validate_target(target: str) -> str:
    """Reject a target that is no keyword and no list of node names at config time: a typo such as
    `leadr` would otherwise only fail when the fault starts, mid-run. Whether the named nodes exist
    is checked against the live cluster."""
    target = target.strip()
    if target in KEYWORDS or target.startswith(("coordinator:", "txn-coordinator:")) or named_nodes(target):
        return target
    raise ValueError(
        f"target must be one of {', '.join(KEYWORDS)} (coordinator:G for group G, txn-coordinator:T "
        f"for transactional.id T) or node names like kafka-1,zk-1, got {target!r}"
    )


def named_nodes(target: str) -> list[str]:
    """The node names a target lists (`kafka-2,zk-1`); none for a keyword or anything else."""
    names = [name.strip() for name in target.split(",")]
    return names if all(map(_NODE_NAME.fullmatch, names)) else []


def validate_pick(pick: str, target: str) -> tuple[str, ...]:
    """`pick` words (comma-separated) for a partition role `target`; ValueError naming the choices."""
    words = tuple(dict.fromkeys(w.strip() for w in pick.split(",") if w.strip()))
    unknown = [w for w in words if w not in PICKS]
    if unknown or not words:
        raise ValueError(f"pick must be words among {', '.join(PICKS)}, got {pick!r}")
    if target not in PARTITION_ROLES:
        raise ValueError(f"pick chooses a partition: target must be one of {', '.join(PARTITION_ROLES)}")
    return words


def choose(
    target: str,
    snapshot: ClusterSnapshot,
    brokers: Sequence[str],
    metadata_nodes: Sequence[str],
    rng: random.Random,
    topic: str | None = None,
    partition: int | None = None,
    pick: Sequence[str] = (),
    voters: Sequence[str] = (),
) -> Choice:
    """Pick the target nodes' names. Raises TargetError saying what exists when nothing matches.
    `metadata_nodes` are the ZooKeeper nodes or dedicated KRaft controllers; `voters` the KRaft
    quorum's voters (none in ZooKeeper mode)."""
    every = list(dict.fromkeys([*brokers, *metadata_nodes, *voters]))
    if target in PARTITION_ROLES:
        return _role(target, snapshot, brokers, rng, topic, partition, pick)
    if target == "controller":
        if snapshot.controller is None:
            raise TargetError("target 'controller': the metadata names no controller right now")
        return Choice([_known(node_name(snapshot.controller), every)])
    if target in ("quorum-follower", "quorum-majority"):
        return _quorum(target, snapshot, voters, rng)
    # Live brokers first: hitting a broker that is already down would be no fault at all.
    live = [b for b in brokers if b in {broker_name(i) for i in snapshot.live_brokers}] or list(brokers)
    if target == "one":
        return Choice([rng.choice(live)])
    if target == "minority":
        return Choice(sorted(rng.sample(list(brokers), max(1, (len(brokers) - 1) // 2))))
    if target == "majority":
        return Choice(sorted(rng.sample(list(brokers), len(brokers) // 2 + 1)))
    if target == "all":
        return Choice(list(brokers))
    if target == "zookeeper":
        if voters:
            raise TargetError(
                "target 'zookeeper': this cluster runs KRaft; its controllers are " + ", ".join(voters)
            )
        return Choice(list(metadata_nodes))
    names = [n.strip() for n in target.split(",") if n.strip()]
    unknown = [n for n in names if n not in every]
    if unknown or not names:
        raise TargetError(
            f"target {target!r}: no node named {', '.join(unknown) or '(empty)'}; "
            f"targets are {', '.join(KEYWORDS)} or node names: {', '.join(every)}"
        )
    return Choice(list(dict.fromkeys(names)))


def _known(name: str, nodes: Sequence[str]) -> str:
    if name not in nodes:
        raise TargetError(f"the metadata names {name} but this cluster has {', '.join(nodes)}")
    return name


def _quorum(target: str, snapshot: ClusterSnapshot, voters: Sequence[str], rng: random.Random) -> Choice:
    if not voters:
        raise TargetError(f"target {target!r}: this cluster has no KRaft quorum (it runs ZooKeeper)")
    if target == "quorum-majority":
        return Choice(sorted(rng.sample(list(voters), len(voters) // 2 + 1)))
    active = node_name(snapshot.controller) if snapshot.controller is not None else None
    followers = [v for v in voters if v != active]
    if active is None or not followers:
        raise TargetError(
            f"target 'quorum-follower': voters {', '.join(voters)}, active controller {active or 'unknown'}"
        )
    return Choice([rng.choice(followers)])


def _partitions(
    target: str, snapshot: ClusterSnapshot, topic: str | None, partition: int | None, pick: Sequence[str]
) -> list[PartitionState]:
    candidates = [
        p
        for p in snapshot.partitions
        if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)
    ]
    wanted = f"{topic or '*'}/{'*' if partition is None else partition}"
    if not candidates:
        have = sorted({f"{p.topic}/{p.partition}" for p in snapshot.partitions})
        raise TargetError(
            f"target {target!r}: no partition {wanted}; partitions are {', '.join(have) or 'none'}"
        )
    picked = [p for p in candidates if all(PICKS[word](p, snapshot.controller) for word in pick)]
    if not picked:
        seen = "; ".join(
            f"{p.topic}/{p.partition} leader={p.leader} isr={list(p.isr)} replicas={list(p.replicas)}"
            for p in candidates
        )
        raise TargetError(
            f"target {target!r}: no partition {wanted} is {' and '.join(pick)} now "
            f"(controller={snapshot.controller}; {seen})"
        )
    return picked


def _members(role: str, p: PartitionState) -> list[int]:
    """The brokers that hold `role` in partition `p` (followers only while it has a leader)."""
    if p.leader < 0:
        return list(p.replicas) if role == "replicas" else []
    if role == "leader":
        return [p.leader]
    if role in ("follower", "followers"):
        return [f for f in p.isr if f != p.leader]
    if role == "lagging-follower":
        return [r for r in p.replicas if r != p.leader and r not in p.isr]
    return list(p.replicas)


def _role(
    target: str,
    snapshot: ClusterSnapshot,
    brokers: Sequence[str],
    rng: random.Random,
    topic: str | None,
    partition: int | None,
    pick: Sequence[str],
) -> Choice:
    """One role of one partition: a random partition among those matching, then (for a single
    follower) a random member of the role."""
    candidates = _partitions(target, snapshot, topic, partition, pick)
    options = [
        (p, members)
        for p in candidates
        for members in (
            [[m] for m in _members(target, p)] if target in SINGLE_ROLES else [_members(target, p)]
        )
        if members
    ]
    if not options:
        alone = ", ".join(f"{p.topic}/{p.partition}" for p in candidates)
        raise TargetError(f"target {target!r}: no {PARTITION_ROLES[target]} now for {alone}")
    chosen, members = rng.choice(options)
    detail: dict[str, Any] = {"topic": chosen.topic, "partition": chosen.partition}
    if target != "leader" and chosen.leader >= 0:
        detail["leader"] = broker_name(chosen.leader)
    if pick:
        detail["pick"] = list(pick)
    return Choice([_known(broker_name(m), brokers) for m in members], detail)


def coordinated_group(target: str, groups: Sequence[str]) -> str | None:
    """The group whose coordinator `target` names (`coordinator` or `coordinator:<group>`), else None."""
    return _coordinated(
        target,
        "coordinator",
        groups,
        "group",
        "the workload has no consumer groups (workload.groups, or transactions.pipelines)",
    )


def coordinated_transactional_id(target: str, transactional_ids: Sequence[str]) -> str | None:
    """The transactional.id whose transaction coordinator `target` names (`txn-coordinator` or
    `txn-coordinator:<id>`), else None."""
    return _coordinated(
        target,
        "txn-coordinator",
        transactional_ids,
        "transactional.id",
        "the workload runs no transactional producer (none has a transactional.id)",
    )


def _coordinated(target: str, word: str, keys: Sequence[str], noun: str, none: str) -> str | None:
    """The key (a group, a transactional.id) of a `word:<key>` target, or of `word` alone when there
    is one key; None for a target of another word."""
    head, _, key = target.partition(":")
    if head != word:
        return None
    if not keys:
        raise TargetError(f"target {target!r}: {none}")
    if not key and len(keys) > 1:
        raise TargetError(f"target {word!r}: say whose, one of {', '.join(f'{word}:{k}' for k in keys)}")
    key = key or keys[0]
    if key not in keys:
        raise TargetError(f"target {target!r}: no {noun} {key!r} ({noun}s: {', '.join(keys)})")
    return key


def confirmed_coordinator(target: str, answer: Coordinator, leader: str, partition: str) -> str:
    """The broker FindCoordinator's `answer` names, when it is `leader`, the leader of `partition` (as
    `topic/number`); else a TargetError saying both, or the error FindCoordinator answered."""
    if answer.error_code:
        raise TargetError(
            f"target {target}: FindCoordinator answered {answer.error()} ({partition} is led by {leader})"
        )
    found = broker_name(answer.node_id)
    if found != leader:
        raise TargetError(
            f"target {target}: FindCoordinator names {found} ({answer.host}:{answer.port}) but "
            f"{partition} is led by {leader}"
        )
    return found


def resolve(
    context: FaultContext,
    target: str,
    rng: random.Random,
    topic: str | None = None,
    partition: int | None = None,
    pick: Sequence[str] = (),
) -> tuple[list[Node], dict[str, Any]]:
    """Resolve `target` against the live cluster (and, for a coordinator, the workload's groups and
    transactional.ids): (nodes, detail)."""
    cluster = context.cluster
    group = coordinated_group(target, context.workload.group_ids)
    if group is not None:
        return _coordinator(cluster, group, rng)
    transactional_id = coordinated_transactional_id(target, context.workload.transactional_ids)
    if transactional_id is not None:
        return _transaction_coordinator(cluster, transactional_id, rng)
    try:
        snapshot = cluster.state([topic] if topic is not None else None)
    except ClusterError as exc:
        raise TargetError(f"cannot resolve target {target!r}: {exc}") from None
    choice = choose(
        target,
        snapshot,
        [b.name for b in cluster.brokers],
        [n.name for n in cluster.metadata_nodes],
        rng,
        topic,
        partition,
        pick,
        [n.name for n in cluster.voters],
    )
    return [cluster.node(name) for name in choice.names], choice.detail


def _coordinator(cluster: KafkaCluster, group: str, rng: random.Random) -> tuple[list[Node], dict[str, Any]]:
    leader, number = _coordinating_leader(cluster, f"coordinator:{group}", OFFSETS_TOPIC, group, rng)
    return [cluster.node(leader)], {"group": group, "coordinator_partition": number}


def _transaction_coordinator(
    cluster: KafkaCluster, transactional_id: str, rng: random.Random
) -> tuple[list[Node], dict[str, Any]]:
    target = f"txn-coordinator:{transactional_id}"
    if not cluster.kafka_version.at_least(0, 11):
        raise TargetError(
            f"target {target}: Kafka {cluster.kafka_version} has no transactions (0.11, KIP-98)"
        )
    found: dict[str, tuple[str, int, str]] = {}

    def agreed() -> tuple[bool, str]:
        # The coordinator may still be loading its partition, or a broker's metadata may lag a
        # leader change by a few seconds: asked again until FindCoordinator and the leader agree.
        try:
            leader, number = _coordinating_leader(
                cluster, target, TRANSACTION_STATE_TOPIC, transactional_id, rng
            )
            addresses = [(b.ip, BROKER_PORT) for b in cluster.brokers]
            answer = kafka_protocol.find_coordinator(
                addresses, transactional_id, kafka_protocol.TRANSACTION_KEY, FIND_COORDINATOR_TIMEOUT_S
            )
            node = confirmed_coordinator(target, answer, leader, f"{TRANSACTION_STATE_TOPIC}/{number}")
        except (TargetError, ClusterError) as exc:
            return False, str(exc)
        found["answer"] = (leader, number, node)
        return True, node

    try:
        wait_until(agreed, what=f"FindCoordinator to agree on {target}", timeout_s=COORDINATOR_AGREEMENT_S)
    except ReadinessTimeout as exc:
        raise TargetError(str(exc)) from None
    leader, number, node = found["answer"]
    detail = {
        "transactional_id": transactional_id,
        "coordinator_partition": number,
        "find_coordinator": node,
    }
    return [cluster.node(leader)], detail


def _coordinating_leader(
    cluster: KafkaCluster, target: str, topic: str, key: str, rng: random.Random
) -> tuple[str, int]:
    """The broker coordinating `key`: the leader of its partition of `topic` (__consumer_offsets for
    a group, __transaction_state for a transactional.id), and the partition's number."""
    try:
        partitions = len(cluster.metadata.replica_counts(topic))
        if not partitions:
            raise TargetError(f"target {target}: {topic} does not exist yet")
        number = coordinator_partition(key, partitions)
        snapshot = cluster.state([topic])
    except ClusterError as exc:
        raise TargetError(f"cannot resolve target {target}: {exc}") from None
    choice = _role("leader", snapshot, [b.name for b in cluster.brokers], rng, topic, number, ())
    return choice.names[0], number


class Targeted:
    """Shared params and resolution of faults aimed at nodes: `target`, `topic`/`partition` to say
    which partition's leader (or followers...) a partition role means, and `pick` to choose that
    partition by the roles of its replicas."""

    default_target = "one"

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
    ) -> None:
        self.target = validate_target(
            text_param("target", target if target is not None else self.default_target)
        )
        self.pick = validate_pick(text_param("pick", pick), self.target) if pick is not None else ()
        self.topic = text_param("topic", topic) if topic is not None else None
        self.partition = (
            coerce_int("partition", partition, low=0, high=MAX_PARTITION) if partition is not None else None
        )
        self.targets: list[str] = []
        self.detail: dict[str, Any] = {}
        self.healed: dict[str, Any] = {}
        self._nodes: list[Node] = []

    def describe(self) -> str:
        return str(getattr(self, "description", ""))

    def resolve(self, context: FaultContext, rng: random.Random) -> list[Node]:
        """Resolve from live state and record `targets` and `detail` before anything is applied,
        so a heal after a partial start knows every node the fault may have touched."""
        self._nodes, detail = resolve(context, self.target, rng, self.topic, self.partition, self.pick)
        self.targets = [n.name for n in self._nodes]
        self.detail = {**self.detail, "target": self.target, **detail}  # keeps what start already set
        return self._nodes

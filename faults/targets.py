"""Target resolution: which nodes a fault hits, decided from live cluster state at start time.

A target is one of these words, or a comma-separated list of node names (`kafka-2,zk-1`):

- `leader`      the leader of `topic`/`partition` (a random partition with a leader when not given)
- `follower`    an in-sync follower of `topic`/`partition`'s leader (random, as for `leader`)
- `controller`  the broker ZooKeeper names as controller
- `one`         one random live broker
- `minority`    a random minority of the brokers (at least one)
- `majority`    a random majority of the brokers
- `all`         every broker
- `zookeeper`   every ZooKeeper node

`choose` is pure (a snapshot and node names in, names out) so it is unit-tested without Docker;
`resolve` reads the live state and returns the node objects.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from faults.base import coerce_int, text_param
from harness.cluster import KafkaCluster
from harness.errors import ClusterError, TargetError
from harness.services import Node
from harness.zkstate import ClusterSnapshot, PartitionState

KEYWORDS = ("leader", "follower", "controller", "one", "minority", "majority", "all", "zookeeper")
MAX_PARTITION = 2**31 - 1  # Kafka numbers partitions with 32-bit integers


def broker_name(broker_id: int) -> str:
    return f"kafka-{broker_id}"


@dataclass
class Choice:
    """Resolved node names, plus what was picked along the way (topic/partition of a leader)."""

    names: list[str]
    detail: dict[str, Any] = field(default_factory=dict)


def validate_target(target: str) -> str:
    """Reject an empty target early (at config time); names are checked against the live cluster."""
    if not target.strip():
        raise ValueError(f"target must be one of {', '.join(KEYWORDS)} or node names like kafka-1,zk-1")
    return target.strip()


def choose(
    target: str,
    snapshot: ClusterSnapshot,
    brokers: Sequence[str],
    zookeepers: Sequence[str],
    rng: random.Random,
    topic: str | None = None,
    partition: int | None = None,
) -> Choice:
    """Pick the target nodes' names. Raises TargetError saying what exists when nothing matches."""
    every = [*brokers, *zookeepers]
    if target == "leader":
        return _leader(snapshot, brokers, rng, topic, partition)
    if target == "follower":
        return _follower(snapshot, brokers, rng, topic, partition)
    if target == "controller":
        if snapshot.controller is None:
            raise TargetError("target 'controller': ZooKeeper names no controller right now")
        return Choice([_known(broker_name(snapshot.controller), brokers)])
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
        return Choice(list(zookeepers))
    names = [n.strip() for n in target.split(",") if n.strip()]
    unknown = [n for n in names if n not in every]
    if unknown or not names:
        raise TargetError(
            f"target {target!r}: no node named {', '.join(unknown) or '(empty)'}; "
            f"targets are {', '.join(KEYWORDS)} or node names: {', '.join(every)}"
        )
    return Choice(list(dict.fromkeys(names)))


def _known(name: str, brokers: Sequence[str]) -> str:
    if name not in brokers:
        raise TargetError(f"ZooKeeper names {name} but this cluster has brokers {', '.join(brokers)}")
    return name


def _partitions(
    target: str, snapshot: ClusterSnapshot, topic: str | None, partition: int | None
) -> list[PartitionState]:
    candidates = [
        p
        for p in snapshot.partitions
        if (topic is None or p.topic == topic) and (partition is None or p.partition == partition)
    ]
    if not candidates:
        have = sorted({f"{p.topic}/{p.partition}" for p in snapshot.partitions})
        wanted = f"{topic or '*'}/{'*' if partition is None else partition}"
        raise TargetError(
            f"target {target!r}: no partition {wanted}; partitions are {', '.join(have) or 'none'}"
        )
    return candidates


def _leader(
    snapshot: ClusterSnapshot,
    brokers: Sequence[str],
    rng: random.Random,
    topic: str | None,
    partition: int | None,
) -> Choice:
    candidates = _partitions("leader", snapshot, topic, partition)
    led = [p for p in candidates if p.leader >= 0]
    if not led:
        leaderless = ", ".join(f"{p.topic}/{p.partition}" for p in candidates)
        raise TargetError(f"target 'leader': no leader now for {leaderless}")
    chosen = rng.choice(led)
    return Choice(
        [_known(broker_name(chosen.leader), brokers)], {"topic": chosen.topic, "partition": chosen.partition}
    )


def _follower(
    snapshot: ClusterSnapshot,
    brokers: Sequence[str],
    rng: random.Random,
    topic: str | None,
    partition: int | None,
) -> Choice:
    """An in-sync follower of a led partition: cut off, it holds acks=all writes until the leader
    drops it from the ISR."""
    candidates = _partitions("follower", snapshot, topic, partition)
    followed = [(p, f) for p in candidates if p.leader >= 0 for f in p.isr if f != p.leader]
    if not followed:
        alone = ", ".join(f"{p.topic}/{p.partition}" for p in candidates)
        raise TargetError(f"target 'follower': no in-sync follower of a leader now for {alone}")
    chosen, follower = rng.choice(followed)
    return Choice(
        [_known(broker_name(follower), brokers)],
        {"topic": chosen.topic, "partition": chosen.partition, "leader": broker_name(chosen.leader)},
    )


def resolve(
    cluster: KafkaCluster,
    target: str,
    rng: random.Random,
    topic: str | None = None,
    partition: int | None = None,
) -> tuple[list[Node], dict[str, Any]]:
    """Resolve `target` against the live cluster: (nodes, detail)."""
    try:
        snapshot = cluster.state([topic] if topic is not None else None)
    except ClusterError as exc:
        raise TargetError(f"cannot resolve target {target!r}: {exc}") from None
    choice = choose(
        target,
        snapshot,
        [b.name for b in cluster.brokers],
        [z.name for z in cluster.zookeepers],
        rng,
        topic,
        partition,
    )
    return [cluster.node(name) for name in choice.names], choice.detail


class Targeted:
    """Shared params and resolution of faults aimed at nodes: `target`, and `topic`/`partition`
    to say which partition's leader `target=leader` means."""

    default_target = "one"

    def __init__(
        self, *, target: str | None = None, topic: str | None = None, partition: int | str | None = None
    ) -> None:
        self.target = validate_target(
            text_param("target", target if target is not None else self.default_target)
        )
        self.topic = text_param("topic", topic) if topic is not None else None
        self.partition = (
            coerce_int("partition", partition, low=0, high=MAX_PARTITION) if partition is not None else None
        )
        self.targets: list[str] = []
        self.detail: dict[str, Any] = {}
        self._nodes: list[Node] = []

    def describe(self) -> str:
        return str(getattr(self, "description", ""))

    def resolve(self, cluster: KafkaCluster, rng: random.Random) -> list[Node]:
        """Resolve from live state and record `targets` and `detail` before anything is applied,
        so a heal after a partial start knows every node the fault may have touched."""
        self._nodes, detail = resolve(cluster, self.target, rng, self.topic, self.partition)
        self.targets = [n.name for n in self._nodes]
        self.detail = {**self.detail, "target": self.target, **detail}  # keeps what start already set
        return self._nodes

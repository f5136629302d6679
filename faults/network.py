"""`partition`: cut chosen links between nodes with iptables DROP rules on both ends of each link.

Shapes (T = the resolved targets, N = every node, brokers and ZooKeeper):

- `isolate`                 each node of T cut from every other node, ZooKeeper included
- `isolate-from-zookeeper`  T cut from ZooKeeper; brokers still reach each other
- `isolate-from-followers`  T (default: a leader) cut from the other brokers; ZooKeeper still reachable
- `halves`                  T (default: a minority of brokers) cut from N - T; links inside each side stay
- `ring`                    N in a random order; each node reaches only its two neighbours
- `bridge`                  N minus the target split in two halves cut from each other; the target
                            (the bridge) still reaches both

The harness host is never cut: clients and the ZooKeeper state reader keep working, which is what
lets a test write to an isolated leader.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from faults.base import register
from faults.iptables import FaultChain, drop_from_and_to
from faults.targets import Targeted
from harness.cluster import KafkaCluster
from harness.errors import FaultError
from harness.limits import brief

Link = frozenset[str]

SHAPES = {
    "isolate": "one",
    "isolate-from-zookeeper": "one",
    "isolate-from-followers": "leader",
    "halves": "minority",
    "ring": "all",
    "bridge": "one",
}
"""Shape -> default target."""
SHAPE_EFFECTS = {
    "isolate": "The target is cut off from every other node (brokers and ZooKeeper) but keeps running.",
    "isolate-from-zookeeper": "The target still reaches the other brokers but not ZooKeeper: its "
    "session expires and the controller moves its leaderships elsewhere.",
    "isolate-from-followers": "The leader keeps ZooKeeper but cannot reach its followers: the ISR "
    "shrinks to the leader alone, and acks=all with min.insync.replicas=1 acknowledges on one copy.",
    "halves": "The cluster is split in two halves that cannot reach each other.",
    "ring": "Each node reaches only its neighbours in a ring: no two nodes see the same majority.",
    "bridge": "Two halves that cannot reach each other, joined by one node that reaches both.",
}
"""Shape -> what it does, in plain words (reports show it)."""


def link(a: str, b: str) -> Link:
    return frozenset((a, b))


def cut_links(
    shape: str, targets: Sequence[str], brokers: Sequence[str], zookeepers: Sequence[str], rng: random.Random
) -> tuple[set[Link], dict[str, Any]]:
    """The links a shape cuts, and what it chose (ring order, bridge halves). Pure, unit-tested."""
    every = [*brokers, *zookeepers]
    inside = set(targets)
    if shape == "isolate":
        return {link(t, n) for t in targets for n in every if n != t}, {}
    if shape == "isolate-from-zookeeper":
        return {link(t, z) for t in targets for z in zookeepers if z != t}, {}
    if shape == "isolate-from-followers":
        return {link(t, b) for t in targets for b in brokers if b not in inside}, {}
    if shape == "halves":
        return {link(t, n) for t in targets for n in every if n not in inside}, {
            "sides": [sorted(inside), sorted(set(every) - inside)]
        }
    if shape == "ring":
        order = list(every)
        rng.shuffle(order)
        size = len(order)
        neighbours = {link(order[i], order[(i + 1) % size]) for i in range(size)}
        return {link(a, b) for i, a in enumerate(order) for b in order[i + 1 :]} - neighbours, {"ring": order}
    if shape == "bridge":
        bridge = targets[0]
        rest = [n for n in every if n != bridge]
        rng.shuffle(rest)
        left, right = rest[: len(rest) // 2], rest[len(rest) // 2 :]
        return {link(a, b) for a in left for b in right}, {
            "bridge": bridge,
            "sides": [sorted(left), sorted(right)],
        }
    raise ValueError(f"unknown shape {shape!r}; shapes are {', '.join(SHAPES)}")


@register
class Partition(Targeted):
    name = "partition"
    description = (
        "Cut network links with iptables (shape: isolate, isolate-from-zookeeper, "
        "isolate-from-followers, halves, ring, bridge); heal restores every link."
    )

    def __init__(
        self,
        *,
        shape: str = "isolate",
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
    ) -> None:
        if not isinstance(shape, str) or shape not in SHAPES:
            raise ValueError(f"param 'shape' must be one of {', '.join(SHAPES)}, got {brief(shape)}")
        self.default_target = SHAPES[shape]
        super().__init__(target=target, topic=topic, partition=partition)
        self.shape = shape
        self.cuts: set[Link] = set()
        self._chain = FaultChain("PART")

    def describe(self) -> str:
        return f"{SHAPE_EFFECTS[self.shape]} (iptables DROP rules; heal restores every link)"

    def start(self, cluster: KafkaCluster, rng: random.Random) -> None:
        self.resolve(cluster, rng)
        self.cuts, chosen = cut_links(
            self.shape,
            self.targets,
            [b.name for b in cluster.brokers],
            [z.name for z in cluster.zookeepers],
            rng,
        )
        if not self.cuts:
            raise FaultError(
                f"partition {self.shape} of {', '.join(self.targets)} cuts no link in this cluster"
            )
        self.detail.update(shape=self.shape, cuts=sorted("|".join(sorted(c)) for c in self.cuts), **chosen)
        for node in cluster.nodes:
            peers = sorted(
                cluster.node(other).ip
                for c in self.cuts
                if node.name in c
                for other in c
                if other != node.name
            )
            if peers:
                self._chain.add(node, drop_from_and_to(peers))

    def heal(self, cluster: KafkaCluster) -> None:
        self._chain.remove()

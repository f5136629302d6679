"""`partition`: cut chosen links between nodes with iptables DROP rules on both ends of each link.

Shapes (T = the resolved targets, N = every node, brokers and ZooKeeper):

- `isolate`                 each node of T cut from every other node, ZooKeeper included
- `isolate-from-zookeeper`  T cut from ZooKeeper; brokers still reach each other
- `isolate-from-followers`  T (default: a leader) cut from the other brokers; ZooKeeper still reachable
- `halves`                  T (default: a minority of brokers) cut from N - T; links inside each side stay
- `ring`                    N in a random order; each node reaches only its two neighbours
- `bridge`                  N minus the target split in two halves cut from each other; the target
                            (the bridge) still reaches both
- `among`                   only the links among the nodes of T (default: a partition's in-sync
                            followers); each still reaches every other node
- `between`                 only the links between T and P, the `peers` (resolved on T's partition)

`direction: out` makes the cuts one-way (shapes with a target side only: not `among`, `ring`,
`bridge`): T can no longer send to the other end of each cut link but still receives from it.

The harness host is never cut: clients and the ZooKeeper state reader keep working, which is what
lets a test write to an isolated leader.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from contract.errors import FaultError
from contract.limits import brief
from faults.base import FaultContext, register, text_param
from faults.iptables import FaultChain, drop_from_and_to, drop_to
from faults.targets import Targeted, resolve, validate_target

Link = frozenset[str]

SHAPES = {
    "isolate": "one",
    "isolate-from-zookeeper": "one",
    "isolate-from-followers": "leader",
    "halves": "minority",
    "ring": "all",
    "bridge": "one",
    "among": "followers",
    "between": "leader",
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
    "among": "The targets cannot reach each other; every other link, ZooKeeper included, stays up.",
    "between": "The targets cannot reach the peers; every other link stays up.",
}
"""Shape -> what it does, in plain words (reports show it)."""
DIRECTIONS = ("both", "out")
TWO_SIDED = ("among", "ring", "bridge")
"""Shapes whose links have no target side, so no one-way cut."""


def link(a: str, b: str) -> Link:
    return frozenset((a, b))


def one_way(cuts: set[Link], senders: Sequence[str]) -> list[tuple[str, str]]:
    """(sender, receiver) of each cut link for each of its ends among `senders` (the targets): both
    directions of a link between two targets."""
    return sorted((a, b) for c in cuts for a in c for b in c if a != b and a in senders)


def cut_links(
    shape: str,
    targets: Sequence[str],
    brokers: Sequence[str],
    metadata_nodes: Sequence[str],
    rng: random.Random,
    peers: Sequence[str] = (),
) -> tuple[set[Link], dict[str, Any]]:
    """The links a shape cuts, and what it chose (ring order, bridge halves). Pure, unit-tested.
    `metadata_nodes` are the ZooKeeper nodes, or the dedicated KRaft controllers."""
    every = [*brokers, *metadata_nodes]
    inside = set(targets)
    if shape == "among":
        return {link(a, b) for a in targets for b in targets if a != b}, {}
    if shape == "between":
        return {link(t, p) for t in targets for p in peers if p != t}, {"peers": list(peers)}
    if shape == "isolate":
        return {link(t, n) for t in targets for n in every if n != t}, {}
    if shape == "isolate-from-zookeeper":
        return {link(t, z) for t in targets for z in metadata_nodes if z != t}, {}
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
        "isolate-from-followers, halves, ring, bridge, among, between with peers; direction both or "
        "out for one-way); heal restores every link."
    )

    def __init__(
        self,
        *,
        shape: str = "isolate",
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
        peers: str | None = None,
        direction: str = "both",
    ) -> None:
        if not isinstance(shape, str) or shape not in SHAPES:
            raise ValueError(f"param 'shape' must be one of {', '.join(SHAPES)}, got {brief(shape)}")
        if direction not in DIRECTIONS:
            raise ValueError(
                f"param 'direction' must be one of {', '.join(DIRECTIONS)}, got {brief(direction)}"
            )
        if direction == "out" and shape in TWO_SIDED:
            raise ValueError(f"shape {shape!r} cuts links with no target side: it has no one-way cut")
        if (peers is None) != (shape != "between"):
            raise ValueError("param 'peers' (a target) is needed by shape 'between', and only by it")
        self.default_target = SHAPES[shape]
        super().__init__(target=target, topic=topic, partition=partition, pick=pick)
        self.shape, self.direction = shape, direction
        self.peers = validate_target(text_param("peers", peers)) if peers is not None else None
        self.cuts: set[Link] = set()
        self._chain = FaultChain("PART")

    def describe(self) -> str:
        one_way = (
            " Only the targets' packets are dropped: they still receive." if self.direction == "out" else ""
        )
        return f"{SHAPE_EFFECTS[self.shape]}{one_way} (iptables DROP rules; heal restores every link)"

    def _peers(self, context: FaultContext, rng: random.Random) -> list[str]:
        """The peers, resolved on the partition the targets were chosen on (if any)."""
        if self.peers is None:
            return []
        topic, partition = self.detail.get("topic", self.topic), self.detail.get("partition", self.partition)
        nodes, _ = resolve(context, self.peers, rng, topic, partition)
        return [n.name for n in nodes]

    def start(self, context: FaultContext, rng: random.Random) -> None:
        cluster = context.cluster
        self.resolve(context, rng)
        self.cuts, chosen = cut_links(
            self.shape,
            self.targets,
            [b.name for b in cluster.brokers],
            [n.name for n in cluster.metadata_nodes],
            rng,
            self._peers(context, rng),
        )
        if not self.cuts:
            raise FaultError(
                f"partition {self.shape} of {', '.join(self.targets)} cuts no link in this cluster"
            )
        self.detail.update(shape=self.shape, direction=self.direction, **chosen)
        if self.direction == "out":
            self.detail["cuts"] = sorted(f"{a}>{b}" for a, b in one_way(self.cuts, self.targets))
        else:
            self.detail["cuts"] = sorted("|".join(sorted(c)) for c in self.cuts)
        for node in cluster.nodes:
            if self.direction == "out":
                receivers = sorted(
                    cluster.node(b).ip for a, b in one_way(self.cuts, self.targets) if a == node.name
                )
                rules = drop_to(receivers)
            else:
                others = sorted(
                    cluster.node(o).ip for c in self.cuts if node.name in c for o in c if o != node.name
                )
                rules = drop_from_and_to(others)
            if rules:
                self._chain.add(node, rules)

    def heal(self, context: FaultContext) -> None:
        self._chain.remove()

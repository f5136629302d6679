"""`power-loss`: the targets lose power. Their processes die at once, and so does whatever their disks
had not synced: each target's data directory lives on a lossy disk (`cluster.disk: lossy`,
`harness.lossy`), which drops, in the same step, every byte written and every directory entry
changed since the last fsync of that file or directory. Heal starts them again, and Kafka's own
recovery (unclean-shutdown detection, log recovery from the recovery point, truncation to the
leader, KRaft's own log) decides what survives.

Kafka acknowledges a write once the in-sync replicas have it in their page cache; it fsyncs a log
only as its flush settings say (`flush.messages` / `log.flush.interval.messages`, by default never:
it leaves that to the operating system) and its checkpoints, `meta.properties` and KRaft's metadata
log as its code says. What a power loss takes is exactly what those fsyncs did not cover; the fault
records it per node and file (`detail.dropped`).

Targets: any (default: every replica of a partition at once, the correlated loss); `cluster` means
every node of the cluster, ZooKeeper and KRaft controllers too. `torn: true` keeps a seeded random
prefix of each file's unsynced bytes (a write torn by the power loss); `written_back_s: S` keeps
what the operating system would have written back already (pages and directory changes older than
S seconds; Linux's dirty_expire_centisecs is 30 s by default). Without either, every unsynced byte
is lost: the worst case the operating system allows.
"""

from __future__ import annotations

import random
from typing import Any

from contract.errors import ClusterError, FaultError
from faults.base import FaultContext, coerce_bool, coerce_float, register
from faults.process import restart
from faults.targets import Targeted
from harness.lossy.mounts import LossyMount
from harness.services import Node
from harness.waiting import wait_until

WHOLE_CLUSTER = "cluster"
"""The target word of power-loss for every node: brokers, KRaft controllers and ZooKeeper."""
DEAD_WITHIN_S = 30.0


def lossy_disks(fault: str, nodes: list[Node]) -> list[tuple[Node, LossyMount]]:
    """Each node with its lossy disk; FaultError when one has none."""
    plain = [node.name for node in nodes if node.disk is None]
    if plain:
        raise FaultError(
            f"{fault} acts on a node's lossy disk, and {', '.join(plain)} keep their data in the container: "
            "set cluster.disk: lossy"
        )
    return [(node, node.disk) for node in nodes if node.disk is not None]


def _wait_dead(node: Node) -> None:
    """Until the node's container has stopped: no process of it writes while its disk drops."""

    def probe() -> tuple[bool, str]:
        status = node.status()
        return status != "running", status

    wait_until(probe, what=f"{node.name} to die", timeout_s=DEAD_WITHIN_S, interval_s=0.02)


def summary(dropped: dict[str, Any]) -> dict[str, Any]:
    """A drop's answer as recorded: the files that had unsynced bytes, the changes undone, totals."""
    files = {path: loss for path, loss in dropped["files"].items() if loss["unsynced"] or loss["dropped"]}
    return {
        "unsynced_bytes": dropped["unsynced_bytes"],
        "dropped_bytes": dropped["dropped_bytes"],
        "files": files,
        "undone": dropped["undone"],
    }


@register
class PowerLoss(Targeted):
    name = "power-loss"
    description = (
        "The targets (default: every replica of a partition; `cluster`: every node) lose power: killed "
        "at once, and what their lossy disks had not fsynced is gone; heal starts them again and "
        "Kafka's own recovery decides what survives. Needs cluster.disk: lossy."
    )
    default_target = "replicas"

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
        torn: bool | str = False,
        written_back_s: float | str | None = None,
    ) -> None:
        whole = isinstance(target, str) and target.strip() == WHOLE_CLUSTER
        super().__init__(target="all" if whole else target, topic=topic, partition=partition, pick=pick)
        self.whole_cluster = whole
        if whole:
            self.target = WHOLE_CLUSTER
        self.torn = coerce_bool("torn", torn)
        self.written_back_s = (
            None
            if written_back_s is None
            else coerce_float("written_back_s", written_back_s, low=0, high=3600)
        )

    def describe(self) -> str:
        return (
            "Power loss: the targets die at once and lose every byte and directory entry they had not "
            "fsynced (what Kafka acknowledged from the page cache alone among them); Kafka's recovery "
            "runs when they start again."
        )

    def resolve(self, context: FaultContext, rng: random.Random) -> list[Node]:
        if not self.whole_cluster:
            return super().resolve(context, rng)
        self._nodes = list(context.cluster.nodes)
        self.targets = [node.name for node in self._nodes]
        self.detail = {**self.detail, "target": WHOLE_CLUSTER}
        return self._nodes

    def start(self, context: FaultContext, rng: random.Random) -> None:
        disks = lossy_disks(self.name, self.resolve(context, rng))
        seed = rng.randrange(1 << 31) if self.torn else None
        self.detail.update(torn_seed=seed, written_back_s=self.written_back_s)
        for node, _ in disks:  # every target dies before any disk drops: one moment for all
            node.kill()
        for node, _ in disks:
            _wait_dead(node)
        dropped: dict[str, Any] = {}
        self.detail["dropped"] = dropped
        for node, disk in disks:
            try:
                dropped[node.name] = summary(disk.drop(seed, self.written_back_s))
            except ClusterError as exc:
                raise FaultError(f"power-loss could not drop {node.name}'s unsynced data: {exc}") from None

    def heal(self, context: FaultContext) -> None:
        cluster = context.cluster
        restart(cluster, self._nodes)

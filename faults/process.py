"""Process faults: crash (`kill`), clean shutdown (`stop`), freeze (`pause`), `rolling-restart`.

Heal brings every target back and waits until each broker has registered in ZooKeeper again, so a
healed fault means a running cluster; whether the ISR is full again is for the caller to wait on.
"""

from __future__ import annotations

import random

from faults.base import coerce_bool, coerce_float, register
from faults.targets import Targeted
from harness.cluster import KafkaCluster
from harness.errors import ClusterError, FaultError
from harness.services import KafkaBroker, Node
from harness.waiting import wait_until

REJOIN_TIMEOUT_S = 90.0


def _restart(cluster: KafkaCluster, nodes: list[Node], timeout_s: float = REJOIN_TIMEOUT_S) -> None:
    """Start every node that is not running (resume paused ones); wait for brokers to re-register."""
    problems: list[str] = []
    for node in nodes:
        status = node.status()
        try:
            if status == "paused":
                node.resume()
            elif status in ("exited", "created", "dead"):
                if isinstance(node, KafkaBroker):
                    _wait_unregistered(cluster, node, timeout_s)
                node.start()
        except ClusterError as exc:
            problems.append(str(exc))
    if problems:
        raise FaultError("; ".join(problems))
    broker_ids = [n.broker_id for n in nodes if isinstance(n, KafkaBroker)]
    if broker_ids:
        cluster.wait_for_brokers(timeout_s=timeout_s, broker_ids=broker_ids)


def _wait_unregistered(cluster: KafkaCluster, broker: KafkaBroker, timeout_s: float) -> None:
    """A crashed broker's ZooKeeper registration lives until its session times out; Kafka 0.9 exits
    at startup if it finds its id still registered, so a restart has to wait that out."""

    def probe() -> tuple[bool, str]:
        live = cluster.state([]).live_brokers
        return broker.broker_id not in live, f"registered brokers {list(live)}"

    wait_until(
        probe,
        what=f"{broker.name}'s old ZooKeeper session to expire before restarting it",
        timeout_s=timeout_s,
    )


class _ProcessFault(Targeted):
    def heal(self, cluster: KafkaCluster) -> None:
        _restart(cluster, self._nodes)


@register
class Kill(_ProcessFault):
    name = "kill"
    description = "Crash the target (SIGKILL of its container); heal restarts it with its log dirs."

    def start(self, cluster: KafkaCluster, rng: random.Random) -> None:
        for node in self.resolve(cluster, rng):
            node.kill()


@register
class Stop(_ProcessFault):
    name = "stop"
    description = "Shut the target down cleanly (SIGTERM, controlled shutdown); heal restarts it."

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        grace_s: float | str = 30.0,
    ) -> None:
        super().__init__(target=target, topic=topic, partition=partition)
        self.grace_s = coerce_float("grace_s", grace_s, low=1, high=600)

    def start(self, cluster: KafkaCluster, rng: random.Random) -> None:
        for node in self.resolve(cluster, rng):
            node.stop(timeout_s=int(self.grace_s))


@register
class Pause(_ProcessFault):
    name = "pause"
    description = (
        "Freeze the target (cgroup freezer) like a long GC pause; held past the "
        "ZooKeeper session timeout it wakes as a zombie leader. Heal resumes it."
    )

    def start(self, cluster: KafkaCluster, rng: random.Random) -> None:
        for node in self.resolve(cluster, rng):
            node.pause()


@register
class RollingRestart(_ProcessFault):
    name = "rolling-restart"
    description = (
        "Restart the brokers one by one (clean stop, or kill), waiting for the ISR "
        "to be full again before the next."
    )
    default_target = "all"

    def __init__(
        self, *, target: str | None = None, kill: bool | str = False, isr_timeout_s: float | str = 120.0
    ) -> None:
        super().__init__(target=target)
        self.crash = coerce_bool("kill", kill)
        self.isr_timeout_s = coerce_float("isr_timeout_s", isr_timeout_s, low=1, high=3600)

    def start(self, cluster: KafkaCluster, rng: random.Random) -> None:
        brokers = [n for n in self.resolve(cluster, rng) if isinstance(n, KafkaBroker)]
        self.detail["order"] = [b.name for b in brokers]
        for broker in brokers:
            if self.crash:
                broker.kill()
            else:
                broker.stop()
            _restart(cluster, [broker])
            self._wait_isr_full(cluster)

    def _wait_isr_full(self, cluster: KafkaCluster) -> None:
        def probe() -> tuple[bool, str]:
            try:
                snapshot = cluster.state()
            except ClusterError as exc:
                return False, str(exc)
            return all(p.isr_full for p in snapshot.partitions), snapshot.describe()

        wait_until(
            probe,
            what="full ISR on every partition",
            timeout_s=self.isr_timeout_s,
            diagnostics=cluster.describe_nodes,
        )

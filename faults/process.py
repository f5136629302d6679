"""Process faults: crash (`kill`), clean shutdown (`stop`), freeze (`pause`), `rolling-restart`.

Heal brings every target back and waits until each is up again: a ZooKeeper node serves, a
controller answers on its port, a broker has registered again. Whether a controller has caught up,
or the ISR is full again, is for the caller to wait on.
"""

from __future__ import annotations

import random
import time

from contract.errors import ClusterError, Failures, FaultError, ReadinessTimeout
from faults.base import FaultContext, coerce_bool, coerce_float, register
from faults.targets import Targeted
from harness.cluster import KafkaCluster
from harness.retrying import bounded
from harness.services import KafkaBroker, KRaftController, Node, ZooKeeperNode
from harness.waiting import wait_until

REJOIN_TIMEOUT_S = 90.0
RESTART_ATTEMPTS = 3
STOPPED = ("exited", "created", "dead")


def restart(cluster: KafkaCluster, nodes: list[Node], timeout_s: float = REJOIN_TIMEOUT_S) -> list[str]:
    """Start every node that is not running (resume paused ones) and wait until each is back: a
    ZooKeeper node serves, a dedicated controller answers on its port, a broker is registered; all
    again (3 attempts, none begun after `timeout_s`) when one fails, e.g. a node that exits at
    startup. Returns what was done, one line per node."""
    done: dict[str, str] = {}

    def attempt() -> None:
        _bring_back(cluster, nodes, timeout_s, done)
        deadline = time.monotonic() + timeout_s  # one wait for all the kinds of node

        def left_s() -> float:
            return max(1.0, deadline - time.monotonic())

        zookeepers = [n for n in nodes if isinstance(n, ZooKeeperNode)]
        if zookeepers:
            cluster.wait_for_zookeepers(timeout_s=left_s(), zookeepers=zookeepers)
        controllers = [n for n in nodes if isinstance(n, KRaftController)]
        if controllers:
            cluster.wait_for_controllers(controllers, timeout_s=left_s())
        broker_ids = [n.broker_id for n in nodes if isinstance(n, KafkaBroker)]
        if broker_ids:
            cluster.wait_for_brokers(timeout_s=left_s(), broker_ids=broker_ids)

    bounded(_worth_another_start, attempts=RESTART_ATTEMPTS, within_s=timeout_s, wait_s=1.0)(attempt)
    return [f"{name}: {what}" for name, what in done.items()]


def _worth_another_start(exc: BaseException) -> bool:
    """A failed start or a node that exited at startup; not a wait that used up its time already."""
    return isinstance(exc, ClusterError | FaultError) and not isinstance(exc, ReadinessTimeout)


def _bring_back(cluster: KafkaCluster, nodes: list[Node], timeout_s: float, done: dict[str, str]) -> None:
    failures = Failures(FaultError)
    for node in nodes:
        with failures.attempt():
            status = node.status()
            if status == "paused":
                node.resume()
                done[node.name] = "resumed (was paused)"
            elif status in STOPPED:
                if isinstance(node, KafkaBroker) and not cluster.kraft:  # KRaft: a new incarnation registers
                    _wait_unregistered(cluster, node, timeout_s)
                exit_code = node.exit_code()
                node.start()
                done[node.name] = f"started again (was {status}, exit code {exit_code})"
    failures.raise_if_any()


def _wait_unregistered(cluster: KafkaCluster, broker: KafkaBroker, timeout_s: float) -> None:
    """A crashed broker's ZooKeeper registration lives until its session times out; Kafka 0.9 exits
    at startup if it finds its id still registered, so a restart has to wait that out."""

    def probe() -> tuple[bool, str]:
        try:
            live = cluster.state([]).live_brokers
        except ClusterError as exc:
            return False, str(exc)
        return broker.broker_id not in live, f"registered brokers {list(live)}"

    wait_until(
        probe,
        what=f"{broker.name}'s old ZooKeeper session to expire before restarting it",
        timeout_s=timeout_s,
    )


class _ProcessFault(Targeted):
    def heal(self, context: FaultContext) -> None:
        cluster = context.cluster
        restart(cluster, self._nodes)


@register
class Kill(_ProcessFault):
    name = "kill"
    description = (
        "Crash the target (SIGKILL of its container): no clean shutdown, no leadership handover. "
        "Heal restarts it with its log dirs."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        for node in self.resolve(context, rng):
            node.kill()


@register
class Stop(_ProcessFault):
    name = "stop"
    description = (
        "Shut the target down cleanly (SIGTERM, controlled shutdown): it hands over its leaderships "
        "before it exits. Heal restarts it."
    )

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
        grace_s: float | str = 30.0,
    ) -> None:
        super().__init__(target=target, topic=topic, partition=partition, pick=pick)
        self.grace_s = coerce_float("grace_s", grace_s, low=1, high=600)

    def start(self, context: FaultContext, rng: random.Random) -> None:
        for node in self.resolve(context, rng):
            node.stop(timeout_s=int(self.grace_s))


@register
class Pause(_ProcessFault):
    name = "pause"
    description = (
        "Freeze every process of the target (cgroup freezer), like a long GC pause; held past the "
        "ZooKeeper session timeout, its leaderships move, and it wakes believing it is still leader. "
        "Heal resumes it."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        for node in self.resolve(context, rng):
            node.pause()


@register
class RollingRestart(_ProcessFault):
    name = "rolling-restart"
    description = (
        "Restart the brokers one by one (clean stop, or kill), as in an upgrade, waiting for the "
        "ISR to be full again before the next: every leadership moves."
    )
    default_target = "all"

    def __init__(
        self, *, target: str | None = None, kill: bool | str = False, isr_timeout_s: float | str = 120.0
    ) -> None:
        super().__init__(target=target)
        self.crash = coerce_bool("kill", kill)
        self.isr_timeout_s = coerce_float("isr_timeout_s", isr_timeout_s, low=1, high=3600)

    def start(self, context: FaultContext, rng: random.Random) -> None:
        cluster = context.cluster
        brokers = [n for n in self.resolve(context, rng) if isinstance(n, KafkaBroker)]
        self.detail["order"] = [b.name for b in brokers]
        for broker in brokers:
            if self.crash:
                broker.kill()
            else:
                broker.stop()
            restart(cluster, [broker])
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

"""Healing whatever faults kafka-chaos may have left on a live cluster (`kchaos heal RUN_ID`), when the
command or experiment that started them was killed before its own heal ran.

Nothing about those faults is known but what the containers show, so every kind is undone wherever
it is found, in this order: frozen containers resumed first (nothing else works on them), then in
every running container our iptables chains (any `KCHAOS*` chain, the rules jumping to it) and our
root qdisc removed, every lossy disk's faults healed, then stopped nodes started again: the metadata
nodes (ZooKeeper or KRaft controllers) first, then brokers, each broker only once its old ZooKeeper
session is gone (as `kill`'s own heal does). Each step is tried on
every node even when one fails; the failures are raised together at the end.
"""

from __future__ import annotations

from collections.abc import Callable

from contract.errors import Failures, FaultError
from faults.base import retry_heal_step
from faults.iptables import remove_all_chains
from faults.links import clear_qdisc
from faults.process import REJOIN_TIMEOUT_S, STOPPED, restart
from harness.cluster import KafkaCluster
from harness.services import Node


def heal_leftovers(
    cluster: KafkaCluster, healed: Callable[[str], None], timeout_s: float = REJOIN_TIMEOUT_S
) -> None:
    """Undo every fault found on `cluster` (attached without a ZooKeeper session is fine: one is
    opened once ZooKeeper can answer again), calling `healed` with a line for each thing healed as
    it is done; FaultError naming each step that failed. Ends with every broker registered."""
    failures = Failures(FaultError)
    for node in cluster.nodes:
        if node.status() == "paused":
            with failures.attempt(f"cannot resume {node.name}"):
                retry_heal_step(node.resume)
                healed(f"{node.name}: resumed (was paused)")
    for node in cluster.nodes:
        if node.status() != "running":
            continue  # a stopped container's rules and qdiscs went with its network namespace
        with failures.attempt():
            chains = retry_heal_step(remove_all_chains, node)
            if chains:
                healed(f"{node.name}: removed iptables chains {', '.join(chains)}")
        with failures.attempt():
            qdisc = retry_heal_step(clear_qdisc, node)
            if qdisc:
                healed(f"{node.name}: removed the {qdisc} qdisc")
    for node in cluster.nodes:
        if node.disk is not None:  # a disk fault (disk-full, fsync-error, slow-fsync) left in force
            with failures.attempt(f"cannot heal {node.name}'s lossy disk"):
                was = retry_heal_step(node.disk.request, {"command": "heal"})["healed"]
                if was:
                    healed(f"{node.name}: lossy disk healed of {', '.join(was)}")
    stopped_metadata: list[Node] = [n for n in cluster.metadata_nodes if n.status() in STOPPED]
    if stopped_metadata:
        with failures.attempt("cannot start the metadata nodes again"):
            for line in restart(cluster, stopped_metadata, timeout_s):
                healed(line)
    with failures.attempt("cannot bring the brokers back"):
        cluster.connect_metadata()
        stopped_brokers: list[Node] = [b for b in cluster.brokers if b.status() in STOPPED]
        if stopped_brokers:
            for line in restart(cluster, stopped_brokers, timeout_s):
                healed(line)
        cluster.wait_for_brokers(timeout_s=timeout_s)
    failures.raise_if_any()

"""The `txn-coordinator` target on a real cluster: transactional producers initialized with
confluent_kafka make __transaction_state, and the target resolves to the leader of each id's
partition, the broker a FindCoordinator request names, in ZooKeeper mode (3.9.2) and KRaft (4.1.1)."""

from __future__ import annotations

import random

import pytest
from confluent_kafka import Producer

from contract.coordinators import TRANSACTION_STATE_TOPIC
from contract.errors import TargetError
from contract.nodes import broker_name
from faults import make_fault
from faults.base import FaultContext
from faults.targets import resolve
from harness import kafka_protocol
from harness.broker_config import BROKER_PORT
from harness.cluster import ClusterSpec, KafkaCluster
from harness.workload import WorkloadHandles

pytestmark = pytest.mark.docker

TRANSACTIONAL_IDS = {"kchaos-tx-0": 35, "pipe-tx": 23}
"""Two transactional.ids and their __transaction_state partitions of 50: Utils.abs of Java's hash,
48116735 and -566251773 (a negative one)."""


def register(cluster: KafkaCluster, transactional_id: str) -> None:
    """Initialize a producer of `transactional_id` (the first makes __transaction_state) and let it go:
    a client left to outlive the cluster would only log its failing reconnections."""
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": transactional_id}
    )
    producer.init_transactions(60)


@pytest.mark.parametrize(("release", "metadata"), [("3.9.2", "zookeeper"), ("4.1.1", "kraft")])
def test_txn_coordinator_is_the_leader_findcoordinator_names(release: str, metadata: str) -> None:
    with KafkaCluster(ClusterSpec(brokers=3, kafka=release, metadata=metadata)) as cluster:
        context = FaultContext(cluster, WorkloadHandles(transactional_ids=list(TRANSACTIONAL_IDS)))
        with pytest.raises(TargetError, match="__transaction_state does not exist yet"):
            resolve(context, "txn-coordinator:kchaos-tx-0", random.Random(1))
        for transactional_id in TRANSACTIONAL_IDS:
            register(cluster, transactional_id)
        assert len(cluster.metadata.replica_counts(TRANSACTION_STATE_TOPIC)) == 50
        state = cluster.state([TRANSACTION_STATE_TOPIC])
        leaders = {}
        brokers = [(b.ip, BROKER_PORT) for b in cluster.brokers]
        for transactional_id, number in TRANSACTIONAL_IDS.items():
            partition = state.partition(TRANSACTION_STATE_TOPIC, number)
            assert partition is not None and partition.leader > 0, state.describe()
            leaders[transactional_id] = broker_name(partition.leader)
            nodes, detail = resolve(context, f"txn-coordinator:{transactional_id}", random.Random(1))
            asked = kafka_protocol.find_coordinator(
                brokers, transactional_id, kafka_protocol.TRANSACTION_KEY, 5.0
            )
            assert asked.error_code == 0 and asked.host == cluster.broker(asked.node_id).ip
            assert [n.name for n in nodes] == [broker_name(asked.node_id)] == [leaders[transactional_id]]
            assert detail == {
                "transactional_id": transactional_id,
                "coordinator_partition": number,
                "find_coordinator": leaders[transactional_id],
            }

        with pytest.raises(TargetError, match="say whose, one of txn-coordinator:kchaos-tx-0"):
            resolve(context, "txn-coordinator", random.Random(1))
        alone = FaultContext(cluster, WorkloadHandles(transactional_ids=["pipe-tx"]))
        pause = make_fault("pause", {"target": "txn-coordinator"})  # alone: the only transactional.id
        try:
            pause.start(alone, random.Random(1))
            assert pause.targets == [leaders["pipe-tx"]]
            assert (
                pause.detail["transactional_id"] == "pipe-tx" and pause.detail["coordinator_partition"] == 23
            )
        finally:
            pause.heal(alone)

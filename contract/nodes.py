"""The names of a run's nodes, as containers, fault targets, log files (RUN/logs/<node>.log) and
cluster.jsonl's node ids name them."""

from __future__ import annotations


def broker_name(broker_id: int) -> str:
    """The container (and fault target) name of a broker."""
    return f"kafka-{broker_id}"


def zookeeper_name(number: int) -> str:
    """The container (and fault target) name of a ZooKeeper node, numbered from 1."""
    return f"zk-{number}"


CONTROLLER_ID_BASE = 100
"""A dedicated KRaft controller's node id is this plus its number (101, 102, ...), apart from the
brokers' ids (1 to 9), so that an id names one node whatever its role."""


def controller_name(number: int) -> str:
    """The container (and fault target) name of a dedicated KRaft controller, numbered from 1."""
    return f"controller-{number}"


def node_name(node_id: int) -> str:
    """The name of the node with Kafka node id `node_id`: a broker, or a dedicated KRaft controller."""
    if node_id > CONTROLLER_ID_BASE:
        return controller_name(node_id - CONTROLLER_ID_BASE)
    return broker_name(node_id)

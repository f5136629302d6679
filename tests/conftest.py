"""Shared fixtures. Tests marked `docker` run against real clusters in real containers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from harness.cluster import ClusterSpec, KafkaCluster
from harness.images import KafkaImage


@pytest.fixture(scope="session")
def kafka_image() -> KafkaImage:
    """The default Kafka image, built once if missing (fast when it exists)."""
    return ClusterSpec().resolve_image()


ClusterFactory = Callable[..., KafkaCluster]


@pytest.fixture
def cluster_factory(kafka_image: KafkaImage) -> Iterator[ClusterFactory]:
    """Start clusters on demand (`cluster_factory(brokers=3, broker_config={...})`); all are removed after."""
    started: list[KafkaCluster] = []

    def start(**spec: object) -> KafkaCluster:
        cluster = KafkaCluster(ClusterSpec(image=kafka_image.tag, **spec))  # type: ignore[arg-type]
        cluster.start()
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.close()


@pytest.fixture
def cluster(cluster_factory: ClusterFactory) -> KafkaCluster:
    """A fresh 3-broker cluster with one ZooKeeper and min.insync.replicas=2."""
    return cluster_factory(brokers=3, broker_config={"min.insync.replicas": 2})

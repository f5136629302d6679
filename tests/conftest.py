"""Shared fixtures. Tests marked `docker` run against real clusters in real containers."""

from __future__ import annotations

import os
import tarfile
from collections.abc import Callable, Generator, Iterator

import pytest

from contract.errors import HarnessError
from harness.cluster import ClusterSpec, KafkaCluster
from harness.forensics import broker_log_files
from harness.images import KAFKA_ENV, KafkaImage
from kchaos.signals import terminate_as_interrupt

SUITE_KAFKA = "0.9.0.1"
"""The release the suite's scenario, fault and group tests run on when they name none: their
assertions pin what kafka-chaos found on it (docs/FINDINGS.md). The other release lines have tests
of their own (tests/harness/test_releases_real.py). Set KCHAOS_KAFKA to run the suite on another."""
os.environ.setdefault(KAFKA_ENV, SUITE_KAFKA)  # before any test resolves the default, subprocesses too

BROKER_LOG_TAIL = 40
"""Lines of each broker's controller.log and state-change.log shown with a failed cluster test."""


@pytest.fixture(scope="session", autouse=True)
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM (a CI timeout, `kill`) ends the suite as Ctrl-C does: fixtures and `with` blocks
    remove their clusters instead of leaving them running."""
    with terminate_as_interrupt():
        yield


@pytest.fixture(scope="session")
def kafka_image() -> KafkaImage:
    """The default Kafka image, built once if missing (fast when it exists)."""
    return ClusterSpec().resolve_image()


ClusterFactory = Callable[..., KafkaCluster]


@pytest.fixture
def cluster_factory(kafka_image: KafkaImage, request: pytest.FixtureRequest) -> Iterator[ClusterFactory]:
    """Start clusters on demand (`cluster_factory(brokers=3, broker_config={...})`); all are removed after."""
    started: list[KafkaCluster] = []
    request.node.kchaos_clusters = started  # for the brokers' logs in a failed test's report

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, object, object]:
    """A failed test on real clusters shows the end of each broker's controller and state-change logs
    (elections, ISR changes, what each broker was told to lead or follow), read before the clusters
    are removed: the container logs in a timeout's message hold only the server log."""
    report = yield
    if call.when == "call" and isinstance(report, pytest.TestReport) and report.failed:
        for cluster in getattr(item, "kchaos_clusters", []):
            report.sections.append((f"broker logs of run {cluster.run_id}", _broker_log_tails(cluster)))
    return report


def _broker_log_tails(cluster: KafkaCluster) -> str:
    parts = []
    for broker in cluster.brokers:
        try:
            files = dict(broker_log_files(broker))
        except (HarnessError, OSError, tarfile.TarError) as exc:  # the report still goes out
            parts.append(f"--- {broker.name}: logs not read: {exc}")
            continue
        for name in ("controller.log", "state-change.log"):
            lines = files.get(name, b"").decode(errors="replace").splitlines()
            shown = min(BROKER_LOG_TAIL, len(lines))
            parts.append(f"--- {broker.name} {name}, last {shown} of {len(lines)} lines:")
            parts.extend(lines[-BROKER_LOG_TAIL:])
    return "\n".join(parts)

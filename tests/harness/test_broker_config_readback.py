"""What run.json says the brokers ran with is what their server.properties holds and Kafka read."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from java_properties import read_properties

from harness.broker_config import broker_settings
from harness.cluster import KafkaCluster
from harness.experiment import ExperimentSpec, run_metadata

pytestmark = pytest.mark.docker

KEYSTORE = r"C:\new\tab = #x:y\\"  # backslashes printf %b would expand, separators, a final backslash


def test_server_properties_read_back_equal_run_json(cluster_factory: Callable[..., KafkaCluster]) -> None:
    overrides = {
        "min.insync.replicas": 1,
        "unclean.leader.election.enable": False,
        "ssl.keystore.location": KEYSTORE,
        "ssl.truststore.location": "  /tmp/grüße ☃",  # leading spaces and no ISO-8859-1
    }
    cluster = cluster_factory(brokers=2, broker_config=overrides)
    recorded = run_metadata(ExperimentSpec("readback", 1.0, cluster=cluster.spec), cluster.run_id, cluster)
    assert recorded["cluster"]["broker_config"] == {
        "min.insync.replicas": "1",
        "unclean.leader.election.enable": "false",
        "ssl.keystore.location": KEYSTORE,
        "ssl.truststore.location": "  /tmp/grüße ☃",
    }
    zk_ips = [z.ip for z in cluster.zookeepers]
    for broker in cluster.brokers:
        code, text = broker.exec(["cat", "/etc/kchaos/kafka.properties"], timeout_s=10)
        assert code == 0, text
        on_disk = read_properties(text.encode("ascii"))  # escaped: nothing outside ASCII on disk
        # Exactly the settings rendered, no line more or less, and the overrides as run.json has them.
        assert on_disk == broker_settings(
            cluster.kafka_version, broker.broker_id, broker.ip, zk_ips, 2, cluster.spec.broker_config
        )
        assert {key: on_disk[key] for key in recorded["cluster"]["broker_config"]} == recorded["cluster"][
            "broker_config"
        ]
        # Kafka's own reading, from the config it logs at startup.
        assert f"ssl.keystore.location = {KEYSTORE}\n" in broker.logs(tail=3000)

"""A guarantee's `promised_by` names the client that made the client-side promise for its topic or
group: run.json's per-topic and per-group `client` (a run may mix clients), else the run's `client`
(run directories made before clients were recorded per part). Pure Python, no Spark."""

from __future__ import annotations

from typing import Any

from checkers.group_guarantees import group_guarantees
from checkers.guarantees import derive_guarantees
from contract.anomaly_kinds import KINDS, TOPIC_CASES

LIBRDKAFKA = {"library": "librdkafka", "version": "2.16.0", "python": "2.16.1"}
JAVA = {"library": "kafka-clients", "version": "4.1.1", "java": 'openjdk version "17.0.15" 2025-04-15'}
COUNTS = {
    **{kind.count: 0 for kind in KINDS},
    "unread": [],
    "replicas_read": True,
    "replicas_not_read": "",
    "disks_failed": True,
    "acked": 10,
    **dict.fromkeys(TOPIC_CASES, 10),
}
GROUP_COUNTS = {"skipped": 0, "poll_skips": 0, "redelivered": 0, "nonmonotonic": 0, "commit_regressions": 0}


def _run(**topic_clients: dict[str, str] | None) -> dict[str, Any]:
    """Topics named by `topic_clients` (a topic's client, or None for none recorded), a run of a
    librdkafka default client."""
    producer = {"enable.idempotence": True, "max.in.flight.requests.per.connection": 1}
    topics = [
        {
            "name": name,
            "partitions": 1,
            "replication_factor": 3,
            "acks": "all",
            "producer": producer,
            **({"client": client} if client else {}),
        }
        for name, client in topic_clients.items()
    ]
    return {
        "kafka": {"version": "4.1.1"},
        "cluster": {"broker_config": {"min.insync.replicas": "2"}},
        "client": LIBRDKAFKA,
        "topics": topics,
        "producer": {},
    }


def _by(run: dict[str, Any], topic: str) -> dict[str, str]:
    rows = derive_guarantees(run, {t["name"]: COUNTS for t in run["topics"]})
    return {row["id"]: row["promised_by"] for row in rows if row["topic"] == topic}


def test_each_topic_names_the_client_that_wrote_it() -> None:
    run = _run(java_topic=JAVA, c_topic=LIBRDKAFKA)
    java, librdkafka = _by(run, "java_topic"), _by(run, "c_topic")
    assert java["no-duplicates"] == "the idempotent producer (kafka-clients 4.1.1 with Kafka 4.1.1 brokers)"
    assert java["per-partition-order"] == java["no-duplicates"]
    assert (
        java["no-unexpected-values"]
        == "the brokers and the client together (Kafka 4.1.1, kafka-clients 4.1.1)"
    )
    assert (
        librdkafka["no-duplicates"] == "the idempotent producer (librdkafka 2.16.0 with Kafka 4.1.1 brokers)"
    )
    assert java["no-lost-acked-writes"] == librdkafka["no-lost-acked-writes"] == "the brokers (Kafka 4.1.1)"


def test_a_topic_without_its_own_client_falls_back_to_the_runs() -> None:
    run = _run(old_topic=None)
    assert "librdkafka 2.16.0" in _by(run, "old_topic")["no-duplicates"]
    del run["client"]
    assert "client not named in run.json" in _by(run, "old_topic")["no-duplicates"]


def test_each_group_names_its_members_client() -> None:
    run = _run(t=LIBRDKAFKA)
    group = {"name": "g", "topics": ["t"], "commit": "after-process", "members": 2}
    old = {row["id"]: row["promised_by"] for row in group_guarantees(run, group, GROUP_COUNTS)}
    assert old["no-consumer-skips"] == "the consumer's commit mode (after-process; librdkafka 2.16.0)"
    java = {
        row["id"]: row["promised_by"]
        for row in group_guarantees(run, {**group, "client": JAVA}, GROUP_COUNTS)
    }
    assert java["no-consumer-skips"] == "the consumer's commit mode (after-process; kafka-clients 4.1.1)"
    assert java["monotonic-polls"] == "the group coordinator (Kafka 4.1.1)"

"""Unit tests of broker and ZooKeeper config rendering and of override checks, per Kafka version."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from contract.errors import ConfigError
from harness import cluster as cluster_module
from harness.broker_config import (
    BROKER_PORT,
    KafkaVersion,
    KRaftRole,
    render_broker_config,
    render_zookeeper_config,
    validate_overrides,
)
from harness.cluster import ClusterSpec
from kchaos.cluster_cli import parse_overrides

IP = "172.28.0.101"
ZKS = ["172.28.0.11"]
KNOWN_09 = [
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "num.network.threads",
    "replica.lag.time.max.ms",
    "auto.create.topics.enable",
    "broker.id",
]


def properties(text: str) -> dict[str, str]:
    assert text.endswith("\n")
    pairs = [line.split("=", 1) for line in text.splitlines()]
    assert all(len(pair) == 2 for pair in pairs), text
    result = dict((key, value) for key, value in pairs)
    assert len(result) == len(pairs), f"a key is rendered twice:\n{text}"
    return result


def test_render_09_uses_advertised_host_name() -> None:
    props = properties(render_broker_config(KafkaVersion.parse("0.9.0.1"), 2, IP, ZKS, 3, {}))
    assert props["broker.id"] == "2"
    assert props["advertised.host.name"] == IP
    assert props["port"] == props["advertised.port"] == str(BROKER_PORT)
    assert "listeners" not in props and "advertised.listeners" not in props
    assert props["zookeeper.connect"] == f"{ZKS[0]}:2181"
    assert props["auto.create.topics.enable"] == "false"
    assert props["offsets.topic.replication.factor"] == "3"
    # Settings that 0.9 does not know must not be rendered for it.
    assert "group.initial.rebalance.delay.ms" not in props
    assert "transaction.state.log.replication.factor" not in props


@pytest.mark.parametrize("version", ["2.8.2", "3.6.1"])
def test_render_newer_uses_listeners(version: str) -> None:
    props = properties(render_broker_config(KafkaVersion.parse(version), 1, IP, ZKS * 3, 1, {}))
    assert props["listeners"] == f"PLAINTEXT://0.0.0.0:{BROKER_PORT}"
    assert props["advertised.listeners"] == f"PLAINTEXT://{IP}:{BROKER_PORT}"
    for old in ("advertised.host.name", "advertised.port", "port"):
        assert old not in props
    # Internal topics cannot ask for more replicas than there are brokers.
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"


def test_render_applies_overrides_last_with_kafka_booleans() -> None:
    overrides = {"min.insync.replicas": 2, "unclean.leader.election.enable": False, "num.partitions": 6}
    props = properties(render_broker_config(KafkaVersion.parse("0.9.0.1"), 1, IP, ZKS, 3, overrides))
    assert props["min.insync.replicas"] == "2"
    assert props["unclean.leader.election.enable"] == "false"
    assert props["num.partitions"] == "6"  # replaces the harness default of 1


def test_render_zookeeper_ensemble() -> None:
    single = render_zookeeper_config(ZKS)
    assert "clientPort=2181" in single and "server." not in single
    ensemble = render_zookeeper_config(["10.0.0.11", "10.0.0.12", "10.0.0.13"])
    assert "server.1=10.0.0.11:2888:3888" in ensemble
    assert "server.3=10.0.0.13:2888:3888" in ensemble


@pytest.mark.parametrize(
    ("version", "unclean_default", "listeners"),
    [
        ("0.9.0.1", True, False),
        ("0.10.1.1", True, False),
        ("0.10.2.0", True, True),
        ("0.11.0.3", False, True),
        ("2.8.2", False, True),
        ("3.6.1", False, True),
    ],
)
def test_version_defaults(version: str, unclean_default: bool, listeners: bool) -> None:
    parsed = KafkaVersion.parse(version)
    assert parsed.unclean_election_default is unclean_default
    assert parsed.uses_listeners is listeners
    assert str(parsed) == version


def test_version_parse() -> None:
    assert KafkaVersion.parse("3.6.1").parts == (3, 6, 1)
    assert KafkaVersion.parse("2.8.0-SNAPSHOT").parts == (2, 8, 0)
    assert KafkaVersion.parse("0.9.0.1") < KafkaVersion.parse("0.10.0.0")
    with pytest.raises(ConfigError, match="cannot read a Kafka version from 'abc'"):
        KafkaVersion.parse("abc")


def test_validate_overrides_accepts_good_values() -> None:
    validate_overrides(
        {
            "min.insync.replicas": 2,
            "unclean.leader.election.enable": "false",
            "auto.create.topics.enable": True,
            "num.network.threads": "abc",
        },
        KNOWN_09,
        "0.9.0.1",
    )


def test_validate_overrides_typo_names_key_and_suggests() -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({"min.insync.replica": 2}, KNOWN_09, "0.9.0.1")
    message = str(info.value)
    assert "'min.insync.replica'" in message
    assert "not a Kafka 0.9.0.1 broker setting" in message
    assert "did you mean 'min.insync.replicas'?" in message


def test_validate_overrides_unknown_key_without_close_match() -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({"zzz.qqq": 1}, KNOWN_09, "0.9.0.1")
    assert "'zzz.qqq'" in str(info.value) and "did you mean" not in str(info.value)


def test_validate_overrides_without_known_keys_only_checks_types() -> None:
    validate_overrides({"anything.goes": 1}, [], "9.9")
    with pytest.raises(ConfigError, match=r"'min\.insync\.replicas' must be an integer"):
        validate_overrides({"min.insync.replicas": "two"}, [], "9.9")


@pytest.mark.parametrize(
    "key", ["broker.id", "zookeeper.connect", "advertised.host.name", "listeners", "log.dirs"]
)
def test_validate_overrides_rejects_managed_keys(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides({key: "1"}, [*KNOWN_09, key], "0.9.0.1")
    assert f"{key!r} is set by kafka-chaos" in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"min.insync.replicas": "abc"}, "'min.insync.replicas' must be an integer, got 'abc'"),
        ({"replica.lag.time.max.ms": "10s"}, "'replica.lag.time.max.ms' must be an integer"),
        ({"unclean.leader.election.enable": "yes"}, "'unclean.leader.election.enable' must be true or false"),
        ({"min.insync.replicas": 0}, "'min.insync.replicas' must be at least 1, got 0"),
    ],
)
def test_validate_overrides_rejects_bad_values(overrides: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate_overrides(overrides, KNOWN_09, "0.9.0.1")  # type: ignore[arg-type]
    assert expected in str(info.value)


def test_parse_cli_overrides() -> None:
    assert parse_overrides(["min.insync.replicas=2", " a.b = c=d "]) == {
        "min.insync.replicas": "2",
        "a.b": "c=d",
    }
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_overrides(["min.insync.replicas"])


# -- KRaft -------------------------------------------------------------------------------------------
VOTERS = ((101, "172.28.0.51"), (102, "172.28.0.52"), (103, "172.28.0.53"))


def test_render_kraft_broker_controller_and_combined() -> None:
    v391 = KafkaVersion.parse("3.9.1")
    broker = properties(
        render_broker_config(v391, 2, IP, [], 3, {"min.insync.replicas": 2}, KRaftRole(("broker",), VOTERS))
    )
    assert {k: broker[k] for k in ("node.id", "process.roles", "controller.quorum.voters", "listeners")} == {
        "node.id": "2",
        "process.roles": "broker",
        "controller.quorum.voters": "101@172.28.0.51:9093,102@172.28.0.52:9093,103@172.28.0.53:9093",
        "listeners": f"PLAINTEXT://0.0.0.0:{BROKER_PORT}",
    }
    assert broker["advertised.listeners"] == f"PLAINTEXT://{IP}:{BROKER_PORT}"
    assert broker["inter.broker.listener.name"] == "PLAINTEXT" and broker["min.insync.replicas"] == "2"
    assert not [k for k in broker if k.startswith("zookeeper.") or k == "broker.id"]

    controller = properties(
        render_broker_config(
            v391,
            101,
            "172.28.0.51",
            [],
            3,
            {"unclean.leader.election.enable": True},
            KRaftRole(("controller",), VOTERS),
        )
    )
    assert controller["process.roles"] == "controller"
    assert controller["listeners"] == "CONTROLLER://0.0.0.0:9093"
    assert "advertised.listeners" not in controller and "inter.broker.listener.name" not in controller
    assert controller["unclean.leader.election.enable"] == "true"  # the controller elects leaders in KRaft

    combined = properties(
        render_broker_config(v391, 1, IP, [], 3, {}, KRaftRole(("broker", "controller"), VOTERS[:1]))
    )
    assert combined["process.roles"] == "broker,controller"
    assert combined["listeners"] == f"PLAINTEXT://0.0.0.0:{BROKER_PORT},CONTROLLER://0.0.0.0:9093"


@pytest.mark.parametrize(
    "key", ["node.id", "process.roles", "controller.quorum.voters", "controller.listener.names"]
)
def test_kraft_layout_keys_are_managed(key: str) -> None:
    with pytest.raises(ConfigError, match="set by kafka-chaos from the cluster layout"):
        validate_overrides({key: "1"}, [], "3.9.1")


def test_metadata_mode_per_release() -> None:
    spec = ClusterSpec()
    assert spec.metadata_mode(KafkaVersion.parse("0.9.0.1")) == "zookeeper"
    assert (
        spec.metadata_mode(KafkaVersion.parse("3.9.1")) == "zookeeper"
    )  # the design's model while there is one
    assert spec.metadata_mode(KafkaVersion.parse("4.1.1")) == "kraft"
    assert ClusterSpec(metadata="kraft").metadata_mode(KafkaVersion.parse("3.3.2")) == "kraft"
    with pytest.raises(
        ConfigError, match=r"kraft needs Kafka 3\.3 or later \(KIP-833\); this is Kafka 2\.8\.2"
    ):
        ClusterSpec(metadata="kraft").metadata_mode(KafkaVersion.parse("2.8.2"))
    with pytest.raises(ConfigError, match=r"Kafka 4\.0\.0 has no ZooKeeper mode"):
        ClusterSpec(metadata="zookeeper").metadata_mode(KafkaVersion.parse("4.0.0"))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"metadata": "raft"}, "cluster.metadata must be one of zookeeper, kraft, got 'raft'"),
        ({"controllers": 2}, "cluster.controllers must be 1, 3 or 5, got 2"),
        ({"controllers": 5, "combined": True, "brokers": 3}, "5 controllers cannot be among 3 brokers"),
    ],
)
def test_kraft_spec_errors(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ClusterSpec(**fields)  # type: ignore[arg-type]


def test_a_zookeeper_only_scenario_says_why_on_kraft() -> None:
    spec = ClusterSpec(zookeeper_only="it drops ZooKeeper's packets")
    assert spec.metadata_mode(KafkaVersion.parse("3.9.2")) == "zookeeper"
    with pytest.raises(
        ConfigError, match=r"runs on ZooKeeper only \(Kafka 4\.1\.1 is KRaft here\): it drops"
    ):
        spec.metadata_mode(KafkaVersion.parse("4.1.1"))


def test_kraft_cluster_ids_are_kafkas_shape_and_never_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(
        [b"\xfb" + b"\x00" * 15, b"\x01" * 16]
    )  # the first encodes to "-wAAA...": an option to argparse
    monkeypatch.setattr(cluster_module.uuid, "uuid4", lambda: SimpleNamespace(bytes=next(ids)))
    assert cluster_module._kraft_cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"

"""The client axis without a cluster: how a scenario names a client, the harness's own settings in the
Java client's names, what run.json records of each part's client and transaction protocol, KIP-848
groups' settings and stability, and the finalized feature levels read from an ApiVersions answer."""

from __future__ import annotations

import re
import struct
from typing import Any

import pytest

from contract.errors import ConfigError
from harness import client_choice
from harness.broker_config import KafkaVersion
from harness.client_choice import JAVA, LIBRDKAFKA, Client, ClientChoice, java_release_for, resolve
from harness.finalized_features import parse_finalized_features
from harness.groups import DEFAULT_MEMBER_CONFIG, GroupSpec, MemberState, stable
from harness.java_config import JAVA_NAMES, java_producer_settings, java_settings
from harness.kafka_protocol import Reader, Writer
from harness.producer import DEFAULT_PRODUCER_CONFIG, FULL_SPEED_QUEUE_MESSAGES
from harness.transactional_producer import TransactionSpec
from harness.workload import (
    FINAL_READ_DEBUG,
    PIPELINE_PART,
    PRODUCER_DEBUG,
    PRODUCERS,
    TRANSACTIONS_PART,
    TXN_PRODUCER_DEBUG,
    WorkloadClients,
    WorkloadSpec,
)
from kchaos.scenario import load_scenario, parse_scenario
from kchaos.scenario_dump import on_client, scenario_data

LIBRDKAFKA_CLIENT = Client(ClientChoice(), "2.16.0", ("python", "-m", "harness.workload_child"))


def java_client(version: str) -> Client:
    return Client(ClientChoice(JAVA, version), version, ("java", "kchaos.Main"), 'openjdk version "17"')


@pytest.mark.parametrize(
    ("text", "library", "version"),
    [
        ("librdkafka", LIBRDKAFKA, None),
        ("java", JAVA, None),
        ("java:3.9.1", JAVA, "3.9.1"),
        (" java ", JAVA, None),
    ],
)
def test_a_client_is_named_by_library_and_for_java_a_release(
    text: str, library: str, version: str | None
) -> None:
    choice = ClientChoice.parse(text, "--client")
    assert (choice.library, choice.version) == (library, version)
    assert ClientChoice.parse(choice.text, "x") == choice  # what a scenario.yaml writes back


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("jav", "expected librdkafka, java or java:<kafka-clients release>"),
        ("java:", "expected librdkafka, java or java:<kafka-clients release>"),
        ("java:latest", "'latest' is not a kafka-clients release"),
        ("librdkafka:1.9.0", "is the one installed"),
        (7, "expected librdkafka, java or java:<release>, got 7"),
    ],
)
def test_a_client_that_is_not_one_names_where_and_what(text: object, said: str) -> None:
    with pytest.raises(ConfigError, match=f"^workload.client: .*{said}"):
        ClientChoice.parse(text, "workload.client")


def test_java_runs_the_brokers_release_unless_it_names_one_and_not_against_0_9() -> None:
    assert java_release_for(KafkaVersion.parse("4.1.1")) == "4.1.1"
    assert java_release_for(KafkaVersion.parse("2.5.0")) == "2.5.0"
    assert java_release_for(KafkaVersion.parse("1.1.1")) == "3.9.2"  # the program needs 2.5+
    with pytest.raises(ConfigError, match=re.escape("cannot talk to Kafka 0.9.0.1 brokers")):
        resolve(ClientChoice(JAVA), KafkaVersion.parse("0.9.0.1"))
    librdkafka = resolve(ClientChoice(), KafkaVersion.parse("0.9.0.1"))
    assert librdkafka.recorded() == {
        "library": "librdkafka",
        "version": client_choice.librdkafka_version(),
        "python": client_choice.confluent_kafka.__version__,
    }
    assert "." in librdkafka.recorded()["python"]  # the binding's whole release, not its first digit


def test_every_setting_the_harness_sets_has_a_java_name_or_none() -> None:
    harness_settings = {
        **DEFAULT_PRODUCER_CONFIG,
        **DEFAULT_MEMBER_CONFIG,
        **PRODUCER_DEBUG,
        **TXN_PRODUCER_DEBUG,
        **FINAL_READ_DEBUG,
        "queue.buffering.max.messages": FULL_SPEED_QUEUE_MESSAGES,
        "bootstrap.servers": "b:9092",
    }
    assert set(harness_settings) <= set(JAVA_NAMES)
    java = java_settings(harness_settings)
    assert java["delivery.timeout.ms"] == DEFAULT_PRODUCER_CONFIG["message.timeout.ms"]
    assert java["fetch.max.wait.ms"] == DEFAULT_MEMBER_CONFIG["fetch.wait.max.ms"]
    assert not {"debug", "batch.num.messages", "queue.buffering.max.messages", "message.timeout.ms"} & set(
        java
    )
    with pytest.raises(KeyError, match=re.escape("'socket.nagle.disable'")):
        java_settings({"socket.nagle.disable": True})  # a new harness setting must be decided here


def test_a_java_producer_is_set_as_librdkafkas_is_unless_the_scenario_says_otherwise() -> None:
    # Java's producer is idempotent by default from 3.0, librdkafka's is not: the harness evens it.
    assert java_producer_settings({})["enable.idempotence"] is False
    assert java_producer_settings({}, transactional=True)["enable.idempotence"] is True
    spec = WorkloadSpec(rate_per_s=0, producer_config={"enable.idempotence": True, "compression.type": "lz4"})
    java = spec.producer_settings(java_client("4.1.1"), PRODUCER_DEBUG)
    assert java == {
        "enable.idempotence": True,  # the scenario's own, as written
        "retries": 3,
        "max.in.flight.requests.per.connection": 1,
        "request.timeout.ms": 5000,
        "delivery.timeout.ms": 15000,
        "linger.ms": 5,
        "compression.type": "lz4",
    }
    librdkafka = spec.producer_settings(LIBRDKAFKA_CLIENT, PRODUCER_DEBUG)
    assert librdkafka["message.timeout.ms"] == 15000 and librdkafka["debug"] == "broker"
    assert librdkafka["queue.buffering.max.messages"] == FULL_SPEED_QUEUE_MESSAGES


def test_parts_name_their_clients_and_a_part_the_workload_does_not_run_is_refused() -> None:
    java = ClientChoice(JAVA, "4.1.1")
    spec = WorkloadSpec(
        transactions=TransactionSpec(pipelines=1),
        client=java,
        part_clients={TRANSACTIONS_PART: ClientChoice()},
        groups=(
            GroupSpec("g", ("chaos-acks-all",)),
            GroupSpec("h", ("chaos-acks-all",), client=ClientChoice()),
        ),
    )
    assert spec.client_of(PRODUCERS) == spec.client_of(PIPELINE_PART) == java
    assert spec.client_of(TRANSACTIONS_PART) == ClientChoice()
    assert [spec.group_client(g) for g in spec.groups] == [java, ClientChoice()]
    with pytest.raises(
        ConfigError, match=re.escape("workload.clients.pipeline: the workload runs no pipeline")
    ):
        WorkloadSpec(transactions=TransactionSpec(), part_clients={PIPELINE_PART: java})
    with pytest.raises(
        ConfigError, match=re.escape("workload.clients.transactions: the workload runs no transactions")
    ):
        WorkloadSpec(part_clients={TRANSACTIONS_PART: java})
    with pytest.raises(ConfigError, match=re.escape("workload.clients.consumers: not a workload part")):
        WorkloadSpec(part_clients={"consumers": java})


def _clients(spec: WorkloadSpec, parts: dict[str, Client], features: dict[str, int]) -> WorkloadClients:
    groups = {g.name: (java_client("4.1.1") if g.client else LIBRDKAFKA_CLIENT) for g in spec.groups}
    return WorkloadClients(LIBRDKAFKA_CLIENT, parts, groups, LIBRDKAFKA_CLIENT, features)


def test_run_json_names_the_client_of_every_part_and_the_transaction_protocol_it_spoke() -> None:
    spec = WorkloadSpec(
        acks=("all",),
        transactions=TransactionSpec(topics=1, pipelines=1),
        groups=(
            GroupSpec(
                "g-java",
                ("chaos-acks-all",),
                client=ClientChoice(JAVA),
                config={"group.protocol": "consumer"},
            ),
            GroupSpec("g-c", ("chaos-acks-all",)),
        ),
    )
    parts = {
        PRODUCERS: java_client("3.9.2"),
        TRANSACTIONS_PART: java_client("4.1.1"),
        PIPELINE_PART: LIBRDKAFKA_CLIENT,
    }
    recorded = spec.recorded(_clients(spec, parts, {"transaction.version": 2, "metadata.version": 27}))
    topics = {t["name"]: t for t in recorded["topics"]}
    assert topics["chaos-acks-all"]["client"]["version"] == "3.9.2"
    assert topics["chaos-acks-all"]["producer"]["delivery.timeout.ms"] == 15000  # its Java settings
    assert topics["chaos-txn-0"]["client"]["library"] == "kafka-clients"
    assert topics["chaos-txn-0"]["transactions"]["transaction_version"] == 2  # 4.x client, TV2 finalized
    assert topics["chaos-pipe-out"]["client"]["library"] == "librdkafka"
    assert topics["chaos-pipe-out"]["transactions"]["transaction_version"] == 1  # no KIP-890 in librdkafka
    assert (
        recorded["producer"]["delivery.timeout.ms"] == 15000
        and "message.timeout.ms" not in recorded["producer"]
    )
    groups = {g["name"]: g for g in recorded["groups"]}
    assert groups["g-java"]["client"]["library"] == "kafka-clients"
    # KIP-848: session and heartbeat are the broker's; Java names for the rest
    assert groups["g-java"]["config"] == {
        "auto.commit.interval.ms": 1000,
        "fetch.max.wait.ms": 100,
        "group.protocol": "consumer",
    }
    assert (
        groups["g-c"]["config"] == DEFAULT_MEMBER_CONFIG
        and groups["g-c"]["client"]["library"] == "librdkafka"
    )
    assert recorded["client"]["library"] == recorded["readers"]["client"]["library"] == "librdkafka"
    # A 3.x Java client, or brokers without transaction.version 2, speak protocol 1.
    parts[TRANSACTIONS_PART] = java_client("3.9.2")
    assert _clients(spec, parts, {"transaction.version": 2}).transaction_version(TRANSACTIONS_PART) == 1
    parts[TRANSACTIONS_PART] = java_client("4.1.1")
    assert _clients(spec, parts, {"transaction.version": 1}).transaction_version(TRANSACTIONS_PART) == 1
    assert _clients(spec, parts, {}).transaction_version(TRANSACTIONS_PART) == 1


def test_kip_848_groups_are_stable_with_members_in_epochs_of_their_own() -> None:
    def group(*assigned: int | None, epochs: bool) -> list[MemberState]:
        return [MemberState(f"g-{i}", True, a, epochs) for i, a in enumerate(assigned)]

    assert not stable(group(3, 5, epochs=False))  # classic: one still in the generation before
    assert stable(group(3, 5, epochs=True))  # KIP-848: each member's epoch is its own
    assert not stable(group(3, None, epochs=True))  # one has not joined
    with_protocol = GroupSpec("g", ("t",), config={"group.protocol": "consumer"})
    assert with_protocol.consumer_protocol and not GroupSpec("g", ("t",)).consumer_protocol
    assert "session.timeout.ms" not in with_protocol.effective_config()  # librdkafka refuses it too


def test_scenarios_name_clients_for_the_workload_its_parts_and_its_groups_and_write_them_back() -> None:
    data = scenario_data(load_scenario("txn-pipeline"))
    data["workload"]["client"] = "java:4.1.1"
    data["workload"]["clients"] = {"pipeline": "librdkafka"}
    data["workload"]["groups"] = [{"name": "g", "acks": ["txn"], "client": "librdkafka"}]
    scenario = parse_scenario(data, "t.yaml")
    workload = scenario.experiment.workload
    assert workload.client == ClientChoice(JAVA, "4.1.1")
    assert workload.client_of(PIPELINE_PART) == ClientChoice()
    assert workload.groups[0].client == ClientChoice()
    again = parse_scenario(scenario_data(scenario), "again.yaml").experiment.workload
    assert (again.client, dict(again.part_clients), again.groups[0].client) == (
        workload.client,
        dict(workload.part_clients),
        workload.groups[0].client,
    )
    # --client replaces the workload's own only: the parts that name theirs keep them
    overridden = on_client(scenario, ClientChoice()).experiment.workload
    assert overridden.client == ClientChoice() and overridden.client_of(PIPELINE_PART) == ClientChoice()
    data["workload"]["groups"][0]["client"] = "kafka"
    with pytest.raises(ConfigError, match=r"workload.groups\[0\]: client: expected librdkafka, java"):
        parse_scenario(data, "t.yaml")
    data["workload"]["groups"][0]["client"] = "java"
    data["workload"]["clients"] = {"producer": "java"}
    with pytest.raises(
        ConfigError, match=r"workload\.clients\.producer: unknown field \(did you mean 'producers'\?\)"
    ):
        parse_scenario(data, "t.yaml")


def _api_versions_v3(features: dict[str, tuple[int, int]], other_tags: bool = True) -> bytes:
    """An ApiVersions v3 response body: one api key, then tagged fields (supported features as tag 0,
    finalized as tag 2)."""
    body = Writer().int16(0)  # no error
    body.uvarint(2).int16(0).int16(0).int16(11).no_tags()  # one api key: Produce 0-11
    body.int32(0)  # throttle time
    finalized = Writer().uvarint(len(features) + 1)
    for name, (low, high) in features.items():
        finalized.compact_string(name).int16(high).int16(low).no_tags()
    supported = Writer().uvarint(1).bytes()  # an empty array
    tags: list[tuple[int, bytes]] = [(0, supported), (1, struct.pack(">q", 7))] if other_tags else []
    tags.append((2, finalized.bytes()))
    body.uvarint(len(tags))
    for tag, data in tags:
        body.uvarint(tag).uvarint(len(data))
        body.parts.append(data)
    return body.bytes()


def test_finalized_features_are_read_from_an_api_versions_answer() -> None:
    answer = _api_versions_v3({"metadata.version": (1, 27), "transaction.version": (0, 2)})
    assert parse_finalized_features(Reader(answer)) == {"metadata.version": 27, "transaction.version": 2}
    assert parse_finalized_features(Reader(_api_versions_v3({}, other_tags=False))) == {}
    with pytest.raises(Exception, match="error code 35"):
        parse_finalized_features(Reader(Writer().int16(35).bytes()))


def test_the_client_option_takes_a_list_and_builds_a_named_java_release_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kchaos import run_cli

    built: list[str] = []
    monkeypatch.setattr(run_cli, "build", lambda version: built.append(version))
    assert run_cli.client_choices("--client", None) == [None]
    chosen: list[Any] = run_cli.client_choices("--client", "librdkafka, java:4.1.1,java,librdkafka")
    assert [c.text for c in chosen] == ["librdkafka", "java:4.1.1", "java"]
    assert built == ["4.1.1"]  # a release Maven Central lacks is exit 2 before a cluster starts
    with pytest.raises(ConfigError, match="an empty client between commas"):
        run_cli.client_choices("--client", "java,,librdkafka")


def test_a_run_resolves_its_clients_before_its_cluster_starts() -> None:
    from kchaos import run_cli
    from kchaos.scenario_dump import on_release

    on_0_9 = on_release(load_scenario("baseline"), "0.9.0.1")
    run_cli.prebuild(on_0_9)  # librdkafka: nothing to build
    with pytest.raises(
        ConfigError, match=re.escape("client java: the Java client cannot talk to Kafka 0.9.0.1")
    ):
        run_cli.prebuild(on_client(on_0_9, ClientChoice(JAVA)))  # exit 2 before any container
    workload = on_client(load_scenario("txn-pipeline"), ClientChoice(JAVA, "4.1.1")).experiment.workload
    assert workload.client_choices() == [ClientChoice(JAVA, "4.1.1")]

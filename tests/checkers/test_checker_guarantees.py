"""Guarantee derivation from run.json for each configuration combination (pure Python, no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from checkers.guarantees import (
    derive_guarantees,
    is_valid,
    lost_power_on_every_replica,
    parse_version,
    unjudged,
)
from checkers.release_facts import fact, message_format
from contract.anomaly_kinds import GUARANTEES, KINDS, TOPIC_CASES
from contract.events import FaultWindow

CLEAN = {
    **{kind.count: 0 for kind in KINDS},
    "lost": 0,
    "divergent": 0,
    "duplicated": 0,
    "phantom": 0,
    "reordered": 0,
    "unexpected": 0,
    "read_lost": 0,
    "replica_divergent": 0,
    "epoch_regressions": 0,
    "unread": [],
    "replicas_read": True,
    "replicas_not_read": "",
    "disks_failed": True,
    # Every guarantee had cases to break on: what is judged here is the verdict over them.
    "acked": 10,
    "failed": 10,
    **dict.fromkeys(TOPIC_CASES, 10),
}


def run_with(
    version: str = "0.9.0.1",
    acks: str = "all",
    rf: int = 3,
    broker: dict[str, str] | None = None,
    topic_config: dict[str, str] | None = None,
    producer: dict[str, Any] | None = None,
) -> dict[str, Any]:
    topic: dict[str, Any] = {"name": "t", "partitions": 1, "replication_factor": rf, "acks": acks}
    if topic_config is not None:
        topic["config"] = topic_config
    return {
        "kafka": {"version": version},
        "cluster": {"broker_config": broker if broker is not None else {"min.insync.replicas": "2"}},
        "topics": [topic],
        "producer": producer or {},
    }


def judged(run: dict[str, Any], **counts: Any) -> dict[str, tuple[bool, str]]:
    rows = derive_guarantees(run, {"t": CLEAN | counts})
    return {row["id"]: (row["promised"], row["verdict"]) for row in rows}


@pytest.mark.parametrize(
    ("version", "broker", "topic_config", "promised"),
    [
        ("0.9.0.1", {"min.insync.replicas": "2"}, None, False),  # 0.9 default: unclean election on
        ("0.9.0.1", {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}, None, True),
        ("0.11.0.3", {"min.insync.replicas": "2"}, None, True),  # 0.11 default: unclean election off
        ("2.8.1", {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}, None, False),
        ("2.8.1", {}, None, False),  # min.insync.replicas defaults to 1
        ("2.8.1", {}, {"min.insync.replicas": "2"}, True),  # a topic override counts
        ("2.8.1", {"min.insync.replicas": "2"}, {"unclean.leader.election.enable": "true"}, False),
    ],
)
def test_no_lost_acked_writes_follows_isr_and_unclean_election(
    version: str, broker: dict[str, str], topic_config: dict[str, str] | None, promised: bool
) -> None:
    assert judged(run_with(version, broker=broker, topic_config=topic_config))["no-lost-acked-writes"] == (
        promised,
        "held" if promised else "not-promised",
    )


@pytest.mark.parametrize(("acks", "rf"), [("1", 3), ("0", 3), ("all", 2)])
def test_weaker_acks_or_replication_promise_no_durability(acks: str, rf: int) -> None:
    config = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    verdicts = judged(run_with(acks=acks, rf=rf, broker=config), lost=3)
    assert verdicts["no-lost-acked-writes"] == (False, "not-promised")


def test_loss_is_violated_when_promised_and_unknown_when_incomplete() -> None:
    run = run_with("2.8.1")
    assert judged(run, lost=1)["no-lost-acked-writes"] == (True, "violated")
    assert judged(run, divergent=1)["no-lost-acked-writes"] == (True, "violated")
    unread = {r["id"]: r for r in derive_guarantees(run, {"t": CLEAN | {"unread": ["t partition 0"]}})}
    assert unread["no-lost-acked-writes"]["verdict"] == "unknown"
    assert unread["no-lost-acked-writes"]["reason"].endswith(
        "; the final read of t partition 0 is incomplete, so records there were not counted"
    )
    assert unread["no-phantom-writes"]["verdict"] == "held"  # it does not rest on the final read


def test_the_reason_names_every_condition_and_the_counts() -> None:
    rows = derive_guarantees(run_with("0.9.0.1"), {"t": CLEAN | {"lost": 2}})
    reason = next(r["reason"] for r in rows if r["id"] == "no-lost-acked-writes")
    assert reason == (
        "acks=all, replication factor 3 >= 3, min.insync.replicas 2 >= 2, "
        "unclean leader election enabled (Kafka 0.9.0.1 default); 2 lost, 0 divergent"
    )


@pytest.mark.parametrize(("acks", "promised"), [("all", True), ("1", True), ("0", False)])
def test_phantom_writes_are_promised_away_unless_acks0(acks: str, promised: bool) -> None:
    assert judged(run_with(acks=acks), phantom=1)["no-phantom-writes"] == (
        promised,
        "violated" if promised else "not-promised",
    )


@pytest.mark.parametrize(
    ("version", "producer", "promised"),
    [
        ("0.9.0.1", {"enable.idempotence": "true"}, False),  # no idempotent producer before 0.11
        ("0.11.0.3", {"enable.idempotence": "true"}, True),
        ("0.11.0.3", {"enable.idempotence": True}, True),
        ("2.8.1", {}, False),
    ],
)
def test_duplicates_are_promised_only_by_idempotence(
    version: str, producer: dict[str, Any], promised: bool
) -> None:
    assert judged(run_with(version, producer=producer), duplicated=1)["no-duplicates"] == (
        promised,
        "violated" if promised else "not-promised",
    )


@pytest.mark.parametrize(
    ("acks", "unclean", "producer", "promised"),
    [
        ("all", "false", {"max.in.flight.requests.per.connection": 1}, True),
        ("all", "false", {"max.in.flight.requests.per.connection": 5}, False),
        ("all", None, {"max.in.flight.requests.per.connection": 1}, False),  # 0.9 default: unclean on
        ("1", "false", {"max.in.flight.requests.per.connection": 1}, False),  # truncation reuses offsets
        ("1", "false", {}, False),
        ("0", "false", {"max.in.flight.requests.per.connection": 1}, False),
    ],
)
def test_order_is_promised_with_one_request_in_flight_where_acks_are_durable(
    acks: str, unclean: str | None, producer: dict[str, Any], promised: bool
) -> None:
    broker = {"min.insync.replicas": "2"} | (
        {"unclean.leader.election.enable": unclean} if unclean is not None else {}
    )
    run = run_with(acks=acks, producer=producer, broker=broker)
    assert judged(run, reordered=1)["per-partition-order"] == (
        promised,
        "violated" if promised else "not-promised",
    )


def test_unexpected_values_are_never_acceptable() -> None:
    rows = derive_guarantees(run_with("0.9.0.1", acks="0"), {"t": CLEAN | {"unexpected": 1}})
    assert {r["id"]: r["verdict"] for r in rows}["no-unexpected-values"] == "violated"
    clean_rows = derive_guarantees(run_with("0.9.0.1", acks="0"), {"t": CLEAN})
    assert is_valid(clean_rows, unexpected=0)
    assert not is_valid(clean_rows, unexpected=1)


def test_version_parsing() -> None:
    assert parse_version("0.9.0.1") == (0, 9, 0, 1)
    assert parse_version("3.7.0-SNAPSHOT") == (3, 7, 0)
    assert parse_version(None) is None


def test_verdicts_resting_on_a_failed_checker_are_unknown() -> None:
    run = run_with(broker={"min.insync.replicas": "2", "unclean.leader.election.enable": "false"})
    guarantees = derive_guarantees(run, {"t": CLEAN})
    marked = unjudged(guarantees, {"divergent-offset": "SparkError: out of memory"})
    by_id = {g["id"]: g for g in marked}
    assert by_id["no-lost-acked-writes"]["verdict"] == "unknown"
    assert by_id["no-lost-acked-writes"]["reason"].endswith(
        "; the divergent-offset checker failed (SparkError: out of memory)"
    )
    assert by_id["no-phantom-writes"]["verdict"] == "held"
    assert not is_valid(marked, 0)
    assert is_valid(guarantees, 0)
    broken = derive_guarantees(run, {"t": {**CLEAN, "lost": 1}})
    still = {g["id"]: g for g in unjudged(broken, {"divergent-offset": "SparkError: out of memory"})}
    assert still["no-lost-acked-writes"]["verdict"] == "violated"  # one lost write is found either way


def test_each_guarantee_names_who_promises_it() -> None:
    run = run_with(producer={"max.in.flight.requests.per.connection": 1})
    run["client"] = {"library": "librdkafka", "version": "2.16.0", "python": "2.16.1"}
    by = {row["id"]: row["promised_by"] for row in derive_guarantees(run, {"t": CLEAN})}
    assert by == {
        "no-lost-acked-writes": "the brokers (Kafka 0.9.0.1)",
        "no-phantom-writes": "the brokers (Kafka 0.9.0.1)",
        "no-duplicates": "the idempotent producer (librdkafka 2.16.0 with Kafka 0.9.0.1 brokers)",
        "per-partition-order": "the producer client (librdkafka 2.16.0)",
        "no-unexpected-values": "the brokers and the client together (Kafka 0.9.0.1, librdkafka 2.16.0)",
        "no-lost-reads": "the brokers (Kafka 0.9.0.1)",
        "replicas-agree": "the brokers (Kafka 0.9.0.1)",
        "epochs-advance": "the brokers (Kafka 0.9.0.1)",
        "failed-disk-leaves-isr": "the brokers (Kafka 0.9.0.1)",
    }
    del run["client"]  # a run directory from before run.json named its client
    order = next(r for r in derive_guarantees(run, {"t": CLEAN}) if r["id"] == "per-partition-order")
    assert order["promised_by"] == "the producer client (client not named in run.json)"


def test_reads_are_kept_unless_unclean_election_and_losses_name_kip_101_before_0_11() -> None:
    clean = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    assert judged(run_with(acks="1", broker=clean))["no-lost-reads"] == (True, "held")
    assert judged(run_with(broker={"unclean.leader.election.enable": "true"}), read_lost=3)[
        "no-lost-reads"
    ] == (
        False,
        "not-promised",
    )
    assert judged(run_with(broker=clean), unread=["t partition 0"])["no-lost-reads"] == (True, "unknown")
    rows = {
        r["id"]: r
        for r in derive_guarantees(run_with(broker=clean), {"t": CLEAN | {"read_lost": 2, "lost": 1}})
    }
    for gid in ("no-lost-reads", "no-lost-acked-writes"):
        assert (
            rows[gid]["verdict"] == "violated"
            and "KIP-101, fixed in 0.11 by leader epochs" in rows[gid]["reason"]
        )
    modern = {
        r["id"]: r
        for r in derive_guarantees(run_with("2.8.1", broker=clean), {"t": CLEAN | {"read_lost": 2}})
    }
    assert (
        modern["no-lost-reads"]["verdict"] == "violated"
        and "KIP-101" not in modern["no-lost-reads"]["reason"]
    )


def test_replicas_agree_only_where_replicas_were_read_and_epochs_always_advance() -> None:
    assert judged(run_with(), replica_divergent=2)["replicas-agree"] == (True, "violated")
    assert "replicas-agree" not in judged(run_with(), replicas_read=False, replica_divergent=2)
    rows = {
        r["id"]: r for r in derive_guarantees(run_with(), {"t": CLEAN | {"replicas_not_read": "kafka-3"}})
    }
    assert (
        rows["replicas-agree"]["verdict"] == "held"
        and "(not read: kafka-3)" in rows["replicas-agree"]["reason"]
    )
    assert judged(run_with(), epoch_regressions=1)["epochs-advance"] == (True, "violated")


def test_a_power_loss_takes_the_durability_promise_unless_every_message_is_flushed() -> None:
    clean = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    rows = {r["id"]: r for r in derive_guarantees(run_with(broker=clean), {"t": CLEAN}, {"t"})}
    assert (
        not rows["no-lost-acked-writes"]["promised"]
        and "page cache" in rows["no-lost-acked-writes"]["reason"]
    )
    flushed = run_with(broker=clean | {"log.flush.interval.messages": "1"})
    rows = {r["id"]: r for r in derive_guarantees(flushed, {"t": CLEAN}, {"t"})}
    assert (
        rows["no-lost-acked-writes"]["promised"]
        and "flush.messages=1" in rows["no-lost-acked-writes"]["reason"]
    )
    topic_flush = run_with(broker=clean, topic_config={"flush.messages": "1"})
    assert judged(topic_flush)["no-lost-acked-writes"] == (True, "held")
    assert derive_guarantees(topic_flush, {"t": CLEAN}, {"t"})[0]["promised"]


def _reason(run: dict[str, Any], guarantee: str, **counts: Any) -> str:
    rows = {r["id"]: r for r in derive_guarantees(run, {"t": CLEAN | counts})}
    assert rows[guarantee]["verdict"] == "violated"
    return str(rows[guarantee]["reason"])


@pytest.mark.parametrize(
    ("version", "broker", "known"),
    [
        ("0.9.0.1", {}, "truncates its log to its own high watermark when the leader changes"),
        (
            "0.11.0.3",
            {"log.message.format.version": "0.10.2-IV0"},
            "message format 0.10.2 keeps the high-watermark",
        ),
        ("1.1.1", {}, "can still diverge after fast successive leader fail-overs (KIP-279, fixed in 2.0)"),
        ("2.8.2", {}, ""),
        ("3.9.2", {"log.message.format.version": "2.8"}, ""),
    ],
)
def test_a_loss_names_what_its_release_is_known_for(version: str, broker: dict[str, str], known: str) -> None:
    clean = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"} | broker
    reason = _reason(run_with(version, broker=clean), "no-lost-acked-writes", lost=3)
    assert reason.endswith(
        "3 lost, 0 divergent" + (f"; known{reason.split('; known', 1)[1]}" if known else "")
    )
    assert (known in reason) if known else "known" not in reason


@pytest.mark.parametrize(
    ("version", "in_flight", "promised", "basis"),
    [
        ("0.11.0.3", 1, True, "idempotent producer"),
        (
            "0.11.0.3",
            5,
            False,
            "idempotent producer with 5 requests in flight: Kafka 0.11.0.3 keeps order for one only "
            "(KAFKA-5494, 1.0)",
        ),
        ("1.0.2", 5, True, "idempotent producer"),
        ("3.9.2", 5, True, "idempotent producer"),
    ],
)
def test_idempotent_order_with_requests_in_flight_from_1_0(
    version: str, in_flight: int, promised: bool, basis: str
) -> None:
    producer = {"enable.idempotence": "true", "max.in.flight.requests.per.connection": in_flight}
    run = run_with(version, broker={"min.insync.replicas": "2"}, producer=producer)
    row = next(r for r in derive_guarantees(run, {"t": CLEAN}) if r["id"] == "per-partition-order")
    assert (row["promised"], row["reason"].split(";")[0]) == (promised, basis)


def test_release_facts_parse_message_formats_and_cite() -> None:
    assert message_format("0.10.2-IV0") == (0, 10, 2) and message_format("2.8") == (2, 8)
    assert message_format(None) is None and message_format("x") is None
    assert fact("KIP-966").cite() == "KIP-966, 4.0" and fact("KIP-101").holds_in(None)
    assert not fact("KIP-279").holds_in((1, 1, 1)) and fact("KIP-279").holds_in((2, 0, 0))


@pytest.mark.parametrize(
    ("version", "metadata", "features", "elr"),
    [
        ("3.9.2", "kraft", {}, False),  # no ELR before 4.0
        ("4.0.0", "kraft", {}, False),  # opt-in in 4.0
        ("4.0.0", "kraft", {"eligible.leader.replicas.version": 1}, True),
        ("4.1.1", "kraft", {}, True),  # on for new clusters from 4.1
        ("4.1.1", "kraft", {"eligible.leader.replicas.version": 0}, False),
        ("3.9.2", "zookeeper", {"eligible.leader.replicas.version": 1}, False),
    ],
)
def test_a_power_loss_takes_the_durability_promise_with_or_without_eligible_leader_replicas(
    version: str, metadata: str, features: dict[str, int], elr: bool
) -> None:
    # Seen on 4.1.1 (docs/FINDINGS.md): with every replica's page cache gone, the controller elected
    # the last known leader as soon as it was back, ELR or not, as its documentation says it does.
    run = run_with(version, broker={"min.insync.replicas": "2"})
    run["cluster"] |= {"metadata": metadata, "features": features}
    rows = {r["id"]: r for r in derive_guarantees(run, {"t": CLEAN}, {"t"})}
    lost = rows["no-lost-acked-writes"]
    assert (lost["promised"], rows["no-lost-reads"]["promised"]) == (False, False)
    assert ("Eligible Leader Replicas (KIP-966, 4.0) do not keep them" in lost["reason"]) == elr


@pytest.mark.parametrize("guarantee", [g for g in GUARANTEES if g.family == "topic"], ids=lambda g: g.id)
def test_a_promised_guarantee_over_no_cases_is_not_exercised_never_held(guarantee: Any) -> None:
    run = run_with("3.9.2", producer={"enable.idempotence": True})
    run["topics"][0] |= {"transactions": {"records": [1, 10], "abort_rate": 0.1}, "pipeline": {"inputs": []}}
    if guarantee.id in ("no-lost-acked-writes", "no-phantom-writes"):  # judged on plain topics only
        run["topics"][0] = {
            k: v for k, v in run["topics"][0].items() if k not in ("transactions", "pipeline")
        }
    rows = {r["id"]: r for r in derive_guarantees(run, {"t": CLEAN | {guarantee.cases: 0}})}
    row = rows[guarantee.id]
    assert row["promised"], row["reason"]
    assert row["verdict"] == "not-exercised"
    assert row["exercised"] == {"count": 0, "what": guarantee.cases_are}
    assert row["reason"].endswith(f"; not exercised: no {guarantee.cases_are}")
    # the same guarantee over cases holds, and says over how many
    held = {r["id"]: r for r in derive_guarantees(run, {"t": CLEAN | {guarantee.cases: 7}})}[guarantee.id]
    assert (held["verdict"], held["exercised"]["count"]) == ("held", 7)


def test_not_exercised_leaves_a_run_valid_and_a_violation_or_an_unknown_stays() -> None:
    rows = derive_guarantees(run_with("3.9.2"), {"t": CLEAN | {"failed": 0}})
    verdicts = {r["id"]: r["verdict"] for r in rows}
    assert verdicts["no-phantom-writes"] == "not-exercised"
    assert is_valid(rows, 0)  # nothing broke, and nothing kept it from being judged
    # cases do not hide a violation, nor an incomplete read
    lost = {
        r["id"]: r["verdict"]
        for r in derive_guarantees(run_with("3.9.2"), {"t": CLEAN | {"acked": 0, "lost": 1}})
    }
    assert lost["no-lost-acked-writes"] == "violated"
    unread = derive_guarantees(run_with("3.9.2"), {"t": CLEAN | {"acked": 0, "unread": ["t partition 0"]}})
    assert {r["id"]: r["verdict"] for r in unread}["no-lost-acked-writes"] == "unknown"
    assert not is_valid(unread, 0)


def _power_loss(*targets: str, error: bool = False) -> FaultWindow:
    detail = {"error": "no leader"} if error else {}
    return FaultWindow("power-loss", targets, 1, 2, detail)


def test_a_power_loss_withdraws_durability_only_where_every_replica_of_a_partition_lost_power() -> None:
    run = run_with("3.9.2")
    run["topics"].append({"name": "u", "partitions": 1, "replication_factor": 2, "acks": "all"})
    replicas = [{"type": "replica", "broker": b, "topic": "t", "partition": 0} for b in (1, 2, 3)] + [
        {"type": "replica", "broker": b, "topic": "u", "partition": 0} for b in (2, 3)
    ]
    assert lost_power_on_every_replica(run, [_power_loss("kafka-1")], replicas) == set()  # a leader alone
    assert lost_power_on_every_replica(run, [_power_loss("kafka-2", "kafka-3")], replicas) == {"u"}
    every = _power_loss("kafka-1", "kafka-2", "kafka-3", "zk-1")
    assert lost_power_on_every_replica(run, [every], replicas) == {"t", "u"}
    assert (
        lost_power_on_every_replica(run, [_power_loss("kafka-1", "kafka-2", "kafka-3", error=True)], replicas)
        == set()
    )
    assert (
        lost_power_on_every_replica(
            run, [FaultWindow("kill", ("kafka-1", "kafka-2", "kafka-3"), 1, 2, {})], replicas
        )
        == set()
    )
    # without replicas.jsonl nobody knows which replicas there were: any broker's power loss counts
    assert lost_power_on_every_replica(run, [_power_loss("kafka-1")], None) == {"t", "u"}
    assert lost_power_on_every_replica(run, [_power_loss("controller-1")], None) == set()
    rows = {(r["topic"], r["id"]): r for r in derive_guarantees(run, {"t": CLEAN, "u": CLEAN}, {"u"})}
    assert rows[("t", "no-lost-acked-writes")]["promised"]  # its replicas kept their copies
    assert "lost power" in rows[("u", "no-lost-reads")]["reason"]

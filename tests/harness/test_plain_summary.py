"""The three lines `kchaos run` ends with, on handmade results (pure Python)."""

from __future__ import annotations

from typing import Any

from contract.anomaly_kinds import promise
from contract.events import FaultWindow
from kchaos.plain_summary import plain_summary


def guarantee(gid: str, acks: str, promised: bool, verdict: str) -> dict[str, Any]:
    topic = f"chaos-acks-{acks}"
    return {"id": gid, "topic": topic, "acks": acks, "promise": "p", "promised": promised, "verdict": verdict}


def result(guarantees: list[dict[str, Any]], **topics: dict[str, int]) -> dict[str, Any]:
    return {
        "guarantees": guarantees,
        "acks": {acks: {"attempted": 1} for acks in topics},
        "topics": [{"topic": f"chaos-acks-{acks}", **counts} for acks, counts in topics.items()],
    }


FAULTS = [
    FaultWindow("partition", ("kafka-2",), 1, 2, {"shape": "isolate"}),
    FaultWindow("partition", ("kafka-1",), 3, 4, {"shape": "isolate"}),
    FaultWindow("kill", ("kafka-3",), 5, None, {}),
]


def test_a_kept_promise_and_a_loss_that_was_not_promised() -> None:
    lines = plain_summary(
        result(
            [
                guarantee("no-lost-acked-writes", "all", True, "held"),
                guarantee("no-phantom-writes", "all", True, "held"),
                guarantee("no-lost-acked-writes", "1", False, "not-promised"),
            ],
            all={"acked": 10117, "lost": 0, "divergent": 0},
            **{"1": {"acked": 11255, "lost": 1410, "divergent": 299}},
        ),
        FAULTS,
        0,
    )
    assert lines == [
        "What happened: 3 faults (1x kill, 2x partition isolate) while producers wrote under "
        "acks=all, acks=1.",
        "Held: acks=all: 0 of 10,117 acknowledged writes lost, 0 overwritten at their offset.",
        "Broke: nothing Kafka promised (not promised here, but seen: acks=1: 1,410 of 11,255 acknowledged "
        "writes lost, 299 overwritten at their offset).",
    ]


def test_faults_that_could_not_start_are_said_apart() -> None:
    # A run whose chaos did not happen must not read as one that survived it.
    failed = FaultWindow("kill", (), 7, 8, {"error": "target 'leader': no partition chaos-acks-1/0"})
    lines = plain_summary(result([], all={"acked": 5}), [failed, FAULTS[2], failed], 0)
    assert lines[0] == (
        "What happened: 1 fault (1x kill) (2 could not start; the first, kill: \"target 'leader': no "
        'partition chaos-acks-1/0") while producers wrote under acks=all.'
    )
    assert plain_summary(result([], all={"acked": 5}), [failed], 0)[0].startswith(
        "What happened: no faults (1 could not start;"
    )


def test_a_broken_promise_is_said_to_be_kafka_s() -> None:
    lines = plain_summary(
        result(
            [guarantee("no-lost-acked-writes", "all", True, "violated")],
            all={"acked": 500, "lost": 2, "divergent": 1},
        ),
        FAULTS[2:],
        1,
    )
    assert lines == [
        "What happened: 1 fault (1x kill) while producers wrote under acks=all.",
        "Held: no promise was judged held.",
        "Broke: acks=all: 2 of 500 acknowledged writes lost, 1 overwritten at their offset. FAIL means "
        "Kafka broke a promise this configuration makes; kafka-chaos itself ran correctly.",
    ]


def test_a_promise_the_client_made_names_the_client_not_kafka() -> None:
    order = guarantee("per-partition-order", "all", True, "violated")
    order["promised_by"] = "the producer client (librdkafka 2.16.0)"
    lost = guarantee("no-lost-acked-writes", "all", True, "held")
    lines = plain_summary(result([order, lost], all={"acked": 500, "reordered": 3, "lost": 0}), [], 1)
    assert lines[2] == (
        "Broke: acks=all: 3 of 500 acknowledged writes reordered (promised by the producer client "
        "(librdkafka 2.16.0)). FAIL means the party that made it broke a promise this configuration "
        "makes; kafka-chaos itself ran correctly."
    )
    lost["verdict"], lost["promised_by"] = "violated", "the brokers (Kafka 0.9.0.1)"
    assert "FAIL means the party that made it broke" in plain_summary(result([order, lost], all={}), [], 1)[2]
    assert "FAIL means Kafka broke" in plain_summary(result([lost], all={}), [], 1)[2]


def with_group(base: dict[str, Any], guarantees: list[dict[str, Any]], **counts: int) -> dict[str, Any]:
    return {**base, "groups": {"g-alo": {"commit": "after-process", "guarantees": guarantees, **counts}}}


def group_guarantee(gid: str, promised: bool, verdict: str, promised_by: str) -> dict[str, Any]:
    return {"id": gid, "promise": "p", "promised": promised, "verdict": verdict, "promised_by": promised_by}


COMMIT_MODE = "the consumer's commit mode (after-process; librdkafka 2.16.0)"
COORDINATOR = "the group coordinator (Kafka 0.9.0.1)"


def test_a_group_s_promises_are_told_beside_the_writes() -> None:
    held = guarantee("no-lost-acked-writes", "all", True, "held")
    writes = result([held], all={"acked": 500, "lost": 0, "divergent": 0})
    lines = plain_summary(
        with_group(
            writes,
            [
                group_guarantee("no-consumer-skips", True, "held", COMMIT_MODE),
                group_guarantee("no-redeliveries", False, "not-promised", COMMIT_MODE),
                group_guarantee("commits-advance", True, "held", COORDINATOR),
            ],
            skipped=0,
            poll_skips=0,
            redelivered=116,
            commit_regressions=0,
        ),
        FAULTS[2:],
        0,
    )
    assert lines == [
        "What happened: 1 fault (1x kill) while producers wrote under acks=all and consumer group g-alo "
        "(after-process) read.",
        "Held: acks=all: 0 of 500 acknowledged writes lost, 0 overwritten at their offset; group g-alo: 0 "
        "records skipped below the committed offset, 0 polls jumped over records.",
        "Broke: nothing Kafka promised (not promised here, but seen: group g-alo: 116 records processed "
        "more than once).",
    ]


def test_a_group_s_broken_promise_names_who_made_it() -> None:
    writes = result([guarantee("no-lost-acked-writes", "all", True, "held")], all={"acked": 5})
    skipped = group_guarantee("no-consumer-skips", True, "violated", COMMIT_MODE)
    lines = plain_summary(with_group(writes, [skipped], skipped=3, poll_skips=1), [], 1)
    assert lines[2] == (
        "Broke: group g-alo: 3 records skipped below the committed offset, 1 polls jumped over records "
        f"(promised by {COMMIT_MODE}). FAIL means the party that made it broke a promise this "
        "configuration makes; kafka-chaos itself ran correctly."
    )
    went_back = group_guarantee("commits-advance", True, "violated", COORDINATOR)
    lines = plain_summary(with_group(writes, [went_back], commit_regressions=2), [], 1)
    assert lines[2] == (
        f"Broke: group g-alo: 2 accepted commits went back (promised by {COORDINATOR}). FAIL means Kafka "
        "broke a promise this configuration makes; kafka-chaos itself ran correctly."
    )


def test_a_transactional_topic_is_said_by_its_transactions_and_by_name() -> None:
    txn = [
        {**guarantee(gid, "all", True, "held"), "topic": "chaos-txn-0"}
        for gid in ("committed-transactions-durable", "no-aborted-reads", "no-duplicates")
    ]
    counts = {"acked": 236, "failed": 40, "aborted_appended": 38, "lost_committed": 0, "aborted_read": 0}
    res = {
        "guarantees": txn,
        "acks": {"all": {"attempted": 1}},
        "topics": [{"topic": "chaos-txn-0", **counts}],
    }
    held = plain_summary(res, [], 0)[1]
    assert held == (
        "Held: chaos-txn-0: 0 of 236 records of committed transactions lost; "
        "chaos-txn-0: 0 of 38 records of aborted transactions read."
    )


def test_a_headline_promise_with_no_case_to_break_on_is_said_not_exercised_not_held() -> None:
    idle = {
        **guarantee("no-aborted-reads", "all", True, "not-exercised"),
        "topic": "chaos-txn-0",
        "promise": promise("no-aborted-reads"),
        "exercised": {"count": 0, "what": "appended records of aborted transactions"},
    }
    res = {
        "guarantees": [idle],
        "acks": {"all": {"attempted": 1}},
        "topics": [{"topic": "chaos-txn-0", "failed": 40, "aborted_appended": 0, "aborted_read": 0}],
    }
    lines = plain_summary(res, [], 0)
    assert lines[1] == "Held: no promise was judged held."
    assert lines[3] == (
        "Not exercised (no case to break on): chaos-txn-0: a read_committed reader never returns a record "
        "of an aborted transaction (0 appended records of aborted transactions)."
    )
    assert len(plain_summary({**res, "guarantees": []}, [], 0)) == 3

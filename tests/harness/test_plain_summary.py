"""The three lines `kchaos run` ends with, on handmade results (pure Python)."""

from __future__ import annotations

from typing import Any

from harness.app.plain_summary import plain_summary
from harness.events import FaultWindow


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

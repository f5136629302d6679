"""Each anomaly kind, and the tricky non-anomalies, on tiny handwritten histories."""

from __future__ import annotations

import pytest
from checker_frames import (
    anomalies_found,
    assert_frame,
    read_frame,
    values_of,
    write_frame,
)
from checker_rundirs import acked, all_ends, end, record, write
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from checkers.kind_checkers import (
    DivergentOffsets,
    Duplicates,
    LostWrites,
    PhantomWrites,
    ReorderedWrites,
    UnexpectedValues,
)
from checkers.registry import registered
from contract.anomaly_kinds import KIND_IDS

pytestmark = pytest.mark.spark

LOST = [
    "topic",
    "partition",
    "acks",
    "value",
    "process",
    "invoke_ns",
    "complete_ns",
    "ack_offset",
    "final_value",
]


def test_lost_write_is_an_ok_write_missing_from_the_complete_final_read(spark: SparkSession) -> None:
    writes = write_frame(spark, [*acked(100, "p:1", 0), *acked(200, "p:2", 1), *acked(300, "p:3", 2)])
    reads = read_frame(
        spark, [record(900, "p:1", 0), record(901, "other:9", 1), record(902, "p:3", 2), end(950)]
    )
    lost = anomalies_found(LostWrites, writes, reads)
    assert_frame(lost, LOST, [("t-all", 0, "all", "p:2", "p", 200, 210, 1, "other:9")])


def test_live_reads_do_not_decide_loss(spark: SparkSession) -> None:
    writes = write_frame(spark, acked(100, "p:1", 0))
    reads = read_frame(spark, [record(500, "p:1", 0, phase="live"), end(950)])
    lost = anomalies_found(LostWrites, writes, reads)
    assert_frame(lost, LOST, [("t-all", 0, "all", "p:1", "p", 100, 110, 0, None)])


def test_indeterminate_and_failed_writes_are_never_lost(spark: SparkSession) -> None:
    writes = write_frame(
        spark,
        [
            write("invoke", 100, "p:1"),
            write("info", 150, "p:1", error="_MSG_TIMED_OUT"),
            write("invoke", 200, "p:2"),  # no completion: in flight when the run ended
            write("invoke", 300, "p:3"),
            write("fail", 350, "p:3", error="NOT_ENOUGH_REPLICAS"),
        ],
    )
    reads = read_frame(spark, [end(950)])
    assert_frame(anomalies_found(LostWrites, writes, reads), LOST, [])


def test_nothing_on_an_incompletely_read_partition_is_lost(spark: SparkSession) -> None:
    writes = write_frame(spark, [*acked(100, "p:1", 0, partition=0), *acked(200, "p:2", 0, partition=1)])
    reads = read_frame(spark, [end(950, partition=0)])  # partition 1 has no final end
    lost = anomalies_found(LostWrites, writes, reads)
    assert_frame(lost, LOST, [("t-all", 0, "all", "p:1", "p", 100, 110, 0, None)])


def test_acks0_writes_without_offsets_can_be_lost_but_never_divergent(spark: SparkSession) -> None:
    writes = write_frame(
        spark, [*acked(100, "z:1", None, topic="t-0"), *acked(200, "z:2", None, topic="t-0")]
    )
    reads = read_frame(spark, [record(900, "z:2", 0, topic="t-0"), end(950, topic="t-0")])
    lost = anomalies_found(LostWrites, writes, reads)
    assert_frame(lost, LOST, [("t-0", 0, "0", "z:1", "z", 100, 110, None, None)])
    assert anomalies_found(DivergentOffsets, writes, reads).count() == 0


def test_write_of_unknown_partition_is_judged_against_its_whole_topic(spark: SparkSession) -> None:
    writes = write_frame(
        spark, [write("invoke", 100, "p:1", partition=-1), write("ok", 110, "p:1", partition=-1, offset=None)]
    )
    half_read = read_frame(spark, [end(950, partition=0)])
    assert anomalies_found(LostWrites, writes, half_read).count() == 0
    fully_read = read_frame(spark, [end(950, partition=0), end(950, partition=1)])
    lost = anomalies_found(LostWrites, writes, fully_read)
    assert_frame(lost, LOST, [("t-all", -1, "all", "p:1", "p", 100, 110, None, None)])


DIVERGENT = [
    "topic",
    "partition",
    "offset",
    "acks",
    "values",
    "value",
    "process",
    "invoke_ns",
    "complete_ns",
    "ack_offset",
    "final_value",
]


def test_divergent_offset_between_an_ack_and_the_final_read(spark: SparkSession) -> None:
    writes = write_frame(spark, [*acked(100, "p:1", 0), *acked(200, "q:1", 0)])
    reads = read_frame(spark, [record(900, "q:1", 0), end(950)])
    divergent = anomalies_found(DivergentOffsets, writes, reads)
    row = ("t-all", 0, 0, "all", ["p:1", "q:1"], "p:1", "p", 100, 110, 0, "q:1")
    assert_frame(divergent, DIVERGENT, [row])


def test_divergent_offset_between_two_reads_without_an_ack(spark: SparkSession) -> None:
    writes = write_frame(spark, [write("invoke", 100, "p:1"), write("invoke", 200, "p:2")])
    reads = read_frame(spark, [record(500, "p:1", 7, phase="live"), record(900, "p:2", 7), end(950)])
    divergent = anomalies_found(DivergentOffsets, writes, reads)
    row = ("t-all", 0, 7, "all", ["p:1", "p:2"], None, None, None, None, None, "p:2")
    assert_frame(divergent, DIVERGENT, [row])


def test_divergent_offsets_count_each_value_once_per_position(spark: SparkSession) -> None:
    writes = write_frame(
        spark,
        [
            *acked(100, "p:1", 3),  # read again at 3 and at 4: a duplicate, never divergent with itself
            *acked(200, "p:2", 4),  # its offset also holds p:1's second copy
            *acked(300, "p:3", 5, partition=1),  # the same offset in other places holds other values
            *acked(310, "q:3", 5),
            *acked(320, "r:3", 5, topic="t-1"),
            *acked(400, "p:4", 6),  # acknowledged at 6, read at 7 only: 6 and 7 each hold one value
        ],
    )
    reads = read_frame(
        spark,
        [
            record(500, "p:1", 3, phase="live"),
            record(900, "p:1", 3),
            record(901, "p:1", 4),
            record(902, "p:1", 4, phase="live"),
            record(903, "p:3", 5, partition=1),
            record(904, "q:3", 5),
            record(905, "p:4", 7),
            end(950),
        ],
    )
    divergent = anomalies_found(DivergentOffsets, writes, reads)
    row = ("t-all", 0, 4, "all", ["p:1", "p:2"], "p:2", "p", 200, 210, 4, "p:1")
    assert_frame(divergent, DIVERGENT, [row])


def test_divergent_offset_at_a_duplicate_copy_and_at_two_unread_acks(spark: SparkSession) -> None:
    writes = write_frame(
        spark,
        [
            *acked(100, "p:1", 3),  # read at 3 (where it was acknowledged) and at 8, where q:1 is read
            *acked(200, "q:1", 9),
            *acked(300, "s:1", 12),  # two acknowledgements of one offset, neither read
            *acked(310, "s:2", 12),
        ],
    )
    reads = read_frame(spark, [record(900, "p:1", 3), record(901, "p:1", 8), record(902, "q:1", 8), end(950)])
    divergent = anomalies_found(DivergentOffsets, writes, reads)
    rows = [
        ("t-all", 0, 8, "all", ["p:1", "q:1"], None, None, None, None, None, "p:1"),
        ("t-all", 0, 12, "all", ["s:1", "s:2"], "s:1", "s", 300, 310, 12, None),
    ]
    assert_frame(divergent, DIVERGENT, rows)


DUPLICATE = [
    "topic",
    "partition",
    "acks",
    "value",
    "offsets",
    "process",
    "invoke_ns",
    "complete_ns",
    "ack_offset",
]


def test_rereading_one_position_is_not_a_duplicate(spark: SparkSession) -> None:
    writes = write_frame(spark, acked(100, "p:1", 0))
    reads = read_frame(
        spark,
        [record(500, "p:1", 0, phase="live"), record(600, "p:1", 0, phase="live"), record(900, "p:1", 0)],
    )
    assert_frame(anomalies_found(Duplicates, writes, reads), DUPLICATE, [])


def test_one_value_at_two_offsets_is_a_duplicate(spark: SparkSession) -> None:
    writes = write_frame(spark, acked(100, "p:1", 3, topic="t-1"))
    reads = read_frame(
        spark,
        [
            record(500, "p:1", 3, topic="t-1"),
            record(900, "p:1", 4, topic="t-1"),
            record(901, "p:1", 3, topic="t-1"),
        ],
    )
    row = ("t-1", 0, "1", "p:1", [[0, 3], [0, 4]], "p", 100, 110, 3)
    assert_frame(anomalies_found(Duplicates, writes, reads), DUPLICATE, [row])


PHANTOM = [
    "topic",
    "partition",
    "offset",
    "acks",
    "value",
    "process",
    "invoke_ns",
    "complete_ns",
    "ack_offset",
    "error",
]


def test_phantom_write_is_a_failed_write_that_was_read(spark: SparkSession) -> None:
    events = [
        write("invoke", 100, "p:1"),
        write("fail", 150, "p:1", error="NOT_ENOUGH_REPLICAS"),
        write("invoke", 200, "p:2"),
        write("info", 250, "p:2", error="_MSG_TIMED_OUT"),  # indeterminate and read: fine
    ]
    writes = write_frame(spark, events)
    reads = read_frame(spark, [record(900, "p:1", 5), record(901, "p:2", 6), end(950)])
    row = ("t-all", 0, 5, "all", "p:1", "p", 100, 150, None, "NOT_ENOUGH_REPLICAS")
    assert_frame(anomalies_found(PhantomWrites, writes, reads), PHANTOM, [row])


def test_names_joined_or_looked_up_give_the_same_values(spark: SparkSession) -> None:
    """Many names of a kind are joined, few looked up in a literal map (`frames.named`): same table."""
    events = [
        *acked(100, "p:1", 0),
        write("invoke", 200, "q:2"),
        write("fail", 250, "q:2", error="NOT_ENOUGH_REPLICAS"),
        write("invoke", 300, "r:3"),
    ]
    writes, reads = write_frame(spark, events), read_frame(spark, [record(900, "p:1", 0)])
    looked_up = values_of(writes, reads)
    assert {(row["value"], row["process"], row["error"]) for row in looked_up.collect()} == {
        ("p:1", "p", None),
        ("q:2", "q", "NOT_ENOUGH_REPLICAS"),
        ("r:3", "r", None),
    }
    assertDataFrameEqual(values_of(writes, reads, joined=True), looked_up)


def test_unexpected_value_was_never_invoked(spark: SparkSession) -> None:
    writes = write_frame(spark, acked(100, "p:1", 0))
    reads = read_frame(
        spark, [record(900, "p:1", 0), record(901, "ghost", 2, phase="live"), record(902, "ghost", 1)]
    )
    columns = ["topic", "partition", "offset", "acks", "value"]
    unexpected = anomalies_found(UnexpectedValues, writes, reads)
    assert_frame(unexpected, columns, [("t-all", 0, 1, "all", "ghost")])


def test_reordered_write_has_a_lower_offset_than_an_earlier_invoked_one(spark: SparkSession) -> None:
    events = [
        *acked(100, "p:1", 5),
        *acked(200, "p:2", 3),  # reordered behind p:1
        *acked(300, "p:3", 6),
        *acked(250, "q:1", 1),  # another process: its own order
        *acked(400, "p:4", 0, partition=1),  # another partition: its own order
    ]
    row = ("t-all", 0, "all", "p:2", None, "p", 200, 210, 3, "p:1", 5, None)
    assert_frame(
        anomalies_found(ReorderedWrites, write_frame(spark, events), read_frame(spark, [])), REORDERED, [row]
    )


REORDERED = [*DUPLICATE, "earlier_value", "earlier_offset", "earlier_offsets"]  # the same columns first


def test_a_reordered_write_shows_the_earlier_attempt_that_was_appended_unacknowledged(
    spark: SparkSession,
) -> None:
    """The issue's case: p:1 and p:2 appended at 3-4 by a request whose ack timed out; the retry
    appended p:1 at 5, then p:3 at 6 (acknowledged), and p:2 only at 7."""
    events = [*acked(100, "p:1", 5), *acked(200, "p:2", 7), *acked(300, "p:3", 6)]
    reads = [
        record(900 + offset, value, offset)
        for offset, value in enumerate(["a", "b", "c", "p:1", "p:2", "p:1", "p:3", "p:2"])
    ]
    row = ("t-all", 0, "all", "p:3", [[0, 6]], "p", 300, 310, 6, "p:2", 7, [[0, 4], [0, 7]])
    found = anomalies_found(ReorderedWrites, write_frame(spark, events), read_frame(spark, reads))
    assert_frame(found, REORDERED, [row])
    events = [*acked(100, "p:1", 5), *acked(200, "p:2", 3)]  # p:2 read at 3 and again at 6
    reads = [record(903, "p:2", 3), record(905, "p:1", 5), record(906, "p:2", 6)]
    row = ("t-all", 0, "all", "p:2", [[0, 3], [0, 6]], "p", 200, 210, 3, "p:1", 5, [[0, 5]])
    found = anomalies_found(ReorderedWrites, write_frame(spark, events), read_frame(spark, reads))
    assert_frame(found, REORDERED, [row])


def test_a_clean_history_has_no_anomalies(spark: SparkSession) -> None:
    writes = write_frame(spark, [*acked(100, "p:1", 0), *acked(200, "p:2", 1)])
    reads = read_frame(
        spark,
        [record(500, "p:1", 0, phase="live"), record(900, "p:1", 0), record(901, "p:2", 1), *all_ends()],
    )
    found = {
        checker.kind.id: anomalies_found(type(checker), writes, reads).count()
        for checker in registered("topic")
    }
    assert found == dict.fromkeys(KIND_IDS, 0)

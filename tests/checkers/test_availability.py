"""Recovery from faults: the first acknowledged write after each start and heal per partition (Spark),
and how long after each heal every partition of an acks mode took a write again (pure)."""

from __future__ import annotations

import pytest
from checker_frames import per_value_writes, write_frame
from checker_rundirs import acked, run_json, write
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from checkers.availability import firsts_after
from checkers.availability_result import recovery_of
from checkers.heals import Heal, heals, longest_heal_recovery
from contract.events import FaultWindow


@pytest.mark.spark
def test_firsts_after_gives_each_partition_its_first_ok_after_each_time_and_its_last_invoke(
    spark: SparkSession,
) -> None:
    events = [
        *acked(100, "p:1", 0),  # t-all/0: ok at 110 and 310
        *acked(300, "p:2", 1),
        write("invoke", 200, "p:3", partition=1),  # t-all/1: failed at 400, then nothing
        write("fail", 400, "p:3", partition=1, error="NOT_LEADER"),
        *acked(250, "q:1", 0, topic="t-1"),  # ok at 260: at or after the heal counts
    ]
    found = firsts_after(per_value_writes(write_frame(spark, events)), {"start_0": 105, "heal_0": 260})
    expected = spark.createDataFrame(
        [("t-all", 0, 300, 110, 310), ("t-all", 1, 200, None, None), ("t-1", 0, 250, 260, 260)],
        "topic string, partition int, last_invoke_ns long, start_0 long, heal_0 long",
    )
    assertDataFrameEqual(found, expected)


RUN = run_json()  # t-all, t-1 and t-0, two partitions each


def _partition(
    topic: str, partition: int, last_invoke: int | None, start: int | None, heal: int | None
) -> Row:
    return Row(topic=topic, partition=partition, last_invoke_ns=last_invoke, start_0=start, heal_0=heal)


def _recovery(stop_ns: int | None, *partitions: Row, next_fault_ns: int | None = None) -> dict[str, object]:
    interval = FaultWindow("kill", ("kafka-1",), 1_000_000_000, stop_ns, {})
    heal = None if stop_ns is None else Heal(stop_ns, next_fault_ns)
    return recovery_of(0, interval, heal, "all", list(partitions), RUN)


def test_a_heal_is_recovered_from_when_every_partition_of_the_mode_took_a_write_again() -> None:
    entry = _recovery(
        5_000_000_000,
        _partition("t-all", 0, 9_000_000_000, 1_200_000_000, 5_100_000_000),
        _partition("t-all", 1, 9_000_000_000, 3_000_000_000, 7_500_000_000),
    )
    assert entry == {
        "fault": "kill",
        "start_ns": 1_000_000_000,
        "acks": "all",
        "first_ok_ns": 1_200_000_000,
        "recovery_ms": 200.0,
        "healed_ns": 5_000_000_000,
        "resumed_ns": 7_500_000_000,
        "heal_recovery_ms": 2500.0,
        "heal_recovery_lower_bound": False,
    }


def test_a_partition_written_to_after_the_heal_that_took_nothing_makes_the_time_a_lower_bound() -> None:
    entry = _recovery(
        5_000_000_000,
        _partition("t-all", 0, 9_000_000_000, 1_200_000_000, 5_100_000_000),
        _partition("t-all", 1, 8_000_000_000, None, None),  # invoked until 8 s, never acknowledged
    )
    assert (entry["resumed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        None,
        3000.0,
        True,
    )


def test_a_partition_acknowledged_again_only_after_the_next_fault_started_makes_a_lower_bound_to_then() -> (
    None
):
    partitions = (
        _partition("t-all", 0, 9_000_000_000, 1_200_000_000, 5_100_000_000),
        _partition("t-all", 1, 9_000_000_000, None, 7_500_000_000),
    )
    entry = _recovery(5_000_000_000, *partitions, next_fault_ns=6_000_000_000)
    assert (entry["resumed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        None,
        1000.0,  # the next fault's outage is not this heal's: at least until it started
        True,
    )
    before_the_next_start = _recovery(5_000_000_000, *partitions, next_fault_ns=8_000_000_000)
    assert (before_the_next_start["resumed_ns"], before_the_next_start["heal_recovery_ms"]) == (
        7_500_000_000,
        2500.0,
    )


def test_a_lower_bound_is_never_below_a_partition_that_did_take_a_write_again() -> None:
    entry = _recovery(
        10_000_000_000,
        _partition("t-all", 0, 16_000_000_000, 1_200_000_000, 15_000_000_000),
        _partition("t-all", 1, 11_000_000_000, None, None),  # invoked until 11 s, never acknowledged
    )
    assert (entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (5000.0, True)


def test_the_last_write_acknowledged_after_its_invocation_is_a_recovery() -> None:
    entry = _recovery(5_000_000_000, _partition("t-all", 0, 6_000_000_000, None, 6_000_000_040))
    assert (entry["resumed_ns"], entry["heal_recovery_lower_bound"]) == (6_000_000_040, False)


def test_a_partition_not_written_to_after_the_heal_is_not_waited_for() -> None:
    entry = _recovery(
        5_000_000_000,
        _partition("t-all", 0, 9_000_000_000, 1_200_000_000, 5_100_000_000),
        _partition("t-all", 1, 4_000_000_000, 1_300_000_000, None),  # its writes ended before the heal
    )
    assert (entry["resumed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        5_100_000_000,
        100.0,
        False,
    )


def test_recovery_is_measured_from_when_no_fault_was_in_force_any_more_until_the_next_one_started() -> None:
    kill = FaultWindow("kill", ("kafka-1",), 10, 30, {})
    partition = FaultWindow("partition", ("kafka-1",), 5, 40, {})  # overlaps the kill, heals later
    later = FaultWindow("pause", ("kafka-2",), 50, 60, {})
    never = FaultWindow("slow", ("kafka-3",), 70, None, {})
    assert heals([kill, partition, later, never]) == [Heal(40, 50), Heal(40, 50), Heal(60, 70), None]
    assert heals([kill]) == [Heal(30, None)]
    instant = FaultWindow("kill", ("kafka-1",), 20, 20, {})  # healed as it started
    assert heals([instant, later]) == [Heal(20, 50), Heal(60, None)]


@pytest.mark.parametrize(
    "stop_ns", [None, 9_500_000_000], ids=["never-healed", "healed-after-the-last-write"]
)
def test_a_heal_not_followed_by_writes_is_not_judged(stop_ns: int | None) -> None:
    entry = _recovery(stop_ns, _partition("t-all", 0, 9_000_000_000, 1_200_000_000, None))
    assert (entry["healed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        stop_ns,
        None,
        False,
    )


def test_the_longest_heal_recovery_is_a_lower_bound_if_any_judged_was() -> None:
    entries = [
        {"heal_recovery_ms": 2500.0, "heal_recovery_lower_bound": False},
        {"heal_recovery_ms": 900.0, "heal_recovery_lower_bound": True},
        {"heal_recovery_ms": None, "heal_recovery_lower_bound": False},
    ]
    assert longest_heal_recovery(entries) == {"heal_recovery_ms": 2500.0, "heal_recovery_lower_bound": True}
    assert longest_heal_recovery(entries[2:]) == {
        "heal_recovery_ms": None,
        "heal_recovery_lower_bound": False,
    }
    assert longest_heal_recovery([]) == {"heal_recovery_ms": None, "heal_recovery_lower_bound": False}

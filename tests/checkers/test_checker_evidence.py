"""Fault windows and cluster state at a moment (pure Python)."""

from __future__ import annotations

from typing import Any

import pytest

from checkers.evidence import ClusterTimeline, active_fault_names, merged_windows
from harness.errors import HistoryError
from harness.events import FaultWindow, fault_event, fault_windows


def fault(t: int, name: str, phase: str, *targets: str) -> dict[str, object]:
    """A fault event as histories without fault ids have them."""
    return {"time_ns": t, "fault": name, "phase": phase, "targets": list(targets), "detail": {}}


def windows(events: list[dict[str, Any]]) -> list[FaultWindow]:
    return fault_windows(enumerate(events, start=1), "faults.jsonl")


def test_starts_pair_with_stops_by_name_and_targets_and_a_missing_stop_stays_active() -> None:
    events = [
        fault(10, "kill", "start", "kafka-1"),
        fault(20, "kill", "start", "kafka-2"),
        fault(30, "kill", "stop", "kafka-2"),
        fault(40, "pause", "start", "kafka-3"),
        fault(50, "kill", "stop", "kafka-1"),
    ]
    intervals = windows(events)
    assert intervals == [
        FaultWindow("kill", ("kafka-1",), 10, 50, {}),
        FaultWindow("kill", ("kafka-2",), 20, 30, {}),
        FaultWindow("pause", ("kafka-3",), 40, None, {}),
    ]
    assert active_fault_names(intervals, 25) == ["kill", "kill"]
    assert active_fault_names(intervals, 30) == ["kill"]  # a stop at the ack time ends the fault
    assert active_fault_names(intervals, 9) == []
    assert active_fault_names(intervals, 10**12) == ["pause"]
    assert merged_windows(intervals) == [(10, None)]
    two = [FaultWindow("a", (), 1, 5, {}), FaultWindow("b", (), 7, 9, {})]
    assert merged_windows(two) == [(1, 5), (7, 9)]


def test_fault_ids_pair_overlapping_faults_of_the_same_name_and_targets() -> None:
    # Two partitions of kafka-1 overlap; the second one heals first. Only ids can tell them apart.
    events = [
        fault_event(10, 0, "partition", "start", ["kafka-1"], {"shape": "isolate"}, "cut off"),
        fault_event(20, 1, "partition", "start", ["kafka-1"], {"shape": "ring"}, "a ring"),
        fault_event(30, 1, "partition", "stop", ["kafka-1"], {}),
        fault_event(40, 0, "partition", "stop", ["kafka-1"], {}),
    ]
    assert windows(events) == [
        FaultWindow("partition", ("kafka-1",), 10, 40, {"shape": "isolate"}, "cut off"),
        FaultWindow("partition", ("kafka-1",), 20, 30, {"shape": "ring"}, "a ring"),
    ]


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            fault(5, "kill", "stop", "kafka-1"),
            "faults.jsonl:1: stop of fault 'kill' ['kafka-1'] that never started",
        ),
        ({**fault(5, "kill", "start"), "id": [1]}, "faults.jsonl:1: field 'id' must be an integer"),
        ({**fault(5, "kill", "start"), "time_ns": "5"}, "faults.jsonl:1: field 'time_ns' must be an integer"),
        (
            fault(5, "kill", "begin"),
            "faults.jsonl:1: a fault event needs a string fault and phase start|stop",
        ),
    ],
)
def test_broken_fault_events_name_their_line(event: dict[str, Any], message: str) -> None:
    with pytest.raises(HistoryError) as error:
        windows([event])
    assert str(error.value) == message


def test_cluster_state_is_the_last_sample_at_or_before_the_time() -> None:
    first = {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 4, "isr": [1, 2]}
    second = {"topic": "t", "partition": 0, "leader": 2, "leader_epoch": 5, "isr": [2]}
    samples = [
        {"time_ns": 100, "controller": 1, "partitions": [first]},
        {"time_ns": 200, "controller": 2, "partitions": [second]},
    ]
    timeline = ClusterTimeline(samples)
    assert timeline.state_at(150, "t", 0) == {"leader": 1, "leader_epoch": 4, "isr": [1, 2], "controller": 1}
    assert timeline.state_at(200, "t", 0) == {"leader": 2, "leader_epoch": 5, "isr": [2], "controller": 2}
    assert timeline.state_at(99, "t", 0) == {
        "leader": None,
        "leader_epoch": None,
        "isr": None,
        "controller": None,
    }
    assert timeline.state_at(150, "t", 1) == {
        "leader": None,
        "leader_epoch": None,
        "isr": None,
        "controller": 1,
    }

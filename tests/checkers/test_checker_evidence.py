"""Fault intervals and cluster state at a moment (pure Python)."""

from __future__ import annotations

from checkers.evidence import (
    ClusterTimeline,
    FaultInterval,
    active_fault_names,
    fault_intervals,
    merged_windows,
)


def fault(t: int, name: str, phase: str, *targets: str) -> dict[str, object]:
    return {"time_ns": t, "fault": name, "phase": phase, "targets": list(targets), "detail": {}}


def test_starts_pair_with_stops_by_name_and_targets_and_a_missing_stop_stays_active() -> None:
    events = [
        fault(10, "kill", "start", "kafka-1"),
        fault(20, "kill", "start", "kafka-2"),
        fault(30, "kill", "stop", "kafka-2"),
        fault(40, "pause", "start", "kafka-3"),
        fault(50, "kill", "stop", "kafka-1"),
    ]
    assert fault_intervals(events) == [
        FaultInterval("kill", ("kafka-1",), 10, 50),
        FaultInterval("kill", ("kafka-2",), 20, 30),
        FaultInterval("pause", ("kafka-3",), 40, None),
    ]
    intervals = fault_intervals(events)
    assert active_fault_names(intervals, 25) == ["kill", "kill"]
    assert active_fault_names(intervals, 30) == ["kill"]  # a stop at the ack time ends the fault
    assert active_fault_names(intervals, 9) == []
    assert active_fault_names(intervals, 10**12) == ["pause"]
    assert merged_windows(intervals) == [(10, None)]
    assert merged_windows([FaultInterval("a", (), 1, 5), FaultInterval("b", (), 7, 9)]) == [(1, 5), (7, 9)]


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

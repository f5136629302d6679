"""Fault windows, cluster state at a moment and client log lines between two (pure Python)."""

from __future__ import annotations

from typing import Any

import pytest

from checkers.evidence import CLIENT_LINES_CAP, ClientLog, ClusterTimeline, active_fault_names, merged_windows
from contract.errors import HistoryError
from contract.events import FaultWindow, fault_event, fault_windows


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


def test_client_log_quotes_one_process_between_two_moments_and_counts_what_it_leaves_out() -> None:
    def line(t: int, process: str = "p-all-0", message: str = "m") -> dict[str, Any]:
        return {"time_ns": t, "process": process, "facility": "REQTMOUT", "message": message}

    log = ClientLog(
        [line(3_000_000_000, message="late"), line(1_500_000_000, message="early"), line(2 * 10**9, "q")]
    )
    assert log.between("p-all-0", 10**9, 2 * 10**9) == ["1.500 s REQTMOUT: early"]
    assert log.between("p-all-0", 1_500_000_000, None) == [
        "1.500 s REQTMOUT: early",
        "3.000 s REQTMOUT: late",
    ]
    assert log.between("p-all-0", 3_000_000_001, None) == []
    assert log.between("nobody", 0, None) == []
    assert log.between("p-all-0", None, None) == []  # no invoke: no window
    many = ClientLog([line(t) for t in range(CLIENT_LINES_CAP + 3)])
    quoted = many.between("p-all-0", 0, 10**9)
    assert quoted[:CLIENT_LINES_CAP] == ["0.000 s REQTMOUT: m"] * CLIENT_LINES_CAP
    assert quoted[CLIENT_LINES_CAP:] == ["... and 3 more lines in history/client.jsonl"]

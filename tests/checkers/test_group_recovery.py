"""A consumer group's recovery after heals: its first poll of each partition after each heal (Spark),
how long until it had polled every partition that acknowledged a write after the heal (pure), and
both through `kchaos check`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import (
    FAULT,
    GROUP,
    TOPICS,
    acked,
    commit,
    end,
    kchaos_check,
    make_run,
    poll,
    record,
    run_json,
)
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual
from test_group_checks import consumes_frame

from checkers import group_anomalies as g
from checkers.group_recovery import recovery_of, with_recovery
from checkers.heals import Heal
from contract.events import FaultWindow
from contract.history import RESULT

MS = 1_000_000


@pytest.mark.spark
def test_firsts_polled_after_gives_each_groups_partition_its_first_poll_after_each_time(
    spark: SparkSession,
) -> None:
    consumes = [
        poll(100, "g-0", 0),
        poll(300, "g-1", 1),
        poll(200, "g-0", 0, partition=1),
        poll(260, "h-0", 4),  # at the time itself counts
        commit(900, "h-0", "ok", 1, 5),  # not a poll
    ]
    found = g.firsts_polled_after(consumes_frame(spark, consumes), {"heal_0": 150, "heal_2": 260})
    expected = spark.createDataFrame(
        [("g", "t-all", 0, 300, 300), ("g", "t-all", 1, 200, None), ("h", "t-all", 0, 260, 260)],
        "group string, topic string, partition int, heal_0 long, heal_2 long",
    )
    assertDataFrameEqual(found, expected)


KILL = FaultWindow("kill", ("kafka-1",), 1_000 * MS, 2_000 * MS, {})


def _acknowledged(partition: int, first_after_heal: int | None) -> Row:
    return Row(topic="t-all", partition=partition, last_invoke_ns=9_000 * MS, heal_0=first_after_heal)


def _polled(partition: int, first_after_heal: int | None, group: str = "g") -> Row:
    return Row(group=group, topic="t-all", partition=partition, heal_0=first_after_heal)


def _recovery(
    written: list[Row], polled: list[Row], end_ns: int = 9_500 * MS, next_fault_ns: int | None = None
) -> dict[str, object]:
    heal = Heal(2_000 * MS, next_fault_ns)
    return recovery_of(KILL, heal, "heal_0", written, {(r.topic, r.partition): r for r in polled}, end_ns)


def test_a_group_recovers_when_it_polled_every_partition_acknowledged_after_the_heal() -> None:
    entry = _recovery(
        [_acknowledged(0, 2_100 * MS), _acknowledged(1, 2_200 * MS)],
        [_polled(0, 2_400 * MS), _polled(1, 3_500 * MS)],
    )
    assert entry == {
        "fault": "kill",
        "start_ns": 1_000 * MS,
        "healed_ns": 2_000 * MS,
        "resumed_ns": 3_500 * MS,
        "heal_recovery_ms": 1_500.0,
        "heal_recovery_lower_bound": False,
    }


def test_a_partition_acknowledged_after_the_heal_but_never_polled_again_makes_a_lower_bound() -> None:
    entry = _recovery([_acknowledged(0, 2_100 * MS), _acknowledged(1, 2_200 * MS)], [_polled(0, 2_400 * MS)])
    assert (entry["resumed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        None,
        7_500.0,  # to the end of what tells (the group's last event or the last write), at least
        True,
    )
    ended_before_the_heal = _recovery([_acknowledged(0, 2_100 * MS)], [], end_ns=1_500 * MS)
    assert (
        ended_before_the_heal["heal_recovery_ms"],
        ended_before_the_heal["heal_recovery_lower_bound"],
    ) == (
        0.0,
        True,
    )


def test_a_partition_polled_again_only_after_the_next_fault_started_makes_a_lower_bound_to_then() -> None:
    written, polled = [_acknowledged(0, 2_100 * MS)], [_polled(0, 6_000 * MS)]
    entry = _recovery(written, polled, next_fault_ns=5_000 * MS)
    assert (entry["resumed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        None,
        3_000.0,
        True,
    )
    never_polled = _recovery(written, [], end_ns=4_000 * MS, next_fault_ns=5_000 * MS)
    assert (never_polled["heal_recovery_ms"], never_polled["heal_recovery_lower_bound"]) == (2_000.0, True)
    at_the_next_start = _recovery(written, [_polled(0, 5_000 * MS)], next_fault_ns=5_000 * MS)
    assert (at_the_next_start["resumed_ns"], at_the_next_start["heal_recovery_lower_bound"]) == (
        5_000 * MS,
        False,
    )


def test_a_lower_bound_is_never_below_a_poll_that_counted() -> None:
    written = [_acknowledged(0, 2_100 * MS), _acknowledged(1, 2_100 * MS)]
    entry = _recovery(written, [_polled(0, 4_000 * MS)], end_ns=3_000 * MS)
    assert (entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (2_000.0, True)


def test_partitions_without_a_write_acknowledged_after_the_heal_are_not_waited_for() -> None:
    entry = _recovery([_acknowledged(0, 2_100 * MS), _acknowledged(1, None)], [_polled(0, 2_050 * MS)])
    assert (entry["resumed_ns"], entry["heal_recovery_ms"]) == (2_050 * MS, 50.0)
    nothing_written = _recovery([_acknowledged(0, None)], [_polled(0, 2_050 * MS)])
    assert (nothing_written["heal_recovery_ms"], nothing_written["heal_recovery_lower_bound"]) == (
        None,
        False,
    )


def test_a_fault_never_healed_is_not_judged() -> None:
    never = FaultWindow("slow", ("kafka-3",), 1_000 * MS, None, {})
    entry = recovery_of(never, None, "heal_0", [_acknowledged(0, None)], {}, 9_500 * MS)
    assert (entry["healed_ns"], entry["heal_recovery_ms"], entry["heal_recovery_lower_bound"]) == (
        None,
        None,
        False,
    )


def test_each_group_waits_only_for_its_own_topics_with_offsets() -> None:
    entries = {"g": {"topics": ["t-all", "t-0"]}, "h": {"topics": ["t-1"]}}
    acknowledged = [
        _acknowledged(0, 2_100 * MS),
        Row(topic="t-0", partition=0, last_invoke_ns=9_000 * MS, heal_0=2_100 * MS),  # acks=0: no offsets
        Row(topic="t-1", partition=1, last_invoke_ns=9_000 * MS, heal_0=2_300 * MS),
    ]
    polled = [_polled(0, 2_600 * MS), Row(group="h", topic="t-1", partition=1, heal_0=4_000 * MS)]
    acks = {"t-all": "all", "t-1": "1", "t-0": "0"}
    heal = Heal(2_000 * MS, None)
    with_recovery(entries, [KILL], [heal], acknowledged, polled, {"g": 9_000 * MS, "h": 9_000 * MS}, acks)
    assert {name: (e["heal_recovery_ms"], e["heal_recovery_lower_bound"]) for name, e in entries.items()} == {
        "g": (600.0, False),
        "h": (2_000.0, False),
    }
    assert [r["resumed_ns"] for r in entries["g"]["recovery"]] == [2_600 * MS]


def test_a_group_gone_quiet_is_waited_for_until_the_last_write_to_its_topics() -> None:
    entries: dict[str, dict[str, Any]] = {"g": {"topics": ["t-all"]}}
    acknowledged = [_acknowledged(0, 2_100 * MS)]  # written until 9 s
    with_recovery(
        entries, [KILL], [Heal(2_000 * MS, None)], acknowledged, [], {"g": 1_500 * MS}, {"t-all": "all"}
    )
    assert (entries["g"]["heal_recovery_ms"], entries["g"]["heal_recovery_lower_bound"]) == (7_000.0, True)


@pytest.mark.spark
def test_kchaos_check_gives_each_group_its_recovery_after_a_heal_as_the_benchmarks_reference_does(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = [{**FAULT, "time_ns": 150 * MS}, {**FAULT, "time_ns": 250 * MS, "phase": "stop"}]
    # p:1 acknowledged after the heal at 250 ms, and polled by g 450 ms after it; h never polls it
    run_dir, result = _checked_groups(tmp_path, capfd, [100, 300], [poll(700 * MS, "g-0", 1)], faults)
    g_entry, h_entry = result["groups"]["g"], result["groups"]["h"]
    assert g_entry["recovery"] == [
        {
            "fault": "kill-leader",
            "start_ns": 150 * MS,
            "healed_ns": 250 * MS,
            "resumed_ns": 700 * MS,
            "heal_recovery_ms": 450.0,
            "heal_recovery_lower_bound": False,
        }
    ]
    assert (g_entry["heal_recovery_ms"], g_entry["heal_recovery_lower_bound"]) == (450.0, False)
    assert (h_entry["heal_recovery_ms"], h_entry["heal_recovery_lower_bound"]) == (550.0, True)
    reference = _Reference(run_dir, monkeypatch)
    assert (
        reference.groups
        == reference.checked_groups(result)
        == {
            "g": [[700 * MS, 450.0, False]],
            "h": [[None, 550.0, True]],
        }
    )


@pytest.mark.spark
def test_a_recovery_not_seen_by_the_next_fault_is_a_lower_bound_to_its_start_as_in_the_reference(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    faults = [
        {**FAULT, "time_ns": 150 * MS},
        {**FAULT, "time_ns": 250 * MS, "phase": "stop"},
        {**FAULT, "id": 1, "time_ns": 500 * MS},
        {**FAULT, "id": 1, "time_ns": 600 * MS, "phase": "stop"},
    ]
    g_polls = [
        poll(550 * MS, "g-0", 1),  # after the second fault began at 500 ms
        poll(800 * MS, "g-0", 2),  # 200 ms after the second heal
    ]
    run_dir, result = _checked_groups(tmp_path, capfd, [100, 300, 700], g_polls, faults)
    reference = _Reference(run_dir, monkeypatch)
    assert (
        reference.groups
        == reference.checked_groups(result)
        == {
            "g": [
                [None, 250.0, True],
                [800 * MS, 200.0, False],
            ],  # polled p:1 only after the second fault began
            "h": [[None, 250.0, True], [None, 200.0, True]],
        }
    )
    acks_all = [r for r in result["availability"]["recovery"] if r["acks"] == "all"]
    assert [(r["resumed_ns"], r["heal_recovery_ms"]) for r in acks_all] == [
        (300 * MS + 10, 50.0),
        (700 * MS + 10, 100.0),
    ]
    assert reference.availability == reference.exact(result["availability"])


def _checked_groups(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    acked_ms: list[int],
    g_polls: list[dict[str, Any]],
    faults: list[dict[str, Any]],
) -> tuple[Path, dict[str, Any]]:
    """`kchaos check` of a run whose t-all/0 took p:N at offset N at each of `acked_ms`, all read back;
    group g polled p:0 at 120 ms and then `g_polls`; group h polled p:0 at 130 ms and committed 1 at
    800 ms. Its run directory and result.json."""
    writes = [e for o, ms in enumerate(acked_ms) for e in acked(ms * MS, f"p:{o}", o)]
    reads = [record(900 * MS, f"p:{o}", o) for o in range(len(acked_ms))]
    ends = [
        end(10_000 * MS, t["name"], p, len(acked_ms) if t["name"] == "t-all" and p == 0 else 0)
        for t in TOPICS
        for p in (0, 1)
    ]
    consumes = [
        poll(120 * MS, "g-0", 0),
        *g_polls,
        poll(130 * MS, "h-0", 0),
        commit(790 * MS, "h-0", "invoke", 1, 1),
        commit(800 * MS, "h-0", "ok", 1, 1),
    ]
    groups = [GROUP, {"name": "h", "topics": ["t-all"], "commit": "before-process", "members": 1}]
    run_dir = make_run(
        tmp_path / "run", writes, [*reads, *ends], faults, run=run_json(groups=groups), consumes=consumes
    )
    code, text = kchaos_check(capfd, run_dir)
    assert code == 0, text
    return run_dir, json.loads((run_dir / RESULT).read_text())


class _Reference:
    """The benchmarks' single-process Python reference of a run directory: its groups' recovery and
    exact availability numbers, and the same numbers taken from a check's result."""

    def __init__(self, run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "benchmarks"))
        import history_reference
        import side_files_reference

        self.exact, self.checked_groups = (
            history_reference.exact_availability,
            side_files_reference.checked_group_recovery,
        )
        found = history_reference.python_availability(history_reference.python_read(run_dir), run_dir)
        self.availability = self.exact(found)
        self.groups = side_files_reference.python_group_recovery(
            run_dir, found["ok_times"], found["last_invoke"], found["healed"]
        )

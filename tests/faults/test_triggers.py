"""Event-timed steps (no Docker): what counts as each event, trigger validation, and the nemesis
waiting for events on a scripted ZooKeeper state with a probe fault that only records."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, cast

import pytest

import faults.base
from contract.errors import ConfigError
from contract.history import HistoryWriter, RunClock
from faults.base import FaultContext
from faults.schedule import Nemesis, Schedule
from faults.triggers import Trigger, seen
from harness.cluster import KafkaCluster
from harness.cluster_state import ClusterSnapshot, PartitionState
from harness.groups import MemberState
from harness.workload import WorkloadHandles


def snap(
    leader: int = 1, epoch: int = 0, isr: tuple[int, ...] = (1, 2, 3), controller_epoch: int = 1
) -> ClusterSnapshot:
    return ClusterSnapshot(
        1, controller_epoch, (1, 2, 3), (PartitionState("t", 0, leader, epoch, isr, (1, 2, 3)),)
    )


WATCHED = ("t", 0)


def test_what_counts_as_each_event() -> None:
    base = snap()
    assert seen("leader-change", base, snap(leader=2, epoch=1), WATCHED)
    assert not seen("leader-change", base, snap(leader=-1, epoch=1), WATCHED)  # no leader yet
    assert not seen("leader-change", base, snap(isr=(1, 2)), WATCHED)
    assert seen("isr-shrink", base, snap(isr=(1, 2)), WATCHED)
    assert not seen("isr-shrink", snap(isr=(1,)), snap(isr=(1, 2)), WATCHED)
    assert seen("isr-expand", snap(isr=(1,)), snap(isr=(1, 3)), WATCHED)
    assert seen("controller-change", base, snap(controller_epoch=2), None)
    assert not seen("controller-change", base, base, None)
    assert not seen("leader-change", base, snap(leader=2, epoch=1), ("t", 9))  # another partition


def test_trigger_fields_are_checked() -> None:
    trigger = Trigger.from_mapping({"event": "leader-change", "delay_s": 1, "topic": "t", "partition": 0})
    assert trigger.to_json() == {
        "event": "leader-change",
        "delay_s": 1.0,
        "within_s": 120.0,
        "topic": "t",
        "partition": 0,
    }
    assert trigger.watched(("u", 3)) == WATCHED and Trigger("isr-shrink").watched(("u", 3)) == ("u", 3)
    stable = Trigger.from_mapping({"event": "group-stable", "group": "g", "delay_s": 2})
    assert stable.to_json() == {"event": "group-stable", "delay_s": 2.0, "within_s": 120.0, "group": "g"}
    assert stable.describe(stable.watched(("u", 3))) == "group-stable of g, then 2 s"
    assert Trigger.from_mapping(stable.to_json()) == stable  # scenario.yaml round trip
    for data, error in [
        ({"event": "leader-elected"}, "event: expected one of start, healed, leader-change"),
        ({"event": "start", "delay": 1}, "'delay': unknown field; allowed: event, delay_s"),
        (
            {"event": "healed", "topic": "t", "partition": 0},
            "only leader-change, isr-shrink, isr-expand watch",
        ),
        ({"event": "isr-shrink", "topic": "t"}, "give both, or neither"),
        ({"event": "healed", "group": "g"}, "group: only group-stable waits for a group"),
        ({"event": "group-stable", "group": 7}, "group: expected a group name, got 7"),
        ({"event": "start", "delay_s": -1}, "delay_s: expected a number from 0"),
        ("leader-change", "expected a mapping with event"),
    ]:
        with pytest.raises(ConfigError, match=error):
            Trigger.from_mapping(data)


class Probe:
    """A fault that touches nothing: it records when it started and healed, and aims at t/0."""

    name: ClassVar[str] = "probe"
    description: ClassVar[str] = "records its start and heal"
    log: ClassVar[list[tuple[str, float, dict[str, Any]]]] = []

    def __init__(self, *, topic: str | None = None, partition: int | None = None) -> None:
        self.targets: list[str] = ["kafka-1"]
        self.params = {"topic": topic, "partition": partition}
        self.detail: dict[str, Any] = {}
        self.healed: dict[str, Any] = {}

    def start(self, context: FaultContext, rng: random.Random) -> None:
        self.detail = {"topic": self.params["topic"] or "t", "partition": self.params["partition"] or 0}
        Probe.log.append(("start", time.monotonic(), dict(self.params)))

    def heal(self, context: FaultContext) -> None:
        Probe.log.append(("heal", time.monotonic(), {}))

    def describe(self) -> str:
        return self.description


class ScriptedGroups:
    """One group `g` of two members, `g-1` joining (the group stable) from `stable_at` (monotonic) on."""

    def __init__(self) -> None:
        self.members = {"g-0": None, "g-1": None}
        self.stable_at = float("inf")

    def states(self, group: str | None = None) -> dict[str, list[MemberState]]:
        joined = time.monotonic() >= self.stable_at
        return {
            "g": [
                MemberState("g-0", True, 2 if joined else 1),
                MemberState("g-1", True, 2 if joined else None),
            ]
        }


class ScriptedZooKeeper:
    """`state()` shows a new leader of t/0 from `change_at` (monotonic) on; `groups`, when given."""

    def __init__(self, groups: ScriptedGroups | None = None) -> None:
        self.change_at = float("inf")
        self.groups = groups

    def state(self, topics: list[str] | None = None) -> ClusterSnapshot:
        return snap(leader=2, epoch=1) if time.monotonic() >= self.change_at else snap()


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> type[Probe]:
    monkeypatch.setitem(faults.base._REGISTRY, "probe", Probe)
    Probe.log = []
    return Probe


def run(
    schedule: Schedule, zk: ScriptedZooKeeper, path: Path, until: float
) -> tuple[Nemesis, list[dict[str, Any]]]:
    # The scripted ZooKeeper stands for the cluster; the workload's groups are its scripted ones.
    context = FaultContext(cast(KafkaCluster, zk), cast(WorkloadHandles, SimpleNamespace(groups=zk.groups)))
    with (
        HistoryWriter(path) as writer,
        Nemesis(context, schedule, writer, RunClock(), seed=1) as nemesis,
    ):
        deadline = time.monotonic() + until
        while time.monotonic() < deadline and nemesis._thread.is_alive():
            time.sleep(0.05)  # the test's own pace of looking; the nemesis thread ends by itself
    return nemesis, [json.loads(line) for line in path.read_text().splitlines()]


def test_a_step_starts_its_delay_after_the_event_on_the_step_befores_partition(
    probe: type[Probe], tmp_path: Path
) -> None:
    zk = ScriptedZooKeeper()
    schedule = Schedule.from_entries(
        [
            {"start_s": 0, "stop_s": 2.0, "fault": "probe", "params": {"topic": "t", "partition": 0}},
            {
                "start_s": 0,
                "stop_s": 0.3,
                "fault": "probe",
                "after": {"event": "leader-change", "delay_s": 0.4},
                "same_partition": True,
            },
        ]
    )
    zk.change_at = time.monotonic() + 0.6
    nemesis, events = run(schedule, zk, tmp_path / "faults.jsonl", until=10)
    assert not nemesis.errors
    starts = [(t, params) for what, t, params in probe.log if what == "start"]
    assert len(starts) == 2 and starts[1][1] == {"topic": "t", "partition": 0}  # same_partition filled in
    assert starts[1][0] - zk.change_at >= 0.4, "started before the event's delay was over"
    assert starts[1][0] - zk.change_at < 0.4 + 1.0, "the event was seen late (polled every 0.2 s)"
    second = next(e for e in events if e["id"] == 1 and e["phase"] == "start")
    assert second["detail"]["waited_for"] == "leader-change of t/0, then 0.4 s"
    assert second["detail"]["seen_ns"] + 0.4e9 <= second["time_ns"]
    assert second["detail"]["seen"] == (
        "from leader=1 leader_epoch=0 isr=[1, 2, 3] to leader=2 leader_epoch=1 isr=[1, 2, 3]"
    )
    assert [(e["id"], e["phase"]) for e in events] == [(0, "start"), (1, "start"), (1, "stop"), (0, "stop")]


def test_an_event_not_seen_in_time_is_a_recorded_error_and_healed_waits_for_every_heal(
    probe: type[Probe], tmp_path: Path
) -> None:
    schedule = Schedule.from_entries(
        [
            {"start_s": 0, "stop_s": 0.5, "fault": "probe", "params": {"topic": "t", "partition": 0}},
            {
                "start_s": 0,
                "stop_s": 0.2,
                "fault": "probe",
                "after": {"event": "isr-shrink", "within_s": 0.5},
            },
            {"start_s": 0, "stop_s": 0.2, "fault": "probe", "after": {"event": "healed", "delay_s": 0.3}},
        ]
    )
    nemesis, events = run(schedule, ScriptedZooKeeper(), tmp_path / "faults.jsonl", until=10)
    assert nemesis.errors == [
        "probe could not start: waited for isr-shrink of t/0: not seen within 0.5 s; "
        "last seen: leader=1 leader_epoch=0 isr=[1, 2, 3]"
    ]
    failed = next(e for e in events if e["id"] == 1 and e["phase"] == "start")
    assert (
        failed["detail"]["waited_for"] == "isr-shrink of t/0"
        and "not seen within 0.5 s" in failed["detail"]["error"]
    )
    heals = [t for what, t, _ in probe.log if what == "heal"]
    third = [t for what, t, _ in probe.log if what == "start"][-1]
    assert len(heals) == 3 and third - heals[0] >= 0.3  # the third waited for the first one's heal


def test_a_step_waits_for_its_group_to_be_stable(probe: type[Probe], tmp_path: Path) -> None:
    groups = ScriptedGroups()
    schedule = Schedule.from_entries(
        [{"start_s": 0, "stop_s": 0.2, "fault": "probe", "after": {"event": "group-stable", "group": "g"}}]
    )
    groups.stable_at = time.monotonic() + 0.6
    nemesis, events = run(schedule, ScriptedZooKeeper(groups), tmp_path / "faults.jsonl", until=10)
    assert not nemesis.errors
    started = [t for what, t, _ in probe.log if what == "start"]
    assert len(started) == 1 and 0 <= started[0] - groups.stable_at < 1.0, "polled every 0.2 s"
    assert events[0]["detail"]["waited_for"] == "group-stable of g"


def test_a_group_not_stable_in_time_or_no_groups_at_all_is_a_recorded_error(
    probe: type[Probe], tmp_path: Path
) -> None:
    step = {
        "start_s": 0,
        "stop_s": 0.2,
        "fault": "probe",
        "after": {"event": "group-stable", "within_s": 0.5},
    }
    nemesis, _ = run(Schedule.from_entries([step]), ScriptedZooKeeper(ScriptedGroups()), tmp_path / "a", 10)
    assert nemesis.errors == [
        "probe could not start: waited for group-stable: not seen within 0.5 s; "
        "last seen: g: g-0 in generation 1, g-1 unassigned"
    ]
    nemesis, _ = run(Schedule.from_entries([step]), ScriptedZooKeeper(), tmp_path / "b", 10)
    assert nemesis.errors == [
        "probe could not start: waited for group-stable: the workload has no consumer groups"
    ]


def test_faults_not_healed_in_time_are_named_in_the_error(probe: type[Probe], tmp_path: Path) -> None:
    schedule = Schedule.from_entries(
        [
            {"start_s": 0, "stop_s": 3.0, "fault": "probe"},
            {"start_s": 0, "stop_s": 0.2, "fault": "probe", "after": {"event": "healed", "within_s": 0.5}},
        ]
    )
    nemesis, _ = run(schedule, ScriptedZooKeeper(), tmp_path / "faults.jsonl", until=10)
    assert nemesis.errors == [
        "probe could not start: waited for healed: not seen within 0.5 s; last seen: in force: probe"
    ]

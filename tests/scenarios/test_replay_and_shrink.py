"""Replay and shrink without a cluster: scenario round trips, the shrink search on a stand-in oracle,
and the errors `kchaos replay` / `kchaos shrink` give for run directories they cannot use."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from contract.errors import HistoryError
from contract.expectation_outcomes import ExpectationOutcome, read_expectations
from contract.history import EXPECTATIONS, RunDir
from faults.schedule import ScheduleEntry
from kchaos import replay_cli
from kchaos.cli import main
from kchaos.replay import Breakage, RecordedRun, breakages
from kchaos.runner import RunOutcome, build_schedule
from kchaos.scenario import builtin_scenarios, load_scenario, parse_scenario
from kchaos.scenario_dump import pinned, scenario_yaml, with_timeline
from kchaos.shrink import Candidate, Step, Timeline, candidates, reproduces, shrink

KILL = ScheduleEntry(10.0, 30.0, "kill", {"target": "leader"})
PAUSE = ScheduleEntry(35.0, 45.0, "pause", {"target": "one"})


@pytest.mark.parametrize("scenario", builtin_scenarios(), ids=lambda s: s.name)
def test_a_dumped_scenario_reads_back_equal(scenario: object, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(scenario_yaml(scenario, "a comment\nover two lines"))  # type: ignore[arg-type]
    back = load_scenario(str(path))
    assert dataclasses.replace(back, source=scenario.source) == scenario  # type: ignore[attr-defined]


@pytest.mark.parametrize("scenario", builtin_scenarios(), ids=lambda s: s.name)
def test_a_generated_timeline_written_out_replays_the_same_entries(scenario: object) -> None:
    spec = scenario.experiment  # type: ignore[attr-defined]
    schedule = build_schedule(scenario.faults, 7, spec.duration_s, scenario.source)  # type: ignore[attr-defined]
    entries = schedule.entries if schedule else ()
    explicit = with_timeline(scenario, entries, spec.duration_s)  # type: ignore[arg-type]
    back = parse_scenario(yaml.safe_load(scenario_yaml(explicit)), "back")
    replayed = build_schedule(back.faults, 123, spec.duration_s, "back")  # another seed: must not matter
    assert (replayed.entries if replayed else ()) == entries


def test_breakages_are_violated_guarantees_then_failed_expectations(tmp_path: Path) -> None:
    result = {
        "guarantees": [
            {"topic": "t-all", "id": "no-lost-acked-writes", "verdict": "held", "reason": "0 lost"},
            {"topic": "t-all", "id": "per-partition-order", "verdict": "violated", "reason": "3 reordered"},
            {"topic": "t-1", "id": "no-lost-acked-writes", "verdict": "not-promised", "reason": "acks=1"},
            {"topic": "t-0", "id": "no-duplicates", "verdict": "unknown", "reason": "incomplete"},
        ]
    }
    recorded = [
        {"text": "acks=1 lost == 0", "held": False, "observed": 5},  # from before `verdict` existed
        {"text": "unexpected == 0", "held": True, "observed": 0},
        # a count over an incomplete final read: nothing a replay could show again
        {"text": "acks=0 lost == 0", "held": False, "verdict": "unknown", "observed": 0, "why": "incomplete"},
        {"text": "acks=all lost == 0", "held": False, "verdict": "failed", "observed": 1},
        {"text": "acks=1 heal_recovery_ms <= 20000", "held": False, "verdict": "failed", "observed": 29227.7},
    ]
    (tmp_path / "check").mkdir()
    (tmp_path / EXPECTATIONS).write_text(json.dumps(recorded))
    assert breakages(result, read_expectations(tmp_path)) == [
        Breakage("t-all per-partition-order", "3 reordered"),
        Breakage("expect acks=1 lost == 0", "observed 5"),
        Breakage("expect acks=all lost == 0", "observed 1"),
        Breakage("expect acks=1 heal_recovery_ms <= 20000", "observed 29227.7"),
    ]


@pytest.mark.parametrize(
    ("recorded", "message"),
    [
        ({"text": "x"}, "expected a list of judged expectations"),
        ([{"text": "x", "held": "yes"}], "field '[0].held': expected true or false"),
        (
            [{"text": "x", "held": False, "verdict": "broken"}],
            "field '[0].verdict': expected one of held, failed",
        ),
        ([{"text": "x", "held": True, "observed": "0"}], "field '[0].observed': expected a number, true"),
        ([{"held": True}], "field '[0].text'"),
    ],
)
def test_a_bad_expectations_file_is_named_with_its_field(tmp_path: Path, recorded: Any, message: str) -> None:
    (tmp_path / "check").mkdir()
    (tmp_path / EXPECTATIONS).write_text(json.dumps(recorded))
    with pytest.raises(HistoryError, match=re.escape(message)):
        read_expectations(tmp_path)


def test_candidates_try_a_shorter_run_then_fewer_then_shorter_then_earlier_faults() -> None:
    changes = [c.change for c in candidates(Timeline((KILL, PAUSE), 60.0))]
    assert changes == [
        "end the run at 50 s",
        "drop kill (target leader) at 10 s",
        "drop pause (target one) at 35 s",
        "hold kill (target leader) at 10 s 10 s instead of 20 s",
        "hold pause (target one) at 35 s 5 s instead of 10 s",
        "start every fault 4 s earlier",
    ]
    last = list(candidates(Timeline((KILL, PAUSE), 60.0)))[-1].timeline
    assert last == Timeline((dataclasses.replace(KILL, start_s=6.0, stop_s=26.0),
                             dataclasses.replace(PAUSE, start_s=31.0, stop_s=41.0)), 56.0)  # fmt: skip


def test_nothing_is_simpler_than_a_short_fault_free_run() -> None:
    assert list(candidates(Timeline((), 7.0))) == []
    assert [c.change for c in candidates(Timeline((), 30.0))] == ["end the run at 7 s"]


def test_shrink_keeps_what_the_failure_needs_and_drops_the_rest() -> None:
    """Stand-in oracle: it fails while a kill of at least 4 s is in the timeline."""

    def still_fails(candidate: Candidate) -> bool:
        return any(e.fault == "kill" and e.stop_s - e.start_s >= 4 for e in candidate.timeline.entries)

    steps: list[Step] = []
    smallest = shrink(Timeline((KILL, PAUSE), 60.0), still_fails, 100, steps.append)
    assert [e.fault for e in smallest.entries] == ["kill"]
    assert 4 <= smallest.fault_seconds < 8  # 20 -> 10 -> 5; 2.5 no longer fails
    assert smallest.entries[0].start_s < 4 and smallest.duration_s < 20
    kept = [s.candidate.timeline for s in steps if s.kept]
    assert kept[-1] == smallest and all(still_fails(Candidate(t, "")) for t in kept)
    assert [s.trial for s in steps] == list(range(1, len(steps) + 1))


def test_shrink_stops_at_the_trial_budget_and_returns_the_last_kept() -> None:
    steps: list[Step] = []
    smallest = shrink(Timeline((KILL, PAUSE), 60.0), lambda c: True, 2, steps.append)
    assert len(steps) == 2 and smallest == steps[-1].candidate.timeline
    assert shrink(Timeline((KILL,), 60.0), lambda c: False, 50) == Timeline((KILL,), 60.0)


def test_an_interrupt_inside_the_oracle_ends_the_search() -> None:
    def interrupted(candidate: Candidate) -> bool:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        shrink(Timeline((KILL,), 60.0), interrupted, 5)


@pytest.mark.parametrize(
    ("outcomes", "runs", "needed", "expected"),
    [
        ([True, True, True], 3, 2, (2, 2)),  # enough: stop early
        ([False, False, True], 3, 2, (0, 2)),  # can no longer reach 2: stop early
        ([False, True, True], 3, 2, (2, 3)),
        ([True], 1, 1, (1, 1)),
    ],
)
def test_reproduction_stops_as_soon_as_the_answer_is_known(
    outcomes: list[bool], runs: int, needed: int, expected: tuple[int, int]
) -> None:
    results = iter(outcomes)
    assert reproduces(runs, needed, lambda: next(results)) == expected


def _old_run(root: Path) -> Path:
    run = {
        "format": 1,
        "run_id": root.name,
        "scenario": "leader-kill",
        "scenario_source": "leader-kill",
        "seed": 4,
        "kafka": {"version": "0.9.0.1", "image": "kchaos/kafka:0.9.0.1-none"},
        "topics": [{"name": "t", "partitions": 1, "replication_factor": 1, "acks": "all"}],
    }
    root.mkdir()
    (root / "run.json").write_text(json.dumps(run))
    return root


@pytest.mark.parametrize("command", ["replay", "shrink"])
def test_a_run_from_before_scenario_yaml_is_a_clear_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _old_run(tmp_path / "20261101-000000-leader-kill-abcd")
    assert main([command, str(run)]) == 2
    err = capsys.readouterr().err
    assert "no scenario.yaml" in err and "kchaos run leader-kill --seed 4" in err


def test_replay_of_no_run_directory_names_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path / "nowhere")]) == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--times", "0"], "--times"),
        (["--runs", "2", "--need", "3"], "--need"),
        (["--max-trials", "0"], "--max-trials"),
    ],
)
def test_bad_replay_and_shrink_options_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = "replay" if argv[0] == "--times" else "shrink"
    assert main([command, str(tmp_path), *argv]) == 2
    assert message in capsys.readouterr().err


class _FakeRuns:
    """Stands in for `run_scenario` in the CLI's own logic: a run breaks `acks=1 lost == 0` while
    its timeline holds a partition of at least 4 s; `interrupt_at` makes that run a Ctrl-C."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.scenarios: list[object] = []
        self.interrupt_at = interrupt_at

    def __call__(self, scenario: object, out: Path, **kwargs: object) -> object:
        self.scenarios.append(scenario)
        if len(self.scenarios) == self.interrupt_at:
            raise KeyboardInterrupt
        breaks = any(
            e["fault"] == "partition" and e["duration_s"] >= 4
            for e in scenario.faults.schedule  # type: ignore[attr-defined]
        )
        expectation = ExpectationOutcome(
            "acks=1 lost == 0", "failed" if breaks else "held", 9 if breaks else 0
        )
        return RunOutcome("s", RunDir(out / str(len(self.scenarios))), {"guarantees": []}, [expectation],
                          None, False, {})  # fmt: skip


def _recorded(tmp_path: Path) -> RecordedRun:
    scenario = with_timeline(
        load_scenario("baseline"),
        (
            ScheduleEntry(3.0, 5.0, "pause", {"target": "zookeeper"}),
            ScheduleEntry(7.0, 21.0, "partition", {}),
        ),
        26.0,
    )
    run = tmp_path / "20261124-000000-baseline-abcd"
    run.mkdir()
    broke = [Breakage("expect acks=1 lost == 0", "observed 9")]
    return RecordedRun(run, pinned(scenario, "kchaos/kafka:0.9.0.1-test"), "kchaos/kafka:0.9.0.1-test", broke)


@pytest.mark.parametrize("interrupt_at", [None, 3])
def test_shrink_writes_each_smaller_failing_timeline_and_keeps_it_on_ctrl_c(
    interrupt_at: int | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorded, runs = _recorded(tmp_path), _FakeRuns(interrupt_at)
    monkeypatch.setattr(replay_cli, "load_recorded_run", lambda root: recorded)
    monkeypatch.setattr(replay_cli, "run_scenario", runs)
    code = main(["shrink", str(recorded.root), "--out", str(tmp_path / "runs"), "--max-trials", "20"])
    out = capsys.readouterr().out
    assert "trial 1: drop pause (target zookeeper) at 3 s: broke it in 1 of 1: kept" in out
    shrunk = load_scenario(str(recorded.root / "shrunk.yaml"))
    entries = shrunk.faults.schedule
    if interrupt_at is None:
        assert code == 0
        assert [(e["fault"], e["duration_s"]) for e in entries] == [
            ("partition", 7.0)
        ]  # 3.5 s no longer breaks
        assert shrunk.experiment.duration_s < 26 and entries[0]["at_s"] < 7
    else:  # the second trial was cut short: what the first found is on disk
        assert code == 130 and len(runs.scenarios) == 3
        assert [(e["fault"], e["at_s"], e["duration_s"]) for e in entries] == [("partition", 7.0, 14.0)]
    assert shrunk.experiment.cluster.image == "kchaos/kafka:0.9.0.1-test"
    assert "broke expect acks=1 lost == 0 in 1 of 1 replays" in shrunk.description


def test_shrink_of_a_run_that_broke_nothing_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = dataclasses.replace(_recorded(tmp_path), broke=[])
    monkeypatch.setattr(replay_cli, "load_recorded_run", lambda root: recorded)
    assert main(["shrink", str(recorded.root)]) == 2
    assert "broke no promise" in capsys.readouterr().err
    assert main(["shrink", str(recorded.root), "--failure", "t per-partition-order"]) == 2


def test_replay_counts_how_often_each_broken_promise_broke_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = _recorded(tmp_path)
    monkeypatch.setattr(replay_cli, "load_recorded_run", lambda root: recorded)
    monkeypatch.setattr(replay_cli, "run_scenario", _FakeRuns())
    assert main(["replay", str(recorded.root), "--times", "2", "--out", str(tmp_path / "runs")]) == 1
    out = capsys.readouterr().out
    assert "expect acks=1 lost == 0: broke again in 2 of 2 replays" in out

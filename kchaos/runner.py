"""Run a scenario end to end: experiment, check, expectations, report. Used by `kchaos run` and
the pytest plugin. The exit code is 0 when every promised guarantee and every expectation held,
1 when one did not, 2 when the experiment could not run (raised as HarnessError)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers import check_run, start_checking
from contract.errors import ConfigError
from contract.expectation_outcomes import ExpectationOutcome, write_expectations
from contract.history import (
    SCENARIO,
    HistoryWriter,
    RunClock,
    RunDir,
    new_run_id,
    write_atomic,
)
from faults.base import FaultContext
from faults.schedule import Nemesis, Schedule, ScheduleEntry
from harness.cluster import KafkaCluster
from harness.experiment import ExperimentResult, run_experiment
from harness.workload import Workload, WorkloadHandles
from kchaos.crash import note_run_dir
from kchaos.scenario import FaultPlan, Scenario
from kchaos.scenario_dump import scenario_yaml, with_timeline
from reports import write_report

Tick = Callable[[Workload, float, str], None]
"""Progress callback: workload, seconds left, status text (active faults, leader changes)."""


@dataclass(frozen=True)
class RunOutcome:
    scenario: str
    rundir: RunDir
    result: dict[str, Any]
    expectations: list[ExpectationOutcome]
    report: Path | None
    interrupted: bool
    phases_s: dict[str, float]

    @property
    def guarantees_held(self) -> bool:
        return bool(self.result.get("valid"))

    @property
    def exit_code(self) -> int:
        """130 when interrupted (what was recorded is still checked and reported, but a cut-short
        run is no verdict on the scenario), else 0 or 1."""
        if self.interrupted:
            return 130
        return 0 if self.guarantees_held and all(e.held for e in self.expectations) else 1


def build_schedule(plan: FaultPlan, seed: int, duration_s: float, source: str) -> Schedule | None:
    """The nemesis timeline for a fault plan (None when the plan has no faults); a plan with a fault
    that could not start within `duration_s` is an error naming the scenario file `source`: a chaos
    run without its chaos would pass for a kept promise."""
    if plan.mode == "none":
        return None
    if plan.mode == "schedule":
        for i, step in enumerate(plan.schedule):
            if step.get("after") is None and step["at_s"] >= duration_s:
                raise ConfigError(
                    f"{source}: faults.schedule: step {i + 1} ({step['fault']}) starts at "
                    f"{step['at_s']:g} s, not within the run's {duration_s:g} s (duration_s, or --duration)"
                )
        return Schedule.from_entries(
            ScheduleEntry(
                e["at_s"],
                round(e["at_s"] + e["duration_s"], 3),
                e["fault"],
                e["params"],
                e.get("after"),
                e.get("same_partition", False),
            )
            for e in plan.schedule
        )
    schedule = Schedule.generate(
        seed=seed,
        duration_s=duration_s,
        faults=plan.faults,
        interval_s=plan.interval_s,
        fault_duration_s=plan.fault_duration_s,
        mode=plan.mode,
    )
    if not schedule.entries:
        earliest, latest = plan.interval_s * 0.5, plan.interval_s * 1.5
        raise ConfigError(
            f"{source}: faults: no fault fits in {duration_s:g} s: the first starts {earliest:g}-{latest:g} "
            f"s in (interval_s {plan.interval_s:g}, jittered by the seed) and lasts "
            f"{plan.fault_duration_s:g} s; run at least {latest + plan.fault_duration_s:g} s, or shorten "
            "interval_s or fault_duration_s"
        )
    return schedule


def run_scenario(
    scenario: Scenario,
    out: Path,
    *,
    duration_s: float | None = None,
    seed: int | None = None,
    master: str | None = None,
    on_tick: Tick | None = None,
    report: bool = True,
) -> RunOutcome:
    experiment = dataclasses.replace(
        scenario.experiment,
        duration_s=duration_s if duration_s is not None else scenario.experiment.duration_s,
        seed=seed if seed is not None else scenario.experiment.seed,
    )
    schedule = build_schedule(scenario.faults, experiment.seed, experiment.duration_s, scenario.source)
    experiment.extra = {
        "description": scenario.description,
        "scenario_source": scenario.source,
        "expect": [e.text for e in scenario.expectations],
        "schedule": schedule.to_json() if schedule else [],
    }
    run_id = new_run_id(scenario.name)
    rundir = RunDir(out / run_id)
    note_run_dir(rundir.root)
    effective = with_timeline(
        dataclasses.replace(scenario, experiment=experiment),
        schedule.entries if schedule else (),
        experiment.duration_s,
    )
    write_atomic(
        rundir.root,
        SCENARIO,
        scenario_yaml(
            effective, f"What {run_id} ran, its fault timeline written out: `kchaos replay` reads it."
        ),
    )
    status: dict[str, Callable[[], str]] = {}

    @contextlib.contextmanager
    def chaos(
        cluster: KafkaCluster, handles: WorkloadHandles, writer: HistoryWriter, clock: RunClock
    ) -> Iterator[None]:
        leaders = _LeaderChanges(cluster, [t["name"] for t in experiment.workload.topics()])
        try:
            if schedule is None:
                status["fn"] = leaders.describe
                yield
                return
            with Nemesis(FaultContext(cluster, handles), schedule, writer, clock, experiment.seed) as nemesis:
                active = nemesis.active
                status["fn"] = lambda: f"faults: {', '.join(active()) or 'none'}; {leaders.describe()}"
                yield
        finally:
            start_checking(rundir.root, master)  # while the faults heal and the final read runs

    def tick(workload: Workload, left: float) -> None:
        if on_tick:
            on_tick(workload, left, status["fn"]() if "fn" in status else "")

    interrupted = False
    try:
        result: ExperimentResult = run_experiment(experiment, rundir, run_id, chaos=chaos, on_tick=tick)
        interrupted = result.interrupted
        phases = dict(result.phases_s)
    except KeyboardInterrupt:  # a second Ctrl-C during heal or final read: check what there is
        interrupted, phases = True, {}
    checked = check_run(rundir.root, master=master)
    expectations = [e.evaluate(checked) for e in scenario.expectations]
    write_expectations(rundir.root, expectations)  # before the report, which shows them
    page = write_report(rundir.root) if report else None
    return RunOutcome(scenario.name, rundir, checked, expectations, page, interrupted, phases)


class _LeaderChanges:
    """Counts leader changes seen in ZooKeeper between progress ticks (for the live display)."""

    def __init__(self, cluster: KafkaCluster, topics: list[str]) -> None:
        self._cluster, self._topics = cluster, topics
        self._leaders: dict[tuple[str, int], int] = {}
        self.changes = 0

    def describe(self) -> str:
        try:
            state = self._cluster.state(self._topics)
        except Exception:
            return f"leader changes: {self.changes} (metadata unreachable)"
        for p in state.partitions:
            key = (p.topic, p.partition)
            if key in self._leaders and self._leaders[key] != p.leader:
                self.changes += 1
            self._leaders[key] = p.leader
        return f"leader changes: {self.changes}; controller {state.controller}"

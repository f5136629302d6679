"""pytest plugin (entry point `kchaos`): write your own chaos tests against real Kafka.

Fixtures:
- `kchaos_cluster`: a fresh 3-broker cluster (min.insync.replicas=2), removed after the test.
- `kchaos_workload`: a running workload (all acks modes) against `kchaos_cluster`, recording into
  a run directory under the test's tmp_path; stopped (with its final read) after the test.
- `chaos_run`: `chaos_run(scenario, duration_s=..., seed=...) -> RunOutcome` runs a built-in
  scenario name, a YAML path or a `Scenario` end to end and returns the checked outcome
  (`.result`, `.expectations`, `.exit_code`, `.report`).

While any of them is in use, SIGTERM to pytest (a CI runner's cancel) ends the session the way
Ctrl-C does: pytest tears the fixtures down, so the workload's final read is recorded and the
cluster's containers and network are removed. A run `chaos_run` was in checks and reports what
it recorded (as `kchaos run` does on Ctrl-C), then the session ends. So does a test that went on
after the interrupt (one that calls `kchaos run` in process): the session ends after it.

pytest loads this module into every test session of the environment it is installed in, so it
imports nothing of kafka-chaos until a test asks for one of its fixtures (the harness, Spark and
the reports cost seconds): each fixture imports what it needs then (`importlib.import_module`, a
deferred import that `scripts/check_layers.py` holds to the floors like any other).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.cluster import KafkaCluster
    from harness.workload import Workload
    from kchaos.runner import RunOutcome
    from kchaos.scenario import Scenario

ChaosRun = Callable[..., "RunOutcome"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """End the session after a test that went on after a SIGTERM's interrupt."""
    yield
    signals = sys.modules.get("kchaos.signals")  # not loaded: no SIGTERM of ours to look for
    if signals is not None and signals.terminated.is_set():
        item.session.shouldstop = "SIGTERM: the session ends after the test it interrupted"


@pytest.fixture
def kchaos_cluster() -> Iterator[KafkaCluster]:
    cluster = importlib.import_module("harness.cluster")
    signals = importlib.import_module("kchaos.signals")
    spec = cluster.ClusterSpec(brokers=3, broker_config={"min.insync.replicas": 2})
    with signals.terminate_as_interrupt(), cluster.KafkaCluster(spec) as started:
        yield started


@pytest.fixture
def kchaos_workload(kchaos_cluster: KafkaCluster, tmp_path: Path) -> Iterator[Workload]:
    history = importlib.import_module("contract.history")
    workload_module = importlib.import_module("harness.workload")
    rundir = history.RunDir(tmp_path / history.new_run_id("pytest"))
    spec = workload_module.WorkloadSpec()
    workload = workload_module.Workload(kchaos_cluster, spec, rundir, history.RunClock())
    workload.create_topics()
    started = False
    try:
        workload.start()  # in the `try`: an interrupted start still stops what it started
        started = True
        yield workload
    finally:
        # Each step even when the one before failed (a client that died, a stop that timed out):
        # the final read and the closed history files are what the test leaves behind.
        final_read = [lambda: workload.final_read(timeout_s=60)] if started else []
        workload_module.every_step([workload.stop, *final_read, workload.close])


@pytest.fixture
def chaos_run(tmp_path: Path) -> ChaosRun:
    runner = importlib.import_module("kchaos.runner")
    scenarios = importlib.import_module("kchaos.scenario")
    signals = importlib.import_module("kchaos.signals")

    def run(
        scenario: str | Scenario,
        *,
        duration_s: float | None = None,
        seed: int | None = None,
        report: bool = True,
    ) -> RunOutcome:
        loaded = scenarios.load_scenario(scenario) if isinstance(scenario, str) else scenario
        with signals.terminate_as_interrupt():
            outcome: RunOutcome = runner.run_scenario(
                loaded, tmp_path / "runs", duration_s=duration_s, seed=seed, report=report
            )
        if outcome.interrupted:  # checked and reported; now end the session as the interrupt asked
            raise KeyboardInterrupt(f"run {outcome.rundir.root.name} interrupted")
        return outcome

    return run

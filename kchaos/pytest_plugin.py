"""pytest plugin (entry point `kchaos`): write your own chaos tests against real Kafka.

Fixtures:
- `kchaos_cluster`: a fresh 3-broker cluster (min.insync.replicas=2), removed after the test.
- `kchaos_workload`: a running workload (all acks modes) against `kchaos_cluster`, recording into
  a run directory under the test's tmp_path; stopped (with its final read) after the test.
- `chaos_run`: `chaos_run(scenario, duration_s=..., seed=...) -> RunOutcome` runs a built-in
  scenario name, a YAML path or a `Scenario` end to end and returns the checked outcome
  (`.result`, `.expectations`, `.exit_code`, `.report`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from contract.history import RunClock, RunDir, new_run_id
from harness.cluster import ClusterSpec, KafkaCluster
from harness.workload import Workload, WorkloadSpec
from kchaos.runner import RunOutcome, run_scenario
from kchaos.scenario import Scenario, load_scenario

ChaosRun = Callable[..., RunOutcome]


@pytest.fixture
def kchaos_cluster() -> Iterator[KafkaCluster]:
    with KafkaCluster(ClusterSpec(brokers=3, broker_config={"min.insync.replicas": 2})) as cluster:
        yield cluster


@pytest.fixture
def kchaos_workload(kchaos_cluster: KafkaCluster, tmp_path: Path) -> Iterator[Workload]:
    workload = Workload(kchaos_cluster, WorkloadSpec(), RunDir(tmp_path / new_run_id("pytest")), RunClock())
    workload.create_topics()
    workload.start()
    try:
        yield workload
    finally:
        workload.stop()
        workload.final_read(timeout_s=60)
        workload.close()


@pytest.fixture
def chaos_run(tmp_path: Path) -> ChaosRun:
    def run(
        scenario: str | Scenario,
        *,
        duration_s: float | None = None,
        seed: int | None = None,
        report: bool = True,
    ) -> RunOutcome:
        loaded = load_scenario(scenario) if isinstance(scenario, str) else scenario
        return run_scenario(loaded, tmp_path / "runs", duration_s=duration_s, seed=seed, report=report)

    return run

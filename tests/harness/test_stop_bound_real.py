"""A run ends on time although a workload process does not stop (issue 68), on a real cluster
(Kafka 3.9.2, one broker): a transactional producer stopped by SIGSTOP behind the conductor's back,
mid-run, as a process stuck for good in a client call is. The chaos phase lasts at most the duration
and the stop bound, run.json names the process killed and why, and harness.log says so."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from contract.history import HARNESS_LOG, TRANSACTIONS, RunDir, new_run_id
from harness.cluster import ClusterSpec
from harness.experiment import ExperimentSpec, run_experiment
from harness.transactional_producer import TransactionSpec
from harness.workload import Workload, WorkloadSpec

pytestmark = pytest.mark.docker

DURATION_S = 15.0
STOP_BOUND_S = 5.0
START_SLACK_S = 1.0
"""Beyond duration and bound: starting the processes, and the last tick of the duration's loop."""


def test_a_producer_that_ignores_stop_is_killed_at_the_bound_and_the_run_ends_on_time(tmp_path: Path) -> None:
    spec = ExperimentSpec(
        name="stop-bound",
        duration_s=DURATION_S,
        seed=1,
        cluster=ClusterSpec(brokers=1, kafka="3.9.2"),
        workload=WorkloadSpec(
            acks=("all",),
            replication_factor=1,
            live_consumers=0,
            rate_per_s=100,
            transactions=TransactionSpec(producers=1, topics=1, records=(1, 5)),
            stop_bound_s=STOP_BOUND_S,
        ),
    )
    run_id = new_run_id("stop-bound")
    rundir = RunDir(tmp_path / run_id)
    stopped: list[int] = []

    def tick(workload: Workload, left_s: float) -> None:
        committed = '"type":"commit","time_ns"' in rundir.path(TRANSACTIONS).read_text()
        if not stopped and committed and left_s < DURATION_S - 5:
            pid = next(p.pid for p in workload.producers if p.process == "tx-0")
            assert pid is not None
            os.kill(pid, signal.SIGSTOP)  # not through the conductor: it will not resume it
            stopped.append(pid)

    result = run_experiment(spec, rundir, run_id, on_tick=tick)
    assert stopped, "tx-0 was never stopped: no commit seen in time"
    assert result.phases_s["chaos"] <= DURATION_S + STOP_BOUND_S + START_SLACK_S, result.phases_s
    run = json.loads(rundir.path("run.json").read_text())
    assert isinstance(run["workload"].pop("startup_s"), float)  # how long its processes took to start
    assert run["workload"] == {
        "stop_bound_s": STOP_BOUND_S,
        "killed": [
            {
                "process": "tx-0",
                "why": "did not stop within the stop bound (5 s): it answered no `stack` (stopped?)",
            }
        ],
    }
    assert "tx-0 did not stop within the stop bound (5 s)" in rundir.path(HARNESS_LOG).read_text()
    assert result.final_read is not None and not result.final_read.incomplete  # the run went on to the end

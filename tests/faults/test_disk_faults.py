"""A disk fault on a real cluster: a broker's fsyncs fail, the broker stops (Kafka halts it on the
I/O error), leaves the ISR, and the check says `failed-disk-leaves-isr` held over it, with what the
disk failed recorded in the fault's stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kchaos.pytest_plugin import ChaosRun
from kchaos.scenario import load_scenario

# The check gives a broker 30 s after the heal to leave the ISR, so the run goes on past that; a
# stop then starts the halted broker again, or the run's settle would wait 60 s for a full ISR.
SCENARIO = """
name: fsync-error-test
duration_s: 45
cluster:
  brokers: 3
  disk: lossy
  broker_config: {min.insync.replicas: 2, unclean.leader.election.enable: false}
workload:
  acks: [all]
  partitions: 1
faults:
  schedule:
    - {at_s: 6, duration_s: 6, fault: fsync-error, params: {target: kafka-2}}
    - {at_s: 43, duration_s: 1, fault: stop, params: {target: kafka-2}}
"""


@pytest.mark.docker
@pytest.mark.spark
@pytest.mark.fuse
def test_a_broker_whose_fsyncs_fail_leaves_the_isr(tmp_path: Path, chaos_run: ChaosRun) -> None:
    path = tmp_path / "fsync-error-test.yaml"
    path.write_text(SCENARIO)
    outcome = chaos_run(load_scenario(str(path)), seed=1, report=False)
    start, stop, *_ = map(json.loads, (outcome.rundir.root / "history/faults.jsonl").read_text().splitlines())
    assert (start["fault"], stop["fault"], stop["phase"]) == ("fsync-error", "fsync-error", "stop")
    assert start["detail"]["disks"]["kafka-2"]["fsync_error"] and "error" not in stop["detail"], (start, stop)
    assert stop["detail"]["disks"]["kafka-2"]["counts"]["fsync_eio"] > 0, stop
    (row,) = [g for g in outcome.result["guarantees"] if g["id"] == "failed-disk-leaves-isr"]
    assert row["verdict"] == "held" and row["exercised"]["count"] >= 1, row
    assert outcome.result["acks"]["all"]["lost"] == 0, outcome.result["acks"]["all"]

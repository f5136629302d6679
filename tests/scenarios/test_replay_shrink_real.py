"""`kchaos replay` and `kchaos shrink` on real clusters: a run that breaks a promise, replayed, then
shrunk to a smaller timeline that still breaks it. One slow test (four short runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.history import CLIENT, RUN_JSON, SCENARIO
from kchaos.scenario import load_scenario

pytestmark = [pytest.mark.docker, pytest.mark.spark]

# An isolated acks=1 leader keeps acknowledging what the new leader never gets: acks=1 loses writes
# in every run. The ZooKeeper pause before it is a decoy the shrinker should find unnecessary.
SCENARIO_DOC = {
    "name": "acks1-loss",
    "description": "Isolate the acks=1 leader after a short ZooKeeper pause.",
    "duration_s": 26,
    "cluster": {"brokers": 3, "broker_config": {"min.insync.replicas": 2}},
    "workload": {"acks": ["1"], "partitions": 1, "rate_per_s": 250},
    "faults": {
        "schedule": [
            {"at_s": 3, "duration_s": 2, "fault": "pause", "params": {"target": "zookeeper"}},
            {
                "at_s": 7,
                "duration_s": 14,
                "fault": "partition",
                "params": {"shape": "isolate", "target": "leader", "topic": "chaos-acks-1", "partition": 0},
            },
        ]
    },
    "expect": ["acks=1 lost == 0"],
}
TARGET = "expect acks=1 lost == 0"


def _kchaos(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kchaos.cli", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_a_failing_run_replays_and_shrinks_to_a_smaller_failing_timeline(tmp_path: Path) -> None:
    scenario_file, runs = tmp_path / "acks1-loss.yaml", tmp_path / "runs"
    scenario_file.write_text(yaml.safe_dump(SCENARIO_DOC))
    first = _kchaos("run", str(scenario_file), "--out", str(runs))
    assert first.returncode == 1, first.stdout[-3000:] + first.stderr[-3000:]
    (run_dir,) = runs.iterdir()
    # A replay reproduces a breakage; an incomplete final read leaves none to reproduce (the
    # expectation is unknown). Seen once in CI, its cause not yet known: say what the read saw.
    final_read = json.loads((run_dir / RUN_JSON).read_text())["final_read"]
    reader_log = [line for line in (run_dir / CLIENT).read_text().splitlines() if '"c-final-0"' in line]
    assert not final_read["incomplete"], (final_read, str(run_dir), reader_log[-30:])
    recorded = load_scenario(str(run_dir / SCENARIO))
    assert [e["fault"] for e in recorded.faults.schedule] == ["pause", "partition"]

    again = _kchaos("replay", str(run_dir), "--times", "1", "--out", str(runs))
    assert again.returncode == 1, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{TARGET}: broke again in 1 of 1 replays" in again.stdout

    # The faults end 5 s (shrink's tail) before the run does, so the first trial drops the decoy.
    shrunk = _kchaos("shrink", str(run_dir), "--max-trials", "1", "--out", str(runs))
    assert shrunk.returncode == 0, shrunk.stdout[-3000:] + shrunk.stderr[-3000:]
    assert "trial 1:" in shrunk.stdout and "smallest:" in shrunk.stdout
    written = run_dir / "shrunk.yaml"
    smaller = load_scenario(str(written))
    fault_seconds = sum(e["duration_s"] for e in smaller.faults.schedule)
    assert len(smaller.faults.schedule) < 2 or fault_seconds < 16, smaller.faults.schedule
    assert (smaller.experiment.cluster.image or "").startswith("kchaos/kafka:")  # the run's own image
    assert f"broke {TARGET} in 1 of 1 replays" in smaller.description
    assert written.read_text().startswith("# kchaos shrink of ")
    # 1 failing run + 1 replay + at most 2 trials, each one run: the budget held.
    assert 3 <= len(list(runs.iterdir())) <= 4

"""Run by test_nemesis.py in a subprocess: attach to a cluster, start overlapping faults through a
Nemesis, say so on stdout, then wait (bounded) to be interrupted with SIGINT."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from contract.history import HistoryWriter, RunClock
from faults.base import FaultContext
from faults.schedule import Nemesis, Schedule
from harness.cluster import KafkaCluster

SCHEDULE = Schedule.from_entries(
    [
        {
            "start_s": 0,
            "stop_s": 300,
            "fault": "partition",
            "params": {"shape": "halves", "target": "kafka-1"},
        },
        {
            "start_s": 0.5,
            "stop_s": 300,
            "fault": "lossy",
            "params": {"target": "kafka-3", "probability": 0.1},
        },
        {"start_s": 1, "stop_s": 300, "fault": "pause", "params": {"target": "kafka-2"}},
    ]
)


def main(run_id: str, faults_path: str) -> int:
    cluster = KafkaCluster.attach(run_id)
    with (
        HistoryWriter(Path(faults_path)) as writer,
        Nemesis(FaultContext(cluster), SCHEDULE, writer, RunClock(), seed=1) as nemesis,
    ):
        deadline = time.monotonic() + 120
        announced = False
        while time.monotonic() < deadline:
            if not announced and Path(faults_path).read_text().count('"phase":"start"') == len(
                SCHEDULE.entries
            ):
                print("all faults active:", ",".join(nemesis.active()), flush=True)
                announced = True
            time.sleep(0.2)
    return 1  # never interrupted: the test failed to send SIGINT


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1], sys.argv[2]))
    except KeyboardInterrupt:
        print("interrupted, healed", flush=True)
        sys.exit(130)

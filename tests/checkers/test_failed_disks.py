"""`failed-disk-leaves-isr` on tiny handwritten histories: which disk faults failed a broker's disk
(faults.jsonl's `disks` counts at start and stop), whether the broker left the ISR (cluster.jsonl),
and the verdict a check gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checker_frames import assert_frame
from checker_rundirs import acked, all_ends, make_run, record, run_json
from pyspark.sql import SparkSession

from checkers import check_run
from checkers.replication import (
    DISK_FAILURE_SCHEMA,
    FAILED_DISK_COLUMNS,
    LEAVES_ISR_WITHIN_NS,
    DiskFailure,
    disk_failures,
    failed_disk_replicas,
)
from contract.events import FaultWindow, fault_windows
from reports.timeline import disk_failed

S = 1_000_000_000


def disks(**counts: dict[str, int]) -> dict[str, Any]:
    return {"disks": {node: {"counts": c} for node, c in counts.items()}}


def window(fault: str, start: dict[str, Any], healed: dict[str, Any], **detail: Any) -> FaultWindow:
    return FaultWindow(fault, tuple(start["disks"]), 10 * S, 30 * S, {**start, **detail}, None, healed)


def test_a_disk_failed_what_its_count_grew_by_between_start_and_stop() -> None:
    windows = [
        # kafka-2's disk had failed 3 fsyncs in an earlier fault: this one failed 4 more
        window("fsync-error", disks(**{"kafka-2": {"fsync_eio": 3}}), disks(**{"kafka-2": {"fsync_eio": 7}})),
        # full, but nothing was written past a file's end: no failure
        window("disk-full", disks(**{"kafka-1": {}}), disks(**{"kafka-1": {"fsync_eio": 7}})),
        window("disk-full", disks(**{"kafka-3": {}}), disks(**{"kafka-3": {"enospc": 2}})),
        # slow fsyncs fail nothing; a fault that could not start or heal says nothing
        window("slow-fsync", disks(**{"kafka-1": {}}), disks(**{"kafka-1": {"slow_fsync": 9}})),
        window("disk-full", disks(**{"kafka-1": {}}), disks(**{"kafka-1": {"enospc": 1}}), error="no disk"),
        window("disk-full", disks(**{"kafka-1": {}}), {"error": "cannot heal kafka-1's disk"}),
    ]
    assert list(disk_failures(windows)) == [
        DiskFailure("fsync-error", 2, 10 * S, 30 * S, 4),
        DiskFailure("disk-full", 3, 10 * S, 30 * S, 2),
    ]


def test_a_disk_fault_says_what_it_failed_in_the_report() -> None:
    grew = window(
        "disk-full", disks(**{"kafka-3": {"enospc": 2}}), disks(**{"kafka-3": {"enospc": 5, "fsync_eio": 1}})
    )
    assert grew.disk_counts() == {"kafka-3": {"enospc": 3, "fsync_eio": 1}}
    assert disk_failed(grew) == "kafka-3: 3 write refused (ENOSPC), 1 fsync failed (EIO)"
    assert disk_failed(window("kill", {"disks": {}}, {})) == ""


def test_a_fault_window_holds_what_its_stop_found() -> None:
    events = [
        (
            1,
            {
                "time_ns": 5,
                "fault": "disk-full",
                "phase": "start",
                "id": 0,
                "targets": ["kafka-1"],
                "detail": {},
            },
        ),
        (
            2,
            {
                "time_ns": 9,
                "fault": "disk-full",
                "phase": "stop",
                "id": 0,
                "targets": ["kafka-1"],
                **disks(x={}),
            },
        ),
        (3, {"time_ns": 9, "fault": "kill", "phase": "start", "id": 1, "targets": ["kafka-1"], "detail": {}}),
    ]
    events[1][1]["detail"] = disks(**{"kafka-1": {"enospc": 1}})
    stopped, active = fault_windows(events, "faults.jsonl")
    assert stopped.healed == disks(**{"kafka-1": {"enospc": 1}}) and stopped.stop_ns == 9
    assert active.healed == {} and active.stop_ns is None


def isr_samples(spark: SparkSession, rows: list[tuple[int, str, int, list[int]]]) -> Any:
    return spark.createDataFrame(rows, "time_ns long, topic string, partition int, isr array<int>")


def test_a_failed_broker_that_left_the_isr_and_one_that_stayed(spark: SparkSession) -> None:
    until = 30 * S + LEAVES_ISR_WITHIN_NS
    isr = isr_samples(
        spark,
        [
            (9 * S, "t-all", 0, [1, 2, 3]),
            (20 * S, "t-all", 0, [1, 2, 3]),
            (25 * S, "t-all", 0, [1, 3]),  # broker 2 left
            (until, "t-all", 0, [1, 2, 3]),  # and came back once restarted: it had left
            (9 * S, "t-1", 0, [1, 2, 3]),
            (until + 1, "t-1", 0, [1, 2, 3]),  # broker 2 stayed, seen past the bound
            (9 * S, "t-1", 1, [1, 3]),  # not in-sync at the start: not a case
            (until, "t-1", 1, [1, 3]),
            (9 * S, "t-all", 1, [2, 3]),
            (40 * S, "t-all", 1, [2, 3]),  # the samples end before the bound: not judged
        ],
    )
    failures = spark.createDataFrame([("fsync-error", 2, 10 * S, 30 * S, 4)], DISK_FAILURE_SCHEMA)
    assert_frame(
        failed_disk_replicas(isr, failures, {"t-all": "all", "t-1": "1"}),
        FAILED_DISK_COLUMNS,
        [
            ("t-all", 0, "all", 2, "fsync-error", 4, 10 * S, 30 * S, 25 * S, until),
            ("t-1", 0, "1", 2, "fsync-error", 4, 10 * S, 30 * S, None, 9 * S),
        ],
    )


def disk_run(root: Path, after_heal: list[int], version: str = "3.9.2") -> Path:
    """Broker 2's disk failed 5 fsyncs in an fsync-error from 10 s to 30 s; t-all/0's ISR, sampled
    before, during and 30 s after the heal (the bound), held broker 2 at the end (`after_heal`)."""
    start = {"time_ns": 10 * S, "fault": "fsync-error", "phase": "start", "id": 0, "targets": ["kafka-2"]}
    faults = [
        start | {"detail": disks(**{"kafka-2": {}})},
        start | {"time_ns": 30 * S, "phase": "stop", "detail": disks(**{"kafka-2": {"fsync_eio": 5}})},
    ]

    def sample(t: int, isr: list[int]) -> dict[str, Any]:
        partition = {"topic": "t-all", "partition": 0, "leader": 1, "leader_epoch": 4, "isr": isr}
        return {
            "time_ns": t,
            "controller": 1,
            "controller_epoch": 2,
            "live_brokers": [1, 2, 3],
            "partitions": [partition],
        }

    cluster = [sample(5 * S, [1, 2, 3]), sample(20 * S, [1, 2, 3]), sample(60 * S, after_heal)]
    writes = acked(100, "a:1", 0)
    reads = [record(80 * S, "a:1", 0), *all_ends(80 * S)]
    return make_run(
        root, writes, reads, faults=faults, cluster=cluster, run=run_json(kafka={"version": version})
    )


def verdict(result: dict[str, Any], topic: str = "t-all") -> tuple[str, str]:
    (row,) = [g for g in result["guarantees"] if g["id"] == "failed-disk-leaves-isr" and g["topic"] == topic]
    return row["verdict"], row["reason"]


def test_a_check_judges_a_failed_disk_by_the_isr(spark: SparkSession, tmp_path: Path) -> None:
    stayed = check_run(disk_run(tmp_path / "stayed", [1, 2, 3]))
    assert verdict(stayed)[0] == "violated" and "KIP-112, 1.0" in verdict(stayed)[1]
    assert not stayed["valid"]
    (example,) = stayed["anomalies"]["failed-disk-in-isr"]["examples"]
    assert (example["broker"], example["failed_ops"], example["last_in_isr_ns"]) == (2, 5, 60 * S)
    # t-1 had no ISR sample with broker 2 in it: no case to break on
    assert verdict(stayed, "t-1")[0] == "not-exercised"

    left = check_run(disk_run(tmp_path / "left", [1, 3], version="0.9.0.1"))
    held, reason = verdict(left)
    assert held == "held" and "halts a broker on an I/O error" in reason, reason
    assert {row["topic"]: row["failed_disk_replicas"] for row in left["topics"]} == {
        "t-all": 1,
        "t-1": 0,
        "t-0": 0,
    }

"""The replication checks on tiny handwritten histories: read-then-lost, replica-divergence and
epoch-regression, their guarantees, the brokers' truncations as evidence, and replicas.jsonl's
bad lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checker_frames import anomalies_found, assert_frame, per_value_writes, read_frame, write_frame
from checker_rundirs import acked, all_ends, make_run, record, run_json
from pyspark.sql import SparkSession

from checkers import check_run
from checkers.io import check_layout
from checkers.io.cache import parsed_table
from checkers.kind_checkers import ReadThenLost
from checkers.replication import epoch_regressions, replica_divergence
from contract.anomaly_kinds import KIND_IDS, KINDS
from contract.errors import HistoryError
from contract.history import CHECK_CACHE, CLUSTER, REPLICAS
from kchaos.cli import main

ACKS = {"t-all": "all", "t-1": "1"}


def test_a_record_read_live_then_missing_from_the_complete_final_read(spark: SparkSession) -> None:
    writes = write_frame(
        spark, [*acked(100, "a:1", 0, "t-1"), *acked(200, "a:2", 1, "t-1"), *acked(300, "a:3", 0, "t-1", 1)]
    )
    reads = read_frame(
        spark,
        [
            record(400, "a:1", 0, "t-1", phase="live"),  # read live, then gone: committed data lost
            record(400, "a:2", 1, "t-1", phase="live"),
            record(900, "a:2", 1, "t-1"),  # read live and final: kept
            record(400, "a:3", 0, "t-1", 1, phase="live"),  # t-1/1 was not read to its end: unknown
            *[e for e in all_ends() if (e["topic"], e["partition"]) != ("t-1", 1)],
        ],
    )
    found = anomalies_found(ReadThenLost, writes, reads)
    assert_frame(
        found,
        [
            "topic",
            "partition",
            "acks",
            "value",
            "outcome",
            "process",
            "invoke_ns",
            "complete_ns",
            "ack_offset",
            "read_offset",
            "final_value",
        ],
        [("t-1", 0, "1", "a:1", "ok", "a", 100, 110, 0, 0, None)],
    )


def test_replicas_that_hold_different_values_at_one_offset(spark: SparkSession) -> None:
    held = spark.createDataFrame(
        [
            (1, "t-all", 0, 0, "a:1"),
            (2, "t-all", 0, 0, "a:1"),
            (3, "t-all", 0, 0, "a:1"),
            (1, "t-all", 0, 1, "a:2"),
            (2, "t-all", 0, 1, "b:9"),
            (3, "t-all", 0, 1, "b:9"),
            (1, "t-all", 0, 2, "a:3"),  # held by one replica only: the others' logs end before it
            (2, "t-1", 1, 5, None),
            (3, "t-1", 1, 5, "c:1"),  # a null value differs from any value
        ],
        "broker int, topic string, partition int, offset long, value string",
    )
    writes = write_frame(spark, [*acked(100, "a:2", 1), *acked(200, "a:1", 0)])
    found = replica_divergence(held, per_value_writes(writes), ACKS)
    assert_frame(
        found,
        ["topic", "partition", "acks", "offset", "replicas", "acked_values", "complete_ns"],
        [
            ("t-all", 0, "all", 1, [(1, "a:2"), (2, "b:9"), (3, "b:9")], ["a:2"], 110),
            ("t-1", 1, "1", 5, [(2, None), (3, "c:1")], None, None),
        ],
    )


def test_epochs_that_go_backwards(spark: SparkSession) -> None:
    epochs = spark.createDataFrame(
        [
            (1, None, None, 3),
            (2, None, None, 4),
            (3, None, None, 2),  # the controller epoch fell
            (1, "t-all", 0, 5),
            (2, "t-all", 0, 5),
            (3, "t-all", 0, 6),
            (1, "t-all", 1, 7),
            (2, "t-all", 1, 6),
            (3, "t-all", 1, 7),
        ],
        "time_ns long, topic string, partition int, epoch long",
    )
    assert_frame(
        epoch_regressions(epochs),
        ["topic", "partition", "what", "epoch", "previous_epoch", "time_ns", "previous_ns"],
        [(None, None, "controller", 2, 4, 3, 2), ("t-all", 1, "leader", 6, 7, 2, 1)],
    )


def replica_lines(
    broker: int, values: list[str | None], topic: str = "t-all", partition: int = 0
) -> list[dict[str, object]]:
    state = {
        "type": "replica",
        "broker": broker,
        "topic": topic,
        "partition": partition,
        "log_start": 0,
        "log_end": len(values),
        "high_watermark": len(values),
        "recovery_point": 0,
        "messages": len(values),
        "unreadable": 0,
        "torn_bytes": 0,
    }
    return [
        state,
        {
            "type": "values",
            "broker": broker,
            "topic": topic,
            "partition": partition,
            "offset": 0,
            "values": values,
        },
    ]


UNIX_AT_ZERO = 1_764_000_000_000_000_000  # 2025-11-24 16:00:00 UTC
TRUNCATION = "[2025-11-24 16:00:02,500] INFO Truncating log t-all-0 to offset 1. (kafka.log.Log)\n"
HALT = (
    "[2025-11-24 16:00:09,000] FATAL [ReplicaFetcherThread-0-2], Halting because log truncation is not "
    "allowed for topic t-all, Current leader 2's latest offset 1 is less than replica 1's latest offset 2 "
    "(kafka.server.ReplicaFetcherThread)\n"
)


def diverged_run(root: Path) -> Path:
    """A write acknowledged at t-all/0 offset 1 that broker 2, truncated to offset 1, lost; broker 1
    halted."""
    writes = [*acked(100, "a:1", 0), *acked(200, "a:2", 1), *acked(3_000_000_000, "b:1", 1)]
    reads = [
        record(50, "a:2", 1, phase="live"),
        record(9_000_000_000, "a:1", 0),
        record(9_000_000_000, "b:1", 1),
        *all_ends(),
    ]
    replicas = [
        *replica_lines(1, ["a:1", "a:2"]),
        *replica_lines(2, ["a:1", "b:1"]),
        *replica_lines(3, ["a:1", "b:1"]),
    ]
    cluster = [
        {
            "time_ns": 150,
            "controller": 3,
            "controller_epoch": 2,
            "live_brokers": [1, 2, 3],
            "partitions": [
                {"topic": "t-all", "partition": 0, "leader": 1, "leader_epoch": 4, "isr": [1, 2, 3]}
            ],
        },
    ]
    run = run_json(clock={"unix_ns_at_zero": UNIX_AT_ZERO}, replicas={"collected": True})
    return make_run(
        root,
        writes,
        reads,
        cluster=cluster,
        run=run,
        replicas=replicas,
        node_logs={"kafka-2": "noise\n" + TRUNCATION, "kafka-1": HALT, "zk-1": TRUNCATION},
    )


def test_a_truncated_acknowledged_write_is_lost_read_then_lost_and_diverged_with_the_truncation_quoted(
    spark: SparkSession, tmp_path: Path
) -> None:
    result = check_run(diverged_run(tmp_path / "run"))
    counts = {kind: entry["count"] for kind, entry in result["anomalies"].items()}
    assert counts["lost-write"] == 1 and counts["read-then-lost"] == 1 and counts["replica-divergence"] == 1
    assert counts["epoch-regression"] == 0
    truncations = [
        "2.500 s kafka-2: " + TRUNCATION.strip(),
        "9.000 s kafka-1: " + HALT.strip(),
    ]
    quoting = [kind.id for kind in KINDS if kind.truncated and counts[kind.id]]
    assert sorted(quoting) == ["divergent-offset", "lost-write", "read-then-lost", "replica-divergence"]
    for kind_id in quoting:
        assert result["anomalies"][kind_id]["examples"][0]["truncations"] == truncations, kind_id
    diverged = result["anomalies"]["replica-divergence"]["examples"][0]
    assert diverged["acked_values"] == ["a:2", "b:1"]
    assert diverged["replicas"] == [
        {"broker": 1, "value": "a:2"},
        {"broker": 2, "value": "b:1"},
        {"broker": 3, "value": "b:1"},
    ]
    verdicts = {(g["topic"], g["id"]): (g["verdict"], g["reason"]) for g in result["guarantees"]}
    for gid in ("no-lost-acked-writes", "no-lost-reads", "replicas-agree"):
        verdict, reason = verdicts[("t-all", gid)]
        assert verdict == "violated" and "KIP-101" in reason, (gid, reason)
    # t-1's replicas held nothing to compare, and one sample shows no epoch going back
    assert verdicts[("t-1", "replicas-agree")][0] == "not-exercised"
    assert verdicts[("t-all", "epochs-advance")][0] == "not-exercised"
    by_topic = {row["topic"]: row for row in result["topics"]}
    assert (by_topic["t-all"]["replica_offsets"], by_topic["t-1"]["replica_offsets"]) == (2, 0)
    assert result["events"]["replicas"] == 3


def test_without_replicas_jsonl_there_is_no_replicas_verdict(spark: SparkSession, tmp_path: Path) -> None:
    run_dir = diverged_run(tmp_path / "run")
    (run_dir / "history" / "replicas.jsonl").unlink()
    result = check_run(run_dir)
    assert not [g for g in result["guarantees"] if g["id"] == "replicas-agree"]
    assert result["anomalies"]["replica-divergence"]["count"] == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            {"type": "values", "broker": 1, "topic": "t-all", "partition": 0, "values": ["a"]},
            "field 'offset': expected an integer",
        ),
        (
            {"type": "state", "broker": 1, "topic": "t-all", "partition": 0},
            "field 'type': expected replica or values",
        ),
        (
            {"type": "values", "broker": 1, "topic": "t-all", "partition": 0, "offset": 0, "values": [1]},
            "field 'values': expected a list",
        ),
    ],
)
def test_a_bad_replicas_line_names_file_and_line_and_exits_2(
    tmp_path: Path, line: dict[str, object], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = diverged_run(tmp_path / "run")
    with (run_dir / "history" / "replicas.jsonl").open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    with pytest.raises(HistoryError, match=rf"replicas.jsonl:7: {message}"):
        check_layout(run_dir)
    assert main(["check", str(run_dir)]) == 2
    assert "replicas.jsonl:7" in capsys.readouterr().err


def test_replicas_and_cluster_jsonl_parsed_by_pyarrow_are_read_as_spark_parses_them(
    spark: SparkSession, tmp_path: Path
) -> None:
    runs = []
    for name in ("lf", "crlf"):
        run_dir = diverged_run(tmp_path / name)
        with (run_dir / CLUSTER).open("a") as cluster:  # the leader epoch goes back: 4, then 3
            sample = json.loads((run_dir / CLUSTER).read_text().splitlines()[0])
            sample["time_ns"], sample["partitions"][0]["leader_epoch"] = 250, 3
            cluster.write(json.dumps(sample) + "\n")
        runs.append(run_dir)
    lf, crlf = runs
    for name in (REPLICAS, CLUSTER):  # CR line ends: pyarrow leaves the files to Spark
        (crlf / name).write_bytes((crlf / name).read_bytes().replace(b"\n", b"\r\n"))
    by_arrow, by_spark = check_run(lf), check_run(crlf)
    ((lf_cache,), (crlf_cache,)) = ((run / CHECK_CACHE).iterdir() for run in (lf, crlf))  # one cache each
    for name in (REPLICAS, CLUSTER):
        assert parsed_table(lf_cache, name) is not None and parsed_table(crlf_cache, name) is None
    for kind in ("replica-divergence", "epoch-regression"):
        assert by_arrow["anomalies"][kind] == by_spark["anomalies"][kind]
        assert by_arrow["anomalies"][kind]["count"] == 1, kind


def test_the_benchmarks_python_references_count_every_kind_as_the_check_does(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = diverged_run(tmp_path / "run")
    with (run_dir / CLUSTER).open("a") as cluster:  # the leader's and the controller's epochs go back
        for time_ns, leader_epoch, controller_epoch in ((200, 3, 1), (300, 5, 2)):
            partition = {
                "topic": "t-all",
                "partition": 0,
                "leader": 1,
                "leader_epoch": leader_epoch,
                "isr": [1],
            }
            sample = {"controller": 3, "controller_epoch": controller_epoch, "live_brokers": [1, 2, 3]}
            cluster.write(json.dumps({"time_ns": time_ns, **sample, "partitions": [partition]}) + "\n")
    with (run_dir / REPLICAS).open("a") as replicas:  # a null value against another one
        for line in [*replica_lines(1, [None], partition=1), *replica_lines(2, ["x"], partition=1)]:
            replicas.write(json.dumps(line) + "\n")
    result = check_run(run_dir)
    monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "benchmarks"))
    from history_reference import python_counts, python_read
    from side_files_reference import python_side_counts

    counted = {kind: result["anomalies"][kind]["count"] for kind in KIND_IDS}
    assert {k: counted[k] for k in ("read-then-lost", "replica-divergence", "epoch-regression")} == {
        "read-then-lost": 1,
        "replica-divergence": 2,
        "epoch-regression": 2,
    }
    referenced = {**python_counts(python_read(run_dir)), **python_side_counts(run_dir)}
    assert referenced == {kind: counted[kind] for kind in referenced}
    # The references judge no transactions and no failed disks, and this history has neither:
    # nothing else is counted.
    assert {kind: n for kind, n in counted.items() if kind not in referenced} == dict.fromkeys(
        (
            "lost-committed",
            "aborted-read",
            "torn-transaction",
            "pipeline-skip",
            "pipeline-duplicate",
            "pipeline-offsets",
            "failed-disk-in-isr",
        ),
        0,
    )

"""`kchaos check` end to end on handwritten run directories: exit codes, result.json, evidence.
(Bad input: test_checker_bad_input.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checker_rundirs import (
    FAULT,
    SAMPLE,
    TOPICS,
    acked,
    all_ends,
    clean_run,
    client_line,
    end,
    kchaos_check,
    make_run,
    record,
    replaced_run,
    run_json,
    write,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers import anomalies
from checkers.io import cache as checker_cache
from checkers.kind_checkers import DivergentOffsets, PhantomWrites, ReorderedWrites, UnexpectedValues
from checkers.registry import CheckInputs
from contract.history import CHECK_CACHE, READS, RESULT, RUN_JSON, WRITES
from contract.synthetic_history import ANOMALIES, generate

pytestmark = pytest.mark.spark


def test_clean_run_is_valid_and_rechecks_from_the_parquet_cache(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    code, text = kchaos_check(capfd, run_dir)
    assert code == 0, text
    assert "VALID" in text
    result = json.loads((run_dir / RESULT).read_text())
    assert (result["valid"], result["complete"], result["unexpected"]) == (True, True, 0)
    assert result["events"] == {"writes": 6, "reads": 9, "faults": 1, "cluster": 1, "client": 0}
    assert result["acks"]["all"] == {
        "attempted": 2,
        "acked": 2,
        "failed": 0,
        "indeterminate": 0,
        "lost": 0,
        "divergent": 0,
        "duplicated": 0,
        "phantom": 0,
        "lost_committed": 0,
        "aborted_read": 0,
        "torn_transactions": 0,
        "pipeline_skipped": 0,
        "pipeline_duplicated": 0,
        "pipeline_offset_mismatches": 0,
        "reordered": 0,
        "read_lost": 0,
        "replica_divergent": 0,
        "failed_disk_in_isr": 0,
        # the cases its guarantees were judged over: two records read, by the final read only
        "reads": 2,
        "live_reads": 0,
        "replica_offsets": 0,
        "epoch_samples": 0,
        "failed_disk_replicas": 0,
        "aborted_appended": 0,
        "committed_transactions": 0,
        "pipeline_inputs": 0,
        "heal_recovery_ms": None,  # its fault is never healed
        "heal_recovery_lower_bound": False,
    }
    verdicts = {(g["topic"], g["id"]): g["verdict"] for g in result["guarantees"] if g["promised"]}
    assert set(verdicts.values()) == {"held", "not-exercised"}
    # a run whose faults fail no disk is not judged on failed disks at all
    assert not [g for g in result["guarantees"] if g["id"] == "failed-disk-leaves-isr"]
    assert verdicts[("t-all", "no-lost-acked-writes")] == "held"
    assert verdicts[("t-all", "no-unexpected-values")] == "held"
    # nothing to break them on: no live reader, no failed write, one cluster sample, t-1 not read
    assert verdicts[("t-all", "no-lost-reads")] == "not-exercised"
    assert verdicts[("t-all", "no-phantom-writes")] == "not-exercised"
    assert verdicts[("t-all", "epochs-advance")] == "not-exercised"
    assert verdicts[("t-1", "no-unexpected-values")] == "not-exercised"
    (cache,) = (run_dir / CHECK_CACHE).iterdir()  # the one cache, named by its fingerprint
    fingerprint = (cache / "fingerprint.json").stat().st_mtime_ns
    assert not (cache / "_parsed").exists()  # pyarrow's parse is deleted once converted
    code, text = kchaos_check(capfd, run_dir, "--json")
    assert code == 0
    assert json.loads(text)["valid"] is True
    assert [p.name for p in (run_dir / CHECK_CACHE).iterdir()] == [cache.name]
    assert (cache / "fingerprint.json").stat().st_mtime_ns == fingerprint


def test_a_history_pyarrow_takes_checks_as_the_same_history_spark_parses(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """pyarrow takes the files as kafka-chaos writes them, and its Parquet of reads.jsonl is then the
    read records table; with CRLF line ends Spark parses them and writes the records itself."""
    results, records_schemas = {}, {}
    for name, line_end in (("arrow", b"\n"), ("spark", b"\r\n")):
        run_dir = tmp_path / name
        generate(run_dir, 600, seed=3, rates=dict.fromkeys(ANOMALIES, 0.03))
        topics = json.loads((run_dir / RUN_JSON).read_text())["topics"]
        with (run_dir / READS).open("a") as reads:  # the final read's ends: partitions read whole
            for topic in topics:
                for partition in range(topic["partitions"]):
                    reads.write(json.dumps(end(10**9, topic["name"], partition)) + "\n")
        for history_file in (run_dir / WRITES, run_dir / READS):
            history_file.write_bytes(history_file.read_bytes().replace(b"\n", line_end))
        code, text = kchaos_check(capfd, run_dir)
        assert code == 1, text
        results[name] = json.loads((run_dir / RESULT).read_text())
        (cache,) = (run_dir / CHECK_CACHE).iterdir()
        records_schemas[name] = (cache / "read_records.schema.json").read_text()
    assert '"time_ns"' in records_schemas["arrow"] and '"time_ns"' not in records_schemas["spark"]
    arrow, spark_parsed = results["arrow"], results["spark"]
    assert sum(kind["count"] for kind in arrow["anomalies"].values()) > 0 and arrow["complete"]
    for key in ("events", "topics", "anomalies", "guarantees", "incomplete_partitions"):
        assert arrow[key] == spark_parsed[key], key


def test_lost_acked_write_violates_the_acks_all_guarantee_with_evidence(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    writes = [*acked(100, "p:1", 0), *acked(200, "p:2", 1)]
    reads = [record(900, "p:1", 0), *all_ends()]
    # What p's client logged while p:2 was outstanding (200-210) is quoted; other times and processes are not.
    client = [
        client_line(199, "p", "before"),
        client_line(205, "q", "another client"),
        client_line(205, "p", "Timed out ProduceRequest in flight"),
        client_line(211, "p", "after"),
    ]
    run_dir = make_run(tmp_path / "run", writes, reads, [FAULT], [SAMPLE], client=client)
    code, text = kchaos_check(capfd, run_dir)
    assert code == 1
    assert "VIOLATED: t-all no-lost-acked-writes" in text
    result = json.loads((run_dir / RESULT).read_text())
    assert result["valid"] is False
    assert result["anomalies"]["lost-write"] == {
        "count": 1,
        "examples_capped": False,
        "examples": [
            {
                "topic": "t-all",
                "partition": 0,
                "acks": "all",
                "value": "p:2",
                "process": "p",
                "invoke_ns": 200,
                "complete_ns": 210,
                "ack_offset": 1,
                "final_value": None,
                "leader": 2,
                "leader_epoch": 3,
                "isr": [2, 1],
                "controller": 1,
                "active_faults": ["kill-leader"],
                "client_log": ["0.000 s REQTMOUT: Timed out ProduceRequest in flight"],
                "truncations": [],
                "leader_epoch_at_end": 3,
            }
        ],
    }
    assert result["events"]["client"] == 4
    lost_guarantee = [
        g for g in result["guarantees"] if g["id"] == "no-lost-acked-writes" and g["topic"] == "t-all"
    ]
    assert lost_guarantee[0]["verdict"] == "violated"
    assert result["availability"]["series"][0]["lost"] == 1
    assert result["availability"]["recovery"][-1] == {
        "fault": "kill-leader",
        "start_ns": 150,
        "acks": "all",
        "first_ok_ns": 210,
        "recovery_ms": 0.0,
        "healed_ns": None,  # in force until the history ends
        "resumed_ns": None,
        "heal_recovery_ms": None,
        "heal_recovery_lower_bound": False,
    }


def test_a_reordered_example_shows_the_offsets_of_the_write_it_overtook(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # p:1's request timed out; p:2, built behind it, went first (1); p:1's retry landed at 2.
    writes = [*acked(90, "q:1", 0), *acked(100, "p:1", 2), *acked(110, "p:2", 1)]
    reads = [record(900, "q:1", 0), record(900, "p:2", 1), record(900, "p:1", 2), *all_ends()]
    client = [client_line(115, "p", "Request timed out: actions Retry,MsgPossiblyPersisted", "REQERR")]
    run_dir = make_run(tmp_path / "run", writes, reads, [FAULT], [SAMPLE], client=client)
    code, text = kchaos_check(capfd, run_dir)
    assert (code, "duplicated 0, phantom 0," in text, "reordered 1," in text) == (
        0,
        True,
        True,
    )  # order not promised here
    [example] = json.loads((run_dir / RESULT).read_text())["anomalies"]["reordered"]["examples"]
    assert {
        k: example[k] for k in ("value", "offsets", "earlier_value", "earlier_offset", "earlier_offsets")
    } == {
        "value": "p:2",
        "offsets": [[0, 1]],
        "earlier_value": "p:1",
        "earlier_offset": 2,
        "earlier_offsets": [[0, 2]],  # read from the shared scan of the examples' reads
    }
    assert example["client_log"] == ["0.000 s REQERR: Request timed out: actions Retry,MsgPossiblyPersisted"]


def test_several_run_directories_are_each_checked_and_exit_with_the_worst(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    clean = clean_run(tmp_path / "clean")
    lost = make_run(tmp_path / "lost", [*acked(100, "p:1", 0)], all_ends(), [FAULT], [SAMPLE])
    unusable = replaced_run(tmp_path / "unusable", run=json.dumps(run_json(format=7)))
    code, text = kchaos_check(capfd, unusable, str(clean), str(lost))
    assert code == 2  # the worst: an unusable directory, after the others were checked
    assert f"error: {unusable / RUN_JSON}: unknown format 7" in text
    valid = [json.loads((run_dir / RESULT).read_text())["valid"] for run_dir in (clean, lost)]
    assert valid == [True, False]
    code, text = kchaos_check(capfd, clean, str(lost))
    assert (code, text.count("result: ")) == (1, 2)
    code, text = kchaos_check(capfd, clean, str(lost), "--json")  # JSON Lines, in their order
    assert (code, [json.loads(line)["valid"] for line in text.splitlines()]) == (1, [True, False])


def test_a_checker_that_raises_costs_only_its_own_kind_and_is_not_a_verdict(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: object, inputs: object) -> None:
        raise RuntimeError(f"{type(self).__name__} bug\nsecond line")

    monkeypatch.setattr(ReorderedWrites, "find", broken)  # counted before its examples
    monkeypatch.setattr(DivergentOffsets, "find", broken)  # counted and sampled at once
    writes = [*acked(100, "p:1", 0), *acked(200, "p:2", 1)]
    run_dir = make_run(tmp_path / "run", writes, [record(900, "p:1", 0), *all_ends()], [FAULT], [SAMPLE])
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2  # could not judge everything: not "Kafka broke a promise"
    assert "could not judge everything; checkers failed: reordered, divergent-offset" in text
    result = json.loads((run_dir / RESULT).read_text())
    assert sorted(result["errors"], key=lambda e: e["kind"]) == [
        {"kind": "divergent-offset", "error": "RuntimeError: DivergentOffsets bug"},
        {"kind": "reordered", "error": "RuntimeError: ReorderedWrites bug"},
    ]
    assert result["anomalies"]["reordered"]["count"] is None
    assert result["acks"]["all"]["divergent"] is None
    assert result["anomalies"]["lost-write"]["count"] == 1  # the other kinds are judged as ever
    verdicts = {g["id"]: g for g in result["guarantees"] if g["topic"] == "t-all"}
    assert verdicts["per-partition-order"]["verdict"] == "not-promised"  # never was
    assert "the reordered checker failed (RuntimeError" in verdicts["per-partition-order"]["reason"]
    assert verdicts["no-lost-acked-writes"]["verdict"] == "violated"
    assert result["valid"] is False


def test_a_flagged_kind_whose_job_fails_costs_only_its_own_kind(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kinds read off the per-value flags are counted in one job; when it fails, each is counted
    alone, so the one that fails (at run time, or as its frame is built) costs its own kind only."""

    def failing_job(self: object, inputs: CheckInputs) -> DataFrame:
        rows = anomalies.phantom_writes_from(inputs.flags)
        return rows.withColumn("topic", F.raise_error(F.lit("phantom job bug")).cast("string"))

    def broken(self: object, inputs: object) -> None:
        raise RuntimeError("UnexpectedValues bug")

    monkeypatch.setattr(PhantomWrites, "find", failing_job)
    monkeypatch.setattr(UnexpectedValues, "find", broken)
    writes = [
        *acked(100, "p:1", 0),
        *acked(200, "p:2", 1),
        write("invoke", 300, "p:3"),
        write("fail", 310, "p:3"),
    ]
    reads = [record(900, "p:1", 0), record(901, "p:3", 1), record(902, "ghost", 2), *all_ends()]
    code, text = kchaos_check(capfd, make_run(tmp_path / "run", writes, reads, [FAULT], [SAMPLE]))
    assert code == 2, text
    result = json.loads((tmp_path / "run" / RESULT).read_text())
    errors = {e["kind"]: e["error"] for e in result["errors"]}
    assert set(errors) == {"phantom-write", "unexpected-value"}
    assert "phantom job bug" in errors["phantom-write"]
    assert errors["unexpected-value"] == "RuntimeError: UnexpectedValues bug"
    assert result["anomalies"]["lost-write"]["count"] == 1
    assert [e["value"] for e in result["anomalies"]["lost-write"]["examples"]] == ["p:2"]


@pytest.mark.parametrize("literal_names", [checker_cache.LITERAL_NAMES, 0], ids=["looked-up", "joined"])
def test_phantom_and_unexpected_examples_name_their_process_error_and_first_read(
    spark: SparkSession,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    literal_names: int,
) -> None:
    # Names that JSON has to escape go through the conversion's name table and back unchanged,
    # whether a check looks them up in a literal map (few names) or joins them (many).
    monkeypatch.setattr(checker_cache, "LITERAL_NAMES", literal_names)
    process, error = 'p "ü"\\1', 'NOT_ENOUGH_REPLICAS "after" ü'
    phantom = f"{process}:7"
    writes = [
        *acked(100, f"{process}:1", 0),
        write("invoke", 200, phantom),
        write("fail", 230, phantom, error=error),
    ]
    reads = [
        record(900, f"{process}:1", 0),
        record(901, phantom, 3),
        record(902, phantom, 2, phase="live"),
        record(903, "ghost", 5, partition=1),
        record(904, "ghost", 6, partition=1),
        *all_ends(),
    ]
    code, _ = kchaos_check(capfd, make_run(tmp_path / "run", writes, reads, [FAULT], [SAMPLE]))
    assert code == 1
    result = json.loads((tmp_path / "run" / RESULT).read_text())
    [phantom_example] = result["anomalies"]["phantom-write"]["examples"]
    assert {k: phantom_example[k] for k in ("partition", "offset", "value", "process", "error")} == {
        "partition": 0,
        "offset": 2,
        "value": phantom,
        "process": process,
        "error": error,
    }
    [ghost] = result["anomalies"]["unexpected-value"]["examples"]
    assert ghost == {"topic": "t-all", "partition": 1, "offset": 5, "acks": "all", "value": "ghost"}


def test_incomplete_final_read_is_reported_and_not_valid(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    writes = [*acked(100, "p:1", 0, partition=1), *acked(200, "p:2", 0, partition=0)]
    why = "its watermarks could not be read: Broker: Not leader for partition"
    final_read = {"complete": 0, "incomplete": [{"topic": "t-all", "partition": 1, "why": why}]}
    run = {**run_json(), "final_read": final_read}
    reads = [record(900, "p:1", 0, partition=1), record(900, "p:2", 0, partition=0)]
    run_dir = make_run(tmp_path / "run", writes, reads, run=run)
    code, _ = kchaos_check(capfd, run_dir)
    result = json.loads((run_dir / RESULT).read_text())
    # run.json says why of the partitions it knows of (a reader from before `why` says nothing)
    assert (code, result["complete"], result["incomplete_partitions"]) == (
        1,
        False,
        [{"topic": "t-all", "partition": 0, "why": None}, {"topic": "t-all", "partition": 1, "why": why}],
    )
    loss = next(
        g for g in result["guarantees"] if g["id"] == "no-lost-acked-writes" and g["topic"] == "t-all"
    )
    assert loss["verdict"] == "unknown"


def test_a_partition_that_takes_no_write_after_a_heal_makes_the_recovery_a_lower_bound(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    ms = 1_000_000
    writes = [
        *acked(100 * ms, "p:1", 0),
        *acked(110 * ms, "p:2", 0, partition=1),
        *acked(300 * ms, "p:3", 1),  # t-all/0 takes a write 50 ms after the heal at 250 ms
        write("invoke", 400 * ms, "p:4", partition=1),  # t-all/1 takes none before the writes end
        write("fail", 410 * ms, "p:4", partition=1, error="_UNKNOWN_TOPIC"),
    ]
    reads = [record(900 * ms, "p:1", 0), record(900 * ms, "p:2", 0, partition=1), record(900 * ms, "p:3", 1)]
    watermarks = {("t-all", 0): 2, ("t-all", 1): 1}
    ends = [end(10_000 * ms, t["name"], p, watermarks.get((t["name"], p), 0)) for t in TOPICS for p in (0, 1)]
    healed = {**FAULT, "time_ns": 250 * ms, "phase": "stop"}
    run_dir = make_run(tmp_path / "run", writes, [*reads, *ends], [{**FAULT, "time_ns": 150 * ms}, healed])
    code, text = kchaos_check(capfd, run_dir)
    assert code == 0, text
    result = json.loads((run_dir / RESULT).read_text())
    (recovery,) = [r for r in result["availability"]["recovery"] if r["acks"] == "all"]
    assert recovery == {
        "fault": "kill-leader",
        "start_ns": 150 * ms,
        "acks": "all",
        "first_ok_ns": 300 * ms + 10,  # p:3's ok
        "recovery_ms": 150.0,
        "healed_ns": 250 * ms,
        "resumed_ns": None,
        "heal_recovery_ms": 150.0,  # to p:4's invoke at 400 ms, at least
        "heal_recovery_lower_bound": True,
    }
    assert {mode: result["acks"][mode]["heal_recovery_ms"] for mode in ("all", "1", "0")} == {
        "all": 150.0,
        "1": None,  # no write of acks=1 at all: nothing to judge
        "0": None,
    }

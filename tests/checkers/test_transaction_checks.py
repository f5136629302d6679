"""Transactions: each one's outcome from its steps, and the kinds judged from them (issue 59), on
tiny handwritten histories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from checker_frames import assert_frame
from checker_rundirs import kchaos_check, make_run, record, run_json, write
from pyspark.sql import SparkSession

from checkers.frames import TXN_SCHEMA
from checkers.transactions import transaction_outcomes, with_transaction_outcomes
from contract.events import txn_step

TX = "kchaos-tx-0"


def step(kind: str, t: int, txn: int | None, phase: str | None = None, **fields: Any) -> dict[str, Any]:
    process = fields.pop("process", "tx-0")
    return txn_step(kind, t, process, TX, txn, phase=phase, **fields)


def init(t: int, process: str = "tx-0") -> list[dict[str, Any]]:
    return [
        step("init", t, None, "invoke", process=process),
        step("init", t + 1, None, "ok", process=process),
    ]


def ended(kind: str, t: int, txn: int, *phases: str, **error: Any) -> list[dict[str, Any]]:
    """`kind` (commit or abort) of `txn` invoked and completed with each of `phases` in turn."""
    steps: list[dict[str, Any]] = []
    for i, phase in enumerate(phases):
        steps.append(step(kind, t + 10 * i, txn, "invoke"))
        failed = phase in ("fail", "info")
        steps.append(step(kind, t + 10 * i + 5, txn, phase, **(error if failed else {})))
    return steps


TIMED_OUT = {"error": "_TIMED_OUT", "error_class": "retriable"}
FENCED = {"error": "_FENCED", "error_class": "fatal"}

# Committed; aborted; committed on a retry after a timeout; a commit that timed out and then the
# client was given up (unknown: the new client's init may have completed it); a fenced commit
# (definitely not done: the new client's init aborts it); an empty committed transaction; a
# transaction open when the process died (unknown); and one whose process started over without
# committing it (aborted by the new init: an abort after a timeout).
STEPS = [
    *init(0),
    step("begin", 10, 0),
    *ended("commit", 20, 0, "ok"),
    step("begin", 30, 1),
    *ended("abort", 40, 1, "ok"),
    step("begin", 50, 2),
    *ended("commit", 60, 2, "info", "ok", **TIMED_OUT),
    step("begin", 100, 3),
    *ended("commit", 110, 3, "info", **TIMED_OUT),
    step("begin", 130, 4, process="tx-1"),
    *init(140),
    step("begin", 150, 5),
    *ended("commit", 160, 5, "fail", **FENCED),
    *init(170),
    step("begin", 180, 6),
    *ended("commit", 190, 6, "ok"),
    step("begin", 200, 7),
    *init(300, process="tx-1"),
]


def test_a_transaction_s_outcome_is_its_commit_its_abort_or_what_a_new_init_made_of_it(
    spark: SparkSession,
) -> None:
    steps = spark.createDataFrame(
        [tuple(s.get(f.name) for f in TXN_SCHEMA.fields) for s in STEPS], TXN_SCHEMA
    )
    assert_frame(
        transaction_outcomes(steps),
        [
            "process",
            "transactional_id",
            "txn",
            "outcome",
            "begin_ns",
            "commit_ns",
            "end_ns",
            "error",
            "error_class",
        ],
        [
            ("tx-0", TX, 0, "committed", 10, 20, 25, None, None),
            ("tx-0", TX, 1, "aborted", 30, None, 45, None, None),
            ("tx-0", TX, 2, "committed", 50, 60, 75, "_TIMED_OUT", "retriable"),
            ("tx-0", TX, 3, "unknown", 100, 110, 115, "_TIMED_OUT", "retriable"),
            ("tx-1", TX, 4, "aborted", 130, None, 130, None, None),
            ("tx-0", TX, 5, "aborted", 150, 160, 165, "_FENCED", "fatal"),
            ("tx-0", TX, 6, "committed", 180, 190, 195, None, None),
            ("tx-0", TX, 7, "unknown", 200, None, 200, None, None),
        ],
    )


TXN_TOPICS = [
    {
        "name": f"x-{n}",
        "partitions": 1,
        "replication_factor": 3,
        "acks": "all",
        "producer": {"enable.idempotence": True, "transactional.id": "kchaos-tx"},
        "transactions": {"records": [1, 3], "abort_rate": 0.1},
    }
    for n in range(2)
]


def txn_write(t: int, sequence: int, txn: int, topic: str, offset: int | None) -> list[dict[str, Any]]:
    value = f"tx-0:{sequence}"
    return [
        write("invoke", t, value, topic, txn=txn),
        write("ok", t + 1, value, topic, offset=offset, txn=txn),
    ]


def end(topic: str, high: int) -> dict[str, Any]:
    return {
        "type": "end",
        "time_ns": 9000,
        "process": "c-final",
        "phase": "final",
        "topic": topic,
        "partition": 0,
        "log_start": 0,
        "high_watermark": high,
        "isolation": "read_committed",
    }


def transactional_run(root: Path) -> Path:
    """txn 0 committed and read whole; txn 1 aborted and read (an aborted read); txn 2 committed
    with one of its two records missing (a lost committed record, a torn transaction); txn 3's
    outcome unknown, its record not read (nothing to judge); txn 6 committed and empty."""
    writes = [
        *txn_write(11, 0, 0, "x-0", 0),
        *txn_write(12, 1, 0, "x-1", 0),
        *txn_write(31, 2, 1, "x-0", 2),
        *txn_write(51, 3, 2, "x-0", 4),
        *txn_write(52, 4, 2, "x-1", 2),
        *txn_write(101, 5, 3, "x-0", 6),
    ]
    reads = [
        record(5000, "tx-0:0", 0, "x-0"),
        record(5000, "tx-0:1", 0, "x-1"),
        record(5000, "tx-0:2", 2, "x-0"),
        record(5000, "tx-0:3", 4, "x-0"),
        end("x-0", 8),
        end("x-1", 4),
    ]
    run = run_json(kafka={"version": "3.9.2"}, topics=TXN_TOPICS)
    steps = [s for s in STEPS if s["process"] == "tx-0"]
    return make_run(root, writes, reads, run=run, transactions=steps)


def test_a_check_counts_aborted_reads_lost_committed_records_and_torn_transactions(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = transactional_run(tmp_path / "run")
    code, out = kchaos_check(capfd, run_dir)
    assert code == 1, out
    result = json.loads((run_dir / "check/result.json").read_text())
    counts = {
        t["topic"]: {
            k: t[k]
            for k in (
                "acked",
                "failed",
                "indeterminate",
                "lost_committed",
                "aborted_read",
                "torn_transactions",
                "lost",
                "phantom",
            )
        }
        for t in result["topics"]
    }
    assert counts == {
        "x-0": {
            "acked": 2,
            "failed": 1,
            "indeterminate": 1,
            "lost_committed": 0,
            "aborted_read": 1,
            "torn_transactions": 0,
            "lost": 0,
            "phantom": 0,
        },
        "x-1": {
            "acked": 2,
            "failed": 0,
            "indeterminate": 0,
            "lost_committed": 1,
            "aborted_read": 0,
            "torn_transactions": 1,
            "lost": 0,
            "phantom": 0,
        },
    }
    verdicts = {(g["topic"], g["id"]): g["verdict"] for g in result["guarantees"]}
    assert verdicts[("x-0", "no-aborted-reads")] == "violated"
    assert verdicts[("x-1", "committed-transactions-durable")] == "violated"
    assert verdicts[("x-1", "atomic-transactions")] == "violated"
    assert verdicts[("x-0", "committed-transactions-durable")] == "held"
    assert ("x-0", "no-lost-acked-writes") not in verdicts  # a write's ok is not its commit here
    assert result["transactions"] == [
        {
            "transactional_id": TX,
            "begun": 7,
            "committed": 3,
            "aborted": 2,
            "unknown": 2,
            "fatal_errors": 1,
            "abortable_errors": 0,
            "retriable_errors": 1,
        }
    ]
    examples = result["anomalies"]["torn-transaction"]["examples"]
    assert [(e["topic"], e["value"], e["txn"], e["found"], e["missing"]) for e in examples] == [
        ("x-1", "tx-0:4", 2, 1, 1)
    ]
    assert [e["value"] for e in result["anomalies"]["aborted-read"]["examples"]] == ["tx-0:2"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            {
                "type": "comit",
                "time_ns": 1,
                "process": "tx-0",
                "transactional_id": TX,
                "txn": 0,
                "phase": "ok",
            },
            "field 'type'",
        ),
        (
            {
                "type": "commit",
                "time_ns": 1,
                "process": "tx-0",
                "transactional_id": TX,
                "txn": 9,
                "phase": "ok",
            },
            "commit of transaction 9 of tx-0 before its begin",
        ),
        ({"type": "begin", "time_ns": 1, "process": "tx-0", "transactional_id": TX}, "field 'txn'"),
        (
            {
                "type": "init",
                "time_ns": 1,
                "process": "tx-0",
                "transactional_id": TX,
                "phase": "info",
                "error": "X",
                "error_class": "sad",
            },
            "field 'error_class'",
        ),
        (
            {
                "type": "commit",
                "time_ns": 1,
                "process": "tx-0",
                "transactional_id": TX,
                "txn": 0,
                "phase": "ok",
            },
            "commit of transaction 0 of tx-0 ends (ok) without an invoke of its own",
        ),
        (
            {
                "type": "abort",
                "time_ns": 1,
                "process": "tx-0",
                "transactional_id": TX,
                "txn": 0,
                "phase": "invoke",
                "reason": "bored",
            },
            "field 'reason': expected drawn or drawn-early or failure on an abort step, got 'bored'",
        ),
        (
            {
                "type": "commit",
                "time_ns": 1,
                "process": "tx-0",
                "transactional_id": TX,
                "txn": 0,
                "phase": "invoke",
                "reason": "drawn",
            },
            "field 'reason': expected none but on an abort step, got 'drawn'",
        ),
    ],
)
def test_a_bad_transactions_line_is_named_with_its_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], line: dict[str, Any], expected: str
) -> None:
    run_dir = transactional_run(tmp_path / "run")
    path = run_dir / "history/transactions.jsonl"
    with path.open("a") as f:
        f.write(json.dumps(line) + "\n")
    number = len(path.read_text().splitlines())
    code, out = kchaos_check(capfd, run_dir)
    assert code == 2
    assert f"transactions.jsonl:{number}" in out and expected in out, out


def test_a_pipeline_that_skips_one_input_and_writes_another_twice_breaks_exactly_once(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # tx-0 commits three input records; the pipeline commits outputs of the first two with offset
    # 2, then a second output of the second with offset 3: the third is skipped, the second twice.
    output = TXN_TOPICS[0] | {"name": "out", "pipeline": {"group": "pipe", "inputs": ["x-0"]}}
    run = run_json(kafka={"version": "3.9.2"}, topics=[TXN_TOPICS[0], output])

    def piped(t: int, sequence: int, txn: int, source: str, offset: int) -> list[dict[str, Any]]:
        value = f"pipe-0:{sequence}/{source}"
        return [
            write("invoke", t, value, "out", txn=txn),
            write("ok", t + 1, value, "out", offset=offset, txn=txn),
        ]

    writes = [
        *txn_write(11, 0, 0, "x-0", 0),
        *txn_write(12, 1, 0, "x-0", 1),
        *txn_write(13, 2, 0, "x-0", 2),
        *piped(100, 0, 0, "tx-0:0", 0),
        *piped(101, 1, 0, "tx-0:1", 1),
        *piped(200, 2, 1, "tx-0:1", 3),
    ]
    reads = [
        *[record(5000, f"tx-0:{n}", n, "x-0") for n in range(3)],
        record(5000, "pipe-0:0/tx-0:0", 0, "out"),
        record(5000, "pipe-0:1/tx-0:1", 1, "out"),
        record(5000, "pipe-0:2/tx-0:1", 3, "out"),
        end("x-0", 4),
        end("out", 5),
    ]

    def pipe(kind: str, t: int, txn: int | None, phase: str | None = None, **fields: Any) -> dict[str, Any]:
        return txn_step(kind, t, "pipe-0", "kchaos-pipe-0", txn, phase=phase, **fields)

    def stored(t: int, txn: int, offset: int) -> list[dict[str, Any]]:
        at = {"group": "pipe", "offsets": [{"topic": "x-0", "partition": 0, "offset": offset}]}
        return [pipe("offsets", t, txn, "invoke", **at), pipe("offsets", t + 1, txn, "ok", **at)]

    steps = [
        *init(0),
        step("begin", 10, 0),
        *ended("commit", 20, 0, "ok"),
        pipe("init", 50, None, "invoke"),
        pipe("init", 51, None, "ok"),
        pipe("begin", 99, 0),
        *stored(150, 0, 2),
        pipe("commit", 160, 0, "invoke"),
        pipe("commit", 161, 0, "ok"),
        pipe("begin", 199, 1),
        *stored(250, 1, 3),
        pipe("commit", 260, 1, "invoke"),
        pipe("commit", 261, 1, "ok"),
    ]
    run_dir = make_run(tmp_path / "run", writes, reads, run=run, transactions=steps)
    code, out = kchaos_check(capfd, run_dir)
    assert code == 1, out
    result = json.loads((run_dir / "check/result.json").read_text())
    out_row = next(t for t in result["topics"] if t["topic"] == "out")
    assert (out_row["pipeline_skipped"], out_row["pipeline_duplicated"]) == (1, 1)
    skip = result["anomalies"]["pipeline-skip"]["examples"]
    assert [(e["value"], e["input_topic"], e["input_partition"], e["input_offset"]) for e in skip] == [
        ("tx-0:2", "x-0", 0, 2)
    ]
    twice = result["anomalies"]["pipeline-duplicate"]["examples"]
    assert [(e["value"], e["outputs"], e["input_offset"]) for e in twice] == [("tx-0:1", 2, 1)]
    # Transaction 1 stored offset 3 with outputs of input offset 1 only: one past would be 2.
    wrong = result["anomalies"]["pipeline-offsets"]["examples"]
    assert [(e["txn"], e["value"], e["stored"], e["expected"]) for e in wrong] == [(1, "tx-0:1", 3, 2)]
    assert out_row["pipeline_offset_mismatches"] == 1
    verdicts = {(g["topic"], g["id"]): g["verdict"] for g in result["guarantees"]}
    assert verdicts[("out", "exactly-once-pipeline")] == "violated"
    assert ("x-0", "exactly-once-pipeline") not in verdicts


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_a_read_committed_group_polling_an_aborted_or_not_yet_committed_record_is_an_uncommitted_read(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], isolation: str
) -> None:
    # Group g polls txn 0's first record before its commit was invoked (at 20), its second after,
    # and txn 1's record (aborted): two uncommitted reads, promised away only by read_committed.
    group = {
        "name": "g",
        "topics": ["x-0"],
        "commit": "after-process",
        "members": 1,
        "config": {"isolation.level": isolation},
    }
    run = run_json(kafka={"version": "3.9.2"}, topics=TXN_TOPICS[:1], groups=[group])
    writes = [*txn_write(11, 0, 0, "x-0", 0), *txn_write(12, 1, 0, "x-0", 1), *txn_write(31, 2, 1, "x-0", 2)]
    # txn 1's second write timed out (info), yet it is in the log: polled, not counted appended.
    writes += [
        write("invoke", 32, "tx-0:3", "x-0", txn=1),
        write("info", 38, "tx-0:3", "x-0", txn=1, **TIMED_OUT),
    ]
    reads = [record(5000, "tx-0:0", 0, "x-0"), record(5000, "tx-0:1", 1, "x-0"), end("x-0", 4)]

    def polled(t: int, offset: int) -> dict[str, Any]:
        fields = {
            "generation": 1,
            "topic": "x-0",
            "partition": 0,
            "offset": offset,
            "value": f"tx-0:{offset}",
        }
        return {"type": "poll", "time_ns": t, "process": "g-0", "group": "g", **fields}

    consumes = [
        {"type": "start", "time_ns": 1, "process": "g-0", "group": "g"},
        polled(15, 0),
        polled(30, 1),
        polled(50, 2),
        polled(51, 3),
    ]
    steps = [*init(0), step("begin", 10, 0), *ended("commit", 20, 0, "ok"), step("begin", 30, 1)]
    steps += ended("abort", 40, 1, "ok")
    run_dir = make_run(tmp_path / "run", writes, reads, run=run, consumes=consumes, transactions=steps)
    code, out = kchaos_check(capfd, run_dir)
    result = json.loads((run_dir / "check/result.json").read_text())
    entry = result["groups"]["g"]
    assert entry["uncommitted_read"] == 3
    examples = entry["anomalies"]["uncommitted-read"]["examples"]
    assert [(e["value"], e["outcome"], e["commit_ns"]) for e in examples] == [
        ("tx-0:0", "committed", 20),
        ("tx-0:2", "aborted", None),
        ("tx-0:3", "aborted", None),
    ]
    # The control's count is of the appended records it was handed: never more than appended.
    assert (entry["aborted_polled"], entry["aborted_appended"]) == (1, 1)
    verdict = next(g for g in entry["guarantees"] if g["id"] == "no-uncommitted-reads")
    assert (verdict["promised"], verdict["verdict"]) == (
        (True, "violated") if isolation == "read_committed" else (False, "not-promised")
    )
    assert code == (1 if isolation == "read_committed" else 0), out


def test_a_write_takes_its_transaction_s_outcome_unless_it_failed_itself(spark: SparkSession) -> None:
    values = spark.createDataFrame(
        [
            ("tx-0:0", "tx-0", 0, "ok"),  # committed: to be read
            ("tx-0:1", "tx-0", 0, "fail"),  # refused by the client: never in the log, committed or not
            ("tx-0:2", "tx-0", 1, "ok"),  # aborted: never to be read
            ("tx-0:3", "tx-0", 2, "info"),  # unknown
            ("tx-0:4", "tx-0", 9, "ok"),  # a transaction with no steps: unknown
            ("p:0", "p", None, "ok"),  # no transaction: its own
        ],
        "value string, process string, txn long, outcome string",
    )
    outcomes = spark.createDataFrame(
        [("tx-0", 0, "committed"), ("tx-0", 1, "aborted"), ("tx-0", 2, "unknown")],
        "process string, txn long, outcome string",
    )
    assert_frame(
        with_transaction_outcomes(values, outcomes),
        ["value", "process", "txn", "outcome"],
        [
            ("tx-0:0", "tx-0", 0, "ok"),
            ("tx-0:1", "tx-0", 0, "fail"),
            ("tx-0:2", "tx-0", 1, "fail"),
            ("tx-0:3", "tx-0", 2, "info"),
            ("tx-0:4", "tx-0", 9, "info"),
            ("p:0", "p", None, "ok"),
        ],
    )

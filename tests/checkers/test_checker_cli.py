"""`kchaos check` end to end on handwritten run directories: exit codes, result.json, bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import acked, all_ends, client_line, end, make_run, record, run_json, write
from pyspark.sql import SparkSession

from checkers.checks import DivergentOffsets, ReorderedWrites
from checkers.io import cache as checker_cache
from harness.app.cli import main
from harness.history import CHECK_CACHE, CLIENT, READS, RESULT, RUN_JSON, WRITES
from harness.waiting import wait_until

pytestmark = pytest.mark.spark

STACK_TRACE_MARKERS = ("Traceback", "Exception in thread", "at org.apache", "py4j")

FAULT = {"time_ns": 150, "fault": "kill-leader", "phase": "start", "targets": ["kafka-2"], "detail": {}}
SAMPLE = {
    "time_ns": 50,
    "controller": 1,
    "controller_epoch": 1,
    "live_brokers": [1, 2, 3],
    "partitions": [{"topic": "t-all", "partition": 0, "leader": 2, "leader_epoch": 3, "isr": [2, 1]}],
}


def squeeze(text: str) -> str:
    """Text without whitespace: messages are compared whatever the spacing around them."""
    return "".join(text.split())


def clean_run(root: Path) -> Path:
    writes = [*acked(100, "p:1", 0), *acked(200, "p:2", 1), *acked(300, "z:1", None, topic="t-0")]
    reads = [record(900, "p:1", 0), record(901, "p:2", 1), record(902, "z:1", 0, topic="t-0"), *all_ends()]
    return make_run(root, writes, reads, [FAULT], [SAMPLE])


def kchaos_check(capfd: pytest.CaptureFixture[str], run_dir: Path, *flags: str) -> tuple[int, str]:
    code = main(["check", str(run_dir), *flags])
    out, err = capfd.readouterr()
    text = out + err
    for marker in STACK_TRACE_MARKERS:
        assert marker not in text
    return code, text


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
        "reordered": 0,
        "read_lost": 0,
        "replica_divergent": 0,
    }
    assert {g["verdict"] for g in result["guarantees"] if g["promised"]} == {"held"}
    fingerprint = (run_dir / "check/parquet/fingerprint.json").stat().st_mtime_ns
    code, text = kchaos_check(capfd, run_dir, "--json")
    assert code == 0
    assert json.loads(text)["valid"] is True
    assert (run_dir / "check/parquet/fingerprint.json").stat().st_mtime_ns == fingerprint


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
    assert (code, "duplicated 0, phantom 0, reordered 1" in text) == (0, True)  # order not promised here
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
    unusable = _bad_run(tmp_path / "unusable", run=json.dumps(run_json(format=7)))
    code, text = kchaos_check(capfd, unusable, str(clean), str(lost))
    assert code == 2  # the worst: an unusable directory, after the others were checked
    assert f"error: {unusable / RUN_JSON}: unknown format 7" in text
    valid = [json.loads((run_dir / RESULT).read_text())["valid"] for run_dir in (clean, lost)]
    assert valid == [True, False]
    code, text = kchaos_check(capfd, clean, str(lost))
    assert (code, text.count("result: ")) == (1, 2)


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
        record(904, "ghost", 4, partition=2),
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
    writes = [*acked(100, "p:1", 0, partition=1)]
    run_dir = make_run(tmp_path / "run", writes, [record(900, "p:1", 0, partition=1)])
    code, _ = kchaos_check(capfd, run_dir)
    result = json.loads((run_dir / RESULT).read_text())
    assert (code, result["complete"], result["incomplete_partitions"]) == (
        1,
        False,
        [{"topic": "t-all", "partition": 1}],
    )
    loss = next(
        g for g in result["guarantees"] if g["id"] == "no-lost-acked-writes" and g["topic"] == "t-all"
    )
    assert loss["verdict"] == "unknown"


def _bad_run(root: Path, **files: str) -> Path:
    """A clean run with some files replaced by raw text (keys: writes, reads, run, client)."""
    clean_run(root)
    names = {"writes": WRITES, "reads": READS, "run": RUN_JSON, "client": CLIENT}
    for key, text in files.items():
        (root / names[key]).write_text(text)
    return root


def _lines(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


BAD_INPUTS = {
    "malformed-json": (
        {"writes": _lines(*acked(100, "p:1", 0)) + '{"type": "invoke", "time_ns": 5\n'},
        f"{WRITES}:3: malformed JSON",
    ),
    "wrong-field-type": (
        {"reads": _lines(*all_ends()) + _lines(record(900, "p:1", 0) | {"offset": "seven"})},
        f"{READS}:7: field 'offset' must be an integer",
    ),
    "wrong-watermark-type": (  # not used by any check, and still validated
        {"reads": _lines(*all_ends()) + _lines(end(10_000) | {"high_watermark": "many"})},
        f"{READS}:7: field 'high_watermark' must be an integer",
    ),
    "completion-without-invoke": (
        {"writes": _lines(*acked(100, "p:1", 0), write("ok", 300, "p:9", offset=4))},
        f"{WRITES}:3: completion with no invoke: value 'p:9'",
    ),
    "value-written-twice": (
        {"writes": _lines(*acked(100, "p:1", 0), write("invoke", 300, "p:1"))},
        f"{WRITES}:3: value written twice",
    ),
    "unknown-topic": (
        {"reads": _lines(*all_ends(), record(900, "p:1", 0, topic="nope"))},
        f"{READS}:7: unknown topic 'nope'",
    ),
    "client-line-without-message": (
        {"client": _lines(client_line(5, "p", "fine"), {"time_ns": 6, "process": "p"})},
        f"{CLIENT}:2: field 'message': expected a string of at most 10000 characters, got None",
    ),
    "unknown-format": (
        {"run": json.dumps(run_json(format=7))},
        "unknown format 7; this kafka-chaos reads format 1",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_one_clear_error_with_exit_2(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], case: str
) -> None:
    files, message = BAD_INPUTS[case]
    run_dir = _bad_run(tmp_path / "run", **files)
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2
    assert squeeze(message) in squeeze(text)
    assert text.strip().startswith("error:")


def test_error_line_is_printed_whole_and_literally(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # `:100:` is also rich's code for an emoji: it may not change what is printed, and the line is
    # not wrapped at the terminal's width. A space in the run directory's path is just a space.
    writes = _lines(
        *[event for n in range(49) for event in acked(100 + n, f"p:{n}", n)], write("invoke", 900, "q:1")
    )
    run_dir = _bad_run(tmp_path / "nightly runs" / "run", writes=writes + '{"type": "invoke", "time_ns": 5\n')
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2
    assert f"error: {run_dir / WRITES}:100: malformed JSON" in text.splitlines()[0], text


def test_run_directory_spark_would_read_as_a_glob_is_a_clear_error(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # `[nightly]` also looks like a style tag to rich: it is printed as it is.
    run_dir = clean_run(tmp_path / "[nightly]" / "run")
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2
    message = (
        f"error: {run_dir}: Spark reads [ ] in a path as a glob pattern: move or rename the run directory"
    )
    assert text.strip() == message


def test_missing_history_file_is_named(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    (run_dir / READS).unlink()
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2
    assert squeeze(f"{READS}: missing history file") in squeeze(text)


def test_torn_last_line_of_a_killed_run_is_ignored(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    with (run_dir / WRITES).open("a") as handle:
        handle.write('{"type": "invoke", "time_ns": 99')
    code, text = kchaos_check(capfd, run_dir)
    assert code == 0, text
    assert json.loads((run_dir / RESULT).read_text())["events"]["writes"] == 6


def test_ctrl_c_while_converting_exits_130_quietly(tmp_path: Path) -> None:
    writes = [event for i in range(150_000) for event in acked(i, f"p:{i}", i)]
    run_dir = make_run(tmp_path / "run", writes, [record(10**9 + i, f"p:{i}", i) for i in range(150_000)])
    # Its own process with Ctrl-C's default action, even if this one was started with it ignored.
    check = subprocess.Popen(
        [sys.executable, "-m", "harness.app.cli", "check", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        wait_until(
            lambda: (
                (run_dir / CHECK_CACHE).is_dir(),
                f"no {CHECK_CACHE} yet (check running: {check.poll() is None})",
            ),
            what="the check to start converting the history",
            timeout_s=120,
            interval_s=0.05,
        )
        check.send_signal(signal.SIGINT)
        output, _ = check.communicate(timeout=30)
    finally:
        check.kill()
    assert check.returncode == 130, output
    assert "interrupted" in output
    assert not any(marker in output for marker in STACK_TRACE_MARKERS), output
    assert not (run_dir / RESULT).exists()

"""`kchaos check` on bad run directories: one clear error naming the file and line, exit code 2, no
stack trace; a torn tail of a killed run is named, and judged up to it with --prefix; Ctrl-C while
converting exits 130."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import (
    STACK_TRACE_MARKERS,
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
    squeeze,
    write,
)
from pyspark.sql import SparkSession

from contract.history import CHECK_CACHE, CLIENT, READS, REPORT, RESULT, WRITES
from harness.waiting import wait_until
from kchaos.cli import main

pytestmark = pytest.mark.spark


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
    "unterminated-string": (
        {"writes": _lines(*acked(100, "p:1", 0)) + '{"type": "invoke", "value": "p:2\n'},
        f"{WRITES}:3: malformed JSON (Unterminated string starting at column 29)",
    ),
    "null-value": (
        {"writes": _lines(*acked(100, "p:1", 0), write("invoke", 300, "p:2") | {"value": None})},
        f"{WRITES}:3: field 'value' must not be null",
    ),
    "long-value-in-a-message": (  # quoted, cut short: not a 20 MiB line
        {"writes": _lines(*acked(100, "p:1", 0), write("ok", 300, "p" * 10_000, offset=4))},
        f"{WRITES}:3: completion with no invoke: value '{'p' * 58}…",
    ),
    "key-given-twice": (  # Spark's parser alone would keep the second offset
        {"writes": _lines(*acked(100, "p:1", 0)).replace('"offset": 0', '"offset": 0, "offset": 7')},
        f"{WRITES}:2: key 'offset' given twice in one object",
    ),
    "two-objects-on-one-line": (  # Spark's parser alone would keep the first
        {"writes": _lines(*acked(100, "p:1", 0), write("invoke", 200, "p:2")).replace("}\n{", "}{", 1)},
        f"{WRITES}:1: more than one JSON object on one line",
    ),
    "two-objects-on-a-crlf-line": (  # not pyarrow's to parse: Spark's parser alone would keep the first
        {"reads": _lines(*all_ends(), record(900, "p:1", 0)).replace("}\n{", "} {", 1).replace("\n", "\r\n")},
        f"{READS}:1: more than one JSON object on one line",
    ),
    "an-array-for-a-line": (  # Spark's parser alone would make a row of each element
        {"writes": "[" + _lines(*acked(100, "p:1", 0)).replace("}\n{", "}, {").strip() + "]\n"},
        f"{WRITES}:1: expected a JSON object, got an array",
    ),
    "a-bad-line-before-a-misread-one": (  # the first of the two is named, whoever finds it
        {"writes": _lines(*acked(100, "p:1", 0)) + '{"type": "invoke", "value": "p:2\n' + "[{}]\n"},
        f"{WRITES}:3: malformed JSON (Unterminated string starting at column 29)",
    ),
    "a-misread-line-before-a-bad-one": (
        {"writes": _lines(*acked(100, "p:1", 0)) + "[{}]\n" + '{"type": "invoke", "value": "p:2\n'},
        f"{WRITES}:3: expected a JSON object, got an array",
    ),
    "an-unknown-topic-before-a-bad-line": (  # the first line wrong is named, whichever way
        {"reads": _lines(*all_ends(), record(900, "p:1", 0, topic="nope")) + '{"type": "record"\n'},
        f"{READS}:7: unknown topic 'nope'",
    ),
    "a-partition-beyond-before-a-misread-line": (
        {"writes": _lines(*acked(100, "p:1", 0), *acked(200, "p:2", 0, partition=2)) + "[{}]\n"},
        f"{WRITES}:3: partition 2 of 't-all'",
    ),
    "a-broken-write-rule-before-a-bad-line": (
        {"writes": _lines(*acked(100, "p:1", 0), write("ok", 300, "p:9", offset=4)) + '{"type": 5}\n'},
        f"{WRITES}:3: completion with no invoke: value 'p:9'",
    ),
    "the-first-of-two-unknown-topics": (  # not the first by name
        {"reads": _lines(*all_ends(), record(900, "p:1", 0, topic="zz"), record(901, "p:2", 0, topic="aa"))},
        f"{READS}:7: unknown topic 'zz'",
    ),
    "the-first-of-two-partitions-beyond": (
        {"writes": _lines(*acked(100, "p:1", 0, partition=3), *acked(200, "p:2", 0, partition=2))},
        f"{WRITES}:1: partition 3 of 't-all'",
    ),
    "the-first-of-two-broken-write-rules": (
        {
            "writes": _lines(
                *acked(100, "p:1", 0),
                write("ok", 300, "b:9", offset=4),
                *[write("ok", 310 + n, f"q:{n}", offset=5 + n) for n in range(20)],
            )
            + '{"type": 5}\n'
        },
        f"{WRITES}:3: completion with no invoke: value 'b:9'",
    ),
    "number-for-a-string": (  # Spark's parser alone would read the value "2"
        {
            "writes": _lines(*acked(100, "p:1", 0), *acked(200, "p:2", 1)).replace(
                '"value": "p:2"', '"value": 2'
            )
        },
        f"{WRITES}:3: field 'value' must be a string, got 2",
    ),
    "an-object-for-a-value": (  # a type in an input file is never a kafka-chaos bug (exit 3)
        {
            "writes": _lines(*acked(100, "p:1", 0), *acked(200, "p:2", 1)).replace(
                '"value": "p:2"', '"value": {"p": 2}', 1
            )
        },
        f"{WRITES}:3: field 'value' must be a string, got {{\"p\": 2}}",
    ),
    "single-quoted-strings": (  # not JSON, though Spark's parser takes it by default
        {"writes": _lines(*acked(100, "p:1", 0)).replace('"value": "p:1"', "'value': 'p:1'", 1)},
        f"{WRITES}:1: malformed JSON (Expecting property name enclosed in double quotes",
    ),
    "lone-surrogate": (  # Spark's parser alone would read 'p:?', as for any other lone surrogate
        {"writes": _lines(*acked(100, "p:1", 0), *acked(200, "p:\ud800", 1))},
        f"{WRITES}:3: field 'value' holds an escaped lone surrogate",
    ),
    "partition-beyond-the-topic": (
        {"writes": _lines(*acked(100, "p:1", 0), *acked(200, "p:2", 0, partition=2))},
        f"{WRITES}:3: partition 2 of 't-all': run.json declares 2 (0 to 1)",
    ),
    "negative-offset": (
        {"writes": _lines(*acked(100, "p:1", -3))},
        f"{WRITES}:2: field 'offset' must be 0 or more, got -3",
    ),
    "negative-watermark": (
        {"reads": _lines(end(10_000) | {"high_watermark": -100}, *all_ends())},
        f"{READS}:1: field 'high_watermark' must be 0 or more, got -100",
    ),
    "client-line-without-message": (
        {"client": _lines(client_line(5, "p", "fine"), {"time_ns": 6, "process": "p"})},
        f"{CLIENT}:2: field 'message': expected a string of at most 10000 characters, got None",
    ),
    "shorter-than-synced": (  # the harness had synced more of it to disk than is there
        {"run": json.dumps(run_json(synced={WRITES: 1_000_000}))},
        f"{WRITES}: 632 bytes, but run.json says the harness had synced 1,000,000 to disk",
    ),
    "synced-not-a-count": (
        {"run": json.dumps(run_json(synced={WRITES: "all"}))},
        f"field 'synced.{WRITES}': expected an integer",
    ),
    "a-byte-order-mark": (
        {"reads": "\ufeff" + _lines(*all_ends())},
        f"{READS}:1: starts with a UTF-8 byte-order mark",
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
    run_dir = replaced_run(tmp_path / "run", **files)
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
    run_dir = replaced_run(
        tmp_path / "nightly runs" / "run", writes=writes + '{"type": "invoke", "time_ns": 5\n'
    )
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


def test_missing_history_file_is_named_and_leaves_no_older_verdict(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    assert kchaos_check(capfd, run_dir)[0] == 0
    (run_dir / READS).unlink()
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2
    assert squeeze(f"{READS}: missing history file") in squeeze(text)
    # `kchaos report` would otherwise publish the first check's verdict as this history's.
    assert not (run_dir / RESULT).exists()


def test_a_directory_where_a_history_file_belongs_is_named_as_such(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    (run_dir / WRITES).unlink()
    (run_dir / WRITES).mkdir()
    code, text = kchaos_check(capfd, run_dir)
    assert (code, text.strip()) == (
        2,
        f"error: {run_dir / WRITES}: expected a regular file, found a directory",
    )


def test_a_torn_last_line_is_named_with_the_option_that_judges_the_rest(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = clean_run(tmp_path / "run")
    with (run_dir / WRITES).open("a") as handle:
        handle.write('{"type": "invoke", "time_ns": 99')
    code, text = kchaos_check(capfd, run_dir)
    assert code == 2
    assert text.strip() == (
        f"error: {run_dir / WRITES}:7: torn tail: line 7 has no newline (a run cut short in a write); "
        "`kchaos check --prefix` judges its 6 whole lines before it "
        "(and says so in the result and the report)"
    )
    assert not (run_dir / RESULT).exists()


@pytest.mark.parametrize("tail", [b'{"type": "invoke", "time_ns": 99', b"\0" * 100_000])
def test_prefix_judges_the_whole_lines_of_a_torn_file_and_says_so(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], tail: bytes
) -> None:
    run_dir = clean_run(tmp_path / "run")
    whole = (run_dir / READS).read_bytes()
    with (run_dir / READS).open("ab") as handle:
        handle.write(tail)
    code, text = kchaos_check(capfd, run_dir, "--prefix")
    assert code == 0, text
    assert f"{READS} judged up to line 9 of 10 (torn tail:" in text
    result = json.loads((run_dir / RESULT).read_text())
    assert result["prefix"] is True
    assert result["events"]["reads"] == 9
    recorded = result["history_files"][READS]
    assert (recorded["judged_lines"], recorded["lines"], recorded["torn_tail"]["line"]) == (9, 9, 10)
    assert recorded["torn_tail"]["nul"] is (tail[:1] == b"\0")
    assert recorded["bytes"] == len(whole) + len(tail)
    assert result["history_files"][WRITES]["torn_tail"] is None
    assert (run_dir / READS).read_bytes() == whole + tail  # the evidence is never changed
    assert main(["report", str(run_dir)]) == 0
    page = (run_dir / REPORT).read_text()
    assert f"{READS} judged up to line 9 of 10 (torn tail:" in page
    assert '<details id="history-files">' in page and "9 + torn tail" in page


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_while_converting_exits_130_quietly(tmp_path: Path, signum: signal.Signals) -> None:
    writes = [event for i in range(150_000) for event in acked(i, f"p:{i}", i)]
    run_dir = make_run(tmp_path / "run", writes, [record(10**9 + i, f"p:{i}", i) for i in range(150_000)])
    # Its own process with Ctrl-C's default action, even if this one was started with it ignored.
    check = subprocess.Popen(
        [sys.executable, "-m", "kchaos.cli", "check", str(run_dir)],
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
        check.send_signal(signum)
        output, _ = check.communicate(timeout=30)
    finally:
        check.kill()
    assert check.returncode == 130, output
    assert "interrupted" in output
    assert not any(marker in output for marker in STACK_TRACE_MARKERS), output
    assert not (run_dir / RESULT).exists()

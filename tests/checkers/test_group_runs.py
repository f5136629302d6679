"""Consumer groups through `kchaos check` of whole run directories: verdicts by commit mode, the
Python reference's counts, incomplete final reads, bad consumes.jsonl lines, and how consumes.jsonl
is parsed and partitioned."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import acked, commit, consume, end
from group_history import CONSUMES_G, CONSUMES_H, group_run
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.side_files_reference import checked_group_counts, final_offsets, python_group_counts
from checkers import group_anomalies as g
from checkers import kind_checkers, registry, session
from checkers.check import check_run
from checkers.io.cache import parsed_table
from checkers.registry import GroupInputs
from contract.anomaly_kinds import GROUP_COUNTS
from contract.history import CHECK_CACHE, CONSUMES, RESULT
from kchaos.cli import main

pytestmark = pytest.mark.spark


def test_kchaos_check_judges_each_group_by_its_commit_mode(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    run_dir = group_run(tmp_path / "run", [*CONSUMES_G, *CONSUMES_H])
    with warnings.catch_warnings():  # nothing for the user's terminal (a thread's lost Spark tags were)
        warnings.simplefilter("error", UserWarning)
        code = main(["check", str(run_dir)])
    capfd.readouterr()
    assert code == 1  # the at-least-once group broke its promise
    result = json.loads((run_dir / RESULT).read_text())
    assert result["valid"] is False
    assert result["events"]["consumes"] == len(CONSUMES_G) + len(CONSUMES_H)
    at_least_once, at_most_once = result["groups"]["g"], result["groups"]["h"]
    counts = ("polled", "skipped", "redelivered", "poll_skips", "nonmonotonic", "commit_regressions")
    assert {k: at_least_once[k] for k in counts} == dict(zip(counts, (6, 2, 2, 1, 1, 1), strict=True))
    assert at_least_once["commits"] == {"invoke": 4, "ok": 3, "fail": 1, "info": 0}
    # Per second for the timeline, over every partition (the handwritten times all fall in second 0).
    # Commit lag: the log of t-all/0 ends at 6 (acknowledged offsets 0..5), committed to 6 by then.
    second = {
        "t_s": 0,
        "polled": 8,
        "commits_ok": 3,
        "commits_failed": 1,
        "assigns": 3,
        "generation": 4,
        "lag": 0,
    }
    assert at_least_once["series"] == [second]
    assert {k: at_most_once[k] for k in counts} == dict(zip(counts, (6, 0, 0, 0, 0, 0), strict=True))
    verdicts = {row["id"]: row["verdict"] for row in at_least_once["guarantees"]}
    assert verdicts == {
        "no-consumer-skips": "violated",
        "no-redeliveries": "not-promised",
        "monotonic-polls": "violated",
        "commits-advance": "violated",
    }
    assert {row["id"]: row["verdict"] for row in at_most_once["guarantees"]} == {
        "no-consumer-skips": "not-promised",
        "no-redeliveries": "held",
        "monotonic-polls": "held",
        "commits-advance": "held",
    }
    skip = at_least_once["anomalies"]["consumer-skip"]["examples"][0]
    assert (skip["offset"], skip["committed"], skip["committed_by"]) == (4, 6, "g-1")
    assert skip["coordinator"] is None and skip["faults"] == []  # no offsets topic sampled, no fault
    reason = next(r["reason"] for r in at_least_once["guarantees"] if r["id"] == "no-consumer-skips")
    assert "KIP-320" in reason  # Kafka 0.9 consumers cannot detect a truncated log


def test_the_benchmarks_python_reference_counts_every_group_as_the_check_does(
    spark: SparkSession, tmp_path: Path
) -> None:
    run_dir = group_run(tmp_path / "run", [*CONSUMES_G, *CONSUMES_H])
    result = check_run(run_dir)
    counted = checked_group_counts(result)
    # Every kind occurs but uncommitted reads: this history has no transactions.
    assert counted["g"] == dict(zip(GROUP_COUNTS, (6, 2, 2, 1, 1, 1, 0), strict=True))
    assert python_group_counts(run_dir, final_offsets(run_dir)) == counted


def test_only_a_final_end_makes_a_partition_complete_for_the_groups(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # A live reader that got to t-all/1's end says nothing of what the final read holds there: the
    # group's two polls of t-all/1 stay out of its counts, as without that live `end`.
    live_end = end(500, "t-all", 1) | {"phase": "live", "process": "c-live-0"}
    run_dir = group_run(tmp_path / "run", CONSUMES_G, live=(live_end,))
    code = main(["check", str(run_dir)])
    capfd.readouterr()
    result = json.loads((run_dir / RESULT).read_text())
    assert code == 1
    counts = ("polled", "skipped", "redelivered", "poll_skips", "nonmonotonic", "commit_regressions")
    assert {k: result["groups"]["g"][k] for k in counts} == dict(zip(counts, (6, 2, 2, 1, 1, 1), strict=True))


def test_a_group_over_an_incompletely_read_partition_is_not_judged_held(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # t-all/1 is written to but its final read never ended: the groups' counts leave it out, so a
    # promise with nothing found on the rest is unknown, not held; what was found still broke.
    run_dir = group_run(
        tmp_path / "run", [*CONSUMES_G, *CONSUMES_H], more_writes=tuple(acked(50, "q:0", 0, partition=1))
    )
    code = main(["check", str(run_dir)])
    capfd.readouterr()
    result = json.loads((run_dir / RESULT).read_text())
    assert (code, result["valid"], result["complete"]) == (1, False, False)
    verdicts = {g: {r["id"]: r["verdict"] for r in result["groups"][g]["guarantees"]} for g in ("g", "h")}
    assert verdicts == {
        "g": {
            "no-consumer-skips": "violated",
            "no-redeliveries": "not-promised",
            "monotonic-polls": "violated",
            "commits-advance": "violated",
        },
        "h": {
            "no-consumer-skips": "not-promised",
            "no-redeliveries": "unknown",
            "monotonic-polls": "unknown",
            "commits-advance": "unknown",
        },
    }
    reason = next(r["reason"] for r in result["groups"]["h"]["guarantees"] if r["id"] == "no-redeliveries")
    assert "the final read of t-all partition 1 is incomplete" in reason


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (consume("poll", 5, "g-0", topic="t-all", partition=0), "field 'offset': expected an integer"),
        (
            consume("stop", 5, "g-0", reason="vanished"),
            "field 'reason': expected closed or killed or crashed",
        ),
        (consume("start", 5, "x-0"), "field 'group': expected a group run.json declares (g, h)"),
        (commit(5, "g-0", "ok", 9, 1), "commit 9 of g-0 ends (ok) without an invoke"),
    ],
)
def test_a_bad_consumes_line_is_named_by_file_and_line(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], line: dict[str, Any], message: str
) -> None:
    run_dir = group_run(tmp_path / "run", [*CONSUMES_H, line])
    code = main(["check", str(run_dir)])
    out, err = capfd.readouterr()
    assert code == 2
    assert f"{run_dir / CONSUMES}:{len(CONSUMES_H) + 1}" in out + err
    assert message in out + err
    assert "Traceback" not in out + err


def test_a_missing_consumes_file_of_a_run_with_groups_is_named(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Without it, the check would pass with no word of the groups run.json declares.
    run_dir = group_run(tmp_path / "run", CONSUMES_H)
    (run_dir / CONSUMES).unlink()
    code = main(["check", str(run_dir)])
    err = capfd.readouterr().err
    assert (code, err) == (
        2,
        f"error: {run_dir / CONSUMES}: missing history file (run.json declares consumer groups: g, h)\n",
    )


def test_a_check_makes_no_frame_of_python_data(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame of Python data (`createDataFrame`) is a Python RDD, whose first task starts Python
    workers: about a second of a cold check of a run with consumer groups. The group topics, and the
    empty epochs and replica values of a run without cluster.jsonl or replicas.jsonl, are literals."""
    run_dir = group_run(tmp_path / "run", [*CONSUMES_G, *CONSUMES_H])

    def refused(*args: Any, **kwargs: Any) -> DataFrame:
        raise AssertionError("a check made a frame of Python data")

    monkeypatch.setattr(SparkSession, "createDataFrame", refused)
    result = check_run(run_dir)
    assert result["errors"] == []
    assert result["groups"]["g"]["skipped"] == 2 and result["groups"]["g"]["series"][0]["lag"] == 0
    assert result["anomalies"]["epoch-regression"]["count"] == 0


def test_consumes_jsonl_parsed_by_pyarrow_is_read_as_spark_parses_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    lf = group_run(tmp_path / "lf", [*CONSUMES_G, *CONSUMES_H])
    crlf = group_run(tmp_path / "crlf", [*CONSUMES_G, *CONSUMES_H])
    # CR line ends: pyarrow leaves the file to Spark.
    (crlf / CONSUMES).write_bytes((crlf / CONSUMES).read_bytes().replace(b"\n", b"\r\n"))
    by_arrow, by_spark = check_run(lf), check_run(crlf)
    ((lf_cache,), (crlf_cache,)) = ((run / CHECK_CACHE).iterdir() for run in (lf, crlf))  # one cache each
    assert parsed_table(lf_cache, CONSUMES) is not None and parsed_table(crlf_cache, CONSUMES) is None
    assert by_arrow["groups"] == by_spark["groups"]
    assert by_arrow["groups"]["g"]["redelivered"] == 2


def test_consumes_in_one_partition_or_shuffled_give_the_same_groups(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small consumes are kept in one partition (no shuffle for the groups' windows); above
    ONE_PARTITION_EVENTS they are shuffled as every other frame: the same counts and examples."""
    run_dir = group_run(tmp_path / "run", [*CONSUMES_G, *CONSUMES_H])
    # Shuffles into a partition per core, as for a history of a few MB (a tiny one's have one).
    monkeypatch.setattr(session, "TINY_HISTORY_BYTES", 0)
    in_one = check_run(run_dir)["groups"]
    monkeypatch.setattr(registry, "ONE_PARTITION_EVENTS", 0)
    shuffled = check_run(run_dir)["groups"]
    assert shuffled == in_one
    assert in_one["g"]["skipped"] == 2 and in_one["g"]["redelivered"] == 2


def test_a_group_checker_that_raises_costs_only_its_own_kind(
    spark: SparkSession, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Group kinds go through the same runner as topic kinds: one that raises as its frame is built,
    and one whose job fails as it runs, each cost their own kind; the others are judged as ever."""

    def broken(self: object, groups: object, history: object) -> None:
        raise RuntimeError("Redeliveries bug\nsecond line")

    def failing_job(self: object, groups: GroupInputs, history: object) -> DataFrame:
        rows = g.nonmonotonic(groups.pairs)
        return rows.withColumn("group", F.raise_error(F.lit("nonmonotonic job bug")).cast("string"))

    monkeypatch.setattr(kind_checkers.Redeliveries, "rows", broken)
    monkeypatch.setattr(kind_checkers.NonmonotonicPolls, "rows", failing_job)
    run_dir = group_run(tmp_path / "run", [*CONSUMES_G, *CONSUMES_H])
    code = main(["check", str(run_dir)])
    assert (
        "could not judge everything; checkers failed: redelivery, nonmonotonic-poll" in capfd.readouterr().err
    )
    assert code == 2  # not a verdict
    result = json.loads((run_dir / RESULT).read_text())
    errors = {e["kind"]: e["error"] for e in result["errors"]}
    assert errors["redelivery"] == "RuntimeError: Redeliveries bug"
    assert "nonmonotonic job bug" in errors["nonmonotonic-poll"]
    g_counts, h_counts = result["groups"]["g"], result["groups"]["h"]
    assert (g_counts["redelivered"], g_counts["nonmonotonic"], h_counts["redelivered"]) == (None, None, None)
    assert g_counts["anomalies"]["redelivery"] == {
        "count": None,
        "examples": [],
        "examples_capped": False,
        "error": "RuntimeError: Redeliveries bug",
    }
    # the other kinds are counted as ever, with their examples
    assert (g_counts["skipped"], g_counts["poll_skips"], g_counts["commit_regressions"]) == (2, 1, 1)
    assert len(g_counts["anomalies"]["consumer-skip"]["examples"]) == 2
    verdicts = {row["id"]: row for row in h_counts["guarantees"]}
    assert verdicts["no-redeliveries"]["verdict"] == "unknown"  # promised by before-process
    assert "the redelivery checker failed (RuntimeError" in verdicts["no-redeliveries"]["reason"]
    assert {row["id"]: row["verdict"] for row in g_counts["guarantees"]}["no-consumer-skips"] == "violated"
    assert result["anomalies"]["lost-write"]["count"] == 0  # the topics' kinds judged too

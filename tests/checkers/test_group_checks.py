"""Consumer-group checks on a handwritten consumes.jsonl: each count's frame, then `kchaos check`."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from checker_rundirs import (
    GROUP,
    acked,
    assignment,
    commit,
    consume,
    end,
    make_run,
    poll,
    record,
    run_json,
)
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from benchmarks.side_files_reference import checked_group_counts, final_offsets, python_group_counts
from checkers import group_result, session
from checkers import groups as g
from checkers.check import check_run
from checkers.frames import complete_partitions
from checkers.io import CONSUME_SCHEMA
from checkers.io.cache import parsed_table
from harness.anomaly_kinds import GROUP_COUNTS
from harness.app.cli import main
from harness.history import CONSUMES, RESULT

pytestmark = pytest.mark.spark

FINAL_OFFSETS = range(6)  # t-all partition 0 holds p:0 .. p:5; partition 1 is not read to its end

CONSUMES_G = [
    consume("start", 100, "g-0"),
    assignment("assign", 110, "g-0", 1),
    poll(120, "g-0", 0),
    poll(130, "g-0", 1),
    poll(140, "g-0", 3),  # a poll skip: 2 is in the final read
    commit(150, "g-0", "invoke", 1, 4),
    commit(160, "g-0", "ok", 1, 4),
    poll(170, "g-0", 2),  # went back from 3
    poll(175, "g-0", 0, partition=1),
    poll(176, "g-0", 5, partition=1),  # a gap, on a partition not read to its end: not counted
    assignment("revoke", 180, "g-0", 1),
    assignment("assign", 190, "g-0", 3),
    poll(200, "g-0", 0, generation=3),  # a rebalance between: not a step back, but a redelivery
    consume("stop", 210, "g-0", reason="killed"),
    consume("start", 300, "g-1"),
    assignment("assign", 310, "g-1", 4),
    poll(320, "g-1", 3, generation=4),  # redelivered
    commit(330, "g-1", "invoke", 1, 6, generation=4),
    commit(340, "g-1", "ok", 1, 6, generation=4),  # past 4 and 5, never polled: skipped
    commit(350, "g-1", "invoke", 2, 5, generation=4),
    commit(360, "g-1", "ok", 2, 5, generation=4),  # lower than 6: a regression
    commit(370, "g-1", "invoke", 3, 6, generation=4),
    commit(380, "g-1", "fail", 3, 6, generation=4, error="ILLEGAL_GENERATION"),
    consume("stop", 390, "g-1", reason="closed"),
]
CONSUMES_H = [  # at most once, clean: commits first, then processes
    consume("start", 400, "h-0"),
    assignment("assign", 410, "h-0", 1),
    commit(420, "h-0", "invoke", 1, 6),
    commit(430, "h-0", "ok", 1, 6),
    *[poll(440 + offset, "h-0", offset) for offset in FINAL_OFFSETS],
]


def consumes_frame(spark: SparkSession, events: list[dict[str, Any]]) -> DataFrame:
    fields = [f.name for f in spark.createDataFrame([], CONSUME_SCHEMA).schema.fields]
    rows = [tuple(e.get(name) for name in fields) for e in events]
    return spark.createDataFrame(rows, CONSUME_SCHEMA).withColumn("seq", F.monotonically_increasing_id())


def final_frame(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame(
        [("t-all", 0, o, f"p:{o}") for o in FINAL_OFFSETS],
        "topic string, partition int, offset long, value string",
    )


COMPLETE = frozenset({("t-all", 0)})


def test_complete_partitions_are_those_of_final_ends_and_only_their_rows_count(spark: SparkSession) -> None:
    ends = [
        {"type": "end", "phase": "final", "topic": "t-all", "partition": 0},
        {"type": "end", "phase": "live", "topic": "t-all", "partition": 1},  # says nothing of the final read
        {"type": "end", "phase": "final", "topic": "t-1", "partition": 2},
    ]
    complete = complete_partitions(ends)
    assert complete == {("t-all", 0), ("t-1", 2)}
    rows = spark.createDataFrame(
        [("t-all", 0, 1), ("t-all", 1, 2), ("t-1", 2, 3), ("t-1", 0, 4), (None, 0, 5), ("t-all", None, 6)],
        "topic string, partition int, offset long",
    )
    assertDataFrameEqual(
        g.complete_only(rows, complete),
        [Row(topic="t-all", partition=0, offset=1), Row(topic="t-1", partition=2, offset=3)],
    )
    assert g.complete_only(rows, frozenset()).count() == 0


def test_skipped_positions_are_below_the_highest_commit_and_never_polled(spark: SparkSession) -> None:
    consumes = consumes_frame(spark, CONSUMES_G)
    polled = g.complete_only(g.polls(consumes), COMPLETE)
    skipped = g.skipped(final_frame(spark), polled, g.ok_commit_entries(consumes))
    expected = [
        Row(
            group="g",
            topic="t-all",
            partition=0,
            offset=o,
            value=f"p:{o}",
            committed=6,
            committed_by="g-1",
            committed_ns=340,
        )
        for o in (4, 5)
    ]
    assertDataFrameEqual(skipped, expected)


def test_per_second_counts_polls_on_any_and_on_complete_partitions_and_commits_by_phase(
    spark: SparkSession,
) -> None:
    per_second = g.per_second(consumes_frame(spark, [*CONSUMES_G, *CONSUMES_H]), COMPLETE)
    counts = ("polled", "polled_complete", "commits_invoke", "commits_ok", "commits_fail", "commits_info")
    expected = [  # every handwritten time falls in second 0
        Row(
            group="g",
            t_s=0,
            **dict(zip(counts, (8, 6, 4, 3, 1, 0), strict=True)),
            assigns=3,
            generation=4,
            last_ns=390,
        ),
        Row(
            group="h",
            t_s=0,
            **dict(zip(counts, (6, 6, 1, 1, 0, 0), strict=True)),
            assigns=1,
            generation=1,
            last_ns=445,
        ),
    ]
    assertDataFrameEqual(per_second, expected)


def test_redeliveries_count_each_position_once(spark: SparkSession) -> None:
    polled = g.complete_only(g.polls(consumes_frame(spark, CONSUMES_G)), COMPLETE)
    expected = [
        Row(
            group="g",
            topic="t-all",
            partition=0,
            offset=0,
            times=2,
            processes=["g-0"],
            first_ns=120,
            last_ns=200,
        ),
        Row(
            group="g",
            topic="t-all",
            partition=0,
            offset=3,
            times=2,
            processes=["g-0", "g-1"],
            first_ns=140,
            last_ns=320,
        ),
    ]
    assertDataFrameEqual(g.redelivered(polled), expected)


def test_poll_skips_and_steps_back_are_within_one_generation_between_rebalances(spark: SparkSession) -> None:
    pairs = g.consecutive_polls(consumes_frame(spark, CONSUMES_G))
    pair = {"group": "g", "process": "g-0", "generation": 1, "topic": "t-all", "partition": 0}
    assertDataFrameEqual(
        g.complete_only(pairs, COMPLETE).select("before", "after"),
        [Row(before=0, after=1), Row(before=1, after=3), Row(before=3, after=2)],
    )
    skips = g.poll_skips(g.complete_only(pairs, COMPLETE), final_frame(spark))
    assertDataFrameEqual(skips, [Row(**pair, before=1, after=3, before_ns=130, after_ns=140, missed=1)])
    assertDataFrameEqual(g.nonmonotonic(pairs), [Row(**pair, before=3, after=2, before_ns=140, after_ns=170)])


def test_a_commit_lower_than_an_earlier_ok_commit_is_a_regression(spark: SparkSession) -> None:
    commits = g.ok_commit_entries(consumes_frame(spark, CONSUMES_G))
    expected = [
        Row(
            group="g",
            process="g-1",
            generation=4,
            topic="t-all",
            partition=0,
            offset=5,
            time_ns=360,
            earlier=6,
        )
    ]
    assertDataFrameEqual(g.commit_regressions(commits), expected)


def group_run(
    root: Path,
    consumes: list[dict[str, Any]],
    live: tuple[dict[str, Any], ...] = (),
    more_writes: tuple[dict[str, Any], ...] = (),
) -> Path:
    """A run whose final read holds t-all/0's offsets 0..5 and reads every partition but t-all/1 to its
    end (written to only by `more_writes`); `live`: the live readers' events."""
    writes = [*(e for o in FINAL_OFFSETS for e in acked(10 + o, f"p:{o}", o)), *more_writes]
    reads = [*live, *(record(900 + o, f"p:{o}", o) for o in FINAL_OFFSETS)]
    ends = [
        end(1000, t["name"], p)
        for t in run_json()["topics"]
        for p in range(2)
        if (t["name"], p) != ("t-all", 1)
    ]
    groups = [GROUP, {"name": "h", "topics": ["t-all"], "commit": "before-process", "members": 1}]
    return make_run(root, writes, [*reads, *ends], run=run_json(groups=groups), consumes=consumes)


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
    assert counted["g"] == dict(zip(GROUP_COUNTS, (6, 2, 2, 1, 1, 1), strict=True))  # every kind occurs
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


def test_only_ok_commits_count_and_offsets_gone_from_the_log_are_not_skips(spark: SparkSession) -> None:
    """A failed or unknown commit past unpolled records skips nothing; a commit past the end of a
    truncated log skips only what the final read still holds."""
    events = [
        consume("start", 1, "g-0"),
        assignment("assign", 2, "g-0", 1),
        *[poll(3 + o, "g-0", o) for o in range(3)],
        commit(10, "g-0", "invoke", 1, 3),
        commit(11, "g-0", "ok", 1, 3),
        commit(12, "g-0", "invoke", 2, 6),
        commit(13, "g-0", "fail", 2, 6, error="REBALANCE_IN_PROGRESS"),
        commit(14, "g-0", "invoke", 3, 6),
        commit(15, "g-0", "info", 3, 6, error="_TIMED_OUT"),
    ]
    consumes = consumes_frame(spark, events)
    polled = g.polls(consumes)
    assert g.skipped(final_frame(spark), polled, g.ok_commit_entries(consumes)).count() == 0
    truncated = [*events, commit(16, "g-0", "invoke", 4, 9), commit(17, "g-0", "ok", 4, 9)]
    consumes = consumes_frame(spark, truncated)  # committed 9; the final read ends at offset 5
    skipped = g.skipped(final_frame(spark), g.polls(consumes), g.ok_commit_entries(consumes))
    assert sorted(r["offset"] for r in skipped.collect()) == [3, 4, 5]
    phases = ("invoke", "ok", "fail", "info")
    per_second = g.per_second(consumes, COMPLETE).agg(*[F.sum(f"commits_{p}").alias(p) for p in phases])
    assert per_second.collect()[0].asDict() == {"invoke": 4, "ok": 2, "fail": 1, "info": 1}


def test_generations_that_start_again_at_1_are_no_anomaly(spark: SparkSession) -> None:
    """Kafka 0.9 deletes a group that empties ("Group g generation 2 is dead and removed") and its
    next member starts at generation 1 again: the checks order a group's events by time and line,
    never by generation number."""
    events = [
        consume("start", 1, "g-0"),
        assignment("assign", 2, "g-0", 1),
        assignment("revoke", 3, "g-0", 1),
        assignment("assign", 4, "g-0", 2),
        *[poll(5 + o, "g-0", o, generation=2) for o in range(3)],
        commit(10, "g-0", "invoke", 1, 3, generation=2),
        commit(11, "g-0", "ok", 1, 3, generation=2),
        consume("stop", 12, "g-0", reason="closed"),
        consume("start", 20, "g-0"),
        assignment("assign", 21, "g-0", 1),
        *[poll(22 + o, "g-0", o, generation=1) for o in range(3, 6)],
        commit(30, "g-0", "invoke", 2, 6),
        commit(31, "g-0", "ok", 2, 6),
    ]
    consumes = consumes_frame(spark, events)
    polled, commits, pairs = g.polls(consumes), g.ok_commit_entries(consumes), g.consecutive_polls(consumes)
    assert pairs.count() == 4  # within each run of the member, none across its restart
    for found in (
        g.commit_regressions(commits),
        g.nonmonotonic(pairs),
        g.poll_skips(pairs, final_frame(spark)),
        g.redelivered(polled),
        g.skipped(final_frame(spark), polled, commits),
    ):
        assert found.count() == 0, found.collect()


def test_commit_lag_changes_per_second_summed_over_each_groups_partitions(spark: SparkSession) -> None:
    """g reads t1 and t2, h reads t1; nobody reads t3. A commit past the log's end trails it by 0."""
    s = 1_000_000_000
    writes = spark.createDataFrame(
        [
            ("t1", 0, "ok", 0, s // 2),
            ("t1", 1, "ok", 0, s),
            ("t1", 0, "ok", 1, 2 * s + s // 2),
            ("t2", 0, "ok", 4, 3 * s),
            ("t2", 0, "ok", None, 4 * s),  # acks=0: no offset
            ("t1", 0, "fail", None, 5 * s),
            ("t3", 0, "ok", 9, 6 * s),
        ],
        "topic string, partition int, outcome string, ack_offset long, complete_ns long",
    )
    commits = spark.createDataFrame(
        [("g", "t1", 0, 1, s + s // 2), ("g", "t1", 0, 5, 2 * s + 7 * s // 10), ("h", "t1", 1, 1, 3 * s)],
        "group string, topic string, partition int, offset long, time_ns long",
    )
    lag = g.lag_changes(writes, commits, {"t1": ["g", "h"], "t2": ["g"]})
    expected = [
        ("g", 0, 1),
        ("g", 1, 1),
        ("g", 2, 1),
        ("g", 3, 6),
        ("h", 0, 1),
        ("h", 1, 2),
        ("h", 2, 3),
        ("h", 3, 2),
    ]
    assertDataFrameEqual(lag, [Row(group=gr, t_s=t, lag=n) for gr, t, n in expected])


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
    assert parsed_table(lf, CONSUMES) is not None and parsed_table(crlf, CONSUMES) is None
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
    monkeypatch.setattr(group_result, "ONE_PARTITION_EVENTS", 0)
    shuffled = check_run(run_dir)["groups"]
    assert shuffled == in_one
    assert in_one["g"]["skipped"] == 2 and in_one["g"]["redelivered"] == 2

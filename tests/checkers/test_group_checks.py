"""Consumer-group checks on a handwritten consumes.jsonl, each count's frame on its own (whole run
directories through `kchaos check`: test_group_runs.py)."""

from __future__ import annotations

from typing import Any

import pytest
from checker_rundirs import assignment, commit, consume, poll
from group_history import CONSUMES_G, CONSUMES_H, FINAL_OFFSETS
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from checkers import group_anomalies as g
from checkers.frames import complete_partitions
from checkers.io import CONSUME_SCHEMA

pytestmark = pytest.mark.spark


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

"""Consumer-group anomalies, as pure DataFrame -> DataFrame functions (docs/HISTORY_FORMAT.md,
"What the checker counts per group").

`consumes` is consumes.jsonl as read (`CONSUME_COLUMNS`, with `seq`: the line order, which is each
member's own order of events); `final` is the final read's records of complete partitions (topic,
partition, offset, value). Every count is over partitions whose final read is complete.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from checkers.availability import second_of
from checkers.frames import Partitions, on_partitions
from contract.history_fields import COMMIT_PHASES

POSITION = ("topic", "partition", "offset")
PARTITION = ("topic", "partition")
_COMMIT = ("group", "process", "generation", "commit_id", "time_ns", "seq")


def complete_only(frame: DataFrame, complete: Partitions) -> DataFrame:
    """Rows of `frame` on a partition of `complete`."""
    return frame.where(on_partitions(complete))


def polls(consumes: DataFrame) -> DataFrame:
    """One row per poll: group, process, generation, topic, partition, offset, value, time_ns, seq."""
    return consumes.where(F.col("type") == "poll").select(
        "group", "process", "generation", *POSITION, "value", "time_ns", "seq"
    )


def ok_commit_entries(consumes: DataFrame) -> DataFrame:
    """One row per partition of each `ok` commit: group, process, generation, commit_id, time_ns,
    seq, topic, partition, offset (the next offset to consume)."""
    return (
        consumes.where((F.col("type") == "commit") & (F.col("phase") == "ok"))
        .select(*_COMMIT, F.explode("offsets").alias("o"))
        .select(*_COMMIT, "o.topic", "o.partition", "o.offset")
    )


def below_committed(final: DataFrame, commits: DataFrame) -> DataFrame:
    """Positions of the final read below the group's highest `ok`-committed offset of their
    partition: what the group says it processed. Columns: group, topic, partition, offset, value,
    committed (that highest offset), committed_by, committed_ns (the commit's)."""
    highest = Window.partitionBy("group", *PARTITION).orderBy(F.col("offset").desc(), F.col("seq"))
    top = (
        commits.withColumn("rank", F.row_number().over(highest))
        .where(F.col("rank") == 1)
        .select(
            "group",
            *PARTITION,
            F.col("offset").alias("committed"),
            F.col("process").alias("committed_by"),
            F.col("time_ns").alias("committed_ns"),
        )
    )
    return final.join(top, list(PARTITION)).where(F.col("offset") < F.col("committed"))


def skipped(final: DataFrame, polled: DataFrame, commits: DataFrame) -> DataFrame:
    """`consumer-skip`: positions below the group's committed offsets (`below_committed`) that no
    member of the group ever polled; `below_committed`'s columns."""
    seen = polled.select("group", *POSITION).distinct()
    return (
        below_committed(final, commits)
        .join(seen, ["group", *POSITION], "left_anti")
        .select("group", *POSITION, "value", "committed", "committed_by", "committed_ns")
    )


def redelivered(polled: DataFrame) -> DataFrame:
    """`redelivery`: positions the group polled more than once, once each. Columns: group, topic,
    partition, offset, times (how often), processes and first_ns, last_ns."""
    return (
        polled.groupBy("group", *POSITION)
        .agg(
            F.count(F.lit(1)).alias("times"),
            F.sort_array(F.collect_set("process")).alias("processes"),
            F.min("time_ns").alias("first_ns"),
            F.max("time_ns").alias("last_ns"),
        )
        .where(F.col("times") > 1)
    )


def consecutive_polls(consumes: DataFrame) -> DataFrame:
    """Pairs of consecutive polls of one process on one partition within one generation with no
    start, assign or revoke of that process between: group, process, generation, topic, partition,
    `before` and `after` offsets, `before_ns`, `after_ns`."""
    boundary = F.col("type").isin("start", "assign", "revoke").cast("int")
    by_process = Window.partitionBy("process").orderBy("seq")
    segmented = consumes.where(F.col("type").isin("start", "assign", "revoke", "poll")).withColumn(
        "segment", F.sum(boundary).over(by_process.rowsBetween(Window.unboundedPreceding, 0))
    )
    in_segment = Window.partitionBy("process", "segment", "generation", *PARTITION).orderBy("seq")
    return (
        segmented.where(F.col("type") == "poll")
        .withColumn("before", F.lag("offset").over(in_segment))
        .withColumn("before_ns", F.lag("time_ns").over(in_segment))
        .where(F.col("before").isNotNull())
        .select(
            "group",
            "process",
            "generation",
            *PARTITION,
            "before",
            F.col("offset").alias("after"),
            "before_ns",
            F.col("time_ns").alias("after_ns"),
        )
    )


def poll_skips(pairs: DataFrame, final: DataFrame) -> DataFrame:
    """`poll-skip`: consecutive polls a < b with an offset strictly between them in the final read.
    Columns: those of `consecutive_polls`, and `missed` (how many such offsets)."""
    gaps = pairs.where(F.col("after") > F.col("before") + 1).alias("g")
    present = final.select(*PARTITION, "offset").alias("f")
    between: Column = (
        (F.col("g.topic") == F.col("f.topic"))
        & (F.col("g.partition") == F.col("f.partition"))
        & (F.col("f.offset") > F.col("g.before"))
        & (F.col("f.offset") < F.col("g.after"))
    )
    columns = [F.col(f"g.{c}") for c in pairs.columns]
    return gaps.join(present, between).groupBy(*columns).agg(F.count(F.lit(1)).alias("missed"))


def nonmonotonic(pairs: DataFrame) -> DataFrame:
    """`nonmonotonic-poll`: consecutive polls with b <= a."""
    return pairs.where(F.col("after") <= F.col("before"))


def commit_regressions(commits: DataFrame) -> DataFrame:
    """`commit-regression`: `ok` commit entries lower than an earlier `ok` commit of the same group for
    that partition (earlier by the time of the ok). Columns: group, process, generation, topic,
    partition, offset, time_ns, `earlier` (the highest earlier offset)."""
    earlier = (
        Window.partitionBy("group", *PARTITION)
        .orderBy("time_ns", "seq")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    return (
        commits.withColumn("earlier", F.max("offset").over(earlier))
        .where(F.col("offset") < F.col("earlier"))
        .select("group", "process", "generation", *PARTITION, "offset", "time_ns", "earlier")
    )


def per_second(consumes: DataFrame, complete: Partitions) -> DataFrame:
    """What each group did each whole second of run time (seconds with any event): group, t_s,
    polled (on any partition), polled_complete (on one of `complete`), its commit events of each
    phase (commits_invoke, commits_ok, commits_fail, commits_info), assigns (rebalances seen by its
    members), generation (the highest seen), last_ns (its last event's time)."""
    kind, phase = F.col("type"), F.col("phase")
    polls = kind == "poll"
    commits = [
        F.count(F.when((kind == "commit") & (phase == p), 1)).alias(f"commits_{p}") for p in COMMIT_PHASES
    ]
    return (
        consumes.withColumn("t_s", second_of(F.col("time_ns")))
        .groupBy("group", "t_s")
        .agg(
            F.count(F.when(polls, 1)).alias("polled"),
            F.count(F.when(polls & on_partitions(complete), 1)).alias("polled_complete"),
            *commits,
            F.count(F.when(kind == "assign", 1)).alias("assigns"),
            F.max("generation").alias("generation"),
            F.max("time_ns").alias("last_ns"),
        )
    )


def firsts_polled_after(consumes: DataFrame, times_ns: Mapping[str, int]) -> DataFrame:
    """Per (group, topic, partition) polled: the first poll at or after each of `times_ns` (a column
    each, named by its key), in one pass."""
    firsts = [
        F.min(F.when(F.col("time_ns") >= F.lit(time_ns), F.col("time_ns"))).alias(name)
        for name, time_ns in times_ns.items()
    ]
    return consumes.where(F.col("type") == "poll").groupBy("group", *PARTITION).agg(*firsts)


def lag_changes(writes: DataFrame, commits: DataFrame, topic_groups: dict[str, list[str]]) -> DataFrame:
    """How far each group's commits trail the log, at each whole second of run time in which it may
    have changed: group, t_s, `lag`, the records between the group's committed offset (0 before any)
    and the log's end (one past the highest acknowledged offset so far), never below 0 on a partition,
    summed over the partitions of its topics. It holds until the group's next row (0 before its
    first). Writes without an offset (acks=0) are left out. `topic_groups`: the groups reading each
    topic, planned as a literal (no frame to broadcast)."""
    readers = F.create_map(
        *[c for topic, groups in topic_groups.items() for c in (F.lit(topic), F.array(*map(F.lit, groups)))]
    )
    ends = (
        writes.where((F.col("outcome") == "ok") & F.col("ack_offset").isNotNull())
        .groupBy(*PARTITION, second_of(F.col("complete_ns")).alias("t_s"))
        .agg(F.max(F.col("ack_offset") + 1).alias("end"))
        .select(F.explode(readers[F.col("topic")]).alias("group"), *PARTITION, "t_s", "end")
        # A row per partition and second: in one partition, whose windows below need no shuffle
        # when the commits are in one too (`group_result`: the series' CPU, warm, 0.76-0.80 ->
        # 0.54 s for a real 45-s run).
        .coalesce(1)
    )
    committed = commits.select(
        "group", *PARTITION, second_of(F.col("time_ns")).alias("t_s"), F.col("offset").alias("committed")
    )
    by_partition = Window.partitionBy("group", *PARTITION).orderBy("t_s")
    so_far = by_partition.rowsBetween(Window.unboundedPreceding, 0)
    # greatest() skips a null: 0 behind before the log has an end
    behind = F.greatest(
        F.max("end").over(so_far) - F.coalesce(F.max("committed").over(so_far), F.lit(0)), F.lit(0)
    )
    changed = (
        ends.unionByName(committed, allowMissingColumns=True)
        .groupBy("group", *PARTITION, "t_s")
        .agg(F.max("end").alias("end"), F.max("committed").alias("committed"))
        .withColumn("behind", behind)
        .withColumn("change", F.col("behind") - F.lag("behind", 1, 0).over(by_partition))
        .groupBy("group", "t_s")
        .agg(F.sum("change").alias("change"))
    )
    in_order = Window.partitionBy("group").orderBy("t_s").rowsBetween(Window.unboundedPreceding, 0)
    return changed.select("group", "t_s", F.sum("change").over(in_order).alias("lag"))

"""Explicit schemas of the history files and the normalized frames every checker starts from.

Pure DataFrame -> DataFrame functions; `checkers.io` is the only module that reads or writes files.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

CORRUPT = "_corrupt"
"""Column holding the raw text of a line Spark could not parse into the schema."""

WRITE_TYPES = ("invoke", "ok", "fail", "info")
READ_TYPES = ("record", "end")
READ_PHASES = ("live", "final")

WRITE_SCHEMA = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("time_ns", T.LongType()),
        T.StructField("process", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("value", T.StringType()),
        T.StructField("error", T.StringType()),
    ]
)

READ_SCHEMA = T.StructType(
    [
        T.StructField("type", T.StringType()),
        T.StructField("time_ns", T.LongType()),
        T.StructField("process", T.StringType()),
        T.StructField("phase", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("value", T.StringType()),
        T.StructField("log_start", T.LongType()),
        T.StructField("high_watermark", T.LongType()),
    ]
)


def _all_present(*names: str) -> Column:
    condition = F.lit(True)
    for name in names:
        condition = condition & F.col(name).isNotNull()
    return condition


def write_event_is_valid() -> Column:
    """True for a writes.jsonl line that follows the format (see `problems.describe_write`)."""
    return (
        F.col(CORRUPT).isNull()
        & F.col("type").isin(*WRITE_TYPES)
        & _all_present("time_ns", "process", "topic", "partition", "value")
    )


def read_event_is_valid() -> Column:
    """True for a reads.jsonl line that follows the format (see `problems.describe_read`)."""
    is_record = F.col("type") == "record"
    return (
        F.col(CORRUPT).isNull()
        & F.col("type").isin(*READ_TYPES)
        & F.col("phase").isin(*READ_PHASES)
        & _all_present("time_ns", "process", "topic", "partition")
        & (~is_record | _all_present("offset", "value"))
    )


def acks_of(topic: Column, topic_acks: Mapping[str, str]) -> Column:
    """The acks mode a topic is written with, from run.json."""
    pairs: list[Column] = []
    for name, acks in sorted(topic_acks.items()):
        pairs += [F.lit(name), F.lit(acks)]
    return F.create_map(*pairs)[topic]


POSITION = ["topic", "partition", "offset"]
WRITE_COLUMNS = [
    "value",
    "topic",
    "partition",
    "acks",
    "process",
    "invoke_ns",
    "complete_ns",
    "outcome",
    "ack_offset",
    "error",
]


def value_table(write_events: DataFrame, read_events: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """One row per value written or read: its write, and what the reads saw of it, in one pass.

    The write columns (WRITE_COLUMNS) say where it went, when it was invoked and completed, and how;
    a write with no completion is `info` (indeterminate). `invokes` and `completions` count its
    events so that malformed histories (a value written twice, a completion with no invoke) can be
    reported. `written` and `read` say which side exists (write columns are null for a value only
    read); `first_at`/`last_at` are the smallest and largest (topic, partition, offset) it was read
    at, `first_in_partition` the smallest (partition, offset), `final_low`/`final_high` the smallest
    and largest (topic, partition) of its final reads.
    """
    read_rows = read_events.where(F.col("type") == "record").select(
        "value", F.struct(*POSITION).alias("at"), (F.col("phase") == "final").alias("final")
    )
    rows = write_events.select(*WRITE_SCHEMA.names).unionByName(read_rows, allowMissingColumns=True)
    is_write = F.col("type").isNotNull()
    is_invoke = F.coalesce(F.col("type") == "invoke", F.lit(False))
    is_completion = is_write & ~is_invoke
    is_read = F.col("at").isNotNull()
    # Writes and reads of a value meet in one window (one shuffle and one sort): a groupBy with
    # string or struct aggregates would make Spark sort-aggregate, sorting every event twice. The
    # value's hash leads the sort key because values often share their first 8 bytes (the sort's
    # prefix), which would make every comparison a full string comparison.
    of_value = Window.partitionBy(F.xxhash64("value"), "value").orderBy(
        F.when(is_invoke, 0).when(is_write, 1).otherwise(2)
    )
    whole = of_value.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    final_at = F.when(F.col("final"), F.struct("at.topic", "at.partition"))
    aggregates = {
        "invokes": F.sum(is_invoke.cast("int")),
        "completions": F.sum(is_completion.cast("int")),
        "topic": F.max(F.when(is_write, F.col("topic"))),
        "process": F.max(F.when(is_invoke, F.col("process"))),
        "completion_partition": F.max(F.when(is_completion & (F.col("partition") >= 0), F.col("partition"))),
        "invoke_partition": F.max(F.when(is_invoke, F.col("partition"))),
        "invoke_ns": F.min(F.when(is_invoke, F.col("time_ns"))),
        "complete_ns": F.max(F.when(is_completion, F.col("time_ns"))),
        "completion": F.max(F.when(is_completion, F.col("type"))),
        "ack_offset": F.max(F.when(F.col("type") == "ok", F.col("offset"))),
        "error": F.max(F.when(is_completion, F.col("error"))),
        "read": F.max(is_read),
        "first_at": F.min("at"),
        "last_at": F.max("at"),
        "first_in_partition": F.min(F.when(is_read, F.struct("at.partition", "at.offset"))),
        "final_low": F.min(final_at),
        "final_high": F.max(final_at),
    }
    over_value = rows.select(
        "value",
        F.row_number().over(of_value).alias("row"),
        *[aggregate.over(whole).alias(name) for name, aggregate in aggregates.items()],
    )
    # The value's invoke row if it has one, else its completion, else one of its reads.
    per_value = over_value.where(F.col("row") == 1).withColumn(
        "written", F.col("invokes") + F.col("completions") > 0
    )
    return per_value.select(
        "value",
        "topic",
        F.coalesce("completion_partition", "invoke_partition").alias("partition"),
        acks_of(F.col("topic"), topic_acks).alias("acks"),
        "process",
        "invoke_ns",
        "complete_ns",
        F.when(F.col("written"), F.coalesce("completion", F.lit("info"))).alias("outcome"),
        "ack_offset",
        "error",
        "invokes",
        "completions",
        "written",
        "read",
        "first_at",
        "last_at",
        "first_in_partition",
        "final_low",
        "final_high",
    )


def writes_of(values: DataFrame) -> DataFrame:
    """The written values of `value_table`, with WRITE_COLUMNS only: one row per write."""
    return values.where(F.col("written")).select(*WRITE_COLUMNS)


def write_problems(writes: DataFrame) -> DataFrame:
    """Values whose events break the one-invoke-at-most-one-completion rule, with the reason."""
    reason = (
        F.when((F.col("invokes") == 0) & (F.col("completions") > 0), F.lit("completion with no invoke"))
        .when(F.col("invokes") > 1, F.lit("value written twice (invoked more than once)"))
        .when(F.col("completions") > 1, F.lit("value written twice (completed more than once)"))
    )
    return writes.select("value", reason.alias("reason")).where(F.col("reason").isNotNull())

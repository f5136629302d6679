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


def writes_by_value(write_events: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """One row per written value: where it went, when it was invoked and completed, and how.

    A write with no completion is `info` (indeterminate). `invokes` and `completions` are kept so
    that malformed histories (a value written twice, a completion with no invoke) can be reported.
    """
    is_invoke = F.col("type") == "invoke"
    is_completion = ~is_invoke
    known_partition = F.col("partition") >= 0
    # A window over each value's events, not groupBy: string aggregates (topic, process, error)
    # would make Spark sort-aggregate, sorting every event twice; the window sorts once.
    of_value = Window.partitionBy("value")
    aggregates = {
        "invokes": F.sum(is_invoke.cast("int")),
        "completions": F.sum(is_completion.cast("int")),
        "topic": F.max("topic"),
        "process": F.max(F.when(is_invoke, F.col("process"))),
        "completion_partition": F.max(F.when(is_completion & known_partition, F.col("partition"))),
        "invoke_partition": F.max(F.when(is_invoke, F.col("partition"))),
        "invoke_ns": F.min(F.when(is_invoke, F.col("time_ns"))),
        "complete_ns": F.max(F.when(is_completion, F.col("time_ns"))),
        "completion": F.max(F.when(is_completion, F.col("type"))),
        "ack_offset": F.max(F.when(F.col("type") == "ok", F.col("offset"))),
        "error": F.max(F.when(is_completion, F.col("error"))),
    }
    over_value = write_events.select(
        "value", "type", *[aggregate.over(of_value).alias(name) for name, aggregate in aggregates.items()]
    )
    # One row per value: its invoke's (a value invoked twice keeps both rows, and write_problems
    # reports it), or for a completion with no invoke that completion's.
    per_value = over_value.where(is_invoke | (F.col("invokes") == 0)).drop("type")
    return per_value.select(
        "value",
        "topic",
        F.coalesce("completion_partition", "invoke_partition").alias("partition"),
        acks_of(F.col("topic"), topic_acks).alias("acks"),
        "process",
        "invoke_ns",
        "complete_ns",
        F.coalesce("completion", F.lit("info")).alias("outcome"),
        "ack_offset",
        "error",
        "invokes",
        "completions",
    )


def write_problems(writes: DataFrame) -> DataFrame:
    """Values whose events break the one-invoke-at-most-one-completion rule, with the reason."""
    reason = (
        F.when(F.col("invokes") == 0, F.lit("completion with no invoke"))
        .when(F.col("invokes") > 1, F.lit("value written twice (invoked more than once)"))
        .when(F.col("completions") > 1, F.lit("value written twice (completed more than once)"))
    )
    return writes.select("value", reason.alias("reason")).where(F.col("reason").isNotNull())

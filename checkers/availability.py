"""Availability and latency per acks mode: pure DataFrame -> DataFrame functions over writes.

Latency is completion time minus invoke time of `ok` writes, in milliseconds; percentiles are
Spark's approximate percentiles (relative error 1/10000), counts are exact.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

NS_PER_S = 1_000_000_000
NS_PER_MS = 1_000_000
_PERCENTILE_ACCURACY = 10_000


def second_of(time_ns: Column) -> Column:
    """The whole second of run time a nanosecond timestamp falls in."""
    return F.floor(time_ns / NS_PER_S).cast("long")


def fault_active(time_ns: Column, windows: list[tuple[int, int | None]]) -> Column:
    """True when `time_ns` falls in one of the disjoint fault windows [start, stop)."""
    active = F.lit(False)
    for start, stop in windows:
        inside = time_ns >= F.lit(start)
        if stop is not None:
            inside = inside & (time_ns < F.lit(stop))
        active = active | inside
    return active


def _latency_ms() -> Column:
    return F.when(F.col("outcome") == "ok", (F.col("complete_ns") - F.col("invoke_ns")) / NS_PER_MS)


def _outcome_counts() -> list[Column]:
    return [
        F.count("*").alias("completed"),
        F.sum((F.col("outcome") == "ok").cast("long")).alias("acked"),
        F.sum((F.col("outcome") == "fail").cast("long")).alias("failed"),
        F.sum((F.col("outcome") == "info").cast("long")).alias("indeterminate"),
    ]


def _latency_percentiles(prefix: str) -> list[Column]:
    latency = _latency_ms()
    quantiles = F.percentile_approx(latency, [0.5, 0.99], _PERCENTILE_ACCURACY)
    return [
        quantiles[0].alias(f"{prefix}p50_ms"),
        quantiles[1].alias(f"{prefix}p99_ms"),
        F.max(latency).alias(f"{prefix}max_ms"),
    ]


def per_second(writes: DataFrame) -> DataFrame:
    """Completions per (acks, second of completion): acked, failed, indeterminate, ack latency."""
    completed = writes.where(F.col("complete_ns").isNotNull())
    return (
        completed.groupBy("acks", second_of(F.col("complete_ns")).alias("t_s"))
        .agg(*_outcome_counts(), *_latency_percentiles("latency_"))
        .drop("completed")
    )


def latency_by_fault(writes: DataFrame, windows: list[tuple[int, int | None]]) -> DataFrame:
    """Per acks mode and whether a fault was active at completion: latency, error and indeterminate rates."""
    completed = writes.where(F.col("complete_ns").isNotNull())
    grouped = completed.groupBy("acks", fault_active(F.col("complete_ns"), windows).alias("during_fault"))
    return (
        grouped.agg(*_outcome_counts(), *_latency_percentiles(""))
        .withColumn("error_rate", F.col("failed") / F.col("completed"))
        .withColumn("indeterminate_rate", F.col("indeterminate") / F.col("completed"))
        .select(
            "acks",
            "during_fault",
            F.col("completed").alias("count"),
            "p50_ms",
            "p99_ms",
            "max_ms",
            "error_rate",
            "indeterminate_rate",
        )
    )


def firsts_after(writes: DataFrame, times_ns: Mapping[str, int]) -> DataFrame:
    """Per (topic, partition): the first `ok` completion at or after each of `times_ns` (a column
    each, named by its key) and the last invocation (`last_invoke_ns`), in one pass."""
    ok = F.col("outcome") == "ok"
    firsts = [
        F.min(F.when(ok & (F.col("complete_ns") >= F.lit(time_ns)), F.col("complete_ns"))).alias(name)
        for name, time_ns in times_ns.items()
    ]
    return writes.groupBy("topic", "partition").agg(F.max("invoke_ns").alias("last_invoke_ns"), *firsts)

"""One pure DataFrame -> DataFrame function per anomaly kind of HISTORY_FORMAT.md.

Inputs are `writes` (one row per value, `frames.writes_by_value`) and `reads` (read events). Each
function returns one row per anomaly, with the columns result.json's examples use; counts are the
row counts. Wide aggregations first find the few anomalous keys with cheap min/max aggregates and
only then gather details for those keys, so a clean history costs one shuffle per kind.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import acks_of

POSITION = ["topic", "partition", "offset"]
WRITE_EVIDENCE = ["process", "invoke_ns", "complete_ns", "ack_offset"]


def records(reads: DataFrame) -> DataFrame:
    """Every consumed record, live and final."""
    return reads.where(F.col("type") == "record").select("phase", *POSITION, "value")


def complete_partitions(reads: DataFrame) -> DataFrame:
    """(topic, partition) whose final read reached its high watermark (has a final `end` event)."""
    ends = reads.where((F.col("type") == "end") & (F.col("phase") == "final"))
    return ends.select("topic", "partition").distinct()


def complete_topics(reads: DataFrame, topic_partitions: Mapping[str, int]) -> DataFrame:
    """Topics every partition of which (per run.json) had a complete final read."""
    expected = F.create_map(*[F.lit(x) for name, n in sorted(topic_partitions.items()) for x in (name, n)])
    per_topic = complete_partitions(reads).groupBy("topic").agg(F.count("*").alias("complete"))
    return per_topic.where(F.col("complete") >= expected[F.col("topic")]).select("topic")


def final_values(reads: DataFrame) -> DataFrame:
    """What the final read holds at each position (the smallest value if final reads disagree)."""
    final = records(reads).where(F.col("phase") == "final")
    return final.groupBy(*POSITION).agg(F.min("value").alias("final_value"))


def _with_final_value(anomalies: DataFrame, reads: DataFrame, offset_column: str) -> DataFrame:
    final = final_values(reads).withColumnRenamed("offset", offset_column)
    return anomalies.join(final, ["topic", "partition", offset_column], "left")


def lost_writes(writes: DataFrame, reads: DataFrame, topic_partitions: Mapping[str, int]) -> DataFrame:
    """`ok` writes absent from the complete final read of their partition.

    A write whose partition is unknown (-1) is judged against its whole topic, and only when every
    partition of the topic was read completely.
    """
    acked = writes.where(F.col("outcome") == "ok")
    final = records(reads).where(F.col("phase") == "final")
    placed = (
        acked.where(F.col("partition") >= 0)
        .join(complete_partitions(reads), ["topic", "partition"], "left_semi")
        .join(final, ["topic", "partition", "value"], "left_anti")
    )
    unplaced = (
        acked.where(F.col("partition") < 0)
        .join(complete_topics(reads, topic_partitions), "topic", "left_semi")
        .join(final, ["topic", "value"], "left_anti")
    )
    lost = placed.unionByName(unplaced)
    columns = ["topic", "partition", "acks", "value", *WRITE_EVIDENCE, "final_value"]
    return _with_final_value(lost, reads, "ack_offset").select(*columns)


def divergent_offsets(writes: DataFrame, reads: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """Positions holding two different values, among `ok` write offsets and all reads.

    The earliest-acknowledged `ok` write at the position, if any, is the evidence.
    """
    acked = writes.where(
        (F.col("outcome") == "ok") & F.col("ack_offset").isNotNull() & (F.col("partition") >= 0)
    )
    acked_positions = acked.select("topic", "partition", F.col("ack_offset").alias("offset"), "value")
    observed = records(reads).select(*POSITION, "value").unionByName(acked_positions)
    spread = observed.groupBy(*POSITION).agg(F.min("value").alias("low"), F.max("value").alias("high"))
    divergent = spread.where(F.col("low") != F.col("high")).select(*POSITION)
    values = (
        observed.join(divergent, POSITION, "left_semi")
        .groupBy(*POSITION)
        .agg(F.array_sort(F.collect_set("value")).alias("values"))
    )
    earliest_ack = (
        acked_positions.join(divergent, POSITION, "left_semi")
        .join(acked.select("value", *WRITE_EVIDENCE), "value")
        .groupBy(*POSITION)
        .agg(F.min_by(F.struct("value", *WRITE_EVIDENCE), "complete_ns").alias("write"))
    )
    joined = values.join(earliest_ack, POSITION, "left")
    with_final = _with_final_value(joined, reads, "offset")
    return with_final.select(
        *POSITION,
        acks_of(F.col("topic"), topic_acks).alias("acks"),
        "values",
        "write.*",
        "final_value",
    )


def duplicates(writes: DataFrame, reads: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """Values read at two or more distinct positions (re-reading one position is not a duplicate)."""
    positions = records(reads).select("value", F.struct(*POSITION).alias("position"))
    spread = positions.groupBy("value").agg(F.min("position").alias("low"), F.max("position").alias("high"))
    duplicated = spread.where(F.col("low") != F.col("high")).select(
        "value", F.col("low.topic").alias("topic")
    )
    offsets = (
        positions.join(duplicated.select("value"), "value", "left_semi")
        .select(
            "value", F.array(F.col("position.partition").cast("long"), F.col("position.offset")).alias("at")
        )
        .groupBy("value")
        .agg(F.array_sort(F.collect_set("at")).alias("offsets"))
    )
    evidence = writes.select("value", F.col("partition").alias("write_partition"), *WRITE_EVIDENCE)
    return (
        duplicated.join(offsets, "value")
        .join(evidence, "value", "left")
        .select(
            "topic",
            F.col("write_partition").alias("partition"),
            acks_of(F.col("topic"), topic_acks).alias("acks"),
            "value",
            "offsets",
            *WRITE_EVIDENCE,
        )
    )


def phantom_writes(writes: DataFrame, reads: DataFrame) -> DataFrame:
    """Writes that ended in `fail` but were read; partition and offset say where (first position)."""
    failed = writes.where(F.col("outcome") == "fail")
    found = (
        records(reads)
        .join(failed.select("value"), "value", "left_semi")
        .groupBy("value")
        .agg(F.min(F.struct("partition", "offset")).alias("at"))
    )
    return found.join(failed, "value").select(
        "topic", "at.partition", "at.offset", "acks", "value", *WRITE_EVIDENCE, "error"
    )


def unexpected_values(writes: DataFrame, reads: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """Values read that no write invoked, one row per value at its first position."""
    unwritten = records(reads).join(writes.select("value"), "value", "left_anti")
    first = unwritten.groupBy("value").agg(F.min(F.struct(*POSITION)).alias("at"))
    return first.select(
        "at.topic", "at.partition", "at.offset", acks_of(F.col("at.topic"), topic_acks).alias("acks"), "value"
    )


def reordered_writes(writes: DataFrame) -> DataFrame:
    """`ok` writes at a lower offset than an earlier-invoked `ok` write of the same process and partition."""
    acked = writes.where(
        (F.col("outcome") == "ok") & F.col("ack_offset").isNotNull() & (F.col("partition") >= 0)
    )
    earlier = (
        Window.partitionBy("process", "topic", "partition")
        .orderBy("invoke_ns", "value")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    highest_before = F.max(F.struct(F.col("ack_offset").alias("offset"), "value")).over(earlier)
    return (
        acked.withColumn("earlier", highest_before)
        .where(F.col("earlier.offset") > F.col("ack_offset"))
        .select(
            "topic",
            "partition",
            "acks",
            "value",
            *WRITE_EVIDENCE,
            F.col("earlier.value").alias("earlier_value"),
            F.col("earlier.offset").alias("earlier_offset"),
        )
    )

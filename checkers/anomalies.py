"""One pure DataFrame -> DataFrame function per anomaly kind of HISTORY_FORMAT.md.

Inputs are `values` (one row per value written or read, `frames.named` of `frames.value_table`),
`writes` (its written rows, `frames.writes_of`) and `reads` (read events). Each function returns
one row per anomaly, with the columns result.json's examples use; counts are the row counts. One
wide pass (a window per position or per process, or the per-value aggregation) finds the few
anomalous keys, and details are gathered for those keys only.

Lost, duplicate, phantom and unexpected values are all per-value questions that `value_table`
answers (writes and reads of a value meet in one aggregation, computed once when a history is
converted): `value_flags` marks each kind, and `*_from` functions select one kind's rows from that
shared (cacheable) frame. The few details that need another key (the final value at an offset, every
position of a duplicate, where a value was first read) are added by `with_final_value`,
`with_offsets` and `with_first_read`, meant for the capped example rows only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import POSITION, Partitions, acks_of, on_partitions, slot_topic_index

WRITE_EVIDENCE = ["process", "invoke_ns", "complete_ns", "ack_offset"]


def records(reads: DataFrame) -> DataFrame:
    """Every consumed record, live and final."""
    return reads.where(F.col("type") == "record").select("phase", *POSITION, "value")


def complete_topics(complete: Partitions, topic_partitions: Mapping[str, int]) -> frozenset[str]:
    """Topics every partition of which (per run.json) had a complete final read."""
    per_topic = Counter(topic for topic, _ in complete)
    return frozenset(t for t, n in per_topic.items() if t in topic_partitions and n >= topic_partitions[t])


def reads_of(reads: DataFrame, values: DataFrame, positions: DataFrame | None = None) -> DataFrame:
    """The read records of `values` (a `value` column) or at `positions` (`POSITION` columns), in
    one scan of `reads`; both are few (broadcast), and so is the result: what example details read."""
    found = F.broadcast(values.select("value").distinct().withColumn("_of_value", F.lit(True)))
    wanted = F.coalesce(F.col("_of_value"), F.lit(False))
    rows = reads.where(F.col("type") == "record").join(found, "value", "left")
    if positions is not None:
        at = F.broadcast(positions.select(*POSITION).distinct().withColumn("_at_position", F.lit(True)))
        rows = rows.join(at, POSITION, "left")
        wanted = wanted | F.coalesce(F.col("_at_position"), F.lit(False))
    return rows.where(wanted).select(*reads.columns)


def with_final_value(anomalies: DataFrame, reads: DataFrame, offset_column: str) -> DataFrame:
    """`anomalies` plus `final_value`: what the final read holds at (topic, partition, offset_column).

    Only the final records at the anomalies' positions are aggregated, so this is cheap for a few rows.
    """
    wanted = anomalies.select("topic", "partition", F.col(offset_column).alias("offset")).distinct()
    final = records(reads).where(F.col("phase") == "final").join(F.broadcast(wanted), POSITION, "left_semi")
    at = final.groupBy(*POSITION).agg(F.min("value").alias("final_value"))
    return anomalies.join(
        at.withColumnRenamed("offset", offset_column), ["topic", "partition", offset_column], "left"
    )


def value_flags(values: DataFrame, complete: Partitions, topic_partitions: Mapping[str, int]) -> DataFrame:
    """`values` (`frames.value_table`) plus one boolean column per per-value anomaly kind, given the
    partitions whose final read was complete (`frames.complete_partitions`).

    `lost` is an `ok` write certainly missing from the complete final read of its partition (or,
    partition unknown, of its whole topic); `lost_unsure` one whose final reads span partitions on
    both sides of its own, which `lost_writes_from` settles exactly.
    """
    own, low, high = F.col("write_slot"), F.col("final_low"), F.col("final_high")
    own_topic, low_topic, high_topic = (slot_topic_index(c) for c in (own, low, high))
    ok = F.col("written") & (F.col("outcome") == "ok")  # written and read are never null in `value_table`
    partition_complete = on_partitions(complete)
    placed = ok & (F.col("partition") >= 0) & partition_complete
    topic_complete = F.col("topic").isin(*sorted(complete_topics(complete, topic_partitions)))
    unplaced = ok & (F.col("partition") < 0) & F.coalesce(topic_complete, F.lit(False))
    found_certain = F.coalesce((own == low) | (own == high), F.lit(False))
    outside = low.isNull() | (own < low) | (own > high)
    topic_missed = low.isNull() | (own_topic < low_topic) | (own_topic > high_topic)
    read, written = F.col("read"), F.col("written")
    moved = (F.col("read_low") != F.col("read_high")) | (F.col("offset_low") != F.col("offset_high"))
    return values.select(
        *values.columns,
        ((placed & ~found_certain & outside) | (unplaced & topic_missed)).alias("lost"),
        (
            (placed & ~found_certain & ~outside)
            | (unplaced & ~topic_missed & (low_topic != own_topic) & (high_topic != own_topic))
        ).alias("lost_unsure"),
        (read & moved).alias("duplicate"),
        (read & written & (F.col("outcome") == "fail")).alias("phantom"),
        (read & ~written).alias("unexpected"),
        # Read only by live consumers, at its own partition, and not in that partition's complete
        # final read: a record a consumer saw (so below the high watermark: committed) is gone.
        (
            read
            & written
            & F.col("final_low").isNull()
            & (F.col("read_low") == own)
            & (F.col("read_high") == own)
            & partition_complete
        ).alias("read_then_lost"),
    )


FLAG_KINDS = ("lost", "lost_unsure", "duplicate", "phantom", "unexpected", "read_then_lost")
"""The boolean columns `value_flags` adds, one per per-value kind (and the unsure losses)."""


def anomalous_values(flags: DataFrame) -> DataFrame:
    """The rows of `value_flags` with any per-value anomaly (or an unsure loss): few, worth caching."""
    any_kind = F.lit(False)
    for kind in FLAG_KINDS:
        any_kind = any_kind | F.coalesce(F.col(kind), F.lit(False))
    return flags.where(any_kind)


LOST_COLUMNS = ["topic", "partition", "acks", "value", *WRITE_EVIDENCE]
READ_THEN_LOST_COLUMNS = ["topic", "partition", "acks", "value", "outcome", *WRITE_EVIDENCE, "read_offset"]


def read_then_lost_from(flags: DataFrame) -> DataFrame:
    """Values a live consumer read at their own partition that its complete final read lacks."""
    rows = flags.where(F.col("read_then_lost")).withColumn("read_offset", F.col("offset_low"))
    return rows.select(*READ_THEN_LOST_COLUMNS)


def lost_writes_from(
    flags: DataFrame, reads: DataFrame, unsure: bool = True, columns: list[str] = LOST_COLUMNS
) -> DataFrame:
    """Lost writes of `value_flags`, with `columns`; the rare unsure ones are settled against the
    final records (`unsure=False` skips that when the caller knows there are none)."""
    lost = flags.where(F.col("lost")).select(*columns)
    if not unsure:
        return lost
    final = records(reads).where(F.col("phase") == "final")
    candidates = flags.where(F.col("lost_unsure")).select(*columns)
    placed = candidates.where(F.col("partition") >= 0).join(
        final, ["topic", "partition", "value"], "left_anti"
    )
    unplaced = candidates.where(F.col("partition") < 0).join(final, ["topic", "value"], "left_anti")
    return lost.unionByName(placed).unionByName(unplaced)


def _acked_with_offset(writes: DataFrame) -> DataFrame:
    """`ok` writes whose partition and offset the broker told (not acks=0, not unplaced)."""
    return writes.where(
        (F.col("outcome") == "ok") & F.col("ack_offset").isNotNull() & (F.col("partition") >= 0)
    )


def divergent_offsets(writes: DataFrame, reads: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """Positions holding two different values, among `ok` write offsets and all reads.

    The earliest-acknowledged `ok` write at the position, if any, is the evidence.
    """
    acked = _acked_with_offset(writes).withColumn("offset", F.col("ack_offset"))
    evidence = F.struct("value", *WRITE_EVIDENCE)
    no_write = F.lit(None).cast(acked.select(evidence).schema[0].dataType).alias("write")
    observed = (
        records(reads)
        .select(*POSITION, "value", "phase", no_write)
        .unionByName(
            acked.select(
                *POSITION, "value", F.lit(None).cast("string").alias("phase"), evidence.alias("write")
            )
        )
    )
    # One shuffle and sort by position, no string in an aggregation buffer (that would sort twice):
    # the window sees every value at a position, and only the few divergent positions' rows leave it.
    # The offset leads the sort key: topic names share their first 8 bytes (the sort's prefix).
    at_position = Window.partitionBy("offset", "partition", "topic")
    spread = observed.select(
        "*", F.min("value").over(at_position).alias("low"), F.max("value").over(at_position).alias("high")
    )
    details = (
        spread.where(F.col("low") != F.col("high"))
        .groupBy(*POSITION)
        .agg(
            F.array_sort(F.collect_set("value")).alias("values"),
            F.min(F.when(F.col("phase") == "final", F.col("value"))).alias("final_value"),
            F.min_by("write", F.col("write.complete_ns")).alias("write"),
        )
    )
    return details.select(
        *POSITION,
        acks_of(F.col("topic"), topic_acks).alias("acks"),
        "values",
        "write.*",
        "final_value",
    )


def duplicates_from(flags: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """Values read at two or more distinct positions, without `offsets` (see `with_offsets`)."""
    return flags.where(F.col("duplicate")).select(
        F.col("read_topic").alias("topic"),
        "partition",
        acks_of(F.col("read_topic"), topic_acks).alias("acks"),
        "value",
        *WRITE_EVIDENCE,
    )


def with_offsets(
    rows: DataFrame, reads: DataFrame, value: str = "value", offsets: str = "offsets"
) -> DataFrame:
    """`rows` plus column `offsets`: every [partition, offset] the value in column `value` was read
    at, sorted. Meant for a few rows."""
    at = F.array(F.col("partition").cast("long"), F.col("offset"))
    wanted = F.broadcast(rows.select(F.col(value).alias("value")))
    found = (
        records(reads)
        .join(wanted, "value", "left_semi")
        .groupBy(F.col("value").alias(value))
        .agg(F.array_sort(F.collect_set(at)).alias(offsets))
    )
    return rows.join(found, value, "left").select(*rows.columns, offsets)


def reordered_details(reordered: DataFrame, reads: DataFrame) -> DataFrame:
    """`reordered_writes` rows plus `offsets` and `earlier_offsets`: every [partition, offset] the
    value and the earlier write it came before were read at. An earlier write also read below this
    one was appended there first, by an attempt whose acknowledgement never came, and appended
    again, acknowledged, by a retry after this one: the retry reordered, not the first append."""
    detailed = with_offsets(with_offsets(reordered, reads), reads, "earlier_value", "earlier_offsets")
    return detailed.select(
        "topic",
        "partition",
        "acks",
        "value",
        "offsets",
        *WRITE_EVIDENCE,
        "earlier_value",
        "earlier_offset",
        "earlier_offsets",
    )


def with_first_read(rows: DataFrame, reads: DataFrame) -> DataFrame:
    """`rows` plus where their values were first read: `first_at`, the smallest (topic, partition,
    offset), and `first_in_partition`, the smallest (partition, offset). Meant for a few rows."""
    wanted = F.broadcast(rows.select("value"))
    firsts = (
        records(reads)
        .join(wanted, "value", "left_semi")
        .groupBy("value")
        .agg(
            F.min(F.struct(*POSITION)).alias("first_at"),
            F.min(F.struct("partition", "offset")).alias("first_in_partition"),
        )
    )
    return rows.join(firsts, "value", "left")


def phantom_writes_from(flags: DataFrame, extra: tuple[str, ...] = ()) -> DataFrame:
    """Writes that ended in `fail` but were read, without where (see `phantom_details`), with the
    `extra` columns of `flags`."""
    return flags.where(F.col("phantom")).select("topic", "acks", "value", *WRITE_EVIDENCE, "error", *extra)


def phantom_details(phantoms: DataFrame, reads: DataFrame) -> DataFrame:
    """`phantom_writes_from` rows with the partition and offset of their first read."""
    extra = [c for c in phantoms.columns if c not in ("topic", "acks", "value", *WRITE_EVIDENCE, "error")]
    return with_first_read(phantoms, reads).select(
        "topic",
        "first_in_partition.partition",
        "first_in_partition.offset",
        "acks",
        "value",
        *WRITE_EVIDENCE,
        "error",
        *extra,
    )


def unexpected_values_from(flags: DataFrame, topic_acks: Mapping[str, str]) -> DataFrame:
    """Values read that no write invoked, with the topic first read in (see `unexpected_details`)."""
    return flags.where(F.col("unexpected")).select(
        F.col("read_topic").alias("topic"), acks_of(F.col("read_topic"), topic_acks).alias("acks"), "value"
    )


def unexpected_details(unexpected: DataFrame, reads: DataFrame) -> DataFrame:
    """`unexpected_values_from` rows at their first position (topic, partition, offset)."""
    return with_first_read(unexpected, reads).select(
        "first_at.topic", "first_at.partition", "first_at.offset", "acks", "value"
    )


def reordered_writes(writes: DataFrame) -> DataFrame:
    """`ok` writes at a lower offset than an earlier-invoked `ok` write of the same process and partition."""
    acked = _acked_with_offset(writes)
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

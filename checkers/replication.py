"""Replication checks over what the cluster itself held: each replica's log at the end
(`replica-divergence`) and ZooKeeper's epochs during the run (`epoch-regression`).

Pure DataFrame -> DataFrame functions, as in `checkers.anomalies`. `replica_values` has one row per
(broker, topic, partition, offset, value) that a replica held when the run ended (replicas.jsonl,
exploded); `epochs` one row per (time_ns, topic, partition, epoch) seen in cluster.jsonl, with
topic and partition null for the controller epoch.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.frames import POSITION, acks_of

REPLICA_COLUMNS = ["broker", "topic", "partition", "offset", "value"]
EPOCH_COLUMNS = ["time_ns", "topic", "partition", "epoch"]


def replica_divergence(
    replica_values: DataFrame, writes: DataFrame, topic_acks: Mapping[str, str]
) -> DataFrame:
    """One row per (topic, partition, offset) at which two replicas hold different values: below
    both of their ends, since each holds that offset. `replicas` lists (broker, value) by broker;
    `acked_values` are the values acknowledged at that offset (more than one after a truncation)
    and `complete_ns` the first of their acknowledgements (null when none was)."""
    # Numbers only in the aggregation buffers over every replica row (Spark hash-aggregates them;
    # a list of structs per offset made it keep every row): the holders of each distinct value,
    # then how many values and holders each offset has. Only the few diverged offsets collect theirs.
    value = F.coalesce(F.col("value"), F.lit("\u0000null"))
    per_value = replica_values.groupBy(*POSITION, value.alias("version")).agg(F.count("*").alias("holders"))
    per_offset = per_value.groupBy(*POSITION).agg(
        F.sum("holders").alias("holders"), F.count("*").alias("versions")
    )
    at = per_offset.where((F.col("holders") > 1) & (F.col("versions") > 1)).select(*POSITION)
    diverged = (
        replica_values.join(F.broadcast(at), list(POSITION), "left_semi")
        .groupBy(*POSITION)
        .agg(F.sort_array(F.collect_list(F.struct("broker", "value"))).alias("replicas"))
    )
    positions = F.broadcast(diverged.select("topic", "partition", F.col("offset").alias("ack_offset")))
    acked = (
        writes.where(F.col("outcome") == "ok")
        .join(positions, ["topic", "partition", "ack_offset"], "left_semi")
        .groupBy("topic", "partition", F.col("ack_offset").alias("offset"))
        .agg(
            F.sort_array(F.collect_list("value")).alias("acked_values"),
            F.min("complete_ns").alias("complete_ns"),
        )
    )
    return diverged.join(acked, POSITION, "left").select(
        "topic",
        "partition",
        acks_of(F.col("topic"), topic_acks).alias("acks"),
        "offset",
        "replicas",
        "acked_values",
        "complete_ns",
    )


def epoch_regressions(epochs: DataFrame) -> DataFrame:
    """One row per sample whose epoch is lower than the sample before it, per partition (leader
    epoch) and for the controller (topic and partition null): `what`, `epoch`, `previous_epoch`,
    `time_ns` and `previous_ns`."""
    order = Window.partitionBy("topic", "partition").orderBy("time_ns")
    with_previous = epochs.select(
        *EPOCH_COLUMNS,
        F.lag("epoch").over(order).alias("previous_epoch"),
        F.lag("time_ns").over(order).alias("previous_ns"),
    )
    return with_previous.where(F.col("epoch") < F.col("previous_epoch")).select(
        "topic",
        "partition",
        F.when(F.col("topic").isNull(), F.lit("controller")).otherwise(F.lit("leader")).alias("what"),
        "epoch",
        "previous_epoch",
        "time_ns",
        "previous_ns",
    )

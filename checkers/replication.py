"""Replication checks over what the cluster itself held: each replica's log at the end
(`replica-divergence`), ZooKeeper's epochs during the run (`epoch-regression`) and the ISR around a
failed disk (`failed-disk-in-isr`).

Pure DataFrame -> DataFrame functions, as in `checkers.anomalies`. `replica_values` has one row per
(broker, topic, partition, offset, value) that a replica held when the run ended (replicas.jsonl,
exploded); `epochs` one row per (time_ns, topic, partition, epoch) seen in cluster.jsonl, with
topic and partition null for the controller epoch; `isr` one row per (time_ns, topic, partition,
isr) sampled there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers.frames import POSITION, acks_of
from contract.events import FaultWindow

REPLICA_COLUMNS = ["broker", "topic", "partition", "offset", "value"]
EPOCH_COLUMNS = ["time_ns", "topic", "partition", "epoch"]
ISR_SCHEMA = T.StructType(
    [
        T.StructField("time_ns", T.LongType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("isr", T.ArrayType(T.IntegerType())),
    ]
)


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


FAILED_DISK_COLUMNS = [
    "topic",
    "partition",
    "acks",
    "broker",
    "fault",
    "failed_ops",
    "start_ns",
    "stop_ns",
    "left_ns",
    "last_in_isr_ns",
]
"""The columns of `failed_disk_replicas`."""
DISK_FAILURES = {"disk-full": "enospc", "fsync-error": "fsync_eio"}
"""The disk faults that fail operations, and the count of their disks' reports that says how many
(faults.jsonl's `disks`)."""
LEAVES_ISR_WITHIN_NS = 30_000_000_000
"""How long after a disk fault's heal its broker may still be in an ISR: a broker halts at its next
write or checkpoint (every 5 s), and the controller drops it when its session ends (ZooKeeper's
6 s, 18 s from 2.5; KRaft's 9 s)."""


@dataclass(frozen=True)
class DiskFailure:
    """A broker whose disk a fault made fail `failed_ops` operations between `start_ns` and `stop_ns`."""

    fault: str
    broker: int
    start_ns: int
    stop_ns: int
    failed_ops: int


DISK_FAILURE_SCHEMA = T.StructType(
    [
        T.StructField("fault", T.StringType()),
        T.StructField("broker", T.IntegerType()),
        T.StructField("start_ns", T.LongType()),
        T.StructField("stop_ns", T.LongType()),
        T.StructField("failed_ops", T.LongType()),
    ]
)
"""`DiskFailure`'s fields, as a frame of them has them."""


def disk_failures(windows: Iterable[FaultWindow]) -> Iterator[DiskFailure]:
    """The brokers whose disks failed operations in a healed `disk-full` or `fsync-error`, with how
    many (`FaultWindow.disk_counts`). A fault that could not start or heal, or whose heal the history
    does not hold, says nothing."""
    for window in windows:
        count = DISK_FAILURES.get(window.fault)
        if count is None or window.stop_ns is None or "error" in window.detail:
            continue
        for node, counts in window.disk_counts().items():
            broker = node.removeprefix("kafka-")
            if broker.isdigit() and counts.get(count):
                yield DiskFailure(window.fault, int(broker), window.start_ns, window.stop_ns, counts[count])


def failed_disk_replicas(
    isr: DataFrame, failures: DataFrame, topic_acks: Mapping[str, str], within_ns: int = LEAVES_ISR_WITHIN_NS
) -> DataFrame:
    """One row per (disk failure, partition) whose ISR held the failed broker at the fault's start
    (the last sample at or before it), where the samples can tell whether it left: `left_ns`, the
    first sample after the start without it, or null when none did up to `within_ns` after the heal
    although the samples go on past that (it stayed). A broker the samples lose sight of before then
    without leaving is not judged. `last_in_isr_ns`: the last sample up to then with it in the ISR."""
    cases = isr.crossJoin(F.broadcast(failures))
    in_isr = F.array_contains("isr", F.col("broker"))
    until = F.col("stop_ns") + F.lit(within_ns)
    case = ["fault", "broker", "start_ns", "stop_ns", "failed_ops", "topic", "partition"]
    judged = cases.groupBy(*case).agg(
        F.max_by(in_isr, F.when(F.col("time_ns") <= F.col("start_ns"), F.col("time_ns"))).alias("at_start"),
        F.min(
            F.when(
                (F.col("time_ns") > F.col("start_ns")) & (F.col("time_ns") <= until) & ~in_isr,
                F.col("time_ns"),
            )
        ).alias("left_ns"),
        F.max(F.when((F.col("time_ns") <= until) & in_isr, F.col("time_ns"))).alias("last_in_isr_ns"),
        F.max("time_ns").alias("seen_until_ns"),
    )
    return (
        judged.where(
            F.coalesce(F.col("at_start"), F.lit(False))
            & (F.col("left_ns").isNotNull() | (F.col("seen_until_ns") >= until))
        )
        .withColumn("acks", acks_of(F.col("topic"), topic_acks))
        .select(*FAILED_DISK_COLUMNS)
    )

"""A run's history as the checkers take it: the cached tables, the small files, and the result out."""

from __future__ import annotations

import json
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from checkers import frames, replication, transactions
from checkers.io.cache import SIDE_FILES, ParsedFiles, cached_history, parsed_files, parsed_table
from checkers.io.layout import Layout, check_layout
from checkers.io.scanned import scan_run
from checkers.io.sources import uri
from checkers.session import empty_frame, spark_errors
from contract.broker_logs import LogEvent
from contract.events import FaultWindow
from contract.history import (
    CLUSTER,
    CONSUMES,
    REPLICAS,
    RESULT,
    TRANSACTIONS,
    linked_below,
    write_atomic,
)


@dataclass(frozen=True)
class History:
    """A validated run: run.json, per-value table, writes and reads as DataFrames, small files as lists.

    `values` is `frames.value_table` of the history with names (`frames.named`), `writes` its written
    rows (`frames.writes_of`), `reads` the read records (`frames.RECORD_COLUMNS` only) and
    `complete_partitions` the partitions whose final read was complete (`frames.complete_partitions`
    of reads.jsonl's `end` events).
    """

    run: dict[str, Any]
    values: DataFrame
    writes: DataFrame
    reads: DataFrame
    complete_partitions: frames.Partitions
    faults: list[FaultWindow]
    cluster: list[dict[str, Any]]
    event_counts: dict[str, int]
    client_log: list[dict[str, Any]] = field(default_factory=list)
    epochs: DataFrame | None = None
    """Leader and controller epochs as ZooKeeper showed them (`replication.EPOCH_COLUMNS`)."""
    isr: DataFrame | None = None
    """Each partition's ISR as cluster.jsonl sampled it (`replication.ISR_SCHEMA`)."""
    replica_values: DataFrame | None = None
    """What each replica held at the end (`replication.REPLICA_COLUMNS`; empty without replicas.jsonl)."""
    replica_states: list[dict[str, Any]] | None = None
    """replicas.jsonl's `replica` lines (each replica's offsets and what could not be read); None
    without the file."""
    broker_log: list[LogEvent] = field(default_factory=list)
    """The truncations and halts the brokers logged (RUN/logs/kafka-N.log)."""
    consumes: DataFrame | None = None
    """consumes.jsonl (`CONSUME_SCHEMA`, with `seq`: line order); None without the file."""
    transactions: DataFrame | None = None
    """Each transaction's outcome (`transactions.OUTCOME_COLUMNS`); None without transactions.jsonl.
    `values` and `writes` then hold each transactional write's outcome for readers."""
    transaction_steps: DataFrame | None = None
    """transactions.jsonl (`TXN_SCHEMA`); None without the file."""
    transactional_writes: DataFrame | None = None
    """Each write of a transaction, appended or not and how its transaction ended
    (`transactions.transactional_writes`); None without transactions.jsonl."""


def load_history(
    spark: SparkSession, run_dir: Path, layout: Layout | None = None, parsed: ParsedFiles | None = None
) -> History:
    """Validate the run directory (unless `layout` says it was) and return its history, converting
    JSONL to Parquet if needed (from `parsed`, when given: see `parsed_files`)."""
    layout = layout or check_layout(run_dir)
    if parsed is None:
        with parsed_files(run_dir, layout.run, scan_run(run_dir).digests()) as parsed_now:
            return load_history(spark, run_dir, layout, parsed_now)
    run, cluster = layout.run, layout.cluster
    cached = cached_history(spark, run_dir, run, parsed)
    counts = {
        **cached.counts,
        "faults": layout.fault_events,
        "cluster": len(cluster),
        "client": len(layout.client_log),
    }
    sides = _SideFiles(spark, run_dir, cached.cache)
    replica_values = _replica_values(sides, layout.replica_states is not None)
    values, outcomes, steps, transactional = cached.values, None, None, None
    if layout.transaction_steps is not None:
        with spark_errors("reading transactions.jsonl", str(run_dir / TRANSACTIONS)):
            steps = sides.lines(TRANSACTIONS)
            outcomes = transactions.transaction_outcomes(steps)
        transactional = transactions.transactional_writes(values, outcomes)
        values = transactions.with_transaction_outcomes(values, outcomes)
        counts["transactions"] = layout.transaction_steps
    writes = frames.writes_of(values)
    if layout.replica_states is not None:
        counts["replicas"] = len(layout.replica_states)
    if layout.consume_events is not None:
        counts["consumes"] = layout.consume_events
    return History(
        run,
        values,
        writes,
        cached.reads,
        cached.complete_partitions,
        layout.faults,
        cluster,
        counts,
        layout.client_log,
        _epochs(sides),
        _isr(sides),
        replica_values,
        layout.replica_states,
        layout.broker_log,
        _consumes(sides) if layout.consume_events is not None else None,
        outcomes,
        steps,
        transactional,
    )


_REPLICA_VALUES_SCHEMA = T.StructType(
    [
        T.StructField("broker", T.IntegerType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("offset", T.LongType()),
        T.StructField("value", T.StringType()),
    ]
)


def _replica_values(sides: _SideFiles, present: bool) -> DataFrame:
    """replicas.jsonl's values, one row per (broker, topic, partition, offset) (none without the
    file); validated line by line in `check_layout` before Spark reads it."""
    if not present:
        return empty_frame(sides.spark, _REPLICA_VALUES_SCHEMA)
    lines = sides.lines(REPLICAS)
    held = lines.where(F.col("type") == "values").select(
        "broker", "topic", "partition", "offset", F.posexplode("values").alias("position", "value")
    )
    return held.select(
        "broker", "topic", "partition", (F.col("offset") + F.col("position")).alias("offset"), "value"
    )


_EPOCHS_SCHEMA = T.StructType(
    [
        T.StructField("time_ns", T.LongType()),
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("epoch", T.LongType()),
    ]
)


def _epochs(sides: _SideFiles) -> DataFrame:
    """cluster.jsonl's epochs, read by Spark from the file (validated in `check_layout`): one row per
    sample for the controller epoch and one per sampled partition with a leader epoch."""
    if not (sides.run_dir / CLUSTER).is_file():  # optional: no samples, no epochs
        return empty_frame(sides.spark, _EPOCHS_SCHEMA)
    samples = sides.lines(CLUSTER)
    controller = samples.where(F.col("controller_epoch").isNotNull()).select(
        "time_ns",
        F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.col("controller_epoch").alias("epoch"),
    )
    partitions = (
        samples.select("time_ns", F.explode("partitions").alias("p"))
        .where(F.col("p.leader_epoch") >= 0)
        .select("time_ns", "p.topic", "p.partition", F.col("p.leader_epoch").alias("epoch"))
    )
    return controller.unionByName(partitions)


def _isr(sides: _SideFiles) -> DataFrame:
    """cluster.jsonl's ISRs, read by Spark from the file (validated in `check_layout`): one row per
    sampled partition with an ISR (a partition whose state is missing has none)."""
    if not (sides.run_dir / CLUSTER).is_file():
        return empty_frame(sides.spark, replication.ISR_SCHEMA)
    partitions = sides.lines(CLUSTER).select("time_ns", F.explode("partitions").alias("p"))
    return partitions.where(F.col("p.isr").isNotNull()).select("time_ns", "p.topic", "p.partition", "p.isr")


def _consumes(sides: _SideFiles) -> DataFrame:
    """consumes.jsonl (validated in `check_layout`) with `seq`, each line's place in the file: a
    member's events are in its own order there, and times of two events may tie."""
    with spark_errors("reading consumes.jsonl", str(sides.run_dir / CONSUMES)):
        lines = sides.lines(CONSUMES)
        return lines.withColumn("seq", F.monotonically_increasing_id())


@dataclass(frozen=True)
class _SideFiles:
    """The run's side files (`SIDE_FILES`) as Spark reads them, from the published `cache`."""

    spark: SparkSession
    run_dir: Path
    cache: Path

    def lines(self, name: str) -> DataFrame:
        """The side file `name` with its schema: pyarrow's parse, if it took the file
        (`parsed_files`), else parsed by Spark."""
        parquet, schema = parsed_table(self.cache, name), SIDE_FILES[name][1]
        reader = self.spark.read.schema(schema)
        return reader.parquet(uri(parquet)) if parquet else reader.json(uri(self.run_dir / name))


def discard_result(run_dir: Path) -> None:
    """Remove check/result.json as a check starts: a check that then fails on the history must not
    leave an older verdict behind for `kchaos report` to publish as this history's. Nothing is
    removed through a symbolic link (the check refuses it when it writes); a file that cannot be
    removed cannot be replaced either, which the check's layout validation says."""
    with suppress(OSError):
        if not linked_below(run_dir, RESULT):
            (run_dir / RESULT).unlink()


def write_result(run_dir: Path, result: dict[str, Any]) -> Path:
    """Write check/result.json atomically."""
    return write_atomic(run_dir, RESULT, json.dumps(result, indent=2) + "\n")

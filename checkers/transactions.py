"""Transactions: each one's outcome from its producer's steps, and what that makes of its writes.

Pure DataFrame -> DataFrame functions over transactions.jsonl (`frames.TXN_SCHEMA`) and the per-value
table (`frames.value_table`). A transaction is `committed` when a commit of it ended `ok`; `aborted`
when an abort ended `ok`, or when its process initialized a new client afterwards (which fences the
old one: the coordinator aborts what it left open) and no commit of it may have reached the
coordinator (every commit invoked ended `fail`); `unknown` otherwise. A write's `ok` says only that it
was appended: what a reader may see of it is its transaction's outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers.frames import Partitions, on_partitions

OUTCOMES = ("committed", "aborted", "unknown")
OUTCOME_COLUMNS = [
    "process",
    "transactional_id",
    "txn",
    "outcome",
    "begin_ns",
    "commit_ns",
    "end_ns",
    "error",
    "error_class",
]
"""One row per transaction: its outcome, its begin, its first commit's invoke (null: none), its last
step, and the error its last failed step ended in (null when none failed)."""
WRITE_OUTCOME = {"committed": "ok", "aborted": "fail", "unknown": "info"}
"""A transactional write's outcome for readers: visible, never visible, or either."""


def transaction_outcomes(steps: DataFrame) -> DataFrame:
    """`OUTCOME_COLUMNS` for every transaction begun in `steps` (transactions.jsonl)."""
    of_txn = steps.where(F.col("txn").isNotNull() & (F.col("type") != "init"))
    step, phase = F.col("type"), F.col("phase")
    failed = phase.isin("fail", "info")
    last_failure = F.max_by(F.struct("error", "error_class"), F.when(failed, F.col("time_ns")))
    per_txn = of_txn.groupBy("process", "txn").agg(
        F.first("transactional_id").alias("transactional_id"),
        F.min(F.when(step == "begin", F.col("time_ns"))).alias("begin_ns"),
        F.min(F.when((step == "commit") & (phase == "invoke"), F.col("time_ns"))).alias("commit_ns"),
        F.max("time_ns").alias("end_ns"),
        F.max((step == "commit") & (phase == "ok")).alias("committed"),
        F.max((step == "abort") & (phase == "ok")).alias("aborted"),
        # A commit invoked and not definitely refused may have reached the coordinator.
        (
            F.count(F.when((step == "commit") & (phase == "invoke"), 1))
            > F.count(F.when((step == "commit") & (phase == "fail"), 1))
        ).alias("commit_unsure"),
        last_failure.alias("failure"),
    )
    inits = steps.where((F.col("type") == "init") & (F.col("phase") == "ok")).select(
        F.col("process").alias("init_process"), F.col("time_ns").alias("init_ns")
    )
    fenced = (
        per_txn.join(
            inits,
            (F.col("init_process") == F.col("process")) & (F.col("init_ns") > F.col("begin_ns")),
            "left",
        )
        .groupBy("process", "txn")
        .agg(F.max(F.col("init_ns").isNotNull()).alias("fenced"))
    )
    outcome = (
        F.when(F.col("committed"), "committed")
        .when(F.col("aborted") | (F.col("fenced") & ~F.col("commit_unsure")), "aborted")
        .otherwise("unknown")
    )
    return per_txn.join(fenced, ["process", "txn"]).select(
        "process",
        "transactional_id",
        "txn",
        outcome.alias("outcome"),
        "begin_ns",
        "commit_ns",
        "end_ns",
        "failure.error",
        "failure.error_class",
    )


def with_transaction_outcomes(values: DataFrame, outcomes: DataFrame) -> DataFrame:
    """`values` (named) with each transactional write's `outcome` replaced by what its transaction's
    outcome makes of it (`WRITE_OUTCOME`), but a write that itself definitely failed; a write of a
    transaction with no steps is `info`."""
    by_txn = F.broadcast(
        outcomes.select(
            F.col("process").alias("_txn_process"),
            F.col("txn").alias("_txn"),
            F.col("outcome").alias("_txn_outcome"),
        )
    )
    joined = values.join(
        by_txn,
        (F.col("process") == F.col("_txn_process")) & (F.col("txn") == F.col("_txn")),
        "left",
    )
    mapped = F.create_map(*[F.lit(x) for pair in WRITE_OUTCOME.items() for x in pair])[F.col("_txn_outcome")]
    # A write the client refused outright was never in the log, whatever became of its transaction.
    own = F.col("outcome")
    transactional = F.col("txn").isNotNull() & (own != "fail")
    outcome = F.when(transactional, F.coalesce(mapped, F.lit("info"))).otherwise(own)
    return joined.withColumn("outcome", outcome).select(*values.columns)


def transactional_writes(values: DataFrame, outcomes: DataFrame) -> DataFrame:
    """Each write of a transaction, as its own completion left it and as its transaction ended:
    `topic`, `partition`, `value`, `process`, `txn`, `appended` (its own `ok`: it is in the log) and
    `outcome` (the transaction's; null for a transaction with no steps). `values` as read, before
    `with_transaction_outcomes`."""
    by_txn = F.broadcast(outcomes.select("process", "txn", "outcome"))
    written = values.where(F.col("written") & F.col("txn").isNotNull()).select(
        "topic", "partition", "value", "process", "txn", (F.col("outcome") == "ok").alias("appended")
    )
    return written.join(by_txn, ["process", "txn"], "left")


TORN_COLUMNS = ["topic", "partition", "value", "process", "txn", "records", "found", "missing"]


def torn_transactions(values: DataFrame, complete: Partitions) -> DataFrame:
    """Committed transactions of which the complete final reads hold some records and not others:
    one row per transaction, at its first missing record (`records` written on complete partitions,
    `found` and `missing` of them)."""
    committed = values.where(F.col("txn").isNotNull() & (F.col("outcome") == "ok") & on_partitions(complete))
    found = F.col("final_low").isNotNull()
    missing = F.min_by(F.struct("topic", "partition", "value"), F.when(~found, F.col("value")))
    per_txn = committed.groupBy("process", "txn").agg(
        F.count(F.lit(1)).alias("records"),
        F.count(F.when(found, 1)).alias("found"),
        F.count(F.when(~found, 1)).alias("missing"),
        missing.alias("first_missing"),
    )
    torn = per_txn.where((F.col("found") > 0) & (F.col("missing") > 0))
    return torn.select(
        "first_missing.topic",
        "first_missing.partition",
        "first_missing.value",
        "process",
        "txn",
        "records",
        "found",
        "missing",
    )


def transaction_counts(outcomes: DataFrame) -> DataFrame:
    """Per transactional.id: transactions begun, committed, aborted and unknown, and of the failed
    ones how many ended in each error class (`fatal`, `abortable`, `retriable`)."""
    outcome, klass = F.col("outcome"), F.col("error_class")
    return outcomes.groupBy("transactional_id").agg(
        F.count(F.lit(1)).alias("begun"),
        *[F.count(F.when(outcome == name, 1)).alias(name) for name in OUTCOMES],
        *[
            F.count(F.when((outcome != "committed") & (klass == name), 1)).alias(f"{name}_errors")
            for name in ("fatal", "abortable", "retriable")
        ],
    )


def pipelines(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(output topic, group) of each consume-transform-produce pipeline run.json declares."""
    return [(str(t["name"]), str(t["pipeline"]["group"])) for t in run["topics"] if t.get("pipeline")]


PIPELINE_COLUMNS = [
    "topic",
    "partition",
    "value",
    "input_topic",
    "input_partition",
    "input_offset",
    "outputs",
]
"""A pipeline anomaly: at the output topic (and, for a duplicate, the first output's partition), the
input record's value and position, and how many committed outputs it has."""
PIPELINE_SCHEMA = (
    "topic string, partition int, value string, input_topic string, input_partition int, "
    "input_offset long, outputs long"
)


def _input_value() -> Column:
    """The input value a pipeline's output value names: what follows its first `/`."""
    return F.expr("substring(value, instr(value, '/') + 1)")


def committed_progress(steps: DataFrame, outcomes: DataFrame) -> DataFrame:
    """Per (group, topic, partition) of a pipeline's input, the highest offset a committed
    transaction stored (`committed`: every record below it is processed, as far as the group knows)."""
    stored = steps.where((F.col("type") == "offsets") & (F.col("phase") == "ok")).select(
        "process", "txn", "group", F.explode("offsets").alias("o")
    )
    committed = outcomes.where(F.col("outcome") == "committed").select("process", "txn")
    return (
        stored.join(committed, ["process", "txn"], "left_semi")
        .groupBy("group", "o.topic", "o.partition")
        .agg(F.max("o.offset").alias("committed"))
    )


def _outputs(values: DataFrame, output: str, *outcomes: str) -> DataFrame:
    """The pipeline's output writes of transactions with these write outcomes, with their `input`."""
    return values.where(
        (F.col("topic") == output) & F.col("txn").isNotNull() & F.col("outcome").isin(*outcomes)
    ).select("partition", _input_value().alias("input"))


def pipeline_inputs(reads: DataFrame, progress: DataFrame, group: str, complete: Partitions) -> DataFrame:
    """The input records of the pipeline's group below its committed offsets, in the complete final
    read of their partition: each processed, as the group's offsets say (reads' columns, and
    `committed`)."""
    return (
        reads.where((F.col("type") == "record") & (F.col("phase") == "final") & on_partitions(complete))
        .join(progress.where(F.col("group") == group).drop("group"), ["topic", "partition"])
        .where(F.col("offset") < F.col("committed"))
    )


def pipeline_skips(
    values: DataFrame, reads: DataFrame, progress: DataFrame, output: str, group: str, complete: Partitions
) -> DataFrame:
    """Input records below the group's committed offsets (in the complete final read of their
    partition) with no committed output: processed, as the group's offsets say, yet not written."""
    below = pipeline_inputs(reads, progress, group, complete)
    # An output of a transaction whose outcome is unknown may be committed: not a skip.
    outputs = _outputs(values, output, "ok", "info").select(F.col("input").alias("value"))
    return below.join(outputs, "value", "left_anti").select(
        F.lit(output).alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        "value",
        F.col("topic").alias("input_topic"),
        F.col("partition").alias("input_partition"),
        F.col("offset").alias("input_offset"),
        F.lit(0).cast("long").alias("outputs"),
    )


def pipeline_duplicates(values: DataFrame, reads: DataFrame, output: str) -> DataFrame:
    """Input records with more than one committed output: processed twice, both times committed."""
    outputs = _outputs(values, output, "ok")
    twice = (
        outputs.groupBy("input")
        .agg(F.count(F.lit(1)).alias("outputs"), F.min("partition").alias("partition"))
        .where(F.col("outputs") > 1)
    )
    first_read = (
        reads.where(F.col("type") == "record")
        .groupBy("value")
        .agg(F.min(F.struct("topic", "partition", "offset")).alias("at"))
    )
    return twice.join(first_read, twice["input"] == first_read["value"], "left").select(
        F.lit(output).alias("topic"),
        twice["partition"],
        F.col("input").alias("value"),
        F.col("at.topic").alias("input_topic"),
        F.col("at.partition").alias("input_partition"),
        F.col("at.offset").alias("input_offset"),
        "outputs",
    )


UNCOMMITTED_SCHEMA = (
    "group string, process string, topic string, partition int, offset long, value string, "
    "time_ns long, txn long, outcome string, commit_ns long"
)
UNCOMMITTED_COLUMNS = [field.split()[0] for field in UNCOMMITTED_SCHEMA.split(", ")]


def uncommitted_polls(polled: DataFrame, values: DataFrame, outcomes: DataFrame) -> DataFrame:
    """Group polls of records of transactions not committed when polled: aborted ones, or any before
    its first commit was invoked (`UNCOMMITTED_COLUMNS`, `process` the member, `time_ns` the poll).
    Counted for every group; promised away only where the group reads read_committed."""
    writes = values.where(F.col("txn").isNotNull()).select(
        "value", F.col("process").alias("writer"), F.col("txn")
    )
    txns = outcomes.select(F.col("process").alias("writer"), "txn", "outcome", "commit_ns")
    joined = polled.join(writes, "value").join(txns, ["writer", "txn"])
    early = F.col("commit_ns").isNull() | (F.col("time_ns") < F.col("commit_ns"))
    return joined.where((F.col("outcome") == "aborted") | early).select(*UNCOMMITTED_COLUMNS)


OFFSET_MISMATCH_SCHEMA = (
    "topic string, partition int, value string, process string, txn long, input_topic string, "
    "stored long, expected long"
)


def pipeline_offset_mismatches(
    values: DataFrame,
    reads: DataFrame,
    steps: DataFrame,
    outcomes: DataFrame,
    output: str,
    group: str,
    complete: Partitions,
) -> DataFrame:
    """Committed pipeline transactions whose stored input offset of a partition is not one past the
    last input record their outputs came from (as the final read places those records), or that
    stored an offset for a partition none of their outputs came from, or none for one they did:
    one row per (transaction, input partition), at the output topic (`OFFSET_MISMATCH_SCHEMA`; `value`
    the last such input record, `stored` and `expected` null where absent). Only input partitions
    whose final read is complete: elsewhere the inputs cannot all be placed."""
    committed = outcomes.where(F.col("outcome") == "committed").select("process", "txn")
    sources = values.where(
        (F.col("topic") == output) & F.col("txn").isNotNull() & (F.col("outcome") == "ok")
    ).select("process", "txn", _input_value().alias("value"))
    final = (F.col("type") == "record") & (F.col("phase") == "final") & on_partitions(complete)
    placed = reads.where(final).select(
        "value", F.col("topic").alias("input_topic"), F.col("partition").alias("input_partition"), "offset"
    )
    expected = (
        sources.join(placed, "value")
        .groupBy("process", "txn", "input_topic", "input_partition")
        .agg(F.max_by("value", "offset").alias("value"), (F.max("offset") + 1).alias("expected"))
    )
    stored = (
        steps.where((F.col("type") == "offsets") & (F.col("phase") == "ok") & (F.col("group") == group))
        .select("process", "txn", F.explode("offsets").alias("o"))
        .select(
            "process",
            "txn",
            F.col("o.topic").alias("input_topic"),
            F.col("o.partition").alias("input_partition"),
            F.col("o.offset").alias("stored"),
        )
        .join(committed, ["process", "txn"], "left_semi")
        .where(on_partitions(complete, "input_topic", "input_partition"))
    )
    keys = ["process", "txn", "input_topic", "input_partition"]
    both = expected.join(committed, ["process", "txn"], "left_semi").join(stored, keys, "full_outer")
    differ = F.coalesce(F.col("stored") != F.col("expected"), F.lit(True))
    return both.where(differ).select(
        F.lit(output).alias("topic"),
        F.col("input_partition").alias("partition"),
        "value",
        "process",
        "txn",
        "input_topic",
        "stored",
        "expected",
    )


def no_rows(like: DataFrame, schema: str) -> DataFrame:
    """An empty frame of `schema` ("name type, ..."), planned from `like`: no frame of Python data."""
    fields = [field.split() for field in schema.split(", ")]
    return like.where(F.lit(False)).select(*[F.lit(None).cast(kind).alias(name) for name, kind in fields])

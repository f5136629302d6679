"""The cases each guarantee is judged over: every one a chance to break it (`Guarantee.cases` of
contract.anomaly_kinds). A promised guarantee with none is `not-exercised`, never `held`: "0 of 0
records of aborted transactions read" says nothing about read_committed.

A topic's cases that its write counts do not hold already (`TOPIC_CASES`) are counted here: the
records read (live, and in all), the appended records of aborted transactions, the committed
transactions that could be torn, the pipelines' input records below their committed offsets, the
in-sync replicas whose disk failed (a few small Spark jobs), and, from the small files, the offsets
two replicas hold and the epoch samples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import astuple
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers import replication, transactions
from checkers.io import History, topic_acks
from checkers.session import empty_frame
from contract.anomaly_kinds import TOPIC_CASES

TopicCases = dict[str, dict[str, int]]
"""Per topic, each count of `TOPIC_CASES`."""


def topic_cases(history: History) -> TopicCases:
    """Every topic's cases (`TOPIC_CASES`) of a history."""
    names = [str(t["name"]) for t in history.run["topics"]]
    cases: TopicCases = {name: dict.fromkeys(TOPIC_CASES, 0) for name in names}
    for row in _read_counts(history.reads).collect():
        cases[row["topic"]] |= {"reads": int(row["reads"]), "live_reads": int(row["live_reads"])}
    if history.transactional_writes is not None:
        for row in _transaction_cases(history.transactional_writes).collect():
            cases[row["topic"]][row["case"]] = int(row["count"])
    for output, count in _pipeline_inputs(history).items():
        cases[output]["pipeline_inputs"] = count
    for name, held in replica_offsets(history.replica_states or []).items():
        if name in cases:
            cases[name]["replica_offsets"] = held
    for name in names:
        cases[name]["epoch_samples"] = epoch_samples(history.cluster, name)
    if any(replication.disk_failures(history.faults)):
        for row in failed_disks(history).groupBy("topic").count().collect():
            if row["topic"] in cases:
                cases[row["topic"]]["failed_disk_replicas"] = int(row["count"])
    return cases


def failed_disks(history: History) -> DataFrame:
    """The cases of `failed-disk-leaves-isr` (`replication.failed_disk_replicas`), those that stayed
    in the ISR with `left_ns` null: none unless a disk fault failed an operation of a broker's disk."""
    spark = history.writes.sparkSession
    failures = [astuple(failure) for failure in replication.disk_failures(history.faults)]
    schema = replication.DISK_FAILURE_SCHEMA
    frame = spark.createDataFrame(failures, schema) if failures else empty_frame(spark, schema)
    isr = history.isr if history.isr is not None else empty_frame(spark, replication.ISR_SCHEMA)
    return replication.failed_disk_replicas(isr, frame, topic_acks(history.run))


def _read_counts(reads: DataFrame) -> DataFrame:
    """Per topic: its records read (`reads`), and of them by live consumers (`live_reads`)."""
    return reads.groupBy("topic").agg(
        F.count(F.lit(1)).alias("reads"), F.count(F.when(F.col("phase") == "live", 1)).alias("live_reads")
    )


def _transaction_cases(writes: DataFrame) -> DataFrame:
    """Per topic and case (`aborted_appended`, `committed_transactions`): its count, from
    `transactions.transactional_writes`. A committed transaction can be torn only with two records
    or more in the log; it counts for every topic it wrote."""
    aborted = (
        writes.where(F.col("appended") & (F.col("outcome") == "aborted"))
        .groupBy("topic")
        .agg(F.count(F.lit(1)).alias("count"))
        .select("topic", F.lit("aborted_appended").alias("case"), "count")
    )
    committed = (
        writes.where(F.col("appended") & (F.col("outcome") == "committed"))
        .groupBy("process", "txn")
        .agg(F.count(F.lit(1)).alias("records"), F.collect_set("topic").alias("topics"))
        .where(F.col("records") >= 2)
        .select(F.explode("topics").alias("topic"))
        .groupBy("topic")
        .agg(F.count(F.lit(1)).alias("count"))
        .select("topic", F.lit("committed_transactions").alias("case"), "count")
    )
    return aborted.unionByName(committed)


def _pipeline_inputs(history: History) -> dict[str, int]:
    """Per pipeline output topic: the input records below its group's committed offsets."""
    steps, outcomes = history.transaction_steps, history.transactions
    pipelines = transactions.pipelines(history.run)
    if steps is None or outcomes is None or not pipelines:
        return {}
    progress = transactions.committed_progress(steps, outcomes)
    complete = history.complete_partitions
    return {
        output: transactions.pipeline_inputs(history.reads, progress, group, complete).count()
        for output, group in pipelines
    }


def replica_offsets(replicas: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per topic: the offsets of its partitions that two or more replicas hold (replicas.jsonl's
    `replica` lines, each holding `log_start` to `log_end`): what the replicas can be compared at."""
    ranges: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for line in replicas:
        start, end = line.get("log_start"), line.get("log_end")
        if line.get("type") == "replica" and isinstance(start, int) and isinstance(end, int) and end > start:
            ranges.setdefault((str(line["topic"]), int(line["partition"])), []).append((start, end))
    held: dict[str, int] = {}
    for (topic, _), spans in ranges.items():
        held[topic] = held.get(topic, 0) + _covered_twice(spans)
    return held


def _covered_twice(spans: list[tuple[int, int]]) -> int:
    """How many offsets lie in two or more of the half-open ranges `spans`."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    total, depth, last = 0, 0, 0
    for at, step in edges:
        if depth >= 2:
            total += at - last
        depth, last = depth + step, at
    return total


def epoch_samples(samples: Iterable[Mapping[str, Any]], topic: str) -> int:
    """The cluster.jsonl samples after a first that hold an epoch a regression of this topic could
    show in: the controller's, or a leader epoch of one of its partitions."""
    with_epochs = sum(
        1
        for sample in samples
        if sample.get("controller_epoch") is not None
        or any(
            p.get("topic") == topic and (p.get("leader_epoch") or -1) >= 0
            for p in sample.get("partitions") or []
        )
    )
    return max(with_epochs - 1, 0)

"""Assemble check/result.json (docs/RESULT_FORMAT.md) from the checkers' DataFrames.

Only small aggregates reach the driver: counts per topic and second, capped examples, the
per-second availability series and the recovery times.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial, reduce
from typing import Any, TypeVar

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

from checkers import anomalies, availability
from checkers.evidence import (
    ClusterTimeline,
    FaultInterval,
    active_fault_names,
    fault_intervals,
    merged_windows,
)
from checkers.guarantees import derive_guarantees, is_valid
from checkers.io import History, topic_acks
from harness.history import ACKS_MODES

RESULT_FORMAT = 1
EXAMPLE_CAP = 50
COUNT_NAMES = {
    "lost-write": "lost",
    "divergent-offset": "divergent",
    "duplicate": "duplicated",
    "phantom-write": "phantom",
    "unexpected-value": "unexpected",
    "reordered": "reordered",
}
WRITE_COUNTS = ("attempted", "acked", "failed", "indeterminate")
ANOMALY_COUNTS = ("lost", "divergent", "duplicated", "phantom", "reordered")
_OUTCOME_COUNT = {"ok": "acked", "fail": "failed", "info": "indeterminate"}
_EXAMPLE_ORDER = ("complete_ns", "topic", "partition", "offset", "value")


_T = TypeVar("_T")


def _submit(
    pool: ThreadPoolExecutor,
    context: SparkContext,
    scheduler_pool: str,
    work: Callable[..., _T],
    *args: Any,
) -> Future[_T]:
    """Run `work` in `pool`, its jobs on `context` in the FAIR scheduler's pool `scheduler_pool` (see
    `checkers.session`): parts of a check submitted side by side share the cores, so a part made of
    many small jobs is not queued behind the long tasks of another."""

    def run() -> _T:
        context.setLocalProperty("spark.scheduler.pool", scheduler_pool)
        return work(*args)

    return pool.submit(run)


@dataclass(frozen=True)
class _Found:
    """One anomaly kind: counts per (topic, second of the ack) and the capped examples."""

    per_topic_second: dict[tuple[str, int | None], int]
    examples: list[dict[str, Any]]

    @property
    def count(self) -> int:
        return sum(self.per_topic_second.values())


@dataclass(frozen=True)
class _Evidence:
    """What an example is annotated with: the cluster's state and the faults active at its ack."""

    timeline: ClusterTimeline
    intervals: list[FaultInterval]


def _collect_found(frame: DataFrame, evidence: _Evidence) -> _Found:
    """Counts and examples of a kind whose frame holds everything (divergent, reordered)."""
    frame = frame.persist()  # counted, then sampled: computed once
    try:
        second = (
            availability.second_of(F.col("complete_ns")) if "complete_ns" in frame.columns else F.lit(None)
        )
        rows = frame.groupBy("topic", second.cast("long").alias("t_s")).count().collect()
        per_topic_second = {(str(r["topic"]), r["t_s"]): int(r["count"]) for r in rows}
        examples = _examples(frame, evidence) if per_topic_second else []
        return _Found(per_topic_second, examples)
    finally:
        frame.unpersist()


def _first_rows(frame: DataFrame) -> DataFrame:
    """The EXAMPLE_CAP rows of `frame` that come first in example order."""
    return frame.orderBy(*_example_order(frame)).limit(EXAMPLE_CAP)


def _example_order(frame: DataFrame) -> list[Column]:
    return [F.col(c).asc_nulls_last() for c in _EXAMPLE_ORDER if c in frame.columns]


def _examples(
    frame: DataFrame, evidence: _Evidence, details: Callable[[DataFrame], DataFrame] | None = None
) -> list[dict[str, Any]]:
    """The first EXAMPLE_CAP rows of `frame` with their evidence; `details` adds columns to those rows."""
    first = _first_rows(frame)
    if details is not None:
        first = details(first).orderBy(*_example_order(frame))
    sample = first.collect()
    examples = []
    for row in sample:
        example = row.asDict(recursive=True)
        if "complete_ns" in example:
            at = example["complete_ns"]
            example |= evidence.timeline.state_at(at, example["topic"], example["partition"])
            example["active_faults"] = active_fault_names(evidence.intervals, at)
        examples.append(example)
    return examples


@dataclass
class _ValueSummary:
    """What one aggregation of the per-value frame tells: write counts and per-value anomaly counts."""

    write_counts: dict[str, dict[str, int]]
    unplaced: set[str]
    written: set[tuple[str, int]]
    per_kind: dict[str, dict[tuple[str, int | None], int]]
    lost_unsure: int


_VALUE_KINDS = {
    "lost-write": "lost",
    "duplicate": "duplicate",
    "phantom-write": "phantom",
    "unexpected-value": "unexpected",
}


def _summarize(history: History, flags: DataFrame) -> _ValueSummary:
    write_counts: dict[str, dict[str, int]] = {
        str(t["name"]): dict.fromkeys(WRITE_COUNTS, 0) for t in history.run["topics"]
    }
    unplaced: set[str] = set()
    written: set[tuple[str, int]] = set()
    per_kind: dict[str, dict[tuple[str, int | None], int]] = {kind: defaultdict(int) for kind in _VALUE_KINDS}
    lost_unsure = 0
    for row in history.writes.groupBy("topic", "partition", "outcome").count().collect():
        topic = write_counts[row["topic"]]
        topic["attempted"] += int(row["count"])
        topic[_OUTCOME_COUNT[row["outcome"]]] += int(row["count"])
        if row["partition"] < 0:
            unplaced.add(str(row["topic"]))
        else:
            written.add((str(row["topic"]), int(row["partition"])))
    for row in anomalies.value_summary(flags).collect():
        t_s = row["t_s"]
        for kind, flag in _VALUE_KINDS.items():
            if row[flag]:
                topic_of = row["read_topic"] if flag in ("duplicate", "unexpected") else row["topic"]
                per_kind[kind][(str(topic_of), None if flag == "unexpected" else t_s)] += int(row[flag])
        lost_unsure += int(row["lost_unsure"])
    return _ValueSummary(
        write_counts, unplaced, written, {k: dict(v) for k, v in per_kind.items()}, lost_unsure
    )


def _incomplete_partitions(
    history: History, complete: DataFrame, summary: _ValueSummary
) -> list[dict[str, Any]]:
    done = {(r["topic"], r["partition"]) for r in complete.collect()}
    written = set(summary.written)
    for topic in history.run["topics"]:
        if topic["name"] in summary.unplaced:
            written |= {(topic["name"], p) for p in range(int(topic.get("partitions") or 0))}
    return [{"topic": t, "partition": p} for t, p in sorted(written - done)]


def _value_found(
    history: History, evidence: _Evidence
) -> tuple[dict[str, _Found], _ValueSummary, list[dict[str, Any]]]:
    """The per-value anomaly kinds' counts and examples, the write counts and the incomplete partitions.

    Lost, duplicate, phantom and unexpected values come from one pass over a per-value frame whose
    anomalous rows (few) are cached, counted in one aggregation and sampled; examples are gathered
    only for kinds that occurred.
    """
    run, reads = history.run, history.reads
    context = reads.sparkSession.sparkContext
    acks = topic_acks(run)
    partitions = {str(t["name"]): int(t.get("partitions") or 0) for t in run["topics"]}
    flags = anomalies.value_flags(history.values, history.ends, partitions)
    flags = anomalies.anomalous_values(flags).persist()
    try:
        summary = _summarize(history, flags)
        complete = anomalies.complete_partitions(history.ends)
        incomplete = _incomplete_partitions(history, complete, summary)
        frames: dict[str, tuple[DataFrame, Callable[[DataFrame, DataFrame], DataFrame]]] = {
            "lost-write": (
                anomalies.lost_writes_from(flags, reads, unsure=summary.lost_unsure > 0),
                lambda rows, read_events: anomalies.with_final_value(rows, read_events, "ack_offset"),
            ),
            "duplicate": (
                anomalies.duplicates_from(flags, acks),
                lambda rows, read_events: anomalies.with_offsets(rows, read_events).select(
                    "topic", "partition", "acks", "value", "offsets", *anomalies.WRITE_EVIDENCE
                ),
            ),
            "phantom-write": (anomalies.phantom_writes_from(flags), anomalies.phantom_details),
            "unexpected-value": (anomalies.unexpected_values_from(flags, acks), anomalies.unexpected_details),
        }
        found: dict[str, _Found] = {}
        if summary.lost_unsure:  # settled against every final record: details for all its rows
            frame, details = frames.pop("lost-write")
            found["lost-write"] = _collect_found(details(frame, reads), evidence)
        occurred = {kind: kind_frames for kind, kind_frames in frames.items() if summary.per_kind[kind]}
        # The details of every kind's examples come from one scan of the reads, kept: the reads of
        # the example values and at the lost examples' positions (a few hundred rows at most).
        example_reads = _example_reads(reads, occurred).persist() if occurred else reads
        try:
            if occurred:
                example_reads.count()  # cached once, before the kinds read it side by side
            # Each kind's examples are a few small jobs, mostly planning and scheduling: side by side.
            with ThreadPoolExecutor(max_workers=4, thread_name_prefix="kchaos-examples") as pool:
                examples = {
                    kind: _submit(
                        pool,
                        context,
                        kind,
                        _examples,
                        frame,
                        evidence,
                        partial(_with_reads, details, example_reads),
                    )
                    for kind, (frame, details) in occurred.items()
                }
                for kind in frames:
                    found[kind] = _Found(
                        summary.per_kind[kind], examples[kind].result() if kind in examples else []
                    )
        finally:
            if occurred:
                example_reads.unpersist()
    finally:
        flags.unpersist()
    return found, summary, incomplete


def _with_reads(
    details: Callable[[DataFrame, DataFrame], DataFrame], reads: DataFrame, rows: DataFrame
) -> DataFrame:
    return details(rows, reads)


def _example_reads(reads: DataFrame, occurred: Mapping[str, tuple[DataFrame, Any]]) -> DataFrame:
    """The reads that the details of these kinds' examples look at (`anomalies.reads_of`)."""
    firsts = {kind: _first_rows(frame) for kind, (frame, _) in occurred.items()}
    values = reduce(DataFrame.unionByName, [first.select("value") for first in firsts.values()])
    lost = firsts.get("lost-write")
    positions = lost.select("topic", "partition", F.col("ack_offset").alias("offset")) if lost else None
    return anomalies.reads_of(reads, values, positions)


def _round(value: Any) -> Any:
    return round(float(value), 3) if value is not None else None


@dataclass(frozen=True)
class _AvailabilityRows:
    """What Spark computes for availability: per-second series, latency by fault, first oks."""

    series: list[Row]
    latency: list[Row]
    first_oks: dict[str, Row]


def _availability_rows(history: History, intervals: list[FaultInterval]) -> _AvailabilityRows:
    writes = history.writes
    series = availability.per_second(writes).orderBy("acks", "t_s").collect()
    latency = (
        availability.latency_by_fault(writes, merged_windows(intervals))
        .orderBy("acks", "during_fault")
        .collect()
    )
    first_oks = {}
    if intervals:
        first_oks = {
            r["acks"]: r
            for r in availability.first_ok_after(writes, [i.start_ns for i in intervals]).collect()
        }
    return _AvailabilityRows(series, latency, first_oks)


def _availability(
    history: History, intervals: list[FaultInterval], found: Mapping[str, _Found], rows: _AvailabilityRows
) -> dict[str, Any]:
    acks = topic_acks(history.run)
    marks: dict[tuple[str, int | None], dict[str, int]] = defaultdict(lambda: {"lost": 0, "divergent": 0})
    for kind, name in (("lost-write", "lost"), ("divergent-offset", "divergent")):
        for (topic, t_s), n in found[kind].per_topic_second.items():
            marks[(acks[topic], t_s)][name] += n
    series = []
    for row in rows.series:
        series.append(
            {
                "acks": row["acks"],
                "t_s": int(row["t_s"]),
                "acked": int(row["acked"]),
                "failed": int(row["failed"]),
                "indeterminate": int(row["indeterminate"]),
                **marks.get((row["acks"], row["t_s"]), {"lost": 0, "divergent": 0}),
                "latency_p50_ms": _round(row["latency_p50_ms"]),
                "latency_p99_ms": _round(row["latency_p99_ms"]),
                "latency_max_ms": _round(row["latency_max_ms"]),
            }
        )
    latency = [
        {
            **row.asDict(),
            **{k: _round(row[k]) for k in ("p50_ms", "p99_ms", "max_ms", "error_rate", "indeterminate_rate")},
        }
        for row in rows.latency
    ]
    recovery = []
    if intervals:
        for index, interval in enumerate(intervals):
            for mode in sorted({*acks.values()}, key=ACKS_MODES.index):
                first = rows.first_oks[mode][f"first_ok_{index}"] if mode in rows.first_oks else None
                recovery.append(
                    {
                        "fault": interval.fault,
                        "start_ns": interval.start_ns,
                        "acks": mode,
                        "first_ok_ns": first,
                        "recovery_ms": _round((first - interval.start_ns) / 1e6)
                        if first is not None
                        else None,
                    }
                )
    return {"bucket_s": 1, "series": series, "latency": latency, "recovery": recovery}


def build_result(history: History, checked_at: str, spark_info: dict[str, Any]) -> dict[str, Any]:
    """The result.json dict for a validated history; `spark_info` is master, version and seconds."""
    run = history.run
    acks = topic_acks(run)
    intervals = fault_intervals(history.faults)
    evidence = _Evidence(ClusterTimeline(history.cluster), intervals)
    writes, reads = history.writes, history.reads
    context = reads.sparkSession.sparkContext
    # Independent Spark jobs run side by side: each has serial stretches (planning, a last long
    # task, driver-side collection) in which the other cores would otherwise sit idle.
    with ThreadPoolExecutor(max_workers=4, thread_name_prefix="kchaos-check") as pool:
        value_kinds = _submit(pool, context, "per-value", _value_found, history, evidence)
        divergent = _submit(
            pool,
            context,
            "divergent-offset",
            _collect_found,
            anomalies.divergent_offsets(writes, reads, acks),
            evidence,
        )
        reordered = _submit(
            pool, context, "reordered", _collect_found, anomalies.reordered_writes(writes), evidence
        )
        availability_rows = _submit(pool, context, "availability", _availability_rows, history, intervals)
        found, summary, incomplete = value_kinds.result()
        found = {**found, "divergent-offset": divergent.result(), "reordered": reordered.result()}
    write_counts = summary.write_counts
    incomplete_topics = {p["topic"] for p in incomplete}

    topics = []
    for topic, mode in acks.items():
        row: dict[str, Any] = {"topic": topic, "acks": mode, **write_counts[topic]}
        for kind, name in COUNT_NAMES.items():
            row[name] = sum(n for (t, _), n in found[kind].per_topic_second.items() if t == topic)
        row["complete"] = topic not in incomplete_topics
        topics.append(row)
    guarantees = derive_guarantees(run, {row["topic"]: row for row in topics})
    unexpected = found["unexpected-value"].count
    per_acks = {mode: dict.fromkeys((*WRITE_COUNTS, *ANOMALY_COUNTS), 0) for mode in ACKS_MODES}
    for row in topics:
        for name in (*WRITE_COUNTS, *ANOMALY_COUNTS):
            per_acks[row["acks"]][name] += row[name]
    return {
        "result_format": RESULT_FORMAT,
        "run_id": run.get("run_id"),
        "checked_at": checked_at,
        "spark": spark_info,
        "events": history.event_counts,
        "valid": is_valid(guarantees, unexpected),
        "complete": not incomplete,
        "unexpected": unexpected,
        "incomplete_partitions": incomplete,
        "acks": per_acks,
        "topics": [{k: v for k, v in row.items() if k != "unexpected"} for row in topics],
        "guarantees": guarantees,
        "anomalies": {
            kind: {
                "count": found[kind].count,
                "examples": found[kind].examples,
                "examples_capped": found[kind].count > len(found[kind].examples),
            }
            for kind in COUNT_NAMES
        },
        "availability": _availability(history, intervals, found, availability_rows.result()),
    }

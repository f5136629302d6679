"""Assemble check/result.json (docs/RESULT_FORMAT.md) from the parts of a check, run side by side:
the anomaly kinds (`kind_results`), availability and recovery, the consumer groups, the write counts.

Only small aggregates reach the driver: counts per topic and second, capped examples, the
per-second availability series and the recovery times.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from checkers.availability_result import availability_entry, availability_rows
from checkers.evidence import ClientLog, ClusterTimeline, TruncationLog
from checkers.group_guarantees import judged_on_complete_reads
from checkers.group_recovery import with_recovery
from checkers.group_result import group_results
from checkers.guarantees import derive_guarantees, is_valid, unjudged
from checkers.heals import heals, longest_heal_recovery
from checkers.io import History, topic_acks
from checkers.kind_results import Evidence, Found, anomalies_entry, run_checkers, submit_part
from checkers.session import kept_until_done
from harness.contract.anomaly_kinds import COUNT_KEYS, KINDS, WRITE_COUNTS, unread_partitions
from harness.contract.history import ACKS_MODES

RESULT_FORMAT = 1
_OUTCOME_COUNT = {"ok": "acked", "fail": "failed", "info": "indeterminate"}


def _write_counts(history: History) -> tuple[dict[str, dict[str, int]], set[tuple[str, int]], set[str]]:
    """Write counts per topic, the (topic, partition) written to, and the topics of unplaced writes."""
    counts = {str(t["name"]): dict.fromkeys(WRITE_COUNTS, 0) for t in history.run["topics"]}
    written: set[tuple[str, int]] = set()
    unplaced: set[str] = set()
    for row in history.writes.groupBy("topic", "partition", "outcome").count().collect():
        topic = counts[row["topic"]]
        topic["attempted"] += int(row["count"])
        topic[_OUTCOME_COUNT[row["outcome"]]] += int(row["count"])
        if row["partition"] < 0:
            unplaced.add(str(row["topic"]))
        else:
            written.add((str(row["topic"]), int(row["partition"])))
    return counts, written, unplaced


def _incomplete_partitions(
    history: History, written: set[tuple[str, int]], unplaced: set[str]
) -> list[dict[str, Any]]:
    done = history.complete_partitions
    for topic in history.run["topics"]:
        if topic["name"] in unplaced:
            written = written | {(topic["name"], p) for p in range(int(topic.get("partitions") or 0))}
    why = {
        (p["topic"], p["partition"]): p.get("why")
        for p in (history.run.get("final_read") or {}).get("incomplete") or []
    }
    return [{"topic": t, "partition": p, "why": why.get((t, p))} for t, p in sorted(written - done)]


def _topic_rows(
    history: History,
    found: Mapping[str, Found],
    write_counts: dict[str, dict[str, int]],
    incomplete: list[Any],
) -> list[dict[str, Any]]:
    """One row per topic: write counts, each kind's count (None where its checker failed), complete."""
    incomplete_topics = {p["topic"] for p in incomplete}
    rows = []
    for topic, mode in topic_acks(history.run).items():
        row: dict[str, Any] = {"topic": topic, "acks": mode, **write_counts[topic]}
        for kind in KINDS:
            kind_found = found[kind.id]
            # A kind not tied to writes counts its cluster-wide rows (no topic) for every topic.
            row[kind.count] = (
                None
                if kind_found.error
                else sum(
                    n
                    for (t, _), n in kind_found.per_topic_second.items()
                    if t == topic or (t is None and not kind.per_acks)
                )
            )
        row["complete"] = topic not in incomplete_topics
        rows.append(row)
    return rows


def _per_acks(topics: list[dict[str, Any]], recovery: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per acks mode: the counts of its topics, and the longest recovery after a heal."""
    per_acks: dict[str, dict[str, Any]] = {mode: dict.fromkeys(COUNT_KEYS, 0) for mode in ACKS_MODES}
    for row in topics:
        counts = per_acks[row["acks"]]
        for name in COUNT_KEYS:
            total, more = counts[name], row[name]
            counts[name] = None if total is None or more is None else total + more
    for mode, counts in per_acks.items():
        counts |= longest_heal_recovery([entry for entry in recovery if entry["acks"] == mode])
    return per_acks


def build_result(history: History, checked_at: str, spark_info: dict[str, Any]) -> dict[str, Any]:
    """The result.json dict for a validated history; `spark_info` is master, version and seconds."""
    run = history.run
    intervals = history.faults
    zero = (run.get("clock") or {}).get("unix_ns_at_zero")
    evidence = Evidence(
        ClusterTimeline(history.cluster),
        intervals,
        ClientLog(history.client_log),
        TruncationLog(history.broker_log, zero if isinstance(zero, int) else None),
    )
    context = history.reads.sparkSession.sparkContext
    # Independent Spark jobs run side by side: each has serial stretches (planning, a last long task,
    # driver-side collection) in which the other cores would otherwise sit idle. The parts that read
    # only the history start before the checkers' inputs are prepared.
    with (
        kept_until_done(context),
        ThreadPoolExecutor(max_workers=8, thread_name_prefix="kchaos-check") as pool,
    ):
        healed = heals(intervals)
        measuring_availability = submit_part(
            pool, context, "availability", availability_rows, history, intervals, healed
        )
        measuring_groups = submit_part(pool, context, "groups", group_results, history, intervals, healed)
        counting_writes = submit_part(pool, context, "writes", _write_counts, history)
        found = run_checkers(history, evidence, pool)
        write_counts, written, unplaced = counting_writes.result()
        measured_availability = measuring_availability.result()
        groups = measuring_groups.result()
    with_recovery(
        groups.entries,
        intervals,
        healed,
        measured_availability.partitions,
        groups.polled_after_heals,
        groups.last_ns,
        topic_acks(run),
    )
    incomplete = _incomplete_partitions(history, written, unplaced)
    for group in groups.entries.values():
        unread = unread_partitions(incomplete, group["topics"])
        group["guarantees"] = judged_on_complete_reads(group["guarantees"], unread)
    topics = _topic_rows(history, found, write_counts, incomplete)
    failed = {kind_id: f.error for kind_id, f in found.items() if f.error}
    not_read = (run.get("replicas") or {}).get("not_read") or {}
    replicas = {
        "replicas_read": history.replica_states is not None,
        "replicas_not_read": ", ".join(sorted(map(str, not_read))) if isinstance(not_read, dict) else "",
    }
    guarantees = unjudged(
        derive_guarantees(
            run,
            {row["topic"]: {**{k: v or 0 for k, v in row.items()}, **replicas} for row in topics},
            {interval.fault for interval in intervals},
        ),
        {kind_id: error for kind_id, error in failed.items() if error},
    )
    unexpected = None if "unexpected-value" in failed else found["unexpected-value"].count
    marked = {
        "lost": found["lost-write"].per_topic_second,
        "divergent": found["divergent-offset"].per_topic_second,
    }
    availability = availability_entry(history, intervals, healed, marked, measured_availability)
    return {
        "result_format": RESULT_FORMAT,
        "run_id": run.get("run_id"),
        "checked_at": checked_at,
        "spark": spark_info,
        "events": history.event_counts,
        "valid": is_valid(
            [*guarantees, *(row for group in groups.entries.values() for row in group["guarantees"])],
            unexpected,
        ),
        "complete": not incomplete,
        "unexpected": unexpected,
        "incomplete_partitions": incomplete,
        "acks": _per_acks(topics, availability["recovery"]),
        "topics": [{k: v for k, v in row.items() if k != "unexpected"} for row in topics],
        "guarantees": guarantees,
        "anomalies": {kind.id: anomalies_entry(found[kind.id]) for kind in KINDS},
        "errors": [{"kind": kind_id, "error": error} for kind_id, error in failed.items()],
        "availability": availability,
        **({"groups": groups.entries} if history.consumes is not None else {}),
    }

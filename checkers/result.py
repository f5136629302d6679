"""check/result.json (docs/RESULT_FORMAT.md) from the parts of a check, run side by side: each
anomaly kind's counts per topic and second of the ack and its capped examples with their evidence,
from the registered checkers' DataFrames; availability and recovery; the consumer groups; the write
counts; and the guarantees judged from them.

Only small aggregates reach the driver: counts per topic and second, capped examples, the
per-second availability series and the recovery times.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers import (
    anomalies,
    availability,
    kind_checkers,  # noqa: F401  (the built-in checkers register themselves)
)
from checkers.availability_result import availability_entry, availability_rows
from checkers.cases import TopicCases, topic_cases
from checkers.evidence import ClientLog, ClusterTimeline, TruncationLog, active_fault_names
from checkers.group_guarantees import exercised
from checkers.group_recovery import with_recovery
from checkers.group_result import count_group_kinds, group_activity, group_results
from checkers.guarantees import (
    derive_guarantees,
    is_valid,
    lost_power_on_every_replica,
    on_complete_reads,
    unjudged,
)
from checkers.heals import heals, longest_heal_recovery
from checkers.io import History, topic_acks
from checkers.registry import (
    Checker,
    CheckInputs,
    Found,
    PerOwnerSecond,
    anomalies_entry,
    failed_kind,
    registered,
)
from checkers.replication import DISK_FAILURES
from checkers.session import kept, kept_until_done, submit_part
from checkers.transactions import transaction_counts
from contract.anomaly_kinds import COUNT_KEYS, KINDS, TOPIC_CASES, WRITE_COUNTS, unread_partitions
from contract.events import FaultWindow
from contract.history import ACKS_MODES
from contract.limits import MAX_RUN_NS

EXAMPLE_CAP = 50
_EXAMPLE_ORDER = ("complete_ns", "topic", "partition", "offset", "value")
_OFFSET_KEYS = ("offset", "ack_offset", "read_offset")
"""Where an example's write sits, for the truncations below it."""


@dataclass(frozen=True)
class Evidence:
    """What an example is annotated with: the cluster's state and the faults active at its ack, and
    what its process's client logged while the write was outstanding."""

    timeline: ClusterTimeline
    intervals: list[FaultWindow]
    client_log: ClientLog
    truncations: TruncationLog


@dataclass(frozen=True)
class _Counted:
    """A checker's anomalous rows (kept: `kept`) and their counts per (topic, second of the ack)."""

    checker: Checker
    rows: DataFrame
    per_owner_second: PerOwnerSecond

    @functools.cached_property
    def first(self) -> DataFrame:
        """The EXAMPLE_CAP rows that come first in example order, kept: computed once (with the
        reads of the examples, `_example_reads`) for the several joins of their details."""
        return kept(self.rows.orderBy(*_example_order(self.rows)).limit(EXAMPLE_CAP))


def _counted_rows(rows: DataFrame) -> DataFrame:
    """A checker's rows as what is counted of them: topic, and the second of the ack if any."""
    second = availability.second_of(F.col("complete_ns")) if "complete_ns" in rows.columns else F.lit(None)
    return rows.select("topic", second.cast("long").alias("t_s"))


def _tally(rows: DataFrame) -> PerOwnerSecond:
    """A checker's rows counted per (topic, second of the ack)."""
    counted = _counted_rows(rows).groupBy("topic", "t_s").count().collect()
    return {(str(r["topic"]), r["t_s"]): int(r["count"]) for r in counted}


def _count(checker: Checker, inputs: CheckInputs) -> _Counted:
    rows = kept(checker.find(inputs))  # counted, then sampled: computed once
    return _Counted(checker, rows, _tally(rows))


def _count_together(checkers: list[Checker], inputs: CheckInputs) -> dict[str, _Counted | Exception]:
    """Kinds counted in one Spark job, each kind's rows kept as `_count` keeps them: for kinds read
    off the kept per-value flags, whose jobs are small, so one plan and job instead of one per kind
    saves most of what counting them costs. Should the job fail, each kind's rows are counted alone:
    a checker that raises costs only its own kind."""
    outcomes: dict[str, _Counted | Exception] = {}
    rows: dict[str, tuple[Checker, DataFrame]] = {}
    for checker in checkers:
        try:
            rows[checker.kind.id] = (checker, kept(checker.find(inputs)))
        except Exception as exc:  # check-safe, as in `_safely`
            outcomes[checker.kind.id] = exc
    if not rows:
        return outcomes
    per_kind = [_counted_rows(r).select(F.lit(k).alias("kind"), "*") for k, (_, r) in rows.items()]
    counts: dict[str, PerOwnerSecond] = {kind_id: {} for kind_id in rows}
    try:
        for r in reduce(DataFrame.unionByName, per_kind).groupBy("kind", "topic", "t_s").count().collect():
            counts[r["kind"]][(str(r["topic"]), r["t_s"])] = int(r["count"])
    except Exception:
        counts.clear()
    for kind_id, (checker, kind_rows) in rows.items():
        try:
            tally = counts[kind_id] if counts else _tally(kind_rows)
            outcomes[kind_id] = _Counted(checker, kind_rows, tally)
        except Exception as exc:  # check-safe
            outcomes[kind_id] = exc
    return outcomes


def _example_order(frame: DataFrame) -> list[Column]:
    return [F.col(c).asc_nulls_last() for c in _EXAMPLE_ORDER if c in frame.columns]


def _examples(counted: _Counted, reads: DataFrame, evidence: Evidence) -> list[dict[str, Any]]:
    """The first EXAMPLE_CAP rows with their checker's details and the cluster's state at their ack."""
    if not counted.per_owner_second:
        return []
    # Limited as well: ordered by a top-K, not a global sort (which would cost a job to sample the rows).
    detailed = counted.checker.details(counted.first, reads)
    first = detailed.orderBy(*_example_order(counted.rows)).limit(EXAMPLE_CAP)
    examples = []
    for row in first.collect():
        example = row.asDict(recursive=True)
        if "complete_ns" in example:
            at = example["complete_ns"]
            example |= evidence.timeline.state_at(at, example["topic"], example["partition"])
            example["active_faults"] = active_fault_names(evidence.intervals, at)
        if "invoke_ns" in example:
            example["client_log"] = evidence.client_log.between(
                example["process"], example["invoke_ns"], example.get("complete_ns")
            )
        if counted.checker.kind.truncated:
            offset = next((example[k] for k in _OFFSET_KEYS if example.get(k) is not None), None)
            example["truncations"] = evidence.truncations.below(
                example["topic"], example.get("partition"), offset, example.get("complete_ns")
            )
            # The epoch the partition ended in: how many leaders it went through since the ack.
            end = evidence.timeline.state_at(MAX_RUN_NS, example["topic"], example.get("partition"))
            example["leader_epoch_at_end"] = end["leader_epoch"]
        examples.append(example)
    return examples


def _example_reads(reads: DataFrame, counted: list[_Counted]) -> DataFrame:
    """The reads the details of these kinds' examples look at: of their `example_values`, and at their
    `example_positions` (`anomalies.reads_of`, one scan of the reads; a few hundred rows at most)."""
    firsts = [c.first for c in counted]
    values = reduce(
        DataFrame.unionByName,
        [
            first.select(F.col(column).alias("value"))
            for c, first in zip(counted, firsts, strict=True)
            for column in c.checker.example_values
        ],
    )
    positions = [
        first.select("topic", "partition", F.col(column).alias("offset"))
        for c, first in zip(counted, firsts, strict=True)
        if (column := c.checker.example_positions) is not None
    ]
    return anomalies.reads_of(reads, values, reduce(DataFrame.unionByName, positions) if positions else None)


def _found(checker: Checker, inputs: CheckInputs, evidence: Evidence) -> Found:
    """A kind whose rows hold their evidence: counted and sampled in one go."""
    counted = _count(checker, inputs)
    return Found(counted.per_owner_second, _examples(counted, inputs.history.reads, evidence))


def _safely(work: Callable[[], Found]) -> Found:
    try:
        return work()
    except Exception as exc:  # check-safe: the kind is unknown, the rest of the check stands
        return failed_kind(exc)


def run_checkers(inputs: CheckInputs, evidence: Evidence, pool: ThreadPoolExecutor) -> dict[str, Found]:
    """Every registered checker, side by side, topic and group kinds alike. The group kinds are
    counted in one job of their own (`group_result.count_group_kinds`). Of the topic kinds, those
    that read the history alone start first; the others once the per-value flags are computed and
    kept, and are counted in one job (`_count_together`). The kinds whose details read the reads,
    and the flagged kinds, are counted first, then sampled from one shared scan of the reads of
    their examples; the others are counted and sampled at once. A checker that raises costs its own
    kind only."""
    history = inputs.history
    context = history.reads.sparkSession.sparkContext
    found: dict[str, Found] = {}
    whole: dict[str, Future[Found]] = {}
    counting: dict[str, Future[_Counted]] = {}

    counting_groups = submit_part(pool, context, "groups", count_group_kinds, registered("group"), inputs)
    for c in registered("topic"):
        if c.flags:
            continue
        if not c.applies(inputs):
            found[c.kind.id] = Found({}, [])
        elif c.reads_details:
            counting[c.kind.id] = submit_part(pool, context, c.kind.id, _count, c, inputs)
        else:
            whole[c.kind.id] = submit_part(pool, context, c.kind.id, _found, c, inputs, evidence)
    inputs = dataclasses.replace(inputs, flags=kept(inputs.flags)).settled()
    together = []
    for c in registered("topic"):
        if c.flags and c.applies(inputs):
            together.append(c)
        elif c.flags:
            found[c.kind.id] = Found({}, [])
    counting_flagged = submit_part(pool, context, "flags", _count_together, together, inputs)
    counted: dict[str, _Counted] = {}
    for kind_id, counting_future in counting.items():
        try:
            counted[kind_id] = counting_future.result()
        except Exception as exc:
            found[kind_id] = failed_kind(exc)
    for kind_id, outcome in counting_flagged.result().items():
        if isinstance(outcome, Exception):
            found[kind_id] = failed_kind(outcome)
        else:
            counted[kind_id] = outcome
    occurred = [c for c in counted.values() if c.per_owner_second]
    reads = history.reads
    example_reads = kept(_example_reads(reads, occurred)) if occurred else reads
    if occurred:
        example_reads.count()  # kept once, before the kinds read it side by side
    sampling = {
        kind_id: submit_part(pool, context, kind_id, _examples, c, example_reads, evidence)
        for kind_id, c in counted.items()
    }
    for kind_id, sampling_future in sampling.items():
        try:
            found[kind_id] = Found(counted[kind_id].per_owner_second, sampling_future.result())
        except Exception as exc:  # check-safe, as in `_safely`
            found[kind_id] = failed_kind(exc)
    for kind_id, whole_future in whole.items():
        found[kind_id] = _safely(whole_future.result)
    return found | counting_groups.result()


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
    cases: TopicCases,
    incomplete: list[Any],
) -> list[dict[str, Any]]:
    """One row per topic: write counts, each kind's count (None where its checker failed), the cases
    its guarantees are judged over, complete."""
    incomplete_topics = {p["topic"] for p in incomplete}
    rows = []
    for topic, mode in topic_acks(history.run).items():
        row: dict[str, Any] = {"topic": topic, "acks": mode, **write_counts[topic], **cases[topic]}
        for kind in KINDS:
            kind_found = found[kind.id]
            # A kind not tied to writes counts its cluster-wide rows (no topic) for every topic.
            row[kind.count] = (
                None
                if kind_found.error
                else sum(
                    n
                    for (t, _), n in kind_found.per_owner_second.items()
                    if t == topic or (t is None and not kind.per_acks)
                )
            )
        row["complete"] = topic not in incomplete_topics
        rows.append(row)
    return rows


def _per_acks(topics: list[dict[str, Any]], recovery: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per acks mode: the counts and cases of its topics, and the longest recovery after a heal."""
    summed = (*COUNT_KEYS, *TOPIC_CASES)
    per_acks: dict[str, dict[str, Any]] = {mode: dict.fromkeys(summed, 0) for mode in ACKS_MODES}
    for row in topics:
        counts = per_acks[row["acks"]]
        for name in summed:
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
        inputs = CheckInputs.of(history)
        measuring_availability = submit_part(
            pool, context, "availability", availability_rows, history, intervals, healed
        )
        measuring_activity = submit_part(
            pool, context, "group activity", group_activity, history, inputs.groups, healed
        )
        counting_writes = submit_part(pool, context, "writes", _write_counts, history)
        counting_cases = submit_part(pool, context, "cases", topic_cases, history)
        found = run_checkers(inputs, evidence, pool)
        write_counts, written, unplaced = counting_writes.result()
        cases = counting_cases.result()
        measured_availability = measuring_availability.result()
        power_lost = lost_power_on_every_replica(run, intervals, history.replica_states)
        groups = group_results(history, found, measuring_activity.result(), intervals, power_lost)
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
    failed = {kind_id: f.error for kind_id, f in found.items() if f.error}
    for group in groups.entries.values():
        if history.transactions is not None:
            group["aborted_appended"] = sum(cases[t]["aborted_appended"] for t in group["topics"])
        unread = unread_partitions(incomplete, group["topics"])
        judged = on_complete_reads(exercised(group["guarantees"], group), unread)
        group["guarantees"] = unjudged(judged, failed)
    topics = _topic_rows(history, found, write_counts, cases, incomplete)
    not_read = (run.get("replicas") or {}).get("not_read") or {}
    replicas = {
        "replicas_read": history.replica_states is not None,
        "replicas_not_read": ", ".join(sorted(map(str, not_read))) if isinstance(not_read, dict) else "",
        "disks_failed": any(w.fault in DISK_FAILURES for w in intervals),
    }
    guarantees = unjudged(
        derive_guarantees(
            run,
            {
                row["topic"]: {
                    **{k: v or 0 for k, v in row.items()},
                    **replicas,
                    "unread": unread_partitions(incomplete, [row["topic"]]),
                }
                for row in topics
            },
            power_lost,
        ),
        failed,
    )
    (whole_run,) = (kind for kind in KINDS if kind.whole_run)
    unexpected = None if whole_run.id in failed else found[whole_run.id].count
    marked = {kind.count: found[kind.id].per_owner_second for kind in KINDS if kind.charted}
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
        "topics": [{k: v for k, v in row.items() if k != whole_run.count} for row in topics],
        "guarantees": guarantees,
        "anomalies": {kind.id: anomalies_entry(found[kind.id]) for kind in KINDS},
        "errors": [{"kind": kind_id, "error": error} for kind_id, error in failed.items()],
        "availability": availability,
        **({"groups": groups.entries} if history.consumes is not None else {}),
        **({"transactions": _transactions(history.transactions)} if history.transactions is not None else {}),
    }


def _transactions(outcomes: DataFrame) -> list[dict[str, Any]]:
    """result.json's `transactions`: per transactional.id, its transactions by outcome and the error
    classes the failed ones ended in (a row per id: few)."""
    rows = transaction_counts(outcomes).orderBy("transactional_id").collect()
    return [row.asDict() for row in rows]

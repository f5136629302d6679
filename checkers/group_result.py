"""check/result.json's `groups`: per consumer group, its counts, commit outcomes, each anomaly kind's
examples with their evidence, and the guarantees its commit mode promises (`checkers.group_guarantees`).

consumes.jsonl is parsed once and kept (in one partition when small); one Spark job counts every
kind, the polls and the commits per group and takes each kind's first examples (by time); beside it,
one counts seconds.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.util import inheritable_thread_target

from checkers import groups as g
from checkers.evidence import ClusterTimeline, active_fault_names
from checkers.group_guarantees import group_guarantees
from checkers.io import History
from checkers.session import kept
from harness.anomaly_kinds import GROUP_BY_ID, GROUP_KINDS
from harness.events import FaultWindow
from harness.groups import OFFSETS_TOPIC, group_offsets_partition, offsets_partitions
from harness.history_fields import COMMIT_PHASES

EXAMPLES = 10  # per kind and group
ONE_PARTITION_EVENTS = 100_000
"""Below this many consumes.jsonl events, the consumes are kept in one partition: Spark then knows
every group, process and partition is in it, and their windows and aggregations need no shuffle.
A further check of a real 45-s run (20,638 events) took 4.18 s instead of 4.65 s with two partitions
(6 alternated, 12% less JVM CPU); with 206,380 events, 9.19 s instead of 8.75 s (4 alternated): one
task sorting them all is then slower than two shuffled ones. The kinds' rows are then ranked in one
task too (`_first_and_count`): 4.26 -> 4.06 s (7 alternated)."""
_COMMITS = "commits-"
"""What the commit events of each phase are counted as (`_first_and_count`)."""
_KEEP_NULLS = {"ignoreNullFields": "false"}
_TIME = {
    "consumer-skip": "committed_ns",
    "redelivery": "first_ns",
    "poll-skip": "after_ns",
    "nonmonotonic-poll": "after_ns",
    "commit-regression": "time_ns",
}
"""The column that orders a kind's examples, and whose time names the faults active then."""


def _anomalies(history: History, consumes: DataFrame) -> tuple[dict[str, DataFrame], DataFrame]:
    """Each kind's rows, and the polls (counted only): all over complete partitions."""
    complete = history.complete_partitions
    final = g.complete_only(
        history.reads.where(F.col("phase") == "final").select(*g.POSITION, "value"), complete
    )
    polled = g.complete_only(g.polls(consumes), complete)
    commits = g.complete_only(g.ok_commit_entries(consumes), complete)
    pairs = g.complete_only(g.consecutive_polls(consumes), complete)
    return {
        "consumer-skip": g.skipped(final, polled, commits),
        "redelivery": g.redelivered(polled),
        "poll-skip": g.poll_skips(pairs, final),
        "nonmonotonic-poll": g.nonmonotonic(pairs),
        "commit-regression": g.commit_regressions(commits),
    }, polled


Found = dict[tuple[str, str], tuple[int, list[dict[str, Any]]]]
"""(kind, group) -> how many rows, and the first EXAMPLES of them."""


def _first_and_count(
    frames: dict[str, DataFrame], counted_only: dict[str, DataFrame], *, in_one_task: bool
) -> Found:
    """Every kind's count per group and first EXAMPLES by its time, and the rows of `counted_only`
    counted per group (no examples, counted before they meet the others: not carried as JSON nor
    ranked), in one job (each example carried as JSON: the kinds' columns differ). `in_one_task`:
    the kinds' rows are gathered in one partition and ranked there, without a shuffle (for small
    consumes: one task, not one per partition of every kind, each deserializing the whole job)."""
    parts = []
    for kind_id, frame in frames.items():
        position = [F.col(c).cast("string") for c in g.POSITION if c in frame.columns]
        parts.append(
            frame.select(
                F.lit(kind_id).alias("kind"),
                "group",
                F.col(_TIME.get(kind_id, "time_ns")).cast("long").alias("t"),
                F.concat_ws("/", *position).alias("at"),
                F.to_json(F.struct(*[c for c in frame.columns if c != "group"]), _KEEP_NULLS).alias("row"),
                F.lit(1).cast("long").alias("n"),
            )
        )
    for name, frame in counted_only.items():
        parts.append(
            frame.groupBy("group")
            .agg(F.count(F.lit(1)).alias("n"))
            .select(
                F.lit(name).alias("kind"),
                "group",
                F.lit(None).cast("long").alias("t"),
                F.lit(None).cast("string").alias("at"),
                F.lit(None).cast("string").alias("row"),
                "n",
            )
        )
    window = Window.partitionBy("kind", "group")
    rows = reduce(DataFrame.unionByName, parts)
    ranked = (
        (rows.coalesce(1) if in_one_task else rows)
        .withColumn("total", F.sum("n").over(window))
        .withColumn("rank", F.row_number().over(window.orderBy("t", "at")))
    )
    found: Found = {}
    for row in sorted(ranked.where(F.col("rank") <= EXAMPLES).collect(), key=lambda r: r["rank"]):
        examples = found.setdefault((row["kind"], row["group"]), (int(row["total"]), []))[1]
        if row["row"] is not None:
            examples.append(json.loads(row["row"]))
    return found


def group_results(history: History, faults: list[FaultWindow]) -> dict[str, dict[str, Any]]:
    """result.json's `groups` for a history with consumes.jsonl (empty without)."""
    declared = history.run.get("groups") or []
    if history.consumes is None or not declared:
        return {}
    small = history.event_counts.get("consumes", 0) < ONE_PARTITION_EVENTS
    # parsed once, read by every query below
    consumes = kept(history.consumes.coalesce(1) if small else history.consumes)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kchaos-group-series") as pool:
        # The series do not depend on the anomalies: planned and run beside them, in this thread's
        # scheduler pool (the groups are a check's longest part; its other parts leave cores idle).
        measuring_series = pool.submit(
            inheritable_thread_target(consumes.sparkSession)(_series), history, consumes, declared
        )
        kinds, polled = _anomalies(history, consumes)
        commits = {_COMMITS + phase: g.commit_events(consumes, phase) for phase in COMMIT_PHASES}
        found = _first_and_count(kinds, {"polled": polled, **commits}, in_one_task=small)
        series = measuring_series.result()
    results = {}
    for group in declared:
        name = group["name"]
        mine = {kind_id: found.get((kind_id, name), (0, [])) for kind_id in [*GROUP_BY_ID, "polled"]}
        counts = {kind.count: mine[kind.id][0] for kind in GROUP_KINDS}
        evidence = _GroupEvidence(history, name, faults)
        entry: dict[str, Any] = {
            "commit": group["commit"],
            "commit_async": bool(group.get("commit_async")),
            "members": group.get("members"),
            "topics": group["topics"],
            "polled": mine["polled"][0],
            **counts,
            "commits": {p: found.get((_COMMITS + p, name), (0, []))[0] for p in COMMIT_PHASES},
            "anomalies": {
                kind.id: {
                    "count": mine[kind.id][0],
                    "examples": [_example(row, kind.id, evidence) for row in mine[kind.id][1]],
                    "examples_capped": mine[kind.id][0] > len(mine[kind.id][1]),
                }
                for kind in GROUP_KINDS
            },
        }
        entry["guarantees"] = group_guarantees(history.run, group, entry, {w.fault for w in faults})
        entry["series"] = series[name]
        results[name] = entry
    return results


def _series(
    history: History, consumes: DataFrame, declared: list[dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """Per group, a row for every second of the run: what it did then (`groups.per_second`, zeros
    when nothing) and its commit lag (`groups.lag_changes`, carried over the seconds it did not
    change), in one job. A row per group and second with any change: few."""
    topic_groups: dict[str, list[str]] = {}
    for group in declared:
        for topic in group["topics"]:
            topic_groups.setdefault(topic, []).append(group["name"])
    lag_rows = g.lag_changes(history.writes, g.ok_commit_entries(consumes), topic_groups)
    changes = {}
    for row in g.per_second(consumes).join(lag_rows, ["group", "t_s"], "full").collect():
        changes[(row["group"], row["t_s"])] = row.asDict()
    seconds = max((t + 1 for _, t in changes), default=1)
    quiet = {"polled": 0, "commits_ok": 0, "commits_failed": 0, "assigns": 0, "generation": None}
    series: dict[str, list[dict[str, Any]]] = {}
    for group in declared:
        rows, lag = [], 0
        for t in range(seconds):
            change = changes.get((group["name"], t), {})
            lag = int(change["lag"]) if change.get("lag") is not None else lag
            done = {k: change[k] for k in quiet if change.get(k) is not None}
            rows.append({**quiet, **done, "t_s": t, "lag": lag})
        series[group["name"]] = rows
    return series


def _example(row: dict[str, Any], kind_id: str, evidence: _GroupEvidence) -> dict[str, Any]:
    """An example with what was going on at its time: the faults active, and the broker
    coordinating the group (the leader of its offsets partition in the last cluster.jsonl sample
    then; null when the offsets topic was not sampled)."""
    time_ns = row.get(_TIME[kind_id])
    return {
        **row,
        "faults": active_fault_names(evidence.faults, time_ns),
        "coordinator": evidence.coordinator(time_ns),
    }


class _GroupEvidence:
    """What a group's examples are placed against: the faults, and its coordinator over time."""

    def __init__(self, history: History, group: str, faults: list[FaultWindow]) -> None:
        self.faults = faults
        self._timeline = ClusterTimeline(history.cluster)
        sampled = (
            p["partition"]
            for s in history.cluster
            for p in s.get("partitions") or []
            if p.get("topic") == OFFSETS_TOPIC
        )
        self._partition = group_offsets_partition(group, offsets_partitions(history.run), sampled)

    def coordinator(self, time_ns: int | None) -> int | None:
        if self._partition is None:
            return None
        leader = self._timeline.state_at(time_ns, OFFSETS_TOPIC, self._partition)["leader"]
        return leader if isinstance(leader, int) and leader >= 0 else None

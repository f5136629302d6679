"""check/result.json's `groups`: per consumer group, its counts, commit outcomes, each anomaly kind's
examples with their evidence, and the guarantees its commit mode promises (`checkers.group_guarantees`).

consumes.jsonl is parsed once and kept (in one partition when small); one Spark job counts every
kind and takes each kind's first examples (by time); beside it, one counts what each group did each
second, which also gives its polls and commits.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F
from pyspark.util import inheritable_thread_target

from checkers import groups as g
from checkers import kind_checkers  # noqa: F401  (the built-in checkers register themselves)
from checkers.evidence import ClusterTimeline, active_fault_names
from checkers.group_guarantees import group_guarantees
from checkers.heals import Heal, heal_times
from checkers.io import History
from checkers.registry import GroupInputs, registered_groups
from checkers.session import kept
from checkers.transactions import UNCOMMITTED_SCHEMA, no_rows, uncommitted_polls
from contract.anomaly_kinds import GROUP_BY_ID, GROUP_KINDS
from contract.coordinators import OFFSETS_TOPIC, group_offsets_partition, offsets_partitions
from contract.events import FaultWindow
from contract.history_fields import COMMIT_PHASES

EXAMPLES = 10  # per kind and group
ONE_PARTITION_EVENTS = 100_000
"""Below this many consumes.jsonl events, the consumes are kept in one partition: Spark then knows
every group, process and partition is in it, and their windows and aggregations need no shuffle.
A further check of a real 45-s run (20,638 events) took 4.18 s instead of 4.65 s with two partitions
(6 alternated, 12% less JVM CPU); with 206,380 events, 9.19 s instead of 8.75 s (4 alternated): one
task sorting them all is then slower than two shuffled ones. The kinds' rows are then ranked in one
task too (`_first_and_count`): 4.26 -> 4.06 s (7 alternated)."""
_KEEP_NULLS = {"ignoreNullFields": "false"}


def _inputs(history: History, consumes: DataFrame) -> GroupInputs:
    """What the group checkers read, over complete partitions."""
    complete = history.complete_partitions
    final = g.complete_only(
        history.reads.where(F.col("phase") == "final").select(*g.POSITION, "value"), complete
    )
    polled = g.complete_only(g.polls(consumes), complete)
    return GroupInputs(
        final=final,
        polled=polled,
        commits=g.complete_only(g.ok_commit_entries(consumes), complete),
        pairs=g.complete_only(g.consecutive_polls(consumes), complete),
        uncommitted=_uncommitted(history, polled),
    )


def _anomalies(inputs: GroupInputs) -> dict[str, DataFrame]:
    """Each group kind's rows (its registered `GroupChecker`)."""
    return {checker.kind.id: checker.find(inputs) for checker in registered_groups()}


def _cases(inputs: GroupInputs) -> dict[str, dict[str, int]]:
    """Per group, what its guarantees are judged over beyond its polls: `committed_positions` (the
    final read's records below its committed offsets) and `aborted_polled` (the appended records of
    aborted transactions its members were handed: with read_uncommitted, the control that shows
    they were there to be seen). One small job."""
    below = g.below_committed(inputs.final, inputs.commits).select(
        "group", F.lit("committed_positions").alias("case")
    )
    aborted = (
        inputs.uncommitted.where(F.col("outcome") == "aborted")
        .select("group", "value")
        .distinct()
        .select("group", F.lit("aborted_polled").alias("case"))
    )
    cases: dict[str, dict[str, int]] = {}
    for row in below.unionByName(aborted).groupBy("group", "case").count().collect():
        cases.setdefault(row["group"], {})[row["case"]] = int(row["count"])
    return cases


def _uncommitted(history: History, polled: DataFrame) -> DataFrame:
    """`transactions.uncommitted_polls` (none without transactions)."""
    if history.transactions is None:
        return no_rows(polled, UNCOMMITTED_SCHEMA)
    return uncommitted_polls(polled, history.values, history.transactions)


_TIME_COLUMN = {checker.kind.id: checker.time_column for checker in registered_groups()}
"""Each kind's `GroupChecker.time_column`."""

Found = dict[tuple[str, str], tuple[int, list[dict[str, Any]]]]
"""(kind, group) -> how many rows, and the first EXAMPLES of them."""


def _position(frame: DataFrame) -> Column:
    """Where a kind's row is, as text: topic/partition[/offset] (for a stable order of ties)."""
    return F.concat_ws("/", *[F.col(c).cast("string") for c in g.POSITION if c in frame.columns])


def _first_and_count(frames: dict[str, DataFrame], *, in_one_task: bool) -> Found:
    """Every kind's count per group and first EXAMPLES by its time, in one job (each example carried
    as JSON: the kinds' columns differ). `in_one_task`: the kinds' rows are gathered in one partition
    and ranked there, without a shuffle (for small consumes: one task, not one per partition of every
    kind, each deserializing the whole job)."""
    parts = [
        frame.select(
            F.lit(kind_id).alias("kind"),
            "group",
            F.col(_TIME_COLUMN[kind_id]).cast("long").alias("t"),
            _position(frame).alias("at"),
            F.to_json(F.struct(*[c for c in frame.columns if c != "group"]), _KEEP_NULLS).alias("row"),
        )
        for kind_id, frame in frames.items()
    ]
    window = Window.partitionBy("kind", "group")
    rows = reduce(DataFrame.unionByName, parts)
    ranked = (
        (rows.coalesce(1) if in_one_task else rows)
        .withColumn("total", F.count(F.lit(1)).over(window))
        .withColumn("rank", F.row_number().over(window.orderBy("t", "at")))
    )
    found: Found = {}
    for row in sorted(ranked.where(F.col("rank") <= EXAMPLES).collect(), key=lambda r: r["rank"]):
        examples = found.setdefault((row["kind"], row["group"]), (int(row["total"]), []))[1]
        examples.append(json.loads(row["row"]))
    return found


@dataclass(frozen=True)
class GroupResults:
    """result.json's `groups` but for their recovery after heals (`group_recovery.with_recovery`,
    once the writes' side is known), and what that is found from."""

    entries: dict[str, dict[str, Any]]
    polled_after_heals: list[Row]
    """`groups.firsts_polled_after` each heal."""
    last_ns: dict[str, int]
    """Each group's last event."""


def group_results(history: History, faults: list[FaultWindow], healed: list[Heal | None]) -> GroupResults:
    """result.json's `groups` for a history with consumes.jsonl (empty without); `healed`: each
    fault's `heals.Heal`."""
    declared = history.run.get("groups") or []
    if history.consumes is None or not declared:
        return GroupResults({}, [], {})
    small = history.event_counts.get("consumes", 0) < ONE_PARTITION_EVENTS
    # parsed once, read by every query below
    consumes = kept(history.consumes.coalesce(1) if small else history.consumes)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kchaos-group-activity") as pool:
        # The activity does not depend on the anomalies: planned and run beside them, in this
        # thread's scheduler pool (the groups are a check's longest part; its other parts leave
        # cores idle).
        measuring_activity = pool.submit(
            inheritable_thread_target(consumes.sparkSession)(_activity), history, consumes, declared, healed
        )
        inputs = _inputs(history, consumes)
        found = _first_and_count(_anomalies(inputs), in_one_task=small)
        cases = _cases(inputs)
        activity = measuring_activity.result()
    results = {}
    for group in declared:
        name = group["name"]
        mine = {kind_id: found.get((kind_id, name), (0, [])) for kind_id in GROUP_BY_ID}
        counts = {kind.count: mine[kind.id][0] for kind in GROUP_KINDS}
        evidence = _GroupEvidence(history, name, faults)
        entry: dict[str, Any] = {
            "commit": group["commit"],
            "commit_async": bool(group.get("commit_async")),
            "members": group.get("members"),
            "topics": group["topics"],
            "polled": activity.polled.get(name, 0),
            **counts,
            "committed_positions": cases.get(name, {}).get("committed_positions", 0),
            **(
                {"aborted_polled": cases.get(name, {}).get("aborted_polled", 0)}
                if history.transactions is not None
                else {}
            ),
            "commits": activity.commits.get(name, dict.fromkeys(COMMIT_PHASES, 0)),
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
        entry["series"] = activity.series[name]
        results[name] = entry
    return GroupResults(results, activity.polled_after_heals, activity.last_ns)


@dataclass(frozen=True)
class _Activity:
    """What each group did: `series`, a row for every second of the run; `polled`, its polls on
    complete partitions; `commits`, its commit events per phase; `last_ns`, its last event;
    `polled_after_heals`, see `GroupResults`."""

    series: dict[str, list[dict[str, Any]]]
    polled: dict[str, int]
    commits: dict[str, dict[str, int]]
    last_ns: dict[str, int]
    polled_after_heals: list[Row]


def _activity(
    history: History, consumes: DataFrame, declared: list[dict[str, Any]], healed: list[Heal | None]
) -> _Activity:
    """Per group, a row for every second of the run: what it did then (`groups.per_second`, zeros
    when nothing) and its commit lag (`groups.lag_changes`, carried over the seconds it did not
    change), in one job; its polls, commits and last event are those seconds' sums and maximum. A
    row per group and second with any change: few. Then, if a fault was healed, its first poll of
    each partition after each heal."""
    topic_groups: dict[str, list[str]] = {}
    for group in declared:
        for topic in group["topics"]:
            topic_groups.setdefault(topic, []).append(group["name"])
    lag_rows = g.lag_changes(history.writes, g.ok_commit_entries(consumes), topic_groups)
    per_second = g.per_second(consumes, history.complete_partitions)
    changes: dict[tuple[str, int], dict[str, Any]] = {}
    polled: dict[str, int] = {}
    commits: dict[str, dict[str, int]] = {}
    last_ns: dict[str, int] = {}
    for row in per_second.join(lag_rows, ["group", "t_s"], "full").collect():
        change = changes[(row["group"], row["t_s"])] = row.asDict()
        if change["polled"] is None:  # a change of lag alone
            continue
        last_ns[row["group"]] = max(last_ns.get(row["group"], 0), change["last_ns"])
        change["commits_failed"] = change["commits_fail"] + change["commits_info"]
        polled[row["group"]] = polled.get(row["group"], 0) + change["polled_complete"]
        phases = commits.setdefault(row["group"], dict.fromkeys(COMMIT_PHASES, 0))
        for phase in COMMIT_PHASES:
            phases[phase] += change[f"commits_{phase}"]
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
    times = heal_times(healed)
    polled_after_heals = g.firsts_polled_after(consumes, times).collect() if times else []
    return _Activity(series, polled, commits, last_ns, polled_after_heals)


def _example(row: dict[str, Any], kind_id: str, evidence: _GroupEvidence) -> dict[str, Any]:
    """An example with what was going on at its time: the faults active, and the broker
    coordinating the group (the leader of its offsets partition in the last cluster.jsonl sample
    then; null when the offsets topic was not sampled)."""
    time_ns = row.get(_TIME_COLUMN[kind_id])
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

"""check/result.json's `groups`: per consumer group, its counts, commit outcomes, each anomaly kind's
examples with their evidence, and the guarantees its commit mode promises (`checkers.group_guarantees`).

The group kinds' checkers (`checkers.registry`) are counted by `count_group_kinds`, which the
check's runner calls beside the topic kinds: one Spark job counts every kind and takes each kind's
first examples (by time); should it fail, each kind alone, so a checker that raises costs only its
own kind. Beside it, `group_activity` counts what each group did each second, which also gives its
polls and commits.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame, Row, Window
from pyspark.sql import functions as F

from checkers import group_anomalies as g
from checkers import transactions
from checkers.evidence import ClusterTimeline, active_fault_names
from checkers.group_guarantees import group_guarantees
from checkers.heals import Heal, heal_times
from checkers.io import History
from checkers.registry import (
    Checker,
    CheckInputs,
    Found,
    GroupInputs,
    PerOwnerSecond,
    anomalies_entry,
    failed_kind,
    registered,
)
from contract.anomaly_kinds import GROUP_KINDS
from contract.coordinators import OFFSETS_TOPIC, group_offsets_partition, offsets_partitions
from contract.events import FaultWindow
from contract.history_fields import COMMIT_PHASES

EXAMPLES = 10  # per kind and group
_KEEP_NULLS = {"ignoreNullFields": "false"}


def _cases(groups: GroupInputs, history: History) -> dict[str, dict[str, int]]:
    """Per group, what its guarantees are judged over beyond its polls: `committed_positions` (the
    final read's records below its committed offsets) and, with transactions, `aborted_polled` (the
    appended records of aborted transactions its members were handed: with read_uncommitted, the
    control that shows they were there to be seen). One small job."""
    below = g.below_committed(groups.final, groups.commits).select(
        "group", F.lit("committed_positions").alias("case")
    )
    if history.transactions is not None and history.transactional_writes is not None:
        polled = transactions.uncommitted_polls(groups.polled, history.values, history.transactions)
        # Of the records counted appended (their own write `ok`), so "polled N of M appended" never
        # has N > M: a timed-out write of an aborted transaction may be in the log all the same.
        appended = history.transactional_writes.where(F.col("appended")).select("value")
        aborted = (
            polled.where(F.col("outcome") == "aborted")
            .join(appended, "value", "left_semi")
            .select("group", "value")
            .distinct()
            .select("group", F.lit("aborted_polled").alias("case"))
        )
        below = below.unionByName(aborted)
    cases: dict[str, dict[str, int]] = {}
    for row in below.groupBy("group", "case").count().collect():
        cases.setdefault(row["group"], {})[row["case"]] = int(row["count"])
    return cases


def _position(frame: DataFrame) -> Column:
    """Where a kind's row is, as text: topic/partition[/offset] (for a stable order of ties)."""
    return F.concat_ws("/", *[F.col(c).cast("string") for c in g.POSITION if c in frame.columns])


def _first_and_count(
    frames: Mapping[str, DataFrame], time_columns: Mapping[str, str], *, in_one_task: bool
) -> dict[str, Found]:
    """Every kind's count per group and first EXAMPLES by its time (`time_columns`), in one job (each
    example carried as JSON: the kinds' columns differ). `in_one_task`: the kinds' rows are gathered
    in one partition and ranked there, without a shuffle (for small consumes: one task, not one per
    partition of every kind, each deserializing the whole job)."""
    parts = [
        frame.select(
            F.lit(kind_id).alias("kind"),
            "group",
            F.col(time_columns[kind_id]).cast("long").alias("t"),
            _position(frame).alias("at"),
            F.to_json(F.struct(*frame.columns), _KEEP_NULLS).alias("row"),
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
    counts: dict[str, PerOwnerSecond] = {kind_id: {} for kind_id in frames}
    examples: dict[str, list[dict[str, Any]]] = {kind_id: [] for kind_id in frames}
    for row in sorted(ranked.where(F.col("rank") <= EXAMPLES).collect(), key=lambda r: r["rank"]):
        counts[row["kind"]][(row["group"], None)] = int(row["total"])
        examples[row["kind"]].append(json.loads(row["row"]))
    return {kind_id: Found(counts[kind_id], examples[kind_id]) for kind_id in frames}


def count_group_kinds(checkers: list[Checker], inputs: CheckInputs) -> dict[str, Found]:
    """Each group kind's count per group (`Found`'s owner is the group) and first EXAMPLES per group,
    in one Spark job; should it fail, each kind alone: a checker that raises costs its kind only."""
    found: dict[str, Found] = {}
    frames: dict[str, DataFrame] = {}
    for checker in checkers:
        try:
            if checker.applies(inputs):
                frames[checker.kind.id] = checker.find(inputs)
            else:
                found[checker.kind.id] = Found({}, [])
        except Exception as exc:  # check-safe
            found[checker.kind.id] = failed_kind(exc)
    if not frames or inputs.groups is None:
        return found
    time_columns = {checker.kind.id: checker.time_column for checker in checkers}
    small = inputs.groups.small
    try:
        return found | _first_and_count(frames, time_columns, in_one_task=small)
    except Exception:  # one kind's job failed: each alone, to learn which
        for kind_id, frame in frames.items():
            try:
                found |= _first_and_count({kind_id: frame}, time_columns, in_one_task=small)
            except Exception as exc:  # check-safe
                found[kind_id] = failed_kind(exc)
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


def group_results(
    history: History,
    found: Mapping[str, Found],
    activity: GroupActivity | None,
    faults: list[FaultWindow],
    power_lost: Collection[str] = (),
) -> GroupResults:
    """result.json's `groups` (empty without groups): each group's counts and examples from the
    group kinds' `found` (a kind whose checker failed is counted null, its error said), and what it
    did (`group_activity`); `power_lost`: the topics that lost power on every replica of a
    partition (`guarantees.lost_power_on_every_replica`)."""
    declared = history.run.get("groups") or []
    if activity is None or not declared:
        return GroupResults({}, [], {})
    time_columns = {checker.kind.id: checker.time_column for checker in registered("group")}
    results = {}
    for group in declared:
        name = group["name"]
        evidence = _GroupEvidence(history, name, faults)
        anomalies: dict[str, dict[str, Any]] = {}
        for kind in GROUP_KINDS:
            kind_found = found[kind.id]
            if kind_found.error:
                anomalies[kind.id] = anomalies_entry(kind_found)
                continue
            count = kind_found.per_owner_second.get((name, None), 0)
            examples = [
                _example(row, time_columns[kind.id], evidence)
                for row in kind_found.examples
                if row.get("group") == name
            ]
            anomalies[kind.id] = {
                "count": count,
                "examples": examples,
                "examples_capped": count > len(examples),
            }
        cases = activity.cases.get(name, {})
        entry: dict[str, Any] = {
            "commit": group["commit"],
            "commit_async": bool(group.get("commit_async")),
            "members": group.get("members"),
            "topics": group["topics"],
            "polled": activity.polled.get(name, 0),
            **{kind.count: anomalies[kind.id]["count"] for kind in GROUP_KINDS},
            "committed_positions": cases.get("committed_positions", 0),
            **(
                {"aborted_polled": cases.get("aborted_polled", 0)} if history.transactions is not None else {}
            ),
            "commits": activity.commits.get(name, dict.fromkeys(COMMIT_PHASES, 0)),
            "anomalies": anomalies,
        }
        counted = {k: v if v is not None else 0 for k, v in entry.items()}  # a failed kind adds nothing
        entry["guarantees"] = group_guarantees(history.run, group, counted, power_lost)
        entry["series"] = activity.series[name]
        results[name] = entry
    return GroupResults(results, activity.polled_after_heals, activity.last_ns)


@dataclass(frozen=True)
class GroupActivity:
    """What each group did: `series`, a row for every second of the run; `polled`, its polls on
    complete partitions; `commits`, its commit events per phase; `last_ns`, its last event;
    `polled_after_heals`, see `GroupResults`; `cases`, what its guarantees are judged over beyond
    its polls (`_cases`)."""

    series: dict[str, list[dict[str, Any]]]
    polled: dict[str, int]
    commits: dict[str, dict[str, int]]
    last_ns: dict[str, int]
    polled_after_heals: list[Row]
    cases: dict[str, dict[str, int]]


def group_activity(
    history: History, groups: GroupInputs | None, healed: list[Heal | None]
) -> GroupActivity | None:
    """Per group, a row for every second of the run: what it did then (`groups.per_second`, zeros
    when nothing) and its commit lag (`groups.lag_changes`, carried over the seconds it did not
    change), in one job; its polls, commits and last event are those seconds' sums and maximum. A
    row per group and second with any change: few. Then, if a fault was healed, its first poll of
    each partition after each heal, and its cases (`_cases`). None without groups. It does not
    depend on the anomalies: the check runs it beside them."""
    if groups is None:
        return None
    consumes, declared = groups.consumes, history.run.get("groups") or []
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
    return GroupActivity(series, polled, commits, last_ns, polled_after_heals, _cases(groups, history))


def _example(row: dict[str, Any], time_column: str, evidence: _GroupEvidence) -> dict[str, Any]:
    """An example (without its group) with what was going on at its time: the faults active, and
    the broker coordinating the group (the leader of its offsets partition in the last cluster.jsonl
    sample then; null when the offsets topic was not sampled)."""
    time_ns = row.get(time_column)
    return {
        **{k: v for k, v in row.items() if k != "group"},
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

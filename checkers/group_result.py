"""check/result.json's `groups`: per consumer group, its counts, commit outcomes, each anomaly kind's
examples with their evidence, and the guarantees its commit mode promises (`checkers.group_guarantees`).

One Spark job per kind counts it per group and takes its first examples (by time) at once.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers import groups as g
from checkers.evidence import active_fault_names
from checkers.group_guarantees import group_guarantees
from checkers.io import History
from harness.anomaly_kinds import GROUP_KINDS
from harness.events import FaultWindow

EXAMPLES = 10  # per kind and group
_TIME = {
    "consumer-skip": "committed_ns",
    "redelivery": "first_ns",
    "poll-skip": "after_ns",
    "nonmonotonic-poll": "after_ns",
    "commit-regression": "time_ns",
}
"""The column that orders a kind's examples, and whose time names the faults active then."""


def _anomalies(history: History, consumes: DataFrame) -> dict[str, DataFrame]:
    complete = history.ends.select(*g.PARTITION).distinct()
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
        "polled": polled,
    }


def _first_and_count(frame: DataFrame, order: str) -> list[dict[str, Any]]:
    """The first EXAMPLES rows of each group by `order`, each with its group's `total` (one job)."""
    window = Window.partitionBy("group")
    ranked = frame.withColumn("total", F.count(F.lit(1)).over(window)).withColumn(
        "rank", F.row_number().over(window.orderBy(order, *[c for c in g.POSITION if c in frame.columns]))
    )
    first = sorted(
        ranked.where(F.col("rank") <= EXAMPLES).collect(), key=lambda row: (row["group"], row["rank"])
    )
    return [{k: v for k, v in row.asDict(recursive=True).items() if k != "rank"} for row in first]


def group_results(history: History, faults: list[FaultWindow]) -> dict[str, dict[str, Any]]:
    """result.json's `groups` for a history with consumes.jsonl (empty without)."""
    consumes = history.consumes
    declared = history.run.get("groups") or []
    if consumes is None or not declared:
        return {}
    frames = _anomalies(history, consumes)
    polled = {r["group"]: int(r["count"]) for r in frames["polled"].groupBy("group").count().collect()}
    outcomes: dict[str, dict[str, int]] = {}
    for outcome in g.commit_outcomes(consumes).collect():
        outcomes.setdefault(outcome["group"], {})[outcome["phase"]] = int(outcome["count"])
    series: dict[str, list[dict[str, Any]]] = {}
    for second in g.per_second(consumes).orderBy("t_s").collect():  # a row per group and second: few
        series.setdefault(second["group"], []).append(
            {k: v for k, v in second.asDict().items() if k != "group"}
        )
    found: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind in GROUP_KINDS:
        for row in _first_and_count(frames[kind.id], _TIME[kind.id]):
            found.setdefault(row["group"], {}).setdefault(kind.id, []).append(row)
    results = {}
    for group in declared:
        name = group["name"]
        rows = found.get(name, {})
        counts = {kind.count: (rows[kind.id][0]["total"] if kind.id in rows else 0) for kind in GROUP_KINDS}
        entry: dict[str, Any] = {
            "commit": group["commit"],
            "commit_async": bool(group.get("commit_async")),
            "members": group.get("members"),
            "topics": group["topics"],
            "polled": polled.get(name, 0),
            **counts,
            "commits": {p: outcomes.get(name, {}).get(p, 0) for p in ("invoke", "ok", "fail", "info")},
            "anomalies": {
                kind.id: {
                    "count": counts[kind.count],
                    "examples": [_example(row, kind.id, faults) for row in rows.get(kind.id, [])],
                    "examples_capped": counts[kind.count] > len(rows.get(kind.id, [])),
                }
                for kind in GROUP_KINDS
            },
        }
        entry["guarantees"] = group_guarantees(history.run, group, entry, {w.fault for w in faults})
        entry["series"] = series.get(name, [])
        results[name] = entry
    return results


def _example(row: dict[str, Any], kind_id: str, faults: list[FaultWindow]) -> dict[str, Any]:
    example = {k: v for k, v in row.items() if k not in ("group", "total")}
    example["faults"] = active_fault_names(faults, row.get(_TIME[kind_id]))
    return example

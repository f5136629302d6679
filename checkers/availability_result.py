"""result.json's `availability` (docs/RESULT_FORMAT.md): per-second write outcomes and latency by acks
mode, latency during and outside faults, and how long each fault took to recover from.

What reaches the driver is small: one row per (acks mode, second), per fault window and per mode.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Row

from checkers import availability
from checkers.evidence import merged_windows
from checkers.io import History, partitions_of, topic_acks
from harness.events import FaultWindow
from harness.history import ACKS_MODES


def rounded(value: Any) -> Any:
    """A time in milliseconds or a rate as result.json holds it: to three decimals (null stays null)."""
    return round(float(value), 3) if value is not None else None


def heal_column(index: int) -> str:
    """The column of fault `index`'s heal in `availability.firsts_after` and `groups.firsts_polled_after`."""
    return f"heal_{index}"


def heal_times(healed: list[int | None]) -> dict[str, int]:
    """The heals to find the firsts after (`whole_again`), by their columns; none for a fault never healed."""
    return {heal_column(i): at for i, at in enumerate(healed) if at is not None}


@dataclass(frozen=True)
class AvailabilityRows:
    """What Spark computes for availability: per-second series, latency by fault, and per partition
    the first oks after each fault's start and after each heal (`availability.firsts_after`)."""

    series: list[Row]
    latency: list[Row]
    partitions: list[Row]


def availability_rows(
    history: History, intervals: list[FaultWindow], healed: list[int | None]
) -> AvailabilityRows:
    """The rows of `availability_entry`; `healed`: when each fault's heal left the cluster whole
    (`whole_again`)."""
    writes = history.writes
    # Sorted here, not by Spark: a few thousand rows at most, and a global sort would cost a job to
    # sample the rows, a shuffle and another plan.
    series = sorted(availability.per_second(writes).collect(), key=lambda r: (r["acks"], r["t_s"]))
    latency = sorted(
        availability.latency_by_fault(writes, merged_windows(intervals)).collect(),
        key=lambda r: (r["acks"], r["during_fault"]),
    )
    partitions = []
    if intervals:
        times = {f"start_{i}": interval.start_ns for i, interval in enumerate(intervals)}
        partitions = availability.firsts_after(writes, times | heal_times(healed)).collect()
    return AvailabilityRows(series, latency, partitions)


def whole_again(intervals: list[FaultWindow]) -> list[int | None]:
    """For each fault, when no fault was in force any more after it: its heal, or the last heal of
    the faults overlapping it (None: some fault was still in force when the history ended). What a
    recovery after its heal is measured from, so that it does not count another fault's outage."""
    windows = merged_windows(intervals)
    return [
        next(stop for start, stop in windows if start <= i.start_ns and (stop is None or i.start_ns < stop))
        for i in intervals
    ]


def availability_entry(
    history: History,
    intervals: list[FaultWindow],
    healed: list[int | None],
    marked: Mapping[str, Mapping[tuple[str, int | None], int]],
    rows: AvailabilityRows,
) -> dict[str, Any]:
    """result.json's `availability`, of `availability_rows(history, intervals, healed)`; `marked`
    holds the `lost` and `divergent` counts per (topic, second of the ack) that each second of the
    series is marked with."""
    acks = topic_acks(history.run)
    marks: dict[tuple[str, int | None], dict[str, int]] = defaultdict(lambda: {"lost": 0, "divergent": 0})
    for name, per_topic_second in marked.items():
        for (topic, t_s), n in per_topic_second.items():
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
                "latency_p50_ms": rounded(row["latency_p50_ms"]),
                "latency_p99_ms": rounded(row["latency_p99_ms"]),
                "latency_max_ms": rounded(row["latency_max_ms"]),
            }
        )
    measured = ("p50_ms", "p99_ms", "max_ms", "error_rate", "indeterminate_rate")
    latency = [{**row.asDict(), **{k: rounded(row[k]) for k in measured}} for row in rows.latency]
    recovery = [
        recovery_of(
            index,
            interval,
            healed[index],
            mode,
            [r for r in rows.partitions if acks.get(r["topic"]) == mode],
            history.run,
        )
        for index, interval in enumerate(intervals)
        for mode in sorted({*acks.values()}, key=ACKS_MODES.index)
    ]
    return {"bucket_s": 1, "series": series, "latency": latency, "recovery": recovery}


def recovery_of(
    index: int,
    interval: FaultWindow,
    healed: int | None,
    mode: str,
    partitions: list[Row],
    run: dict[str, Any],
) -> dict[str, Any]:
    """How acks mode `mode`'s writes came through fault `index`: the first `ok` after it started, and
    when every partition of the mode written to after `healed` (`whole_again`) had acknowledged a
    write again (`partitions`: the mode's rows of `availability.firsts_after`).

    With no write of the mode invoked after `healed`, the heal is not judged (`heal_recovery_ms`
    null). When a partition acknowledged nothing between `healed` and its last invocation,
    `heal_recovery_ms` is the time to that invocation, a lower bound (`heal_recovery_lower_bound`)."""
    first = min((r[f"start_{index}"] for r in partitions if r[f"start_{index}"] is not None), default=None)
    entry: dict[str, Any] = {
        "fault": interval.fault,
        "start_ns": interval.start_ns,
        "acks": mode,
        "first_ok_ns": first,
        "recovery_ms": rounded((first - interval.start_ns) / 1e6) if first is not None else None,
        "healed_ns": healed,
        "resumed_ns": None,
        "heal_recovery_ms": None,
        "heal_recovery_lower_bound": False,
    }
    if healed is None:
        return entry
    declared = {(t, p) for t, count in partitions_of(run).items() for p in range(count)}
    written = [
        r
        for r in partitions
        if (r["topic"], r["partition"]) in declared
        and r["last_invoke_ns"] is not None
        and r["last_invoke_ns"] >= healed
    ]
    if not written:
        return entry
    waiting = [r["last_invoke_ns"] for r in written if r[f"heal_{index}"] is None]
    if waiting:
        return entry | {
            "heal_recovery_ms": rounded((max(waiting) - healed) / 1e6),
            "heal_recovery_lower_bound": True,
        }
    resumed = max(r[f"heal_{index}"] for r in written)
    return entry | {"resumed_ns": resumed, "heal_recovery_ms": rounded((resumed - healed) / 1e6)}


def longest_heal_recovery(recovery: list[dict[str, Any]]) -> dict[str, Any]:
    """The longest `heal_recovery_ms` of `recovery`'s rows (null: none was judged) and whether one of
    them was a lower bound: result.json's `acks.<mode>.heal_recovery_ms` of the mode's rows, and
    `groups.<name>.heal_recovery_ms` of the group's, which expectations judge."""
    judged = [entry for entry in recovery if entry["heal_recovery_ms"] is not None]
    return {
        "heal_recovery_ms": max((entry["heal_recovery_ms"] for entry in judged), default=None),
        "heal_recovery_lower_bound": any(entry["heal_recovery_lower_bound"] for entry in judged),
    }

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
from checkers.heals import Heal, duration_ms, heal_column, heal_times, measured, unmeasured
from checkers.io import History, partitions_of, topic_acks
from checkers.registry import PerOwnerSecond
from contract.events import FaultWindow
from contract.history import ACKS_MODES


def _round(value: Any) -> Any:
    """A time in milliseconds or a rate as result.json holds it: to three decimals (null stays null)."""
    return round(float(value), 3) if value is not None else None


@dataclass(frozen=True)
class AvailabilityRows:
    """What Spark computes for availability: per-second series, latency by fault, and per partition
    the first oks after each fault's start and after each heal (`availability.firsts_after`)."""

    series: list[Row]
    latency: list[Row]
    partitions: list[Row]


def availability_rows(
    history: History, intervals: list[FaultWindow], healed: list[Heal | None]
) -> AvailabilityRows:
    """The rows of `availability_entry`; `healed`: each fault's `heals.Heal`."""
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


def availability_entry(
    history: History,
    intervals: list[FaultWindow],
    healed: list[Heal | None],
    marked: Mapping[str, PerOwnerSecond],
    rows: AvailabilityRows,
) -> dict[str, Any]:
    """result.json's `availability`, of `availability_rows(history, intervals, healed)`; `marked`
    holds the counts of the charted kinds (`AnomalyKind.charted`: `lost`, `divergent`) per (topic,
    second of the ack) that each second of the series is marked with."""
    acks = topic_acks(history.run)
    unmarked = dict.fromkeys(marked, 0)
    marks: dict[tuple[str, int | None], dict[str, int]] = defaultdict(lambda: dict(unmarked))
    for name, per_topic_second in marked.items():
        for (topic, t_s), n in per_topic_second.items():
            marks[(acks[str(topic)], t_s)][name] += n  # a charted kind's rows all have a topic
    series = []
    for row in rows.series:
        series.append(
            {
                "acks": row["acks"],
                "t_s": int(row["t_s"]),
                "acked": int(row["acked"]),
                "failed": int(row["failed"]),
                "indeterminate": int(row["indeterminate"]),
                **marks.get((row["acks"], row["t_s"]), unmarked),
                "latency_p50_ms": _round(row["latency_p50_ms"]),
                "latency_p99_ms": _round(row["latency_p99_ms"]),
                "latency_max_ms": _round(row["latency_max_ms"]),
            }
        )
    rounded = ("p50_ms", "p99_ms", "max_ms", "error_rate", "indeterminate_rate")
    latency = [{**row.asDict(), **{k: _round(row[k]) for k in rounded}} for row in rows.latency]
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
    heal: Heal | None,
    mode: str,
    partitions: list[Row],
    run: dict[str, Any],
) -> dict[str, Any]:
    """How acks mode `mode`'s writes came through fault `index`: the first `ok` after it started, and
    when every partition of the mode written to after its `heal` had acknowledged a write again
    (`partitions`: the mode's rows of `availability.firsts_after`).

    With no write of the mode invoked after the heal, it is not judged (`heal_recovery_ms` null).
    When a partition acknowledged nothing between the heal and its last invocation, or the next
    fault's start if sooner, `heal_recovery_ms` is the time to then, a lower bound
    (`heal_recovery_lower_bound`)."""
    first = min((r[f"start_{index}"] for r in partitions if r[f"start_{index}"] is not None), default=None)
    entry: dict[str, Any] = {
        "fault": interval.fault,
        "start_ns": interval.start_ns,
        "acks": mode,
        "first_ok_ns": first,
        "recovery_ms": duration_ms(first - interval.start_ns) if first is not None else None,
        **unmeasured(heal),
    }
    if heal is None:
        return entry
    declared = {(t, p) for t, count in partitions_of(run).items() for p in range(count)}
    written = [
        r
        for r in partitions
        if (r["topic"], r["partition"]) in declared
        and r["last_invoke_ns"] is not None
        and r["last_invoke_ns"] >= heal.at_ns
    ]
    if not written:
        return entry
    column = heal_column(index)
    return entry | measured(
        heal, [r[column] for r in written], [heal.observed_until(r["last_invoke_ns"]) for r in written]
    )

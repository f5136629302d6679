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
from checkers.io import History, topic_acks
from harness.events import FaultWindow
from harness.history import ACKS_MODES


def _round(value: Any) -> Any:
    return round(float(value), 3) if value is not None else None


@dataclass(frozen=True)
class AvailabilityRows:
    """What Spark computes for availability: per-second series, latency by fault, first oks."""

    series: list[Row]
    latency: list[Row]
    first_oks: dict[str, Row]


def availability_rows(history: History, intervals: list[FaultWindow]) -> AvailabilityRows:
    writes = history.writes
    # Sorted here, not by Spark: a few thousand rows at most, and a global sort would cost a job to
    # sample the rows, a shuffle and another plan.
    series = sorted(availability.per_second(writes).collect(), key=lambda r: (r["acks"], r["t_s"]))
    latency = sorted(
        availability.latency_by_fault(writes, merged_windows(intervals)).collect(),
        key=lambda r: (r["acks"], r["during_fault"]),
    )
    first_oks = {}
    if intervals:
        first_oks = {
            r["acks"]: r
            for r in availability.first_ok_after(writes, [i.start_ns for i in intervals]).collect()
        }
    return AvailabilityRows(series, latency, first_oks)


def availability_entry(
    history: History,
    intervals: list[FaultWindow],
    marked: Mapping[str, Mapping[tuple[str, int | None], int]],
    rows: AvailabilityRows,
) -> dict[str, Any]:
    """result.json's `availability`; `marked` holds the `lost` and `divergent` counts per (topic,
    second of the ack) that each second of the series is marked with."""
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

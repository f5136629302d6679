"""A single-process Python reference check of writes.jsonl and reads.jsonl, written from
docs/HISTORY_FORMAT.md's definitions, not from the Spark checkers: every json.loads'd line into dicts
and sets, the format's anomaly kinds counted, then the rest of result.json's numbers (write counts
per topic, and availability: per acks mode and second, in and out of faults, recovery after each
fault start, with exact percentiles). Examples are not gathered. The benchmarks compare every
Spark check's counts and exact availability numbers with it (`side_files_reference.py` does the
same for the other history files).
"""

from __future__ import annotations

import bisect
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checkers.evidence import merged_windows
from contract.anomaly_kinds import WRITE_COUNTS
from contract.events import fault_windows
from contract.history_readers import iter_jsonl

KINDS = (
    "lost-write",
    "divergent-offset",
    "duplicate",
    "phantom-write",
    "unexpected-value",
    "reordered",
    "read-then-lost",
)


@dataclass
class _PythonHistory:
    """What one pass over both JSONL files leaves in memory, in dicts and sets."""

    run: dict[str, Any]
    writes: dict[str, dict[str, Any]] = field(default_factory=dict)
    values_at: dict[tuple[str, int, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    positions_of: dict[str, set[tuple[str, int, int]]] = field(default_factory=lambda: defaultdict(set))
    final_values: dict[tuple[str, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    live_values: dict[tuple[str, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    complete: set[tuple[str, int]] = field(default_factory=set)


def python_read(run_dir: Path) -> _PythonHistory:
    """Read every line of writes.jsonl and reads.jsonl with json.loads into dicts and sets."""
    history = _PythonHistory(json.loads((run_dir / "run.json").read_text()))
    writes = history.writes
    with (run_dir / "history/writes.jsonl").open() as handle:
        for line in handle:
            event = json.loads(line)
            write = writes.setdefault(event["value"], {"outcome": "info", "partition": event["partition"]})
            if event["type"] == "invoke":
                write |= {"topic": event["topic"], "process": event["process"], "invoke_ns": event["time_ns"]}
            else:
                write["outcome"] = event["type"]
                write["complete_ns"] = event["time_ns"]
                if event["partition"] >= 0:
                    write["partition"] = event["partition"]
                if event["type"] == "ok":
                    write["offset"] = event.get("offset")
    with (run_dir / "history/reads.jsonl").open() as handle:
        for line in handle:
            event = json.loads(line)
            where = (event["topic"], event["partition"])
            if event["type"] == "end":
                if event["phase"] == "final":
                    history.complete.add(where)
                continue
            position = (*where, event["offset"])
            history.values_at[position].add(event["value"])
            history.positions_of[event["value"]].add(position)
            if event["phase"] == "final":
                history.final_values[where].add(event["value"])
            else:
                history.live_values[where].add(event["value"])
    return history


def python_counts(history: _PythonHistory) -> dict[str, int]:
    """The anomaly counts of HISTORY_FORMAT.md."""
    partitions = {t["name"]: int(t["partitions"]) for t in history.run["topics"]}
    complete, final_values, values_at = history.complete, history.final_values, history.values_at
    counts = dict.fromkeys(KINDS, 0)
    by_sequence: dict[tuple[str, str, int], list[tuple[int, str, int]]] = defaultdict(list)
    for value, write in history.writes.items():
        topic, partition = str(write.get("topic")), int(write["partition"])
        where = (topic, partition)
        counts["read-then-lost"] += (
            where in complete and value in history.live_values[where] and value not in final_values[where]
        )
        if write["outcome"] == "ok":
            if partition >= 0:
                lost = (topic, partition) in complete and value not in final_values[(topic, partition)]
            else:
                every = [(topic, p) for p in range(partitions[topic])]
                lost = all(w in complete for w in every) and not any(value in final_values[w] for w in every)
            counts["lost-write"] += lost
            if write.get("offset") is not None and partition >= 0:
                values_at[(topic, partition, write["offset"])].add(value)
                by_sequence[(write["process"], topic, partition)].append(
                    (write["invoke_ns"], value, write["offset"])
                )
        elif write["outcome"] == "fail":
            counts["phantom-write"] += value in history.positions_of
    counts["divergent-offset"] = sum(len(values) > 1 for values in values_at.values())
    counts["duplicate"] = sum(len(positions) > 1 for positions in history.positions_of.values())
    counts["unexpected-value"] = sum(value not in history.writes for value in history.positions_of)
    for sequence in by_sequence.values():
        highest = -1
        for _, _, offset in sorted(sequence):
            counts["reordered"] += offset < highest
            highest = max(highest, offset)
    return counts


def _percentile(ordered: list[float], fraction: float) -> float:
    """The smallest value with at least `fraction` of `ordered` at or below it."""
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def _latency_stats(latencies: list[float], prefix: str = "") -> dict[str, float | None]:
    ordered = sorted(latencies)
    stats: dict[str, float | None] = {"p50_ms": None, "p99_ms": None, "max_ms": None}
    if ordered:
        stats = {
            "p50_ms": _percentile(ordered, 0.5),
            "p99_ms": _percentile(ordered, 0.99),
            "max_ms": ordered[-1],
        }
    return {prefix + key: value for key, value in stats.items()}


def python_availability(history: _PythonHistory, run_dir: Path) -> dict[str, Any]:
    """What result.json tells besides anomaly counts: write counts per topic and availability (per
    acks mode and second of completion, per acks mode in and out of faults, recovery after each
    fault start), with exact percentiles."""
    acks_of = {t["name"]: t["acks"] for t in history.run["topics"]}
    topics = {name: dict.fromkeys(WRITE_COUNTS, 0) for name in acks_of}
    outcome_count = {"ok": "acked", "fail": "failed", "info": "indeterminate"}
    faults_path = run_dir / "history/faults.jsonl"
    intervals = fault_windows(iter_jsonl(faults_path, required=False), str(faults_path))
    windows = merged_windows(intervals)
    window_starts = [start for start, _ in windows]
    per_second: dict[tuple[str, int], dict[str, Any]] = {}
    by_fault: dict[tuple[str, bool], dict[str, Any]] = {}
    ok_times: dict[str, list[int]] = defaultdict(list)
    slot_ok_times: dict[tuple[str, int], list[int]] = defaultdict(list)
    slot_last_invoke: dict[tuple[str, int], int] = {}
    for write in history.writes.values():
        slot, invoked = (write["topic"], write["partition"]), write.get("invoke_ns")
        if invoked is not None:
            slot_last_invoke[slot] = max(slot_last_invoke.get(slot, invoked), invoked)
        counts = topics[write["topic"]]
        counts["attempted"] += 1
        counts[outcome_count[write["outcome"]]] += 1
        completed = write.get("complete_ns")
        if completed is None:
            continue
        acks, ok = acks_of[write["topic"]], write["outcome"] == "ok"
        index = bisect.bisect_right(window_starts, completed) - 1
        during = index >= 0 and (windows[index][1] is None or completed < windows[index][1])
        for groups, key in ((per_second, (acks, completed // 1_000_000_000)), (by_fault, (acks, during))):
            group = groups.setdefault(key, {"ok": 0, "fail": 0, "info": 0, "latencies": []})
            group[write["outcome"]] += 1
            if ok:
                group["latencies"].append((completed - write["invoke_ns"]) / 1_000_000)
        if ok:
            ok_times[acks].append(completed)
            slot_ok_times[slot].append(completed)
    series = [
        {"acks": acks, "t_s": t_s, "acked": g["ok"], "failed": g["fail"], "indeterminate": g["info"]}
        | _latency_stats(g["latencies"], "latency_")
        for (acks, t_s), g in sorted(per_second.items())
    ]
    latency = []
    for (acks, during), g in sorted(by_fault.items()):
        total = g["ok"] + g["fail"] + g["info"]
        latency.append(
            {"acks": acks, "during_fault": during, "count": total}
            | _latency_stats(g["latencies"])
            | {"error_rate": g["fail"] / total, "indeterminate_rate": g["info"] / total}
        )
    for times in [*ok_times.values(), *slot_ok_times.values()]:
        times.sort()
    partitions = {t["name"]: int(t["partitions"]) for t in history.run["topics"]}
    recovery, heals = [], []
    for interval in intervals:
        # measured from when no fault was in force any more, the end of its merged window, and seen
        # until the next window starts (or forever)
        at = next(
            i
            for i, (start, stop) in enumerate(windows)
            if start <= interval.start_ns and (stop is None or interval.start_ns < stop)
        )
        following = windows[at + 1][0] if at + 1 < len(windows) else math.inf
        heals.append((windows[at][1], following))
        for acks in sorted(set(acks_of.values())):
            times = ok_times[acks]
            after = bisect.bisect_left(times, interval.start_ns)
            entry = {
                "acks": acks,
                "start_ns": interval.start_ns,
                "first_ok_ns": times[after] if after < len(times) else None,
                "resumed_ns": None,
                "heal_recovery_ms": None,
                "heal_recovery_lower_bound": False,
            }
            healed, following = heals[-1]
            slots = [(t, p) for t, mode in acks_of.items() if mode == acks for p in range(partitions[t])]
            written = [s for s in slots if healed is not None and slot_last_invoke.get(s, -1) >= healed]
            if healed is not None and written:
                firsts = {s: _first_at_or_after(slot_ok_times[s], healed) for s in written}
                seen = [first for first in firsts.values() if first is not None and first <= following]
                waiting = [
                    min(slot_last_invoke[s], following)
                    for s, first in firsts.items()
                    if first is None or first > following
                ]
                if waiting:  # a lower bound, at least as late as the partitions that did resume
                    entry["heal_recovery_ms"] = round(max(max(waiting + seen) - healed, 0) / 1e6, 3)
                    entry["heal_recovery_lower_bound"] = True
                else:
                    resumed = max(f for f in firsts.values() if f is not None)
                    entry["resumed_ns"] = resumed
                    entry["heal_recovery_ms"] = round((resumed - healed) / 1e6, 3)
            recovery.append(entry)
    # with what the groups' recovery is found from (`side_files_reference.python_group_recovery`)
    return {
        "topics": topics,
        "series": series,
        "latency": latency,
        "recovery": recovery,
        "healed": heals,
        "ok_times": slot_ok_times,
        "last_invoke": slot_last_invoke,
    }


def _first_at_or_after(times: list[int], start_ns: int) -> int | None:
    after = bisect.bisect_left(times, start_ns)
    return times[after] if after < len(times) else None


def exact_availability(availability: dict[str, Any]) -> list[list[Any]]:
    """The availability numbers both checkers compute exactly (not the approximate percentiles)."""
    series = [
        ["series", r["acks"], r["t_s"], r["acked"], r["failed"], r["indeterminate"]]
        for r in availability["series"]
    ]
    recovery = [
        [
            "recovery",
            r["acks"],
            r["start_ns"],
            r["first_ok_ns"],
            r["resumed_ns"],
            r["heal_recovery_ms"],
            r["heal_recovery_lower_bound"],
        ]
        for r in availability["recovery"]
    ]
    return sorted(series + recovery, key=str)

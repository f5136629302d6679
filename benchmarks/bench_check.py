"""Benchmark `kchaos check` on synthetic histories against a straightforward single-process check.

For each size it generates a run directory (checkers/synthetic.py, cached under --dir), then in
separate child processes, side by side in this one run:
  - the Spark checker: a first check (JSONL -> Parquet conversion included) and a re-check (cache);
  - a straightforward Python check below: read every line with json.loads into dicts and sets,
    count the same anomalies, then compute the rest of result.json's numbers (write counts per topic
    and availability: per acks mode and second, in and out of faults, recovery after each fault
    start, with exact percentiles). Examples are not gathered.
The Spark check runs twice: with the class archive (`kchaos spark-archive`) and without it. It
prints events per second, peak RSS of the Spark driver (the JVM; local mode runs executors in it)
and of the Python driver, the speed ratio (also against the Python check's counting part alone),
and whether both checkers found the same anomaly counts, write counts and exact availability
numbers (per-second counts, recovery times). Before each child the history files are read
through once, so that every checker finds them in the page cache, as a check right after its run
does: otherwise whichever runs first pays for the disk (measured at 10M: 16 s to read 1.3 GB cold).

    .venv/bin/python benchmarks/bench_check.py                  # 1M and 10M events
    .venv/bin/python benchmarks/bench_check.py --sizes 1000000 --master 'local[*]'
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from side_files_reference import python_side_counts

from checkers.class_archive import ARCHIVE_ENV, archive_path
from checkers.evidence import merged_windows
from checkers.synthetic import ANOMALIES, DEFAULT_RATE, generate
from harness.anomaly_kinds import KIND_IDS, WRITE_COUNTS
from harness.events import fault_windows
from harness.history import WRITES
from harness.history_readers import iter_jsonl

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


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _jvm_peak_rss_mib() -> float | None:
    """Peak RSS (VmHWM) of this process's Java child: the Spark driver."""
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if f"PPid:\t{os.getpid()}\n" in status and b"java" in cmdline:
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    return None


def _spark_child(run_dir: Path, master: str | None) -> dict[str, Any]:
    from checkers import check_run, get_spark
    from checkers.io import history_bytes

    started = time.monotonic()
    get_spark(master, history_bytes=history_bytes(run_dir))  # start-up is not part of a check's work
    start_s = time.monotonic() - started
    shutil.rmtree(run_dir / "check", ignore_errors=True)
    started = time.monotonic()
    result = check_run(run_dir, master)
    first_s = time.monotonic() - started
    started = time.monotonic()
    check_run(run_dir, master)
    recheck_s = time.monotonic() - started
    return {
        "start_s": start_s,
        "first_s": first_s,
        "recheck_s": recheck_s,
        "events": sum(result["events"].values()),
        "counts": {kind: result["anomalies"][kind]["count"] for kind in KIND_IDS},
        "write_counts": {row["topic"]: {k: row[k] for k in WRITE_COUNTS} for row in result["topics"]},
        "exact_availability": exact_availability(result["availability"]),
        "jvm_peak_mib": _jvm_peak_rss_mib(),
        "python_peak_mib": _peak_rss_mib(),
    }


def _python_child(run_dir: Path) -> dict[str, Any]:
    started = time.monotonic()
    history = python_read(run_dir)
    counts = {**python_counts(history), **python_side_counts(run_dir)}
    counts_s = time.monotonic() - started
    availability = python_availability(history, run_dir)
    return {
        "counts_s": counts_s,
        "seconds": time.monotonic() - started,
        "counts": counts,
        "write_counts": availability["topics"],
        "exact_availability": exact_availability(availability),
        "peak_mib": _peak_rss_mib(),
    }


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


def _read_through(run_dir: Path) -> None:
    """Read the history files once, into the page cache (see the module docstring)."""
    for path in sorted((run_dir / WRITES).parent.glob("*.jsonl")):
        with path.open("rb") as file:
            while file.read(1 << 22):
                pass


def _in_child(child: str, run_dir: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """This script's `child` run on `run_dir`, its files read through first; its JSON output."""
    _read_through(run_dir)
    command = [sys.executable, __file__, "--child", child, "--run-dir", str(run_dir), *args]
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000000,10000000", help="comma-separated event counts")
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp/kchaos-bench"), help="where synthetic runs are kept"
    )
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--child", choices=("spark", "python"), help=argparse.SUPPRESS)
    parser.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "spark":
        print(json.dumps(_spark_child(args.run_dir, args.master)))
        return
    if args.child == "python":
        print(json.dumps(_python_child(args.run_dir)))
        return
    header = (
        f"{'events':>10} {'spark 1st s':>11} {'ev/s':>9} {'recheck s':>9} {'ev/s':>9} {'JVM MiB':>8}"
        f" {'py s':>7} {'ev/s':>9} {'py MiB':>7} {'ratio':>6} {'ratio re':>8} same"
    )
    archive = archive_path()
    archive = archive if archive is not None and archive.is_file() else None
    print(f"Spark class archive: {archive or 'none (kchaos spark-archive builds it)'}")
    print(header)
    for size in (int(s) for s in args.sizes.split(",")):
        run_dir = args.dir / f"run-{size}"
        if not (run_dir / "run.json").is_file():
            generate(run_dir, size, seed=7, rates=dict.fromkeys(ANOMALIES, DEFAULT_RATE))
        master = ["--master", args.master] if args.master else []
        spark = _in_child("spark", run_dir, *master)
        # The same check with JVMs that load Spark's classes instead of mapping them from the archive.
        unarchived = _in_child("spark", run_dir, *master, env={**os.environ, ARCHIVE_ENV: "off"})
        python = _in_child("python", run_dir)
        events = spark["events"]
        first, recheck, single = spark["first_s"], spark["recheck_s"], python["seconds"]
        same = all(spark[k] == python[k] for k in ("counts", "write_counts", "exact_availability"))
        print(
            f"{events:>10} {first:>11.1f} {events / first:>9.0f} {recheck:>9.1f} {events / recheck:>9.0f}"
            f" {spark['jvm_peak_mib'] or 0:>8.0f} {single:>7.1f} {events / single:>9.0f}"
            f" {python['peak_mib']:>7.0f}"
            f" {single / first:>6.2f} {single / recheck:>8.2f} {same}",
            flush=True,
        )
        counts_only = python["counts_s"]
        print(
            f"{'':>10} Python counting anomalies only (no write counts, no availability):"
            f" {counts_only:.1f} s, ratio {counts_only / first:.2f}, re-check {counts_only / recheck:.2f}",
            flush=True,
        )
        print(
            f"{'':>10} without the class archive{' (none built)' if archive is None else ''}:"
            f" JVM start {unarchived['start_s']:.1f} s (with: {spark['start_s']:.1f} s),"
            f" first check {unarchived['first_s']:.1f} s, ratio {single / unarchived['first_s']:.2f},"
            f" re-check {unarchived['recheck_s']:.1f} s",
            flush=True,
        )
        if not same:
            print(f"  spark:  {spark['counts']} {spark['write_counts']}", flush=True)
            print(f"  python: {python['counts']} {python['write_counts']}", flush=True)


if __name__ == "__main__":
    main()

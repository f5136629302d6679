"""Benchmark everyday checks: a held-out-sized history and a 60-second run, cold and in one process.

For each size (default: 60 events, what a hand-written or held-out history holds, and 170,000
events, what a 60-second run of three acks modes records; synthetic histories from
contract/synthetic_history.py, cached under --dir), side by side in this one run:
  - cold: `kchaos check RUN` in a new process, with no Parquet cache (Python and JVM start,
    conversion, check, result.json), --repeat times;
  - one process: checks a copy of RUN, then --further other copies (each a new run directory, as
    `kchaos run --matrix` or `kchaos check A B C` check them, on the process's one Spark session);
  - the single-process Python check of history_reference.py and side_files_reference.py, whose anomaly,
    write and consumer-group counts and exact availability numbers (per-second counts, recovery
    times, the groups' recovery after heals) must be the same as every Spark check's (for a run
    with groups it reads reads.jsonl once more, for the final read's offsets);
  - Spark's floor on this machine: the least a Spark check of the same files could do, one query
    (parse writes.jsonl and reads.jsonl with their schemas, as the check does: by pyarrow into
    Parquet, read by Spark; join the acknowledged writes to the records read, count per topic),
    in a new process started like `kchaos check`'s (cold,
    alternated with its cold checks) and again at the end of the one-process checks (warm).
The issue's targets are printed next to what was measured. `--runs` measures real run directories
(of `kchaos run`: consumer groups, replicas, client logs, which synthetic histories lack) the same
way, against the targets of a 60-second run; they are copied under --dir, never checked in place.

    .venv/bin/python benchmarks/bench_small_check.py
    .venv/bin/python benchmarks/bench_small_check.py --sizes 60 --repeat 5
    .venv/bin/python benchmarks/bench_small_check.py --sizes "" --runs runs/20261127-*-isolate-leader-*
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from history_reference import exact_availability, python_availability, python_counts, python_read
from side_files_reference import (
    checked_group_counts,
    checked_group_recovery,
    final_offsets,
    python_group_counts,
    python_group_recovery,
    python_side_counts,
)

from contract.anomaly_kinds import KIND_IDS, WRITE_COUNTS
from contract.synthetic_history import ANOMALIES, DEFAULT_RATE, generate

TARGETS = {60: (6.0, None), 170_000: (10.0, 4.0)}
"""Events -> (cold check, further check in one process) targets in seconds, from the issue."""
RUN_TARGETS = TARGETS[170_000]
"""A 60-second run of three acks modes records about 170,000 events."""


def _counts(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "counts": {kind: result["anomalies"][kind]["count"] for kind in KIND_IDS},
        "write_counts": {row["topic"]: {k: row[k] for k in WRITE_COUNTS} for row in result["topics"]},
        "groups": checked_group_counts(result),
        "group_recovery": checked_group_recovery(result),
        "exact_availability": exact_availability(result["availability"]),
    }


def _copy(run_dir: Path, copy: Path) -> Path:
    """A copy of `run_dir` at `copy`, without its check/ (so a check converts it again)."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("check"))
    return copy


def _cold(run_dir: Path) -> tuple[float, dict[str, Any]]:
    shutil.rmtree(run_dir / "check", ignore_errors=True)
    kchaos = Path(sys.executable).with_name("kchaos")
    started = time.monotonic()
    done = subprocess.run([str(kchaos), "check", str(run_dir)], capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: a guarantee broke, which synthetic anomalies do
        raise SystemExit(f"kchaos check {run_dir} exited {done.returncode}: {done.stderr[-2000:]}")
    if not (run_dir / "check/result.json").is_file():  # 1 is also Python's exit code of a crash
        raise SystemExit(f"kchaos check {run_dir} left no result.json: {done.stderr[-2000:]}")
    return seconds, _counts(json.loads((run_dir / "check/result.json").read_text()))


def _cold_floor(run_dir: Path) -> float:
    started = time.monotonic()
    _in_child("--child", "floor", "--run-dirs", str(run_dir))
    return time.monotonic() - started


def _floor_query(run_dir: Path) -> float:
    """Seconds to start (or get) the session as `kchaos check` does and run the one floor query."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from checkers.io.arrow_parse import parquet_of
    from checkers.io.cache import MOSTLY_UNIQUE
    from checkers.io.layout import history_bytes
    from checkers.io.sources import READS_SOURCE, WRITES_SOURCE, Source, uri
    from checkers.session import get_spark, size_for

    started = time.monotonic()
    size = history_bytes(run_dir)
    spark = get_spark(history_bytes=size)
    size_for(spark, size)
    with tempfile.TemporaryDirectory(prefix="kchaos-floor-") as parsed_dir:

        def parsed(source: Source) -> DataFrame:
            parquet = Path(parsed_dir) / f"{Path(source.name).stem}.parquet"
            if not parquet_of(run_dir / source.name, source.schema, parquet, MOSTLY_UNIQUE):
                raise SystemExit(f"pyarrow did not take {run_dir / source.name}")
            return spark.read.schema(source.schema).parquet(uri(parquet))

        writes, reads = parsed(WRITES_SOURCE), parsed(READS_SOURCE)
        acked = writes.where(F.col("type") == "ok").select("topic", "value")
        records = reads.where(F.col("type") == "record").select("value", "offset")
        acked.join(records, ["value"], "left").groupBy("topic").agg(F.count("*"), F.count("offset")).collect()
    return time.monotonic() - started


def _one_process_child(run_dirs: list[Path]) -> dict[str, Any]:
    from checkers import check_run

    seconds, counts = [], []
    for run_dir in run_dirs:
        started = time.monotonic()
        result = check_run(run_dir)
        seconds.append(time.monotonic() - started)
        counts.append(_counts(result))
    return {"seconds": seconds, "counts": counts, "warm_floor": _floor_query(run_dirs[0])}


def _python_child(run_dir: Path) -> dict[str, Any]:
    started = time.monotonic()
    history = python_read(run_dir)
    counts = {**python_counts(history), **python_side_counts(run_dir)}
    availability = python_availability(history, run_dir)
    with_groups = bool(history.run.get("groups"))
    groups = python_group_counts(run_dir, final_offsets(run_dir)) if with_groups else {}
    recovery = (
        python_group_recovery(
            run_dir, availability["ok_times"], availability["last_invoke"], availability["healed"]
        )
        if with_groups
        else {}
    )
    return {
        "seconds": time.monotonic() - started,
        "counts": {
            "counts": counts,
            "write_counts": availability["topics"],
            "groups": groups,
            "group_recovery": recovery,
            "exact_availability": exact_availability(availability),
        },
    }


def _in_child(*args: str) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True
    ).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))


def _target(measured: float, target: float | None) -> str:
    if target is None:
        return ""
    return f" (target <= {target:.0f} s: {'met' if measured <= target else 'MISSED'})"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="60,170000", help="comma-separated event counts")
    parser.add_argument("--repeat", type=int, default=3, help="cold checks per size")
    parser.add_argument("--further", type=int, default=3, help="further checks in one process")
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp/kchaos-bench-small"), help="where synthetic runs are kept"
    )
    parser.add_argument("--runs", type=Path, nargs="*", default=[], help="real run directories to measure")
    parser.add_argument("--child", choices=("one-process", "python", "floor"), help=argparse.SUPPRESS)
    parser.add_argument("--run-dirs", type=Path, nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "one-process":
        print(json.dumps(_one_process_child(args.run_dirs)))
        return
    if args.child == "python":
        print(json.dumps(_python_child(args.run_dirs[0])))
        return
    if args.child == "floor":
        print(json.dumps({"seconds": _floor_query(args.run_dirs[0])}))
        return
    for size in (int(s) for s in args.sizes.split(",") if s):
        run_dir = args.dir / f"run-{size}"
        if not (run_dir / "run.json").is_file():
            generate(run_dir, size, seed=7, rates=dict.fromkeys(ANOMALIES, DEFAULT_RATE))
        _measure(run_dir, f"synthetic {run_dir.name}", TARGETS.get(size, (None, None)), args)
    for given in args.runs:
        run_dir = _copy(given, args.dir / f"real-{given.name}")
        run = json.loads((run_dir / "run.json").read_text())
        label = f"{run.get('scenario')} run of {run.get('duration_s')} s ({given})"
        _measure(run_dir, label, RUN_TARGETS, args)
        shutil.rmtree(run_dir)


def _measure(run_dir: Path, label: str, targets: tuple[float | None, float | None], args: Any) -> None:
    """Cold checks alternated with cold floors, then checks in one process, of `run_dir`; printed."""
    cold_target, further_target = targets
    python = _in_child("--child", "python", "--run-dirs", str(run_dir))
    cold, cold_floor = [], []
    for _ in range(args.repeat):  # alternated, so that both see the same machine
        cold.append(_cold(run_dir))
        cold_floor.append(_cold_floor(run_dir))
    copies = [_copy(run_dir, args.dir / f"{run_dir.name}-copy-{i}") for i in range(args.further + 1)]
    warm = _in_child("--child", "one-process", "--run-dirs", *map(str, copies))
    checked = [c for _, c in cold] + warm["counts"]
    same = all(c == python["counts"] for c in checked)
    cold_s = sorted(s for s, _ in cold)
    further = warm["seconds"][1:]
    events = sum(json.loads((run_dir / "check/result.json").read_text())["events"].values())
    print(f"{label}: {events} events ({sum(python['counts']['counts'].values())} anomalies):", flush=True)
    print(
        f"  cold `kchaos check`: median {statistics.median(cold_s):.1f} s"
        f" (min {cold_s[0]:.1f}, max {cold_s[-1]:.1f}, {len(cold_s)} runs)"
        f"{_target(statistics.median(cold_s), cold_target)}",
        flush=True,
    )
    if further:
        print(
            f"  one process: first {warm['seconds'][0]:.1f} s, further"
            f" {', '.join(f'{s:.1f}' for s in further)} s{_target(max(further), further_target)}",
            flush=True,
        )
    print(
        f"  Spark floor (one query): cold process median {statistics.median(cold_floor):.1f} s"
        f" (min {min(cold_floor):.1f}, max {max(cold_floor):.1f}), warm {warm['warm_floor']:.2f} s",
        flush=True,
    )
    print(
        f"  Python reference: {python['seconds']:.2f} s; counts identical in every check: {same}",
        flush=True,
    )
    for copy in copies:
        shutil.rmtree(copy)


if __name__ == "__main__":
    main()

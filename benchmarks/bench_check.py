"""Benchmark `kchaos check` on synthetic histories against a straightforward single-process check.

For each size it generates a run directory (contract/synthetic_history.py, cached under --dir), then in
separate child processes, side by side in this one run:
  - the Spark checker: a first check (JSONL -> Parquet conversion included) and a re-check (cache);
  - the straightforward Python check of history_reference.py (with side_files_reference.py): every
    line json.loads'd into dicts and sets, the same anomalies counted, then the rest of result.json's
    numbers (write counts per topic, availability with exact percentiles). No examples.
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
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from history_reference import exact_availability, python_availability, python_counts, python_read
from side_files_reference import python_side_counts

from checkers.class_archive import ARCHIVE_ENV, archive_path
from contract.anomaly_kinds import KIND_IDS, WRITE_COUNTS
from contract.history import WRITES
from contract.synthetic_history import ANOMALIES, DEFAULT_RATE, generate


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

"""Benchmark `kchaos check` on synthetic histories against a straightforward single-process check.

For each size it generates a run directory (checkers/synthetic.py, cached under --dir), then in
separate child processes, side by side in this one run:
  - the Spark checker: a first check (JSONL -> Parquet conversion included) and a re-check (cache);
  - `python_check` below: read every line with json.loads into dicts, count the same anomalies.
The Spark check runs twice: with the class archive (`kchaos spark-archive`) and without it. It
prints events per second, peak RSS of the Spark driver (the JVM; local mode runs executors in it)
and of the Python driver, the speed ratio, and whether both checkers found the same counts.

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
from collections import defaultdict
from pathlib import Path
from typing import Any

from checkers.class_archive import ARCHIVE_ENV, archive_path
from checkers.synthetic import ANOMALIES, DEFAULT_RATE, generate

KINDS = ("lost-write", "divergent-offset", "duplicate", "phantom-write", "unexpected-value", "reordered")


def python_check(run_dir: Path) -> dict[str, int]:
    """The anomaly counts of HISTORY_FORMAT.md, computed with dicts and sets in one process."""
    run = json.loads((run_dir / "run.json").read_text())
    partitions = {t["name"]: int(t["partitions"]) for t in run["topics"]}
    writes: dict[str, dict[str, Any]] = {}
    with (run_dir / "history/writes.jsonl").open() as handle:
        for line in handle:
            event = json.loads(line)
            write = writes.setdefault(event["value"], {"outcome": "info", "partition": event["partition"]})
            if event["type"] == "invoke":
                write |= {"topic": event["topic"], "process": event["process"], "invoke_ns": event["time_ns"]}
            else:
                write["outcome"] = event["type"]
                if event["partition"] >= 0:
                    write["partition"] = event["partition"]
                if event["type"] == "ok":
                    write["offset"] = event.get("offset")
    values_at: dict[tuple[str, int, int], set[str]] = defaultdict(set)
    positions_of: dict[str, set[tuple[str, int, int]]] = defaultdict(set)
    final_values: dict[tuple[str, int], set[str]] = defaultdict(set)
    complete: set[tuple[str, int]] = set()
    with (run_dir / "history/reads.jsonl").open() as handle:
        for line in handle:
            event = json.loads(line)
            where = (event["topic"], event["partition"])
            if event["type"] == "end":
                if event["phase"] == "final":
                    complete.add(where)
                continue
            position = (*where, event["offset"])
            values_at[position].add(event["value"])
            positions_of[event["value"]].add(position)
            if event["phase"] == "final":
                final_values[where].add(event["value"])
    counts = dict.fromkeys(KINDS, 0)
    by_sequence: dict[tuple[str, str, int], list[tuple[int, str, int]]] = defaultdict(list)
    for value, write in writes.items():
        topic, partition = str(write.get("topic")), int(write["partition"])
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
            counts["phantom-write"] += value in positions_of
    counts["divergent-offset"] = sum(len(values) > 1 for values in values_at.values())
    counts["duplicate"] = sum(len(positions) > 1 for positions in positions_of.values())
    counts["unexpected-value"] = sum(value not in writes for value in positions_of)
    for sequence in by_sequence.values():
        highest = -1
        for _, _, offset in sorted(sequence):
            counts["reordered"] += offset < highest
            highest = max(highest, offset)
    return counts


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
        "counts": {kind: result["anomalies"][kind]["count"] for kind in KINDS},
        "jvm_peak_mib": _jvm_peak_rss_mib(),
        "python_peak_mib": _peak_rss_mib(),
    }


def _python_child(run_dir: Path) -> dict[str, Any]:
    started = time.monotonic()
    counts = python_check(run_dir)
    return {"seconds": time.monotonic() - started, "counts": counts, "peak_mib": _peak_rss_mib()}


def _in_child(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, *args], check=True, capture_output=True, text=True, env=env
    ).stdout
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
        spark = _in_child("--child", "spark", "--run-dir", str(run_dir), *master)
        # The same check with JVMs that load Spark's classes instead of mapping them from the archive.
        unarchived = _in_child(
            "--child", "spark", "--run-dir", str(run_dir), *master, env={**os.environ, ARCHIVE_ENV: "off"}
        )
        python = _in_child("--child", "python", "--run-dir", str(run_dir))
        events = spark["events"]
        first, recheck, single = spark["first_s"], spark["recheck_s"], python["seconds"]
        print(
            f"{events:>10} {first:>11.1f} {events / first:>9.0f} {recheck:>9.1f} {events / recheck:>9.0f}"
            f" {spark['jvm_peak_mib'] or 0:>8.0f} {single:>7.1f} {events / single:>9.0f}"
            f" {python['peak_mib']:>7.0f}"
            f" {single / first:>6.2f} {single / recheck:>8.2f} {spark['counts'] == python['counts']}",
            flush=True,
        )
        print(
            f"{'':>10} without the class archive{' (none built)' if archive is None else ''}:"
            f" JVM start {unarchived['start_s']:.1f} s (with: {spark['start_s']:.1f} s),"
            f" first check {unarchived['first_s']:.1f} s, ratio {single / unarchived['first_s']:.2f},"
            f" re-check {unarchived['recheck_s']:.1f} s",
            flush=True,
        )
        if spark["counts"] != python["counts"]:
            print(f"  spark:  {spark['counts']}\n  python: {python['counts']}", flush=True)


if __name__ == "__main__":
    main()

"""Benchmark what consumer groups add to a check: the same run with and without its consumes.jsonl.

Given a run directory with consumer groups (e.g. from `kchaos run consumer-crash`), it makes a copy
without them (no consumes.jsonl, no `groups` in run.json) and, alternating the two side by side in
this one run, times `kchaos check` in a new process with no Parquet cache (cold) --repeat times,
then the group checks alone (their kinds, activity and entries) on one warm Spark session. Prints
medians and the ratio; the two copies' write and anomaly counts must be equal, and every check's
group counts those of the single-process reference (side_files_reference.py).

    .venv/bin/python benchmarks/bench_group_check.py RUN_DIR --repeat 3
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from side_files_reference import checked_group_counts, final_offsets, python_group_counts

from checkers.group_result import count_group_kinds, group_activity, group_results
from checkers.heals import heals
from checkers.io import load_history
from checkers.registry import CheckInputs, registered
from checkers.session import get_spark, kept_until_done
from contract.history import CONSUMES, RESULT, RUN_JSON


def _without_groups(run_dir: Path, where: Path) -> Path:
    copy = where / "without-groups"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("check"))
    (copy / CONSUMES).unlink()
    run = json.loads((copy / RUN_JSON).read_text())
    run.pop("groups", None)
    (copy / RUN_JSON).write_text(json.dumps(run))
    return copy


def _cold(run_dir: Path) -> tuple[float, dict[str, object], dict[str, dict[str, int]]]:
    shutil.rmtree(run_dir / "check", ignore_errors=True)
    started = time.monotonic()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("kchaos")), "check", str(run_dir)], capture_output=True, text=True
    )
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"kchaos check {run_dir} failed ({done.returncode}): {done.stdout[-500:]}")
    if not (run_dir / RESULT).is_file():  # 1 is also Python's exit code of a crash
        raise SystemExit(f"kchaos check {run_dir} left no result.json: {done.stderr[-500:]}")
    result = json.loads((run_dir / RESULT).read_text())
    return (
        seconds,
        {"acks": result["acks"], "anomalies": {k: a["count"] for k, a in result["anomalies"].items()}},
        checked_group_counts(result),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kchaos-bench-groups"))
    args = parser.parse_args()
    if not (args.run_dir / CONSUMES).is_file():
        raise SystemExit(f"{args.run_dir}: no {CONSUMES}; run a scenario with workload.groups first")
    args.dir.mkdir(parents=True, exist_ok=True)
    with_groups = args.dir / "with-groups"
    shutil.rmtree(with_groups, ignore_errors=True)
    shutil.copytree(args.run_dir, with_groups, ignore=shutil.ignore_patterns("check"))
    without = _without_groups(args.run_dir, args.dir)
    lines = sum(1 for _ in (with_groups / CONSUMES).open())
    reference = python_group_counts(with_groups, final_offsets(with_groups))
    cold: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(args.repeat):
        seconds_with, counts_with, groups = _cold(with_groups)
        seconds_without, counts_without, _ = _cold(without)
        if counts_with != counts_without:
            raise SystemExit("the groups changed the run's write or anomaly counts")
        if groups != reference:
            raise SystemExit(f"group counts {groups} differ from the Python reference's {reference}")
        cold["with"].append(seconds_with)
        cold["without"].append(seconds_without)
    spark = get_spark("local[2]")
    warm = []
    for _ in range(args.repeat + 1):
        with kept_until_done(spark.sparkContext):
            history = load_history(spark, with_groups)
            started = time.monotonic()
            inputs = CheckInputs.of(history)
            activity = group_activity(history, inputs.groups, heals(history.faults))
            found = count_group_kinds(registered("group"), inputs)
            group_results(history, found, activity, history.faults)
            warm.append(time.monotonic() - started)
    median = {k: statistics.median(v) for k, v in cold.items()}
    print(f"{args.run_dir.name}: {lines} consumes.jsonl lines, {len(history.run.get('groups') or [])} groups")
    print(f"group counts identical to the Python reference's in every check: {reference}")
    print(
        f"cold kchaos check, median of {args.repeat}: without groups {median['without']:.2f} s, "
        f"with {median['with']:.2f} s ({median['with'] / median['without']:.2f}x)"
    )
    print(
        f"group checks alone on a warm session, median of {args.repeat} after the first: "
        f"{statistics.median(warm[1:]):.2f} s"
    )


if __name__ == "__main__":
    main()

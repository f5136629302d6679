"""Wall time of a whole `kchaos run` split into setup, chaos, settle, final read, teardown, check
and report (phases from run.json; check time from result.json; the rest measured here).

    .venv/bin/python benchmarks/bench_run.py [--scenario isolate-leader] [--duration 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenario", default="isolate-leader")
    parser.add_argument("--duration", type=float, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        started = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "kchaos.cli",
                "run",
                args.scenario,
                "--duration",
                str(args.duration),
                "--out",
                out,
            ],
            capture_output=True,
            text=True,
        )
        total = time.monotonic() - started
        run = next(Path(out).glob("*/"))
        phases = json.loads((run / "run.json").read_text())["phases_s"]
        check_s = json.loads((run / "check/result.json").read_text())["spark"]["seconds"]
        rest = total - sum(phases.values()) - check_s
        print(
            f"kchaos run {args.scenario} --duration {args.duration:g}: "
            f"exit {done.returncode}, {total:.1f} s wall"
        )
        for name, seconds in [*phases.items(), ("check (Spark)", check_s), ("report + process start", rest)]:
            print(f"  {name:24} {seconds:7.1f} s  {100 * seconds / total:5.1f}%")


if __name__ == "__main__":
    main()

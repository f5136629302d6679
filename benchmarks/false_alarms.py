"""Does kafka-chaos cry wolf? Run fault-free experiments on real clusters and count every anomaly.

Two kinds of run, each `--runs` times: the built-in `baseline` scenario (its own rate), and the same
scenario with producers at full speed (`rate_per_s: 0`, as fast as librdkafka takes writes). With no
fault, every anomaly of every kind is a false alarm of kafka-chaos, the client or the broker, and
so is any violated verdict or failed expectation. It prints one line per run and a summary; the exit
code is 1 if any run had one.

    .venv/bin/python benchmarks/false_alarms.py                 # 10 + 10 runs of 30 s
    .venv/bin/python benchmarks/false_alarms.py --runs 2 --duration 15 --only full-speed
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from contract.anomaly_kinds import KINDS
from kchaos.runner import RunOutcome, run_scenario
from kchaos.scenario import Scenario, load_scenario
from kchaos.signals import terminate_as_interrupt


def _variants() -> list[tuple[str, Scenario]]:
    baseline = load_scenario("baseline")
    spec = baseline.experiment
    full_speed = dataclasses.replace(
        baseline,
        name="baseline-full-speed",
        experiment=dataclasses.replace(
            spec, name="baseline-full-speed", workload=dataclasses.replace(spec.workload, rate_per_s=0.0)
        ),
    )
    return [("baseline", baseline), ("full-speed", full_speed)]


def _alarms(outcome: RunOutcome) -> list[str]:
    """Everything a fault-free run should not show."""
    result = outcome.result
    found = [
        f"{kind.id} {result['anomalies'][kind.id]['count']}"
        for kind in KINDS
        if result["anomalies"][kind.id]["count"] != 0
    ]
    found += [
        f"{g['topic']} {g['id']} {g['verdict']}" for g in result["guarantees"] if g["verdict"] == "violated"
    ]
    found += [f"expect {e.text} (observed {e.observed})" for e in outcome.expectations if not e.held]
    found += [f"checker error {e['kind']}" for e in result["errors"]]
    if not result["complete"]:
        found.append("incomplete final read")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10, help="runs of each kind")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of workload per run")
    parser.add_argument("--out", type=Path, default=Path("runs/false-alarms"))
    parser.add_argument("--only", choices=["baseline", "full-speed"], help="run one kind only")
    args = parser.parse_args()
    clean: dict[str, int] = {}
    for label, scenario in _variants():
        if args.only and label != args.only:
            continue
        clean[label] = 0
        for number in range(1, args.runs + 1):
            started = time.monotonic()
            outcome = run_scenario(scenario, args.out, duration_s=args.duration, seed=number, report=False)
            alarms = _alarms(outcome)
            clean[label] += not alarms
            acked = sum(counts["acked"] for counts in outcome.result["acks"].values())
            print(
                f"{label} {number}/{args.runs}: {acked} acked writes, "
                f"{'clean' if not alarms else 'ALARMS: ' + '; '.join(alarms)} "
                f"({time.monotonic() - started:.0f} s, {outcome.rundir.root})",
                flush=True,
            )
    print("; ".join(f"{label}: {count} of {args.runs} runs clean" for label, count in clean.items()))
    return 0 if all(count == args.runs for count in clean.values()) else 1


if __name__ == "__main__":
    with terminate_as_interrupt():  # SIGTERM heals and removes the run's containers too
        sys.exit(main())

"""Benchmark: render the report of a run of about a million events, in bounded time and size.

Builds a synthetic run directory the size a one-hour nightly run produces: a result.json with a
per-second series for 3 acks modes over 3600 s (and capped anomaly examples), a cluster.jsonl of
20,000 ZooKeeper samples over 9 partitions with frequent leader / ISR changes, and a faults.jsonl
with 200 fault windows. Renders it (index.html, junit.xml, summary.json) and prints the time taken,
the page size and what the page holds. Exits 1 when over budget.

    .venv/bin/python benchmarks/bench_report.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from contract.anomaly_kinds import KIND_IDS
from reports import write_report

S = 1_000_000_000
SECONDS = 3600
MODES = ("all", "1", "0")
PARTITIONS = 3
SAMPLES = 20_000
FAULT_WINDOWS = 200
BUDGET_S = 10.0
BUDGET_BYTES = 5_000_000
FAULTS = (
    "kill-leader",
    "pause",
    "partition-halves",
    "isolate-from-zookeeper",
    "slow",
    "lossy",
    "rolling-restart",
)


def jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, separators=(",", ":")) + "\n")


def faults(rng: random.Random) -> list[dict[str, Any]]:
    events = []
    for i in range(FAULT_WINDOWS):
        start = int((i + rng.random() * 0.3) * SECONDS / FAULT_WINDOWS * S)
        stop = start + int(rng.uniform(3, 12) * S)
        fault, targets = FAULTS[i % len(FAULTS)], [f"kafka-{rng.randint(1, 3)}"]
        events.append(
            {"time_ns": start, "fault": fault, "phase": "start", "targets": targets, "detail": {"i": i}}
        )
        events.append({"time_ns": stop, "fault": fault, "phase": "stop", "targets": targets, "detail": {}})
    return sorted(events, key=lambda e: e["time_ns"])


def cluster(rng: random.Random) -> list[dict[str, Any]]:
    topics = [f"chaos-acks-{m}" for m in MODES]
    leaders = {(t, p): 1 + p for t in topics for p in range(PARTITIONS)}
    epochs = dict.fromkeys(leaders, 0)
    isr = {k: [1, 2, 3] for k in leaders}
    controller, live, rows = 1, [1, 2, 3], []
    for i in range(SAMPLES):
        if rng.random() < 0.05:  # a change in about one sample in twenty
            k = rng.choice(list(leaders))
            leaders[k] = rng.randint(1, 3)
            epochs[k] += 1
            isr[k] = sorted(rng.sample([1, 2, 3], rng.randint(1, 3)))
        if rng.random() < 0.002:
            controller = rng.randint(1, 3)
            live = sorted(rng.sample([1, 2, 3], rng.randint(2, 3)))
        parts = [
            {
                "topic": t,
                "partition": p,
                "leader": leaders[(t, p)],
                "leader_epoch": epochs[(t, p)],
                "isr": isr[(t, p)],
            }
            for t, p in leaders
        ]
        rows.append(
            {
                "time_ns": int(i * SECONDS * S / SAMPLES),
                "controller": controller,
                "controller_epoch": 1,
                "live_brokers": live,
                "partitions": parts,
            }
        )
    return rows


def result(rng: random.Random) -> dict[str, Any]:
    series = []
    for m in MODES:
        for t in range(SECONDS):
            if t % 600 in range(300, 300 + 8 * (m != "0")):
                continue  # seconds without completions: unavailable during an election
            series.append(
                {
                    "acks": m,
                    "t_s": t,
                    "acked": 90 + rng.randint(0, 10),
                    "failed": rng.randint(0, 1),
                    "indeterminate": 0,
                    "lost": int(rng.random() < 0.01) * rng.randint(1, 5),
                    "divergent": int(rng.random() < 0.003),
                    "latency_p50_ms": rng.uniform(2, 4),
                    "latency_p99_ms": rng.uniform(8, 15) * (10 if rng.random() < 0.02 else 1),
                    "latency_max_ms": rng.uniform(20, 400),
                }
            )
    per_mode = SECONDS * 93
    counts = {
        "attempted": per_mode,
        "acked": per_mode - 200,
        "failed": 100,
        "indeterminate": 100,
        "lost": 150,
        "divergent": 30,
        "duplicated": 12,
        "phantom": 3,
        "reordered": 0,
    }
    example = {
        "topic": "chaos-acks-1",
        "partition": 1,
        "offset": 4242,
        "value": "p-1-0:4242",
        "acks": "1",
        "process": "p-1-0",
        "invoke_ns": 17 * S,
        "complete_ns": 17 * S + 3_000_000,
        "ack_offset": 4242,
        "final_value": None,
        "leader": 2,
        "leader_epoch": 7,
        "isr": [2],
        "controller": 1,
        "active_faults": ["kill-leader"],
    }
    return {
        "result_format": 1,
        "run_id": "bench",
        "checked_at": "2026-11-21T04:00:00Z",
        "events": {"writes": 1_000_000, "reads": 1_100_000, "faults": 2 * FAULT_WINDOWS, "cluster": SAMPLES},
        "valid": False,
        "complete": True,
        "unexpected": 0,
        "incomplete_partitions": [],
        "acks": dict.fromkeys(MODES, counts),
        "topics": [{"topic": f"chaos-acks-{m}", "acks": m, **counts, "complete": True} for m in MODES],
        "guarantees": [
            {
                "id": "no-lost-acked-writes",
                "topic": "chaos-acks-all",
                "acks": "all",
                "promise": "no acknowledged write is lost or overwritten",
                "promised": True,
                "verdict": "violated",
                "reason": "150 lost, 30 divergent",
            }
        ],
        "anomalies": {
            k: {"count": 500, "examples": [example] * 50, "examples_capped": True} for k in KIND_IDS
        },
        "availability": {"bucket_s": 1, "series": series, "latency": [], "recovery": []},
    }


def build(root: Path) -> Path:
    rng = random.Random(7)
    root.mkdir(parents=True, exist_ok=True)
    run = {
        "format": 1,
        "run_id": "bench-1m",
        "seed": 7,
        "scenario": "bench",
        "started_at": "2026-11-21T03:00:00Z",
        "duration_s": SECONDS,
        "kafka": {"version": "0.9.0.1"},
        "cluster": {"brokers": 3, "broker_config": {"min.insync.replicas": "2"}},
        "topics": [
            {"name": f"chaos-acks-{m}", "partitions": PARTITIONS, "replication_factor": 3, "acks": m}
            for m in MODES
        ],
    }
    (root / "run.json").write_text(json.dumps(run), encoding="utf-8")
    jsonl(root / "history/faults.jsonl", faults(rng))
    jsonl(root / "history/cluster.jsonl", cluster(rng))
    (root / "check").mkdir(exist_ok=True)
    (root / "check/result.json").write_text(json.dumps(result(rng)), encoding="utf-8")
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the run here and keep it (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = build(args.keep or Path(tmp) / "bench-1m")
        inputs = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        start = time.perf_counter()
        page = write_report(root)
        seconds = time.perf_counter() - start
        size = page.stat().st_size
        print(
            f"inputs: {inputs / 1e6:.1f} MB (result.json series {len(MODES)}x{SECONDS} s, "
            f"{SAMPLES} cluster samples, {FAULT_WINDOWS} fault windows)"
        )
        print(f"render: {seconds:.2f} s (budget {BUDGET_S:.0f} s)")
        print(f"index.html: {size / 1e6:.2f} MB (budget {BUDGET_BYTES / 1e6:.0f} MB)")
        print(
            f"junit.xml: {(root / 'report/junit.xml').stat().st_size} B, "
            f"summary.json: {(root / 'report/summary.json').stat().st_size} B"
        )
        if args.keep:
            print(f"kept: {page}")
    return 0 if seconds <= BUDGET_S and size <= BUDGET_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())

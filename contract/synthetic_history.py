"""Generate a synthetic run directory (HISTORY_FORMAT.md format 1) of about N events: data in the
contract's format for the benchmarks and for the class archive's training (`checkers.class_archive`),
not a check; it sits with the contract so that both can use it.

Three topics (acks all, 1, 0) with three partitions each, four producer processes per acks mode,
a live consumer that re-reads part of the log, a complete final read, faults and cluster samples.
Anomalies are injected at chosen rates (per write):

    lost        an ok write missing from the final read
    divergent   an ok write whose offset the final read holds with another (indeterminate) value
    duplicate   an appended write read at a second offset
    phantom     a failed write that was appended anyway
    unexpected  a record no write invoked
    reordered   two writes of one process to one partition acknowledged at swapped offsets

    .venv/bin/python -m contract.synthetic_history OUT_DIR --events 1000000 --seed 7 --rate lost=0.001
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

ACKS = ("all", "1", "0")
PARTITIONS = 3
PROCESSES_PER_MODE = 4
WRITE_INTERVAL_NS = 250_000  # 4000 writes/s across the run
ANOMALIES = ("lost", "divergent", "duplicate", "phantom", "unexpected", "reordered")
DEFAULT_RATE = 0.0005


@dataclass
class _Log:
    """Offsets handed out per (topic, partition), and what the final read will find."""

    next_offset: dict[tuple[str, int], int] = field(default_factory=dict)

    def append(self, topic: str, partition: int) -> int:
        offset = self.next_offset.get((topic, partition), 0)
        self.next_offset[(topic, partition)] = offset + 1
        return offset


class _Writer:
    """Writes events as JSON lines without json.dumps per line (values are plain ASCII)."""

    def __init__(self, writes: IO[str], reads: IO[str]) -> None:
        self.writes, self.reads = writes, reads
        self.events = 0

    def write(
        self, kind: str, t: int, process: str, topic: str, partition: int, value: str, offset: str = ""
    ) -> None:
        tail = f',"offset":{offset}' if kind != "invoke" else ""
        error = {"fail": ',"error":"NOT_ENOUGH_REPLICAS"', "info": ',"error":"_MSG_TIMED_OUT"'}.get(kind, "")
        self.writes.write(
            f'{{"type":"{kind}","time_ns":{t},"process":"{process}","topic":"{topic}",'
            f'"partition":{partition}{tail},"value":"{value}"{error}}}\n'
        )
        self.events += 1

    def read(self, t: int, phase: str, topic: str, partition: int, offset: int, value: str) -> None:
        self.reads.write(
            f'{{"type":"record","time_ns":{t},"process":"c-{phase}","phase":"{phase}","topic":"{topic}",'
            f'"partition":{partition},"offset":{offset},"value":"{value}"}}\n'
        )
        self.events += 1


def generate(out: Path, events: int, seed: int, rates: dict[str, float]) -> dict[str, int]:
    """Write the run directory; return how many of each anomaly were injected."""
    rng = random.Random(seed)
    (out / "history").mkdir(parents=True, exist_ok=True)
    topics = [
        {"name": f"chaos-acks-{a}", "partitions": PARTITIONS, "replication_factor": 3, "acks": a}
        for a in ACKS
    ]
    injected = dict.fromkeys(ANOMALIES, 0)
    log = _Log()
    final: list[tuple[str, int, int, str]] = []  # (topic, partition, offset, value) the final read returns
    with (out / "history/writes.jsonl").open("w") as writes, (out / "history/reads.jsonl").open("w") as reads:
        sink = _Writer(writes, reads)
        i = 0
        while sink.events + len(final) < events:
            mode = ACKS[i % 3]
            topic = f"chaos-acks-{mode}"
            partition = (i // 3) % PARTITIONS
            process = f"p-{mode}-{(i // 9) % PROCESSES_PER_MODE}"
            t = i * WRITE_INTERVAL_NS
            latency = rng.randint(1_000_000, 20_000_000)
            anomaly = next((a for a in ANOMALIES if rng.random() < rates[a]), None)
            if anomaly == "reordered" and mode != "0":
                second = f"{process}:{i}b"
                low, high = log.append(topic, partition), log.append(topic, partition)
                for value, offset, at in ((f"{process}:{i}", high, t), (second, low, t + 1)):
                    sink.write("invoke", at, process, topic, partition, value)
                    sink.write("ok", at + latency, process, topic, partition, value, str(offset))
                    final.append((topic, partition, offset, value))
                injected["reordered"] += 1
                i += 1
                continue
            value = f"{process}:{i}"
            sink.write("invoke", t, process, topic, partition, value)
            roll = rng.random()
            if anomaly == "phantom" and mode != "0":
                sink.write("fail", t + latency, process, topic, partition, value, "null")
                final.append((topic, partition, log.append(topic, partition), value))
                injected["phantom"] += 1
            elif roll < 0.015 and mode != "0":
                sink.write("fail", t + latency, process, topic, partition, value, "null")
            elif roll < 0.03:
                sink.write("info", t + latency, process, topic, partition, value, "null")
                if roll < 0.022:
                    final.append((topic, partition, log.append(topic, partition), value))
            elif roll < 0.035:
                pass  # still in flight when the run ended
            else:
                offset = log.append(topic, partition)
                sink.write(
                    "ok",
                    t + latency,
                    process,
                    topic,
                    partition,
                    value,
                    "null" if mode == "0" else str(offset),
                )
                if anomaly == "lost":
                    injected["lost"] += 1
                elif anomaly == "divergent" and mode != "0":
                    other = f"{process}:{i}x"
                    sink.write("invoke", t + 1, process, topic, partition, other)
                    sink.write("info", t + latency + 1, process, topic, partition, other, "null")
                    final.append((topic, partition, offset, other))
                    injected["divergent"] += 1
                else:
                    final.append((topic, partition, offset, value))
                    if anomaly == "duplicate":
                        final.append((topic, partition, log.append(topic, partition), value))
                        injected["duplicate"] += 1
                    elif anomaly == "unexpected":
                        final.append((topic, partition, log.append(topic, partition), f"ghost-{i}"))
                        injected["unexpected"] += 1
                    if rng.random() < 0.3:
                        sink.read(t + latency + 5_000_000, "live", topic, partition, offset, value)
            i += 1
        end_ns = i * WRITE_INTERVAL_NS + 5_000_000_000
        for topic_name, partition, offset, value in final:
            sink.read(end_ns, "final", topic_name, partition, offset, value)
        for topic_name in (str(t["name"]) for t in topics):
            for partition in range(PARTITIONS):
                high = log.next_offset.get((topic_name, partition), 0)
                reads.write(
                    json.dumps(
                        {
                            "type": "end",
                            "time_ns": end_ns + 1,
                            "process": "c-final",
                            "phase": "final",
                            "topic": topic_name,
                            "partition": partition,
                            "log_start": 0,
                            "high_watermark": high,
                        }
                    )
                    + "\n"
                )
    _faults_and_cluster(out, end_ns, topics)
    run = {
        "format": 1, "run_id": f"synthetic-{events}-{seed}", "seed": seed, "scenario": "synthetic",
        "duration_s": end_ns // 1_000_000_000, "kafka": {"version": "0.9.0.1", "image": "synthetic"},
        "cluster": {"brokers": 3, "zookeepers": 1,
                    "broker_config": {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}},
        "topics": topics, "producer": {"max.in.flight.requests.per.connection": 1},
    }  # fmt: skip
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    return injected


def _faults_and_cluster(out: Path, end_ns: int, topics: list[dict[str, object]]) -> None:
    """A kill-leader fault every 20 s (10 s long) and a cluster sample every 250 ms."""
    with (out / "history/faults.jsonl").open("w") as faults:
        for start in range(10_000_000_000, end_ns, 20_000_000_000):
            for phase, at in (("start", start), ("stop", start + 10_000_000_000)):
                event = {
                    "time_ns": at,
                    "fault": "kill-leader",
                    "phase": phase,
                    "targets": ["kafka-2"],
                    "detail": {},
                }
                faults.write(json.dumps(event) + "\n")
    with (out / "history/cluster.jsonl").open("w") as cluster:
        for index, at in enumerate(range(0, end_ns, 250_000_000)):
            epoch = at // 20_000_000_000
            partitions = [
                {
                    "topic": t["name"],
                    "partition": p,
                    "leader": 1 + (p + epoch) % 3,
                    "leader_epoch": epoch,
                    "isr": [1, 2, 3],
                }
                for t in topics
                for p in range(PARTITIONS)
            ]
            sample = {"time_ns": at, "controller": 1, "controller_epoch": 1, "live_brokers": [1, 2, 3],
                      "partitions": partitions, "sample": index}  # fmt: skip
            cluster.write(json.dumps(sample) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="run directory to create")
    parser.add_argument("--events", type=int, default=1_000_000, help="approximate number of history events")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--rate",
        action="append",
        default=[],
        metavar="KIND=P",
        help=f"anomaly rate per write; kinds: {', '.join(ANOMALIES)}",
    )
    args = parser.parse_args()
    rates = dict.fromkeys(ANOMALIES, DEFAULT_RATE)
    for item in args.rate:
        kind, _, p = item.partition("=")
        if kind not in rates:
            parser.error(f"unknown anomaly kind {kind!r}; known: {', '.join(ANOMALIES)}")
        rates[kind] = float(p)
    print(json.dumps(generate(args.out, args.events, args.seed, rates)))


if __name__ == "__main__":
    main()

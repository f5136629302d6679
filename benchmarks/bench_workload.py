"""Recording overhead and sustained acked writes/s per acks mode, measured side by side on one cluster.

For each acks mode the same number of writes goes through (a) a bare confluent-kafka loop that
only counts deliveries and (b) a recording `ProducerProcess` that writes every invoke and completion
to a history file; rounds alternate a/b to share the machine's noise. Prints the ratio b/a
(target: recording costs at most 20%, i.e. ratio <= 1.20), and the CPU this process spent per write
on each side (Python, the recorder, librdkafka's threads; not the brokers'): the recorder's loop runs
in C, so at saturation it can beat the bare loop's interpreter, and the CPU column shows by how much.

    .venv/bin/python benchmarks/bench_workload.py [--writes 20000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from confluent_kafka import Producer

from harness.clients import client_config
from harness.cluster import ClusterSpec, KafkaCluster
from harness.history import HistoryWriter, RunClock
from harness.producer import DEFAULT_PRODUCER_CONFIG, ProducerProcess


def measured(run: Callable[[], float]) -> tuple[float, float]:
    """(wall seconds `run` reports, CPU seconds this process spent meanwhile, every thread's)."""

    def cpu_s() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    before = cpu_s()
    wall = run()
    return wall, cpu_s() - before


def bare(config: dict[str, object], topic: str, writes: int) -> float:
    delivered = 0

    def done(err: object, msg: object) -> None:
        nonlocal delivered
        delivered += err is None

    # Timed from client creation, like the recording process (which creates its client in its thread).
    started = time.perf_counter()
    producer = Producer(config)
    for i in range(writes):
        while True:
            try:
                producer.produce(topic, value=f"bare:{i}".encode(), partition=i % 3, on_delivery=done)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    producer.flush(60)
    elapsed = time.perf_counter() - started
    assert delivered == writes, f"bare loop: {delivered}/{writes} delivered"
    return elapsed


def recorded(config: dict[str, object], topic: str, acks: str, writes: int, directory: Path, n: int) -> float:
    with HistoryWriter(directory / f"writes-{acks}-{n}.jsonl") as writer:
        process = ProducerProcess(
            f"p-{acks}-{n}", topic, 3, acks, config, writer, RunClock(), max_writes=writes
        )
        started = time.perf_counter()
        process.start()
        process.join(300)
        elapsed = time.perf_counter() - started
    assert process.counts.acked == writes, f"recorded: {process.counts}"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--writes", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with (
        KafkaCluster(ClusterSpec(broker_config={"min.insync.replicas": 2})) as cluster,
        tempfile.TemporaryDirectory() as tmp,
    ):
        print(
            f"{'acks':>5} {'bare s':>8} {'recorded s':>11} {'ratio':>6} "
            f"{'acked/s bare':>13} {'acked/s recorded':>17} {'CPU us/write bare':>18} {'recorded':>9}"
        )
        for acks in ("0", "1", "all"):
            topic = f"bench-acks-{acks}"
            cluster.create_topic(topic, 3, 3)
            config = client_config(
                cluster.bootstrap_servers, cluster.kafka_version, **{**DEFAULT_PRODUCER_CONFIG, "acks": acks}
            )
            bare_runs, recorded_runs = [], []
            for n in range(args.rounds):
                bare_runs.append(measured(partial(bare, config, topic, args.writes)))
                recorded_runs.append(
                    measured(partial(recorded, config, topic, acks, args.writes, Path(tmp), n))
                )
            b, r = (statistics.median(wall for wall, _ in runs) for runs in (bare_runs, recorded_runs))
            b_cpu, r_cpu = (
                statistics.median(cpu for _, cpu in runs) / args.writes * 1e6
                for runs in (bare_runs, recorded_runs)
            )
            print(
                f"{acks:>5} {b:8.2f} {r:11.2f} {r / b:6.2f} {args.writes / b:13.0f} {args.writes / r:17.0f} "
                f"{b_cpu:18.2f} {r_cpu:9.2f}"
            )


if __name__ == "__main__":
    main()

"""Recording overhead against a bare confluent-kafka loop, side by side on one real cluster.

For each acks mode and paced rate (writes/s per producer), the same number of writes goes through
(a) a bare confluent-kafka loop that only counts deliveries, (b) a recording `AcksProducer` run in
this process, which appends every invoke and completion to a history file, one write(2) per event,
(c) the same recording in a run directory that syncs its history to disk as a run does
(`RunDir.syncing`: every `SYNC_INTERVAL_S`, run.json rewritten durably each time), and (d) the
same producer as a run runs it: a workload process of its own (`harness.workload_process`), its
lines copied by this process from a pipe to the history file. All pace alike
(`harness.producer.paced_wait_s`); a/b/c are timed from client creation, and (d) against (b) by the
span its history shows (first invoke to last completion), as the process's own start (the
interpreter and its imports) is not the producer's. Rounds alternate a/b/c/d to share the
machine's noise, and medians are printed. Per cell: acked writes/s on each side and the wall ratio
b/a, the CPU this process spent per write on each side (Python, librdkafka's threads; not the
brokers') and its ratio b/a, the ratios c/b of syncing (wall and CPU), and the ratios d/b of a
process (span, and CPU: the conductor's and the process's together), with the process's start in
seconds. Targets: recording costs at most 20% (b/a <= 1.20) at up to 20,000 writes/s per producer,
syncing adds at most 10% to it (c/b <= 1.10), and a process of its own keeps the throughput (span
d/b <= 1.10). A rate of 0 writes as fast as the client goes (`--unpaced-writes` writes).

    .venv/bin/python benchmarks/bench_workload.py [--rates 5000,10000,20000] [--seconds 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from contract.history import WRITES, HistoryWriter, RunClock, RunDir
from harness.clients import client_config
from harness.cluster import ClusterSpec, KafkaCluster
from harness.producer import DEFAULT_PRODUCER_CONFIG, AcksProducer, ProducerSpec, paced_wait_s
from harness.workload_process import WorkloadProcess, WriteTally
from kchaos.signals import terminate_as_interrupt

PARTITIONS = 3


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float  # this process, every thread


def measured(run: Callable[[], float]) -> Measured:
    """The wall seconds `run` reports, and the CPU seconds this process and its children spent
    meanwhile."""

    def cpu_s() -> float:
        usages = [resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)]
        return sum(usage.ru_utime + usage.ru_stime for usage in usages)

    before = cpu_s()
    wall = run()
    return Measured(wall, cpu_s() - before)


def bare(config: dict[str, Any], topic: str, writes: int, rate_per_s: float) -> float:
    """The loop of `AcksProducer` without recording: produce, poll(0), paced the same way."""
    delivered = 0

    def done(err: KafkaError | None, msg: Message | None) -> None:
        nonlocal delivered
        delivered += err is None

    interval_s = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
    started = time.perf_counter()
    producer = Producer(config)
    next_send = time.monotonic()
    sequence = 0
    while sequence < writes:
        if interval_s:
            delay_s = next_send - time.monotonic()
            if delay_s > 0:
                producer.poll(paced_wait_s(delay_s))
                continue
            next_send += interval_s
        payload = f"bare:{sequence}".encode()
        while True:
            try:
                producer.produce(topic, payload, None, sequence % PARTITIONS, done)
                break
            except BufferError:
                producer.poll(0.1)
        sequence += 1
        producer.poll(0)
    producer.flush(60)
    elapsed = time.perf_counter() - started
    assert delivered == writes, f"bare loop: {delivered}/{writes} delivered"
    return elapsed


def recorded(
    config: dict[str, Any], topic: str, acks: str, writes: int, rate_per_s: float, history: Path
) -> float:
    with HistoryWriter(history) as writer:
        return _produced(config, topic, acks, writes, rate_per_s, writer, history.stem)


def synced(
    config: dict[str, Any], topic: str, acks: str, writes: int, rate_per_s: float, run_root: Path
) -> float:
    rundir = RunDir(run_root)
    with rundir.writer(WRITES) as writer, rundir.syncing():
        rundir.write_run_json({"topics": []})
        return _produced(config, topic, acks, writes, rate_per_s, writer, run_root.name)


def _produced(
    config: dict[str, Any],
    topic: str,
    acks: str,
    writes: int,
    rate_per_s: float,
    writer: HistoryWriter,
    name: str,
) -> float:
    producer = AcksProducer(
        name, topic, PARTITIONS, acks, config, writer, RunClock(), rate_per_s, max_writes=writes
    )
    started = time.perf_counter()  # the producer creates its client as it runs
    producer.run()
    elapsed = time.perf_counter() - started
    acked(writer.path, writes)
    return elapsed


def acked(history: Path, writes: int) -> None:
    tally = WriteTally()
    tally.add(history.read_bytes())
    assert tally.acked == writes, f"{history}: {tally.counts()}"


def span_s(history: Path) -> float:
    """Seconds from a history's first event to its last (its writes' first invoke, last completion)."""
    times = [
        int(line.split(b'"time_ns":', 1)[1].split(b",", 1)[0]) for line in history.read_bytes().splitlines()
    ]
    return (max(times) - min(times)) / 1e9


def as_process(
    config: dict[str, Any],
    topic: str,
    acks: str,
    writes: int,
    rate_per_s: float,
    run_root: Path,
    starts_s: list[float],
) -> float:
    """(d): the span its history shows; the seconds from the process's start to its first event go
    to `starts_s`."""
    rundir, clock = RunDir(run_root), RunClock()
    spec = ProducerSpec(
        process=run_root.name,
        origin_ns=clock.origin_ns,
        config={k: v for k, v in config.items() if k != "logger"},
        topic=topic,
        partitions=PARTITIONS,
        acks=acks,
        rate_per_s=rate_per_s,
        max_writes=writes,
    )
    with rundir.writer(WRITES) as writer:
        process = WorkloadProcess(spec, {"writes": writer}, rundir)
        process.start()
        assert process.wait(300), f"{run_root}: still writing"
        process.close()  # an acks=0 producer keeps its client until then
        assert process.exit_code == 0, f"{run_root}: exit {process.exit_code}"
    history = rundir.path(WRITES)
    acked(history, writes)
    first_ns = int(history.read_bytes().split(b'"time_ns":', 1)[1].split(b",", 1)[0])
    starts_s.append(first_ns / 1e9)
    return span_s(history)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rates", default="5000,10000,20000", help="writes/s per producer; 0: unpaced")
    parser.add_argument("--acks", default="0,1,all")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of a paced run")
    parser.add_argument("--unpaced-writes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    with (
        terminate_as_interrupt(),  # SIGTERM removes the cluster too
        KafkaCluster(ClusterSpec(broker_config={"min.insync.replicas": 2})) as cluster,
        tempfile.TemporaryDirectory() as tmp,
    ):
        print(
            f"{'acks':>4} {'rate/s':>7} {'writes':>7} | {'acked/s bare':>12} {'recorded':>9} {'wall x':>7} | "
            f"{'CPU us/write bare':>17} {'recorded':>9} {'CPU x':>6} | {'synced wall x':>13} {'CPU x':>6} | "
            f"{'process span x':>14} {'CPU x':>6} {'start s':>7}"
        )
        for acks in args.acks.split(","):
            topic = f"bench-acks-{acks}"
            cluster.create_topic(topic, PARTITIONS, 3)
            config = client_config(
                cluster.bootstrap_servers, cluster.kafka_version, **{**DEFAULT_PRODUCER_CONFIG, "acks": acks}
            )
            for rate in rates:
                writes = int(rate * args.seconds) if rate else args.unpaced_writes
                bare_runs: list[Measured] = []
                recorded_runs: list[Measured] = []
                synced_runs: list[Measured] = []
                spans_s: list[float] = []  # of (b), from its history
                process_runs: list[Measured] = []
                starts_s: list[float] = []
                for n in range(args.rounds):
                    bare_runs.append(measured(partial(bare, config, topic, writes, rate)))
                    history = Path(tmp) / f"p-{acks}-{rate:.0f}-{n}.jsonl"
                    recorded_runs.append(
                        measured(partial(recorded, config, topic, acks, writes, rate, history))
                    )
                    run_root = Path(tmp) / f"s-{acks}-{rate:.0f}-{n}"
                    synced_runs.append(measured(partial(synced, config, topic, acks, writes, rate, run_root)))
                    spans_s.append(span_s(history))
                    process_root = Path(tmp) / f"d-{acks}-{rate:.0f}-{n}"
                    process_runs.append(
                        measured(
                            partial(as_process, config, topic, acks, writes, rate, process_root, starts_s)
                        )
                    )
                b_wall, r_wall, s_wall, p_span = (
                    statistics.median(m.wall_s for m in runs)
                    for runs in (bare_runs, recorded_runs, synced_runs, process_runs)
                )
                b_cpu, r_cpu, s_cpu, p_cpu = (
                    statistics.median(m.cpu_s for m in runs) / writes * 1e6
                    for runs in (bare_runs, recorded_runs, synced_runs, process_runs)
                )
                r_span = statistics.median(spans_s)
                label = f"{rate:.0f}" if rate else "max"
                print(
                    f"{acks:>4} {label:>7} {writes:>7} | {writes / b_wall:12.0f} {writes / r_wall:9.0f} "
                    f"{r_wall / b_wall:7.2f} | {b_cpu:17.2f} {r_cpu:9.2f} {r_cpu / b_cpu:6.2f} | "
                    f"{s_wall / r_wall:13.2f} {s_cpu / r_cpu:6.2f} | "
                    f"{p_span / r_span:14.2f} {p_cpu / r_cpu:6.2f} {statistics.median(starts_s):7.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()

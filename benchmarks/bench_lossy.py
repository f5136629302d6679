"""Benchmark: the lossy disk (harness/lossy/) against the plain directory under it, side by side.

File level (always): the same work in a plain temporary directory and through a lossy mount of
another, each printed with its throughput and the ratio lossy/plain:

- appends of 1 KiB and of 64 KiB writes to 4 files in turn (a broker's segments), nothing synced;
- appends of 16 KiB with an fsync after each (a broker with flush.messages=1);
- reading the appended files back (page cache dropped by reopening through the mount);
- Kafka's checkpoint pattern: a small temp file written and fsynced, renamed, the directory fsynced.

The plain directory's fsync reaches the host's disk; the lossy disk's syncs only its books (the
host keeps its power), so with fsyncs the lossy side may be the faster.

Kafka level (`--kafka`): one 3-broker cluster (ZooKeeper) with `cluster.disk: plain`, then one with
`lossy`, one after the other, `--rounds` times; on each, a producer at full speed (acks=all,
100-byte values, a topic of 3 partitions, RF 3, min.insync.replicas 2) for `--seconds`, and again
on a topic with flush.messages=1: acknowledged writes per second, side by side, the ratio per
round and its median.

    .venv/bin/python benchmarks/bench_lossy.py [--mib 256] [--repeat 3] [--kafka] [--seconds 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer

from harness.cluster import ClusterSpec, KafkaCluster
from harness.lossy.mounts import LossyMount

FILES = 4


def appends(folder: Path, total: int, size: int, fsync: bool) -> int:
    chunk = os.urandom(size)
    fds = [
        os.open(folder / f"{i:020d}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) for i in range(FILES)
    ]
    try:
        for n in range(total // size):
            fd = fds[n % FILES]
            os.write(fd, chunk)
            if fsync:
                os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)
    return total


def reads(folder: Path) -> int:
    done = 0
    for i in range(FILES):
        with open(folder / f"{i:020d}.log", "rb", buffering=0) as f:
            while block := f.read(1 << 20):
                done += len(block)
    return done


def checkpoints(folder: Path, count: int) -> int:
    target = folder / "recovery-point-offset-checkpoint"
    for n in range(count):
        temp = folder / "recovery-point-offset-checkpoint.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, f"0\n1\nchaos-acks-all 0 {n}\n".encode())
        os.fsync(fd)
        os.close(fd)
        os.rename(temp, target)
        dirfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dirfd)
        os.close(dirfd)
    return count


def clear(folder: Path) -> None:
    for path in folder.iterdir():
        path.unlink()


def timed(step: Callable[[], int]) -> tuple[float, int]:
    started = time.perf_counter()
    amount = step()
    return time.perf_counter() - started, amount


def compare(name: str, unit: str, plain: Path, lossy: Path, step: Callable[[Path], int], repeat: int) -> None:
    rates: dict[str, list[float]] = {"plain": [], "lossy": []}
    for _ in range(repeat):
        for side, folder in (("plain", plain), ("lossy", lossy)):
            seconds, amount = timed(lambda folder=folder: step(folder))
            rates[side].append(amount / seconds)
    plain_rate, lossy_rate = statistics.median(rates["plain"]), statistics.median(rates["lossy"])
    print(
        f"{name:<34} plain {plain_rate:>10.1f} {unit:<6} lossy {lossy_rate:>10.1f} {unit:<6} "
        f"lossy/plain {lossy_rate / plain_rate:5.2f}"
    )


def file_level(mib: int, repeat: int) -> None:
    total = mib << 20
    with tempfile.TemporaryDirectory(prefix="kchaos-bench-lossy-") as tmp:
        plain = Path(tmp) / "plain"
        plain.mkdir()
        disk = LossyMount(Path(tmp) / "lossy")
        disk.start()
        try:
            lossy = disk.mount
            print(f"== file level: {mib} MiB per append run, median of {repeat}")
            for size in (1 << 10, 64 << 10):
                compare(
                    f"append {size >> 10} KiB writes",
                    "MiB/s",
                    plain,
                    lossy,
                    lambda f, size=size: appends(f, total, size, False) >> 20,
                    repeat,
                )
                compare("read back", "MiB/s", plain, lossy, lambda f: reads(f) >> 20, repeat)
                clear(plain)
                clear(lossy)
                disk.drop()  # the books of the run before are not the next run's cost
            synced = min(total, 64 << 20)
            compare(
                "append 16 KiB + fsync each",
                "MiB/s",
                plain,
                lossy,
                lambda f: appends(f, synced, 16 << 10, True) >> 20,
                repeat,
            )
            clear(plain)
            clear(lossy)
            compare(
                "checkpoint (write, fsync, rename)",
                "ops/s",
                plain,
                lossy,
                lambda f: checkpoints(f, 500),
                repeat,
            )
        finally:
            disk.stop()


def produce(cluster: KafkaCluster, topic: str, seconds: float) -> float:
    """Acknowledged acks=all writes per second of one producer at full speed for `seconds`."""
    acked = [0]

    def delivered(error: object, _: object) -> None:
        acked[0] += error is None

    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 5})
    value = os.urandom(50).hex().encode()
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        try:
            producer.produce(topic, value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(60)
    return acked[0] / (time.monotonic() - started)


def kafka_level(seconds: float, rounds: int) -> None:
    print(
        f"== Kafka: one producer at full speed, acks=all, {seconds:.0f} s per topic; "
        f"{rounds} rounds of a plain cluster then a lossy one (on a shared machine, load moves between them)"
    )
    topics = (("default flush", {}), ("flush.messages=1", {"flush.messages": 1}))
    ratios: dict[str, list[float]] = {name: [] for name, _ in topics}
    for round_ in range(1, rounds + 1):
        rates: dict[tuple[str, str], float] = {}
        for disk in ("plain", "lossy"):
            with KafkaCluster(ClusterSpec(disk=disk)) as cluster:
                for name, config in topics:
                    topic = "bench-" + name.split("=")[0].replace(" ", "-").replace(".", "-")
                    cluster.create_topic(topic, 3, 3, {"min.insync.replicas": 2, **config})
                    rates[(disk, name)] = produce(cluster, topic, seconds)
        for name, _ in topics:
            plain, lossy = rates[("plain", name)], rates[("lossy", name)]
            ratios[name].append(lossy / plain)
            print(
                f"round {round_}: acks=all writes, {name:<17} plain {plain:>9.0f} /s  "
                f"lossy {lossy:>9.0f} /s  lossy/plain {lossy / plain:5.2f}"
            )
    for name, found in ratios.items():
        print(
            f"acks=all writes, {name:<17} lossy/plain median {statistics.median(found):5.2f} "
            f"of {rounds} rounds"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="MiB appended per run (default 256)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side, the median printed")
    parser.add_argument("--kafka", action="store_true", help="also a Kafka workload, plain then lossy")
    parser.add_argument("--seconds", type=float, default=30.0, help="--kafka: seconds per topic")
    parser.add_argument("--rounds", type=int, default=3, help="--kafka: plain-then-lossy rounds")
    args = parser.parse_args()
    file_level(args.mib, args.repeat)
    if args.kafka:
        kafka_level(args.seconds, args.rounds)


if __name__ == "__main__":
    main()

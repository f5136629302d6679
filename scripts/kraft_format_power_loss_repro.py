"""Minimal reproduction: a KRaft node that loses power soon after `kafka-storage format` never starts
again (Kafka 3.3 to 4.3): format writes bootstrap.checkpoint without an fsync, then fsyncs
meta.properties and the directory, so a power loss keeps the file's name and loses its content.

One Kafka node (broker and controller combined) on kafka-chaos's lossy disk (`harness.lossy`): the
image's entrypoint formats the data directory (`kafka.tools.StorageTool format`) and starts the
node; once it has registered, the `power-loss` fault kills it and drops every byte and directory
change its disk had not fsynced (unless --written-back-s keeps what the operating system would have
written back by then), then starts it again. The program prints what the disk dropped, file by file,
the sizes of bootstrap.checkpoint and meta.properties before and after, and the node's own log lines
from the start after the power loss.

    .venv/bin/python scripts/kraft_format_power_loss_repro.py --kafka 3.9.2
    .venv/bin/python scripts/kraft_format_power_loss_repro.py --kafka 3.9.2 --written-back-s 30 --age-s 40

With --workaround, a node that refused to start gets its empty bootstrap.checkpoint removed and is
started once more (Kafka then takes the release's default bootstrap metadata, as for a directory
formatted before 3.3). Exit code: 1 when the node refused to start after the power loss (the bug
shown), 0 when it started, 2 when the reproduction could not be made.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from contract.errors import HarnessError
from contract.history import new_run_id
from faults.base import FaultContext
from faults.power import PowerLoss
from harness.cluster import ClusterSpec, KafkaCluster
from harness.services import KafkaBroker

WATCHED = ("bootstrap.checkpoint", "meta.properties")
"""The files format writes, whose sizes the program shows before and after the power loss."""
LOG_MARKS = ("ERROR", "FATAL", "RuntimeException: ", "Kafka Server started", "setting metadata.version")
"""The node's log lines worth printing: why it refused to start, or that it started and with what."""
EXIT_SHOWN, EXIT_STARTED, EXIT_NOT_MADE = 1, 0, 2


def sizes(backing: Path) -> dict[str, int | None]:
    """The watched files' sizes in the disk's backing directory (None: no such file)."""
    return {name: (backing / name).stat().st_size if (backing / name).exists() else None for name in WATCHED}


def log_lines(node: KafkaBroker, since_line: int) -> list[str]:
    """The node's log lines after its first `since_line` ones that say why it stopped or that it runs."""
    lines = node.logs("all").splitlines()[since_line:]
    return [line for line in lines if any(mark in line for mark in LOG_MARKS)]


def started(heal: Callable[[], None]) -> tuple[bool, str]:
    """Whether the node came back (heal waits for it to register, three starts at most)."""
    try:
        heal()
    except HarnessError as exc:
        return False, str(exc).splitlines()[0].rstrip(": ")
    return True, "registered again"


def reproduce(kafka: str, written_back_s: float | None, age_s: float, workaround: bool) -> int:
    spec = ClusterSpec(brokers=1, metadata="kraft", controllers=1, combined=True, disk="lossy", kafka=kafka)
    with KafkaCluster(spec, run_id=new_run_id("kraft-format")) as cluster:
        node = cluster.brokers[0]
        disk = node.disk
        assert disk is not None  # disk="lossy"
        formatted_at = time.monotonic()
        print(f"Kafka {cluster.kafka_version}, one combined KRaft node {node.name} ({cluster.run_id})")
        print(f"formatted and registered; data directory on a lossy disk, files: {sizes(disk.backing)}")
        if age_s > 0:
            # The wait is the experiment: how old the format's unsynced pages are at the power loss.
            time.sleep(max(0.0, age_s - (time.monotonic() - formatted_at)))
        fault = PowerLoss(target="cluster", written_back_s=written_back_s)
        context = FaultContext(cluster)
        fault.start(context, random.Random(1))
        kept = (
            "nothing unsynced kept"
            if written_back_s is None
            else f"kept what was older than {written_back_s} s"
        )
        print(f"\npower loss {time.monotonic() - formatted_at:.0f} s after the node was up ({kept}):")
        print(json.dumps(fault.detail["dropped"], indent=1))
        print(f"files after the power loss: {sizes(disk.backing)}")
        before = len(node.logs("all").splitlines())
        came_back, why = started(lambda: fault.heal(context))
        print(f"\nstarted again: {'yes' if came_back else 'no'} ({why}); the node's log since:")
        for line in log_lines(node, before)[:12]:
            print(f"  {line}")
        if came_back:
            return EXIT_STARTED
        if workaround:
            empty = disk.mount / "bootstrap.checkpoint"
            print(f"\nworkaround: remove {empty.name} ({empty.stat().st_size} bytes) and start once more")
            empty.unlink()
            before = len(node.logs("all").splitlines())
            again, why = started(lambda: fault.heal(context))
            print(f"started: {'yes' if again else 'no'} ({why})")
            for line in log_lines(node, before)[:6]:
                print(f"  {line}")
        return EXIT_SHOWN


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kafka", default="3.9.2", help="Kafka release (Maven Central), default 3.9.2")
    parser.add_argument(
        "--written-back-s",
        type=float,
        default=None,
        help="keep what the OS would have written back: pages older than this (default: keep nothing)",
    )
    parser.add_argument(
        "--age-s", type=float, default=0.0, help="seconds after the node is up before the power loss"
    )
    parser.add_argument(
        "--workaround", action="store_true", help="then remove the empty bootstrap.checkpoint and start again"
    )
    args = parser.parse_args(argv)
    if args.age_s < 0 or (args.written_back_s is not None and args.written_back_s < 0):
        print("--age-s and --written-back-s must be >= 0", file=sys.stderr)
        return EXIT_NOT_MADE
    try:
        return reproduce(args.kafka, args.written_back_s, args.age_s, args.workaround)
    except HarnessError as exc:
        print(f"the reproduction could not be made: {exc}", file=sys.stderr)
        return EXIT_NOT_MADE


if __name__ == "__main__":
    sys.exit(main())

"""`power-loss`: every target broker loses power at once, and with it what its page cache held.

Kafka acknowledges a write once it is in the page cache of the in-sync replicas; it fsyncs only as
its flush settings say (by default never: it leaves that to the operating system), and checkpoints
how far each log was flushed (`recovery-point-offset-checkpoint`). The fault kills the targets
(default: every replica of a partition) together, then, while they are down, cuts every log on them
back to its checkpointed recovery point, as losing the page cache would; heal starts them again.
A broker configured to fsync every message (`log.flush.interval.messages=1`) loses nothing.

This is the worst case Kafka's own bookkeeping allows: an operating system usually writes dirty
pages back within about 30 s, so a real power loss often keeps more than the recovery point, which
Kafka itself writes only every `log.flush.offset.checkpoint.interval.ms` (60 s by default).
"""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass
from typing import Any

from contract.errors import ClusterError, FaultError, HarnessError
from faults.base import register
from faults.process import restart
from faults.targets import Targeted
from harness.broker_config import DATA_DIR
from harness.cluster import KafkaCluster
from harness.forensics import archive_files
from harness.replica_logs import PARTITION_DIR, SEGMENT_NAME, cut_at, read_checkpoint, segment_order
from harness.services import KafkaBroker

RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
BEFORE_START = "/etc/kchaos/before-start.sh"
"""Run once by the image's entrypoint before the broker starts (compose/kafka/entrypoint.sh)."""
FSYNC_EVERY_MESSAGE = "log.flush.interval.messages"


@dataclass(frozen=True)
class Cut:
    """What losing the page cache does to one partition's log on one broker."""

    partition: str
    """The partition's directory name, `<topic>-<n>`."""
    recovery_point: int
    commands: tuple[str, ...]


def plan_cut(folder: str, segments: dict[str, bytes], recovery_point: int) -> Cut:
    """The shell commands that cut the log in `folder` (segment file name -> content) back to
    `recovery_point`: later segments removed (the first emptied instead), the segment holding it
    truncated, and the index of each segment touched removed (Kafka rebuilds a missing index)."""
    commands: list[str] = []
    where = f"{DATA_DIR}/{folder}"
    for i, name in enumerate(segment_order(list(segments))):
        base = int(name[:20])
        log, index = shlex.quote(f"{where}/{name}"), shlex.quote(f"{where}/{name[:20]}.index")
        if base >= recovery_point and i > 0:
            commands.append(f"rm -f {log} {index}")
            continue
        size = 0 if base >= recovery_point else cut_at(segments[name], recovery_point)
        if size is not None and size < len(segments[name]):
            commands += [f"truncate -s {size} {log}", f"rm -f {index}"]
    return Cut(folder, recovery_point, tuple(commands))


METADATA_LOG = "__cluster_metadata-0"
"""KRaft's metadata log: fsynced as Raft appends to it, so a power loss keeps it; it is not in the
recovery-point checkpoint, which would read as 0."""


def _wanted(folder: str, name: str) -> bool:
    if folder == "":
        return name == RECOVERY_CHECKPOINT
    if folder == METADATA_LOG:
        return False
    return PARTITION_DIR.fullmatch(folder) is not None and SEGMENT_NAME.fullmatch(name) is not None


def plan_cuts(files: dict[tuple[str, str], bytes]) -> list[Cut]:
    """The cut of every partition among a broker's files ((folder, name) -> content: its recovery
    checkpoint and its segments); a partition the checkpoint does not name is cut back to 0."""
    checkpoint = files.get(("", RECOVERY_CHECKPOINT))
    points = read_checkpoint(checkpoint.decode()) if checkpoint is not None else {}
    segments: dict[str, dict[str, bytes]] = {}
    for (folder, name), data in files.items():
        if folder:
            segments.setdefault(folder, {})[name] = data
    cuts = []
    for folder, of_folder in sorted(segments.items()):
        match = PARTITION_DIR.fullmatch(folder)
        point = points.get((match["topic"], int(match["partition"])), 0) if match else 0
        cuts.append(plan_cut(folder, of_folder, point))
    return cuts


@register
class PowerLoss(Targeted):
    name = "power-loss"
    description = (
        "Kill the targets (default: every replica of a partition) at once and cut every log on them "
        "back to its last flushed point (the recovery-point checkpoint), as losing the page cache "
        "does; heal starts them again."
    )
    default_target = "replicas"

    def describe(self) -> str:
        return (
            "Every replica loses power at once: what Kafka acknowledged but never flushed to disk "
            "(by default, anything since the last checkpointed flush) is gone when they restart."
        )

    def start(self, cluster: KafkaCluster, rng: random.Random) -> None:
        brokers = [n for n in self.resolve(cluster, rng) if isinstance(n, KafkaBroker)]
        if not brokers:
            raise FaultError(f"power-loss hits brokers; target {self.target!r} names none")
        for broker in brokers:  # all of them before any file is read: one moment for every replica
            broker.kill()
        flushing = str(cluster.spec.broker_config.get(FSYNC_EVERY_MESSAGE, "")).strip() == "1"
        cut: dict[str, Any] = {}
        for broker in brokers:
            if flushing:
                continue  # every message was fsynced: the page cache held nothing unflushed
            try:
                cuts = [c for c in plan_cuts(archive_files(broker, DATA_DIR, _wanted)) if c.commands]
            except (ClusterError, HarnessError, ValueError) as exc:
                raise FaultError(f"power-loss could not read {broker.name}'s logs: {exc}") from None
            script = "set -e\n" + "".join(f"{command}\n" for cut_ in cuts for command in cut_.commands)
            broker.put_file(BEFORE_START, script.encode())
            cut[broker.name] = {c.partition: c.recovery_point for c in cuts}
        self.detail["flushes_every_message"] = flushing
        self.detail["cut_to_recovery_point"] = cut

    def heal(self, cluster: KafkaCluster) -> None:
        restart(cluster, [n for n in self._nodes if isinstance(n, KafkaBroker)])

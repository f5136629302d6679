"""Disk faults, served by the targets' lossy disks (`cluster.disk: lossy`, `harness.lossy.fs`): a
disk that is full, one whose fsync fails, one whose fsync is slow. Heal makes the disk good again;
the processes are left as the fault left them (a broker that halted on a failed fsync stays down
until something restarts it: what Kafka does about a broken disk is the finding).

- `disk-full`: a write past a file's end, a new file or directory fails with ENOSPC (overwrites in
  place go on, as on a real full disk); statfs shows no space left.
- `fsync-error`: every fsync, of a file or a directory, fails with EIO and syncs nothing.
- `slow-fsync`: every fsync waits `delay_ms` first (the disk serves one operation at a time, so
  what comes after it waits too).

The start's detail has `disks`: per node, the disk's faults as its daemon reports them (`counts`:
how many operations a fault of the disk failed or delayed so far in the run); the stop's detail has
them as the heal left them, so the counts' growth is what this fault failed or delayed.
"""

from __future__ import annotations

import random
from typing import Any

from contract.errors import ClusterError, Failures, FaultError
from faults.base import FaultContext, coerce_float, register, retry_heal_step
from faults.power import lossy_disks
from faults.targets import Targeted
from harness.lossy.mounts import LossyMount


class _DiskFault(Targeted):
    name: str

    def _set(self, context: FaultContext, rng: random.Random, setting: dict[str, Any]) -> None:
        disks: dict[str, Any] = {}
        self.detail["disks"] = disks
        for node, disk in lossy_disks(self.name, self.resolve(context, rng)):
            try:
                disks[node.name] = disk.request({"command": "fault", **setting})["faults"]
            except ClusterError as exc:
                raise FaultError(f"{self.name} on {node.name}: {exc}") from None

    def heal(self, context: FaultContext) -> None:
        failures = Failures(FaultError)
        disks: dict[str, Any] = {}
        self.healed = {"disks": disks}
        for node in self._nodes:
            if node.disk is not None:
                with failures.attempt(f"cannot heal {node.name}'s disk"):
                    disks[node.name] = retry_heal_step(_heal_disk, node.disk)
        failures.raise_if_any()


def _heal_disk(disk: LossyMount) -> dict[str, Any]:
    """Heal the disk; what it reports then (its `counts` include what the fault failed or delayed)."""
    try:
        return dict(disk.request({"command": "heal"})["faults"])
    except ClusterError as exc:
        raise FaultError(str(exc)) from None


@register
class DiskFull(_DiskFault):
    name = "disk-full"
    description = (
        "The targets' disks fill up: writes past a file's end and new files fail with ENOSPC. "
        "Heal frees the space (processes are not restarted). Needs cluster.disk: lossy."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        self._set(context, rng, {"full": True})


@register
class FsyncError(_DiskFault):
    name = "fsync-error"
    description = (
        "Every fsync on the targets' disks fails with EIO and syncs nothing. Heal makes fsync work "
        "again (processes are not restarted). Needs cluster.disk: lossy."
    )

    def start(self, context: FaultContext, rng: random.Random) -> None:
        self._set(context, rng, {"fsync_error": True})


@register
class SlowFsync(_DiskFault):
    name = "slow-fsync"
    description = (
        "Every fsync on the targets' disks waits delay_ms first (and the operations behind it "
        "with it). Heal makes fsync fast again. Needs cluster.disk: lossy."
    )

    def __init__(
        self,
        *,
        target: str | None = None,
        topic: str | None = None,
        partition: int | str | None = None,
        pick: str | None = None,
        delay_ms: float | str = 500.0,
    ) -> None:
        super().__init__(target=target, topic=topic, partition=partition, pick=pick)
        self.delay_ms = coerce_float("delay_ms", delay_ms, low=0, high=600_000)

    def start(self, context: FaultContext, rng: random.Random) -> None:
        self._set(context, rng, {"fsync_delay_s": self.delay_ms / 1000})

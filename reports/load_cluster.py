"""Reading cluster.jsonl for the report: the samples where the cluster's state changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.contract.history_readers import iter_cluster_samples


@dataclass(frozen=True)
class PartitionState:
    leader: int | None
    leader_epoch: int | None
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ClusterSample:
    time_ns: int
    controller: int | None
    live_brokers: tuple[int, ...]
    partitions: dict[tuple[str, int], PartitionState] = field(hash=False)


def _sample(ev: dict[str, Any]) -> ClusterSample:
    parts = {
        (p["topic"], p["partition"]): PartitionState(
            p.get("leader"), p.get("leader_epoch"), tuple(p.get("isr") or ())
        )
        for p in ev.get("partitions") or []
    }
    live = tuple(sorted(ev.get("live_brokers") or ()))
    return ClusterSample(ev["time_ns"], ev.get("controller"), live, parts)


def load_cluster(root: Path) -> tuple[ClusterSample, ...]:
    """Cluster samples, keeping only those that changed something (and the last one, for the end)."""
    kept: list[ClusterSample] = []
    last: ClusterSample | None = None
    for _, ev in iter_cluster_samples(root):
        sample = _sample(ev)
        if last is None or (sample.controller, sample.live_brokers, sample.partitions) != (
            last.controller,
            last.live_brokers,
            last.partitions,
        ):
            kept.append(sample)
        last = sample
    if last is not None and kept[-1] is not last:
        kept.append(last)
    return tuple(kept)

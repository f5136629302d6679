"""Reading a run for the report: run.json, check/result.json (`load_result`), faults and cluster
samples (`load_cluster`).

Only the small files are read (never writes.jsonl / reads.jsonl): per-second series come from
result.json. Everything is turned into small frozen dataclasses so the renderers never touch raw
JSON; every field they use is checked as it is read (for run.json and the JSONL files, by
`harness.contract.history_readers`). Unusable input raises HistoryError (with path, line and
field) or InputError.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.contract.coordinators import offsets_partitions
from harness.contract.events import FaultWindow, fault_windows
from harness.contract.expectation_outcomes import ExpectationOutcome, read_expectations
from harness.contract.history import FAULTS
from harness.contract.history_readers import iter_fault_events, load_run_json
from reports.load_cluster import ClusterSample, load_cluster
from reports.load_result import NS, Result, load_result, passed


@dataclass(frozen=True)
class Topic:
    name: str
    acks: str
    partitions: int | None
    replication_factor: int | None
    config: dict[str, str]


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    scenario: str
    seed: Any
    started_at: str
    duration_s: float | None
    kafka_version: str
    brokers: int | None
    broker_config: dict[str, str]
    producer: dict[str, str]
    topics: tuple[Topic, ...]
    offsets_partitions: int | None  # of __consumer_offsets, when the run had groups
    kafka_source: str = ""  # maven:<coordinates>, tarball:<path> or directory:<path>; "" when not recorded
    java: str = ""  # what `java -version` said in a running broker
    metadata: str = ""  # who held the metadata, in words ("ZooKeeper, 1 node"); "" when not recorded


@dataclass(frozen=True)
class Run:
    root: Path
    info: RunInfo
    result: Result
    faults: tuple[FaultWindow, ...]
    cluster: tuple[ClusterSample, ...]  # only samples where something changed, plus the last one
    end_ns: int  # the run's time axis spans [0, end_ns]
    expectations: tuple[ExpectationOutcome, ...] = ()  # the scenario's, as `kchaos run` judged them

    @property
    def passed(self) -> bool:
        return passed(self.result, self.expectations)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str_dict(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _opt_float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def load_info(root: Path) -> RunInfo:
    run = load_run_json(root)
    kafka = _obj(run.get("kafka"))
    cluster = _obj(run.get("cluster"))
    topics = tuple(
        Topic(
            name=t["name"],
            acks=str(t["acks"]),
            partitions=_opt_int(t.get("partitions")),
            replication_factor=_opt_int(t.get("replication_factor")),
            config=_str_dict(t.get("config")),
        )
        for t in run["topics"]
    )
    return RunInfo(
        run_id=str(run.get("run_id", root.name)),
        scenario=str(run.get("scenario", "unnamed")),
        seed=run.get("seed"),
        started_at=str(run.get("started_at", "")),
        duration_s=_opt_float(run.get("duration_s")),
        kafka_version=str(kafka.get("version", "unknown")),
        brokers=_opt_int(cluster.get("brokers")),
        broker_config=_str_dict(cluster.get("broker_config")),
        producer=_str_dict(run.get("producer")),
        topics=topics,
        offsets_partitions=offsets_partitions(run),
        kafka_source=str(kafka.get("source") or ""),
        java=str(kafka.get("java") or ""),
        metadata=_metadata_words(cluster),
    )


def _metadata_words(cluster: dict[str, Any]) -> str:
    """`cluster.metadata` and its quorum in words; "" for runs recorded before it was kept."""
    if cluster.get("metadata") == "kraft":
        voters = _opt_int(cluster.get("controllers")) or 0
        kind = "combined with brokers" if cluster.get("combined") else "dedicated"
        features = ", ".join(f"{k}={v}" for k, v in sorted(_str_dict(cluster.get("features")).items()))
        return f"KRaft, {voters} {kind} controller{'s' if voters != 1 else ''}" + (
            f"; {features}" if features else ""
        )
    if cluster.get("metadata") == "zookeeper":
        nodes = _opt_int(cluster.get("zookeepers")) or 0
        return f"ZooKeeper, {nodes} node{'s' if nodes != 1 else ''}"
    return ""


def load_faults(root: Path) -> tuple[FaultWindow, ...]:
    path = root / FAULTS
    return tuple(fault_windows(iter_fault_events(root), str(path)))


def load_run(root: Path) -> Run:
    """Everything the report needs from one run directory."""
    info = load_info(root)
    result = load_result(root)
    faults = load_faults(root)
    cluster = load_cluster(root)
    ends = [int((info.duration_s or 0) * NS), NS]
    ends += [(r.t_s + 1) * NS for r in result.series]
    ends += [w.stop_ns or w.start_ns for w in faults] + [s.time_ns for s in cluster[-1:]]
    return Run(root, info, result, faults, cluster, max(ends), tuple(read_expectations(root)))

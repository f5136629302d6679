"""Reading a run for the report: run.json, check/result.json, faults and cluster samples.

Only the small files are read (never writes.jsonl / reads.jsonl): per-second series come from
result.json. Everything is turned into small frozen dataclasses so the renderers never touch raw
JSON. Unusable input raises HistoryError (with path and line) or InputError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.anomaly_kinds import COUNT_KEYS, KIND_IDS
from harness.errors import HistoryError, InputError
from harness.events import FaultWindow, fault_windows
from harness.history import CLUSTER, FAULTS, RESULT, iter_jsonl, load_run_json, read_json_object

RESULT_FORMATS = (1,)
NS = 1_000_000_000


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


@dataclass(frozen=True)
class Guarantee:
    id: str
    topic: str
    acks: str
    promise: str
    promised: bool
    verdict: str
    reason: str


@dataclass(frozen=True)
class Anomalies:
    kind: str
    count: int | None  # None: its checker failed
    examples: tuple[dict[str, Any], ...]
    capped: bool
    error: str | None = None


@dataclass(frozen=True)
class SeriesRow:
    acks: str
    t_s: int
    acked: int
    failed: int
    indeterminate: int
    lost: int
    divergent: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None


@dataclass(frozen=True)
class Result:
    valid: bool
    complete: bool
    unexpected: int
    checked_at: str
    incomplete_partitions: tuple[tuple[str, int], ...]
    acks: dict[str, dict[str, int | None]]
    topics: tuple[dict[str, Any], ...]
    guarantees: tuple[Guarantee, ...]
    anomalies: tuple[Anomalies, ...]
    series: tuple[SeriesRow, ...]
    latency: tuple[dict[str, Any], ...]
    recovery: tuple[dict[str, Any], ...]
    errors: tuple[tuple[str, str], ...] = ()  # (kind, error) of each checker that failed


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


@dataclass(frozen=True)
class Run:
    root: Path
    info: RunInfo
    result: Result
    faults: tuple[FaultWindow, ...]
    cluster: tuple[ClusterSample, ...]  # only samples where something changed, plus the last one
    end_ns: int  # the run's time axis spans [0, end_ns]


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
    )


def _need(obj: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise HistoryError(f"{where}.{key} is missing or not the expected type", str(path))
    return value


def load_result(root: Path) -> Result:
    path = root / RESULT
    if not path.is_file():
        raise InputError(
            f"{root}: this run has not been checked yet (no {RESULT}); run `kchaos check {root}` first"
        )
    raw = read_json_object(path)
    fmt = raw.get("result_format")
    if fmt not in RESULT_FORMATS:
        known = ", ".join(str(f) for f in RESULT_FORMATS)
        raise InputError(
            f"{path}: unknown result_format {fmt!r}; this kafka-chaos reads result format {known}"
        )
    acks_raw = _need(raw, "acks", dict, path, "result")
    acks = {
        str(mode): {k: _opt_int(counts[k]) if k in counts else 0 for k in COUNT_KEYS}
        for mode, counts in acks_raw.items()
        if isinstance(counts, dict)
    }
    guarantees = tuple(
        Guarantee(
            id=str(_need(g, "id", str, path, "guarantees[]")),
            topic=str(g.get("topic", "")),
            acks=str(g.get("acks", "")),
            promise=str(g.get("promise", "")),
            promised=bool(g.get("promised", False)),
            verdict=str(_need(g, "verdict", str, path, "guarantees[]")),
            reason=str(g.get("reason", "")),
        )
        for g in _need(raw, "guarantees", list, path, "result")
    )
    anomalies_raw = _obj(raw.get("anomalies"))
    anomalies = []
    for kind in KIND_IDS:
        a = _obj(anomalies_raw.get(kind))
        examples = tuple(e for e in a.get("examples", []) if isinstance(e, dict))
        error = a.get("error")
        count = _opt_int(a.get("count")) if error else int(a.get("count", 0))
        anomalies.append(
            Anomalies(
                kind, count, examples, bool(a.get("examples_capped", False)), str(error) if error else None
            )
        )
    avail = _obj(raw.get("availability"))
    series = tuple(
        SeriesRow(
            acks=str(r.get("acks")),
            t_s=int(r.get("t_s", 0)),
            acked=int(r.get("acked", 0)),
            failed=int(r.get("failed", 0)),
            indeterminate=int(r.get("indeterminate", 0)),
            lost=int(r.get("lost", 0)),
            divergent=int(r.get("divergent", 0)),
            p50_ms=_opt_float(r.get("latency_p50_ms")),
            p99_ms=_opt_float(r.get("latency_p99_ms")),
            max_ms=_opt_float(r.get("latency_max_ms")),
        )
        for r in avail.get("series", [])
        if isinstance(r, dict)
    )
    return Result(
        valid=bool(_need(raw, "valid", bool, path, "result")),
        complete=bool(_need(raw, "complete", bool, path, "result")),
        unexpected=int(raw.get("unexpected", 0)),
        checked_at=str(raw.get("checked_at", "")),
        incomplete_partitions=tuple(
            (str(p.get("topic")), int(p.get("partition", -1)))
            for p in raw.get("incomplete_partitions", [])
            if isinstance(p, dict)
        ),
        acks=acks,
        topics=tuple(t for t in raw.get("topics", []) if isinstance(t, dict)),
        guarantees=guarantees,
        anomalies=tuple(anomalies),
        series=series,
        latency=tuple(r for r in avail.get("latency", []) if isinstance(r, dict)),
        recovery=tuple(r for r in avail.get("recovery", []) if isinstance(r, dict)),
        errors=tuple(
            (str(e.get("kind")), str(e.get("error"))) for e in raw.get("errors", []) if isinstance(e, dict)
        ),
    )


def load_faults(root: Path) -> tuple[FaultWindow, ...]:
    path = root / FAULTS
    return tuple(fault_windows(iter_jsonl(path, required=False), str(path)))


def _sample(ev: dict[str, Any], path: Path, line: int) -> ClusterSample:
    t = ev.get("time_ns")
    if not isinstance(t, int):
        raise HistoryError("a cluster sample needs an integer time_ns", str(path), line)
    parts: dict[tuple[str, int], PartitionState] = {}
    for p in ev.get("partitions", []) or []:
        if isinstance(p, dict) and isinstance(p.get("topic"), str) and isinstance(p.get("partition"), int):
            isr = tuple(int(b) for b in p.get("isr", []) or [])
            parts[(p["topic"], p["partition"])] = PartitionState(
                _opt_int(p.get("leader")), _opt_int(p.get("leader_epoch")), isr
            )
    live = tuple(sorted(int(b) for b in ev.get("live_brokers", []) or []))
    return ClusterSample(t, _opt_int(ev.get("controller")), live, parts)


def load_cluster(root: Path) -> tuple[ClusterSample, ...]:
    """Cluster samples, keeping only those that changed something (and the last one, for the end)."""
    path = root / CLUSTER
    kept: list[ClusterSample] = []
    last: ClusterSample | None = None
    for line, ev in iter_jsonl(path, required=False):
        sample = _sample(ev, path, line)
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


def load_run(root: Path) -> Run:
    """Everything the report needs from one run directory."""
    info = load_info(root)
    result = load_result(root)
    faults = load_faults(root)
    cluster = load_cluster(root)
    ends = [int((info.duration_s or 0) * NS), NS]
    ends += [(r.t_s + 1) * NS for r in result.series]
    ends += [w.stop_ns or w.start_ns for w in faults] + [s.time_ns for s in cluster[-1:]]
    return Run(root, info, result, faults, cluster, max(ends))

"""Tiny handwritten run directories for the checker tests, and `kchaos check` run on them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from contract.history import (
    CLIENT,
    CLUSTER,
    CONSUMES,
    FAULTS,
    NODE_LOGS,
    READS,
    REPLICAS,
    RUN_JSON,
    TRANSACTIONS,
    WRITES,
)
from kchaos.cli import main

TOPICS: list[dict[str, Any]] = [
    {"name": "t-all", "partitions": 2, "replication_factor": 3, "acks": "all"},
    {"name": "t-1", "partitions": 2, "replication_factor": 3, "acks": "1"},
    {"name": "t-0", "partitions": 2, "replication_factor": 3, "acks": "0"},
]


def run_json(**overrides: Any) -> dict[str, Any]:
    run: dict[str, Any] = {
        "format": 1,
        "run_id": "test-run",
        "seed": 1,
        "scenario": "handwritten",
        "kafka": {"version": "0.9.0.1"},
        "cluster": {
            "brokers": 3,
            "broker_config": {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
        },
        "topics": TOPICS,
    }
    return run | overrides


def write(
    kind: str, t: int, value: str, topic: str = "t-all", partition: int = 0, **extra: Any
) -> dict[str, Any]:
    """One writes.jsonl event; the process is the value's prefix before ':'."""
    event = {
        "type": kind,
        "time_ns": t,
        "process": value.split(":")[0],
        "topic": topic,
        "partition": partition,
    }
    if kind != "invoke":
        event["offset"] = extra.pop("offset", None)
    return event | {"value": value} | extra


def acked(
    t: int, value: str, offset: int | None, topic: str = "t-all", partition: int = 0
) -> list[dict[str, Any]]:
    """An invoke at `t` and its `ok` completion 10 ns later."""
    return [
        write("invoke", t, value, topic, partition),
        write("ok", t + 10, value, topic, partition, offset=offset),
    ]


def client_line(t: int, process: str, message: str, facility: str = "REQTMOUT") -> dict[str, Any]:
    return {"time_ns": t, "process": process, "level": "info", "facility": facility, "message": message}


def record(
    t: int, value: str, offset: int, topic: str = "t-all", partition: int = 0, phase: str = "final"
) -> dict[str, Any]:
    return {
        "type": "record",
        "time_ns": t,
        "process": f"c-{phase}",
        "phase": phase,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "value": value,
    }


def end(t: int, topic: str = "t-all", partition: int = 0, high_watermark: int = 0) -> dict[str, Any]:
    return {
        "type": "end",
        "time_ns": t,
        "process": "c-final",
        "phase": "final",
        "topic": topic,
        "partition": partition,
        "log_start": 0,
        "high_watermark": high_watermark,
    }


def all_ends(t: int = 10_000) -> list[dict[str, Any]]:
    """A final `end` for every partition of TOPICS."""
    return [end(t, topic["name"], p) for topic in TOPICS for p in range(topic["partitions"])]


def _jsonl(path: Path, events: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def make_run(
    root: Path,
    writes: Iterable[Mapping[str, Any]],
    reads: Iterable[Mapping[str, Any]],
    faults: Iterable[Mapping[str, Any]] = (),
    cluster: Iterable[Mapping[str, Any]] = (),
    run: Mapping[str, Any] | None = None,
    client: Iterable[Mapping[str, Any]] = (),
    replicas: Iterable[Mapping[str, Any]] | None = None,
    node_logs: Mapping[str, str] | None = None,
    consumes: Iterable[Mapping[str, Any]] | None = None,
    transactions: Iterable[Mapping[str, Any]] | None = None,
) -> Path:
    """A run directory of these events; replicas.jsonl, consumes.jsonl, transactions.jsonl and
    RUN/logs/<node>.log only when given."""
    root.mkdir(parents=True, exist_ok=True)
    (root / RUN_JSON).write_text(json.dumps(run or run_json()))
    _jsonl(root / WRITES, writes)
    _jsonl(root / READS, reads)
    _jsonl(root / FAULTS, faults)
    _jsonl(root / CLUSTER, cluster)
    _jsonl(root / CLIENT, client)
    if replicas is not None:
        _jsonl(root / REPLICAS, replicas)
    if consumes is not None:
        _jsonl(root / CONSUMES, consumes)
    if transactions is not None:
        _jsonl(root / TRANSACTIONS, transactions)
    for node, text in (node_logs or {}).items():
        (root / NODE_LOGS).mkdir(exist_ok=True)
        (root / NODE_LOGS / f"{node}.log").write_text(text)
    return root


GROUP = {"name": "g", "topics": ["t-all"], "commit": "after-process", "members": 2}


def consume(kind: str, t: int, process: str, **fields: Any) -> dict[str, Any]:
    """One consumes.jsonl event of group `g` (the process's prefix before '-')."""
    return {"type": kind, "time_ns": t, "process": process, "group": process.split("-")[0], **fields}


def poll(t: int, process: str, offset: int, generation: int = 1, partition: int = 0) -> dict[str, Any]:
    return consume(
        "poll",
        t,
        process,
        generation=generation,
        topic="t-all",
        partition=partition,
        offset=offset,
        value=f"p:{offset}",
    )


def commit(
    t: int, process: str, phase: str, commit_id: int, offset: int, generation: int = 1, **extra: Any
) -> dict[str, Any]:
    offsets = [{"topic": "t-all", "partition": 0, "offset": offset}]
    return consume(
        "commit",
        t,
        process,
        generation=generation,
        phase=phase,
        commit_id=commit_id,
        offsets=offsets,
        **extra,
    )


def assignment(kind: str, t: int, process: str, generation: int) -> dict[str, Any]:
    """An `assign` or `revoke` of t-all partitions 0 and 1."""
    partitions = [{"topic": "t-all", "partition": p} for p in (0, 1)]
    return consume(kind, t, process, generation=generation, partitions=partitions)


STACK_TRACE_MARKERS = ("Traceback", "Exception in thread", "at org.apache", "py4j")

FAULT = {"time_ns": 150, "fault": "kill-leader", "phase": "start", "targets": ["kafka-2"], "detail": {}}
SAMPLE = {
    "time_ns": 50,
    "controller": 1,
    "controller_epoch": 1,
    "live_brokers": [1, 2, 3],
    "partitions": [{"topic": "t-all", "partition": 0, "leader": 2, "leader_epoch": 3, "isr": [2, 1]}],
}


def squeeze(text: str) -> str:
    """Text without whitespace: messages are compared whatever the spacing around them."""
    return "".join(text.split())


def clean_run(root: Path) -> Path:
    writes = [*acked(100, "p:1", 0), *acked(200, "p:2", 1), *acked(300, "z:1", None, topic="t-0")]
    reads = [record(900, "p:1", 0), record(901, "p:2", 1), record(902, "z:1", 0, topic="t-0"), *all_ends()]
    return make_run(root, writes, reads, [FAULT], [SAMPLE])


def kchaos_check(capfd: pytest.CaptureFixture[str], run_dir: Path, *flags: str) -> tuple[int, str]:
    code = main(["check", str(run_dir), *flags])
    out, err = capfd.readouterr()
    text = out + err
    for marker in STACK_TRACE_MARKERS:
        assert marker not in text
    return code, text


def replaced_run(root: Path, **files: str) -> Path:
    """A clean run with some files replaced by raw text (keys: writes, reads, run, client)."""
    clean_run(root)
    names = {"writes": WRITES, "reads": READS, "run": RUN_JSON, "client": CLIENT}
    for key, text in files.items():
        (root / names[key]).write_text(text)
    return root

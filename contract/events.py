"""The events of a run's history files (docs/HISTORY_FORMAT.md): their fields, one constructor per
event, and the pairing of fault starts and stops into windows.

Every writer builds its lines here (the producer's recorder fills byte templates for speed; a test
holds them equal to `write_event`), and the checkers' Spark schemas are built from `WRITE_FIELDS`
and `READ_FIELDS`, so a field is named and typed in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from contract.errors import HistoryError

WRITE_TYPES = ("invoke", "ok", "fail", "info")
TXN_STEPS = ("init", "begin", "offsets", "commit", "abort")
TXN_PHASES = ("invoke", "ok", "fail", "info")
ERROR_CLASSES = ("fatal", "abortable", "retriable")
ABORT_REASONS = ("drawn", "drawn-early", "failure")
"""Why an `abort` step was taken: drawn (once its records were acknowledged), drawn to end before
they were sent, or forced by a failed step."""
READ_TYPES = ("record", "end")
READ_PHASES = ("live", "final")
FAULT_PHASES = ("start", "stop")

FieldType = Literal["string", "int", "long", "partitions", "offsets"]
"""JSON strings, integers that fit 32 bits (partitions) or 64 bits (times, offsets), and lists of
positions: `partitions` of `{"topic", "partition"}`, `offsets` of `{"topic", "partition", "offset"}`."""


@dataclass(frozen=True)
class Field:
    name: str
    type: FieldType


WRITE_FIELDS = (
    Field("type", "string"),
    Field("time_ns", "long"),
    Field("process", "string"),
    Field("topic", "string"),
    Field("partition", "int"),
    Field("offset", "long"),
    Field("value", "string"),
    Field("error", "string"),
    Field("txn", "long"),
)
READ_FIELDS = (
    Field("type", "string"),
    Field("time_ns", "long"),
    Field("process", "string"),
    Field("phase", "string"),
    Field("topic", "string"),
    Field("partition", "int"),
    Field("offset", "long"),
    Field("value", "string"),
    Field("log_start", "long"),
    Field("high_watermark", "long"),
)


CONSUME_FIELDS = (
    Field("type", "string"),
    Field("time_ns", "long"),
    Field("process", "string"),
    Field("group", "string"),
    Field("generation", "long"),
    Field("topic", "string"),
    Field("partition", "int"),
    Field("offset", "long"),
    Field("value", "string"),
    Field("phase", "string"),
    Field("commit_id", "long"),
    Field("offsets", "offsets"),
    Field("partitions", "partitions"),
    Field("reason", "string"),
)
"""consumes.jsonl's fields the group checks read (`error` is only validated)."""

TXN_FIELDS = (
    Field("type", "string"),
    Field("time_ns", "long"),
    Field("process", "string"),
    Field("transactional_id", "string"),
    Field("txn", "long"),
    Field("phase", "string"),
    Field("error", "string"),
    Field("error_class", "string"),
    Field("producer_epoch", "int"),
    Field("group", "string"),
    Field("offsets", "offsets"),
    Field("reason", "string"),
)
"""transactions.jsonl's fields: a transactional producer's steps (docs/HISTORY_FORMAT.md)."""


def write_event(
    kind: str,
    time_ns: int,
    process: str,
    topic: str,
    partition: int,
    value: str,
    *,
    offset: int | None = None,
    error: str | None = None,
    txn: int | None = None,
) -> dict[str, Any]:
    """An `invoke` (no offset, no error), `ok` (offset, or None under acks=0), `fail` or `info` line;
    `txn`: the transaction of a transactional producer's write."""
    event: dict[str, Any] = {"type": kind, "time_ns": time_ns, "process": process, "topic": topic}
    event["partition"] = partition
    if txn is not None:
        event["txn"] = txn
    if kind != "invoke":
        event["offset"] = offset
    if error is not None:
        event["error"] = error
    event["value"] = value
    return event


def txn_step(
    kind: str,
    time_ns: int,
    process: str,
    transactional_id: str,
    txn: int | None = None,
    *,
    phase: str | None = None,
    error: str | None = None,
    error_class: str | None = None,
    **fields: Any,
) -> dict[str, Any]:
    """A transactions.jsonl line: `init` (no `txn`), `begin` (no `phase`), `offsets`, `commit` or
    `abort`, with `error` and `error_class` on a `fail` or `info`, and any other field
    (`producer_epoch`, `group`, `offsets`)."""
    event: dict[str, Any] = {"type": kind, "time_ns": time_ns, "process": process}
    event["transactional_id"] = transactional_id
    if txn is not None:
        event["txn"] = txn
    if phase is not None:
        event["phase"] = phase
    if error is not None:
        event |= {"error": error, "error_class": error_class}
    return event | fields


def read_record(
    time_ns: int, process: str, phase: str, topic: str, partition: int, offset: int, value: str | None
) -> dict[str, Any]:
    """A record read by a `live` or `final` reader."""
    return {
        "type": "record",
        "time_ns": time_ns,
        "process": process,
        "phase": phase,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "value": value,
    }


def read_end(
    time_ns: int,
    process: str,
    topic: str,
    partition: int,
    log_start: int,
    high_watermark: int,
    isolation: str | None = None,
) -> dict[str, Any]:
    """The final read of a partition reached its high watermark: the partition was read whole
    (`isolation`: "read_committed" when it read committed records only)."""
    end = {
        "type": "end",
        "time_ns": time_ns,
        "process": process,
        "phase": "final",
        "topic": topic,
        "partition": partition,
        "log_start": log_start,
        "high_watermark": high_watermark,
    }
    return end | {"isolation": isolation} if isolation else end


class ReplicaContents(Protocol):
    """What was read of a replica's log segments (`harness.replica_logs.SegmentContents`)."""

    @property
    def offsets(self) -> list[int]: ...

    @property
    def unreadable(self) -> int: ...

    @property
    def torn_bytes(self) -> int: ...

    @property
    def log_end_offset(self) -> int | None: ...

    @property
    def producer_epochs(self) -> dict[int, set[int]]: ...


def replica_state(
    broker: int,
    topic: str,
    partition: int,
    contents: ReplicaContents,
    high_watermark: int | None,
    recovery_point: int | None,
) -> dict[str, Any]:
    """What one replica held when the run ended: its log's first and end offsets, its checkpointed
    high watermark and recovery point (None when not checkpointed), what could not be read, and how
    many producer epochs each producer id's batches carry (where any producer had an id)."""
    line = {
        "type": "replica",
        "broker": broker,
        "topic": topic,
        "partition": partition,
        "log_start": contents.offsets[0] if contents.offsets else None,
        "log_end": contents.log_end_offset,
        "high_watermark": high_watermark,
        "recovery_point": recovery_point,
        "messages": len(contents.offsets),
        "unreadable": contents.unreadable,
        "torn_bytes": contents.torn_bytes,
    }
    if contents.producer_epochs:
        line["producer_epochs"] = {str(pid): len(e) for pid, e in sorted(contents.producer_epochs.items())}
    return line


def member_event(kind: str, time_ns: int, process: str, group: str, **fields: Any) -> dict[str, Any]:
    """A consumes.jsonl line: `start`; `stop` (`reason`); `assign` or `revoke` (`generation`,
    `partitions`: positions); `poll` (`generation`, `topic`, `partition`, `offset`, `value`);
    `commit` (`generation`, `phase`, `commit_id`, `offsets`, and `error` on `fail` or `info`)."""
    return {"type": kind, "time_ns": time_ns, "process": process, "group": group, **fields}


def positions(pairs: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    """`partitions` of a consumes.jsonl line, from (topic, partition) pairs."""
    return [{"topic": topic, "partition": partition} for topic, partition in pairs]


def offsets(next_offsets: Mapping[tuple[str, int], int]) -> list[dict[str, Any]]:
    """`offsets` of a commit, from the next offset to consume of each (topic, partition), in order."""
    return [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(next_offsets.items())]


def replica_values(
    broker: int, topic: str, partition: int, offset: int, values: Sequence[str | None]
) -> dict[str, Any]:
    """The values one replica holds at consecutive offsets from `offset`."""
    return {
        "type": "values",
        "broker": broker,
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "values": list(values),
    }


def fault_event(
    time_ns: int,
    fault_id: int,
    fault: str,
    phase: str,
    targets: Sequence[str],
    detail: Mapping[str, Any],
    description: str | None = None,
) -> dict[str, Any]:
    """A fault's `start` (with what it does, in plain words) or `stop`; `id` pairs the two."""
    event: dict[str, Any] = {"time_ns": time_ns, "id": fault_id, "fault": fault, "phase": phase}
    event |= {"targets": list(targets), "detail": dict(detail)}
    if description is not None:
        event["description"] = description
    return event


def partition_state(
    topic: str,
    partition: int,
    leader: int,
    leader_epoch: int,
    isr: Sequence[int],
    elr: Sequence[int] | None = None,
    last_known_elr: Sequence[int] | None = None,
) -> dict[str, Any]:
    """One partition's leader, leader epoch and ISR in a cluster sample, and its Eligible Leader
    Replicas and last known ELR (KIP-966) where the cluster gives them."""
    state: dict[str, Any] = {
        "topic": topic,
        "partition": partition,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "isr": list(isr),
    }
    if elr is not None:
        state["elr"] = list(elr)
    if last_known_elr is not None:
        state["last_known_elr"] = list(last_known_elr)
    return state


def cluster_sample(
    time_ns: int,
    controller: int | None,
    controller_epoch: int | None,
    live_brokers: Sequence[int],
    partitions: Sequence[Mapping[str, Any]],
    *,
    controller_unknown: str | None = None,
) -> dict[str, Any]:
    """One line of cluster.jsonl: controller, live brokers and `partition_state`s read from ZooKeeper
    or the KRaft quorum; `controller_unknown`, in KRaft, why no node could name the controller."""
    sample = {
        "time_ns": time_ns,
        "controller": controller,
        "controller_epoch": controller_epoch,
        "live_brokers": list(live_brokers),
        "partitions": [dict(p) for p in partitions],
    }
    return sample if controller_unknown is None else sample | {"controller_unknown": controller_unknown}


@dataclass(frozen=True)
class FaultWindow:
    """One fault from its start to its stop (`stop_ns` None: still active when the history ends)."""

    fault: str
    targets: tuple[str, ...]
    start_ns: int
    stop_ns: int | None
    detail: dict[str, Any]
    description: str | None = None
    healed: dict[str, Any] = field(default_factory=dict)
    """The stop's detail: what the heal found (a disk fault's `disks`), or its `error`; empty while
    the fault is active."""

    def active_at(self, time_ns: int) -> bool:
        return self.start_ns <= time_ns and (self.stop_ns is None or self.stop_ns > time_ns)

    def disk_counts(self) -> dict[str, dict[str, int]]:
        """What a disk fault failed or delayed on each target's disk (`enospc`, `fsync_eio`,
        `slow_fsync`): how far each count of its disk grew from the start's `disks` to the stop's.
        Empty for other faults, and for one not healed or whose heal reported no disks."""
        started, healed = self.detail.get("disks"), self.healed.get("disks")
        if not isinstance(healed, dict):
            return {}
        before = started if isinstance(started, dict) else {}
        grown = {
            node: {name: n - _count(before.get(node), name) for name, n in _counts(disk).items()}
            for node, disk in healed.items()
        }
        return {node: {k: n for k, n in counts.items() if n > 0} for node, counts in grown.items()}


def _counts(disk: object) -> dict[str, int]:
    counts = disk.get("counts") if isinstance(disk, dict) else None
    if not isinstance(counts, dict):
        return {}
    return {str(k): v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}


def _count(disk: object, name: str) -> int:
    return _counts(disk).get(name, 0)


def fault_windows(events: Iterable[tuple[int, Mapping[str, Any]]], path: str) -> list[FaultWindow]:
    """Pair the (line, event) of faults.jsonl into windows, by `id`; histories written before fault
    ids pair a stop with the oldest open start of the same fault and targets. A stop without its
    start is a HistoryError naming the line."""
    open_starts: dict[object, list[tuple[int, Mapping[str, Any]]]] = {}
    windows: list[FaultWindow] = []
    for line, event in sorted(events, key=lambda pair: (_time(pair[1], path, pair[0]), pair[0])):
        fault, phase = event.get("fault"), event.get("phase")
        if not isinstance(fault, str) or phase not in FAULT_PHASES:
            raise HistoryError("a fault event needs a string fault and phase start|stop", path, line)
        targets = tuple(str(t) for t in event.get("targets") or [])
        key = event.get("id")
        if key is None:  # a history from before fault ids (null reads as absent)
            key = (fault, targets)
        elif not isinstance(key, int) or isinstance(key, bool):
            raise HistoryError("field 'id' must be an integer", path, line)
        if phase == "start":
            open_starts.setdefault(key, []).append((line, event))
        elif open_starts.get(key):
            _, start = open_starts[key].pop(0)
            windows.append(_window(start, event))
        else:
            raise HistoryError(f"stop of fault {fault!r} {list(targets)} that never started", path, line)
    windows.extend(_window(start) for starts in open_starts.values() for _, start in starts)
    return sorted(windows, key=lambda w: (w.start_ns, w.fault))


def _time(event: Mapping[str, Any], path: str, line: int) -> int:
    time_ns = event.get("time_ns")
    if not isinstance(time_ns, int) or isinstance(time_ns, bool):
        raise HistoryError("field 'time_ns' must be an integer", path, line)
    return time_ns


def _window(start: Mapping[str, Any], stop: Mapping[str, Any] | None = None) -> FaultWindow:
    """The window from a start event to its stop event (None: still active; times checked already)."""
    description = start.get("description")
    return FaultWindow(
        str(start["fault"]),
        tuple(str(t) for t in start.get("targets") or []),
        int(start["time_ns"]),
        None if stop is None else int(stop["time_ns"]),
        _detail(start),
        str(description) if isinstance(description, str) else None,
        {} if stop is None else _detail(stop),
    )


def _detail(event: Mapping[str, Any]) -> dict[str, Any]:
    detail = event.get("detail")
    return dict(detail) if isinstance(detail, dict) else {}

"""The shape of every history file's lines, as a table to generate wrongly typed lines from.

For each file: a valid line of each event type, every field the format names (with its kind; a
nested field as `parent[0].child`) and, per event type, the fields that may not be null. The
fields of writes.jsonl, reads.jsonl, consumes.jsonl and transactions.jsonl are `contract.events`'
own tables, so a field added there is generated here too; the other files' are written out from
docs/HISTORY_FORMAT.md.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from checker_rundirs import GROUP, run_json

from contract.events import CONSUME_FIELDS, READ_FIELDS, TXN_FIELDS, WRITE_FIELDS, Field
from contract.history import CLIENT, CLUSTER, CONSUMES, FAULTS, READS, REPLICAS, TRANSACTIONS, WRITES

POSITIONS = ("first", "middle", "last")

WRONG: dict[str, dict[str, Any]] = {
    "string": {"int": 7, "float": 1.5, "bool": True, "object": {"a": [1, 2]}, "array": ["x"]},
    "int32": {
        "string": "7",
        "float": 1.5,
        "bool": True,
        "object": {"a": 1},
        "array": [1],
        "beyond-32-bits": 2**40,
    },
    "int64": {
        "string": "7",
        "float": 1.5,
        "bool": True,
        "object": {"a": 1},
        "array": [1],
        "beyond-64-bits": 2**64,
    },
    "int_list": {"string": "1", "int": 1, "bool": True, "object": {"a": 1}, "string-element": ["1"]},
    "string_list": {"string": "x", "int": 1, "bool": True, "object": {"a": 1}, "int-element": [7]},
    "positions": {"string": "x", "int": 1, "bool": True, "object": {"a": 1}, "string-element": ["x"]},
    "object": {"string": "x", "int": 1, "bool": True, "array": [1]},
}
"""Per kind of field, the values of another JSON type, and a number beyond an integer's bits."""

_KINDS = {
    "string": "string",
    "int": "int32",
    "long": "int64",
    "partitions": "positions",
    "offsets": "positions",
}
_NESTED = {
    "partitions": {"topic": "string", "partition": "int32"},
    "offsets": {"topic": "string", "partition": "int32", "offset": "int64"},
}


def _typed(fields: tuple[Field, ...], **extra: str) -> dict[str, str]:
    """Every field of a `contract.events` table by kind, with the nested fields of its position lists."""
    kinds = {field.name: _KINDS[field.type] for field in fields} | extra
    for field in fields:
        for child, kind in _NESTED.get(field.type, {}).items():
            kinds[f"{field.name}[0].{child}"] = kind
    return kinds


@dataclass(frozen=True)
class FileShape:
    name: str
    events: dict[str, dict[str, Any]]
    """A valid line of each event type, as the mutated line starts."""
    context: list[dict[str, Any]]
    """Valid lines around the mutated one, consistent among themselves."""
    fields: dict[str, str]
    required: dict[str, frozenset[str]]
    """Per event type, the fields that must be there and not null."""
    spark_read: bool = False
    """Spark parses the file itself (writes.jsonl and reads.jsonl): no Python reader sees it first."""


def _write(kind: str, t: int, value: str, **extra: Any) -> dict[str, Any]:
    event = {"type": kind, "time_ns": t, "process": value.split(":")[0], "topic": "t-all", "partition": 0}
    return event | {"value": value} | extra


def _ends() -> list[dict[str, Any]]:
    return [
        {"type": "end", "time_ns": 9000, "process": "c-final", "phase": "final", "topic": topic["name"]}
        | {"partition": p, "log_start": 0, "high_watermark": 1}
        for topic in run_json()["topics"]
        for p in range(topic["partitions"])
    ]


_WRITE_REQUIRED = frozenset({"type", "time_ns", "process", "topic", "partition", "value"})
_RECORD = {"type": "record", "time_ns": 900, "process": "c-final", "phase": "final", "topic": "t-all"}
_CONSUME_BASE = {"time_ns": 100, "process": "g-9", "group": "g"}
_CONSUME_REQUIRED = frozenset({"type", "time_ns", "process", "group"})
_OFFSETS = [{"topic": "t-all", "partition": 0, "offset": 1}]
_PARTITIONS = [{"topic": "t-all", "partition": 0}]
_TXN_BASE = {"time_ns": 100, "process": "tx-9", "transactional_id": "kchaos-tx-9"}
_TXN_REQUIRED = frozenset({"type", "time_ns", "process", "transactional_id"})
_SAMPLE = {
    "time_ns": 50,
    "controller": 1,
    "controller_epoch": 1,
    "live_brokers": [1, 2, 3],
    "partitions": [
        {"topic": "t-all", "partition": 0, "leader": 2, "leader_epoch": 3, "isr": [2, 1]}
        | {"elr": [], "last_known_elr": []}
    ],
}
_REPLICA = {"type": "replica", "broker": 1, "topic": "t-all", "partition": 0, "log_start": 0, "log_end": 1}
_REPLICA |= {"high_watermark": 1, "recovery_point": 1, "messages": 1, "unreadable": 0, "torn_bytes": 0}
_VALUES = {"type": "values", "broker": 1, "topic": "t-all", "partition": 0, "offset": 0, "values": ["p:1"]}
_FAULT = {"time_ns": 150, "id": 9, "fault": "kill", "phase": "start", "targets": ["kafka-2"], "detail": {}}

SHAPES: dict[str, FileShape] = {
    shape.name: shape
    for shape in (
        FileShape(
            WRITES,
            {
                "invoke": _write("invoke", 500, "q:1"),
                "ok": _write("ok", 510, "q:1", offset=7),
                "fail": _write("fail", 510, "q:1", offset=None, error="NOT_ENOUGH_REPLICAS"),
                "info": _write("info", 510, "q:1", offset=None, error="_MSG_TIMED_OUT"),
            },
            [
                _write("invoke", 100, "p:1"),
                _write("ok", 110, "p:1", offset=0),
                _write("invoke", 200, "p:2"),
                _write("ok", 210, "p:2", offset=1),
            ],
            _typed(WRITE_FIELDS),
            dict.fromkeys(("invoke", "ok", "fail", "info"), _WRITE_REQUIRED),
            spark_read=True,
        ),
        FileShape(
            READS,
            {
                "record": _RECORD | {"partition": 0, "offset": 0, "value": "p:1"},
                "end": _ends()[0],
            },
            [
                _RECORD | {"partition": 0, "offset": 0, "value": "p:1"},
                _RECORD | {"partition": 0, "offset": 1, "value": "p:2"},
                *_ends(),
            ],
            _typed(READ_FIELDS),
            {
                "record": frozenset({"type", "time_ns", "process", "phase", "topic", "partition"})
                | {"offset", "value"},
                "end": frozenset({"type", "time_ns", "process", "phase", "topic", "partition"}),
            },
            spark_read=True,
        ),
        FileShape(
            FAULTS,
            {"start": _FAULT | {"description": "kills kafka-2"}, "stop": _FAULT | {"phase": "stop"}},
            [_FAULT | {"id": 1}, _FAULT | {"id": 1, "phase": "stop", "time_ns": 160}],
            {
                "time_ns": "int64",
                "id": "int64",
                "fault": "string",
                "phase": "string",
                "targets": "string_list",
                "detail": "object",
                "description": "string",
            },
            dict.fromkeys(("start", "stop"), frozenset({"time_ns", "fault", "phase"})),
        ),
        FileShape(
            CLUSTER,
            {"sample": _SAMPLE},
            [_SAMPLE | {"time_ns": 40}, _SAMPLE | {"time_ns": 60}],
            {
                "time_ns": "int64",
                "controller": "int32",
                "controller_epoch": "int64",
                "controller_unknown": "string",
                "live_brokers": "int_list",
                "partitions": "positions",
                "partitions[0].topic": "string",
                "partitions[0].partition": "int32",
                "partitions[0].leader": "int32",
                "partitions[0].leader_epoch": "int64",
                "partitions[0].isr": "int_list",
                "partitions[0].elr": "int_list",
                "partitions[0].last_known_elr": "int_list",
            },
            {"sample": frozenset({"time_ns", "partitions[0].topic", "partitions[0].partition"})},
        ),
        FileShape(
            CLIENT,
            {"line": {"time_ns": 5, "process": "p", "level": "info", "facility": "REQTMOUT", "message": "m"}},
            [{"time_ns": 4, "process": "p", "message": "a"}, {"time_ns": 6, "process": "p", "message": "b"}],
            {
                "time_ns": "int64",
                "process": "string",
                "level": "string",
                "facility": "string",
                "message": "string",
            },
            {"line": frozenset({"time_ns", "process", "message"})},
        ),
        FileShape(
            REPLICAS,
            {"replica": _REPLICA, "values": _VALUES},
            [_REPLICA | {"broker": 2}, _VALUES | {"broker": 2}],
            {
                "type": "string",
                "broker": "int32",
                "topic": "string",
                "partition": "int32",
                "offset": "int64",
                "values": "string_list",
                **dict.fromkeys(
                    ("log_start", "log_end", "high_watermark", "recovery_point", "messages"), "int64"
                ),
                **dict.fromkeys(("unreadable", "torn_bytes"), "int64"),
            },
            {
                "replica": frozenset({"type", "broker", "topic", "partition"}),
                "values": frozenset({"type", "broker", "topic", "partition", "offset", "values"}),
            },
        ),
        FileShape(
            CONSUMES,
            {
                "start": _CONSUME_BASE | {"type": "start"},
                "assign": _CONSUME_BASE | {"type": "assign", "generation": 1, "partitions": _PARTITIONS},
                "poll": _CONSUME_BASE
                | {
                    "type": "poll",
                    "generation": 1,
                    "topic": "t-all",
                    "partition": 0,
                    "offset": 0,
                    "value": "p:1",
                },
                "commit": _CONSUME_BASE
                | {"type": "commit", "generation": 1, "phase": "invoke", "commit_id": 1, "offsets": _OFFSETS},
                "revoke": _CONSUME_BASE | {"type": "revoke", "generation": 1, "partitions": _PARTITIONS},
                "stop": _CONSUME_BASE | {"type": "stop", "reason": "closed"},
            },
            [
                {"type": "start", "time_ns": 10, "process": "g-0", "group": "g"},
                {"type": "assign", "time_ns": 20, "process": "g-0", "group": "g", "generation": 1}
                | {"partitions": _PARTITIONS},
                {"type": "stop", "time_ns": 30, "process": "g-0", "group": "g", "reason": "closed"},
            ],
            _typed(CONSUME_FIELDS, error="string"),
            {
                "start": _CONSUME_REQUIRED,
                "assign": _CONSUME_REQUIRED
                | {"partitions", "partitions[0].topic", "partitions[0].partition"},
                "poll": _CONSUME_REQUIRED | {"topic", "partition", "offset"},
                "commit": _CONSUME_REQUIRED
                | {"phase", "commit_id", "offsets"}
                | {"offsets[0].topic", "offsets[0].partition", "offsets[0].offset"},
                "revoke": _CONSUME_REQUIRED
                | {"partitions", "partitions[0].topic", "partitions[0].partition"},
                "stop": _CONSUME_REQUIRED | {"reason"},
            },
        ),
        FileShape(
            TRANSACTIONS,
            {
                "init": _TXN_BASE | {"type": "init", "phase": "invoke", "producer_epoch": 1},
                "begin": _TXN_BASE | {"type": "begin", "txn": 0},
                "offsets": _TXN_BASE
                | {"type": "offsets", "txn": 0, "phase": "invoke", "group": "g", "offsets": _OFFSETS},
                "commit": _TXN_BASE
                | {"type": "commit", "txn": 0, "phase": "fail", "error": "_FENCED", "error_class": "fatal"},
                "abort": _TXN_BASE | {"type": "abort", "txn": 0, "phase": "invoke"},
            },
            [
                {"type": "init", "time_ns": 10, "process": "tx-0", "transactional_id": "kchaos-tx-0"}
                | {"phase": "invoke"},
                {"type": "init", "time_ns": 20, "process": "tx-0", "transactional_id": "kchaos-tx-0"}
                | {"phase": "ok"},
                {
                    "type": "begin",
                    "time_ns": 30,
                    "process": "tx-0",
                    "transactional_id": "kchaos-tx-0",
                    "txn": 0,
                },
            ],
            _typed(TXN_FIELDS),
            {
                "init": _TXN_REQUIRED | {"phase"},
                "begin": _TXN_REQUIRED | {"txn"},
                "offsets": _TXN_REQUIRED
                | {"txn", "phase", "group", "offsets"}
                | {"offsets[0].topic", "offsets[0].partition", "offsets[0].offset"},
                "commit": _TXN_REQUIRED | {"txn", "phase", "error"},
                "abort": _TXN_REQUIRED | {"txn", "phase"},
            },
        ),
    )
}


def placed(shape: FileShape, line: dict[str, Any], position: str) -> tuple[bytes, int]:
    """`shape`'s context with `line` at `position`, and that line's number (1-based)."""
    context = [json.dumps(event).encode() + b"\n" for event in shape.context]
    at = {"first": 0, "middle": len(context) // 2, "last": len(context)}[position]
    context.insert(at, json.dumps(line).encode() + b"\n")
    return b"".join(context), at + 1


def history_run_json() -> dict[str, Any]:
    """run.json of the run the lines belong to: the checker tests' topics and group `g`."""
    return run_json(groups=[GROUP])


@dataclass(frozen=True)
class Case:
    file: str
    event: str
    field: str
    wrong: str
    """The name of the wrong value (a key of WRONG's kind, or "null")."""
    position: str

    @property
    def id(self) -> str:
        return f"{self.file.split('/')[-1]}:{self.event}:{self.field}={self.wrong}@{self.position}"

    @property
    def shape(self) -> FileShape:
        return SHAPES[self.file]

    @property
    def must_fail(self) -> bool:
        """Whether the line is wrong: a wrong type always, a null where the field is required."""
        return self.wrong != "null" or self.field in self.shape.required[self.event]

    def value(self) -> Any:
        return None if self.wrong == "null" else WRONG[self.shape.fields[self.field]][self.wrong]

    def line(self) -> dict[str, Any]:
        """The event's valid line with the field set to the wrong value (added if it was not there)."""
        event = copy.deepcopy(self.shape.events[self.event])
        parent, _, child = self.field.partition("[0].")
        if child:
            event[parent][0][child] = self.value()
        else:
            event[self.field] = self.value()
        return event

    def lines(self) -> tuple[bytes, int]:
        """The file's bytes with the mutated line at its position, and that line's number (1-based)."""
        return placed(self.shape, self.line(), self.position)

    def named_in(self, message: str) -> bool:
        """Whether `message` names the field: quoted, a nested field by its place
        (`'offsets[0].topic'`), an element of a list by its own (`'partitions[0]'`)."""
        return f"'{self.field}'" in message or f"'{self.field}[" in message


def cases() -> Iterator[Case]:
    """Every file x event type x field x wrong value (and null) x line position. A nested field is
    generated for the event types whose line holds its parent list."""
    for name, shape in SHAPES.items():
        for event, line in shape.events.items():
            for field, kind in shape.fields.items():
                parent, _, child = field.partition("[0].")
                if child and not isinstance(line.get(parent), list):
                    continue
                for wrong in [*WRONG[kind], "null"]:
                    for position in POSITIONS:
                        yield Case(name, event, field, wrong, position)


ALL_CASES = list(cases())

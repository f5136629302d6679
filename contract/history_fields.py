"""What readers may trust of the run directory's JSON: run.json, faults.jsonl, cluster.jsonl,
client.jsonl, and (through `Fields`, used by the reports) check/result.json.

Each field a checker or a report uses is checked once, here or with `Fields`, as the file is read:
its type, its range (times within a run's length, counts that fit memory) and, for the broker,
topic and producer settings that decide which guarantees are promised, that they mean something
(`min.insync.replicas` an integer, `unclean.leader.election.enable` true or false). A problem is a
HistoryError naming the file, the line for JSON Lines, and the field. Fields nobody reads are left
alone, as HISTORY_FORMAT.md allows extra ones; an absent or null optional field reads as None.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from contract.errors import HistoryError
from contract.events import (
    ABORT_REASONS,
    CONSUME_FIELDS,
    ERROR_CLASSES,
    TXN_FIELDS,
    TXN_PHASES,
    TXN_STEPS,
    Field,
)
from contract.limits import MAX_DURATION_S, MAX_INT64, MAX_PARTITIONS, MAX_RUN_NS, brief

ACKS_MODES = ("0", "1", "all")
MAX_TOPICS = 1000
MAX_NODES = 1000  # brokers, ZooKeeper nodes, replicas
MAX_VERSION = 64  # characters of a Kafka version: its numbers are read as integers
MAX_BROKER_ID = 2**31 - 1
MAX_TOPIC_NAME = 249  # Kafka's own limit on a topic name
INT_SETTINGS = ("min.insync.replicas", "max.in.flight.requests.per.connection")
"""Broker, topic and producer settings that guarantees are derived from: integers of at least 1."""
BOOL_SETTINGS = ("unclean.leader.election.enable", "enable.idempotence")
"""... and those that are true or false."""
MAX_WHY = 1000  # characters of run.json's reason a partition's final read is incomplete
_INT_TEXT = re.compile(r"\s*[0-9]{1,9}\s*")


def setting_problem(name: str, value: Any) -> str | None:
    """What a broker, topic or producer setting should be instead, or None when it is fine."""
    if isinstance(value, dict | list) or value is None:
        return "a string, number or boolean"
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if name in INT_SETTINGS and not (_INT_TEXT.fullmatch(text) and int(text) >= 1):
        return "an integer of at least 1"
    if name in BOOL_SETTINGS and text.strip().lower() not in ("true", "false"):
        return "true or false"
    return None


class Fields:
    """Typed, range-checked access to one JSON object of a history file. `field` is the object's
    own place (`availability.series[3]`), so errors name the file, the line and the whole field."""

    def __init__(self, obj: Any, path: Path, field: str = "", line: int | None = None) -> None:
        self.path, self.field, self.line = path, field, line
        if not isinstance(obj, dict):
            raise self.fail("", "an object", obj)
        self.obj: dict[str, Any] = obj

    def fail(self, key: str, expected: str, value: Any) -> HistoryError:
        name = ".".join(p for p in (self.field, key) if p) or "the value"
        return HistoryError(
            f"field {name!r}: expected {expected}, got {brief(value)}", str(self.path), self.line
        )

    def _get(self, key: str, required: bool, expected: str) -> Any:
        value = self.obj.get(key)
        if value is None and required:
            raise self.fail(key, expected, value)
        return value

    def integer(self, key: str, low: int = 0, high: int = MAX_INT64, required: bool = False) -> int | None:
        expected = f"an integer from {low} to {high}"
        value = self._get(key, required, expected)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
        ):
            raise self.fail(key, expected, value)
        return value

    def number(self, key: str, low: float = 0.0, high: float = 1e15, required: bool = False) -> float | None:
        """A number (JSON's are finite: `contract.strictjson`) from `low` to `high`, as a float."""
        expected = f"a number from {low:g} to {high:g}"
        value = self._get(key, required, expected)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise self.fail(key, expected, value)
        return float(value)

    def text(self, key: str, required: bool = False, longest: int | None = None) -> str | None:
        expected = "a string" + (f" of at most {longest} characters" if longest else "")
        value = self._get(key, required, expected)
        if value is not None and not (isinstance(value, str) and (longest is None or len(value) <= longest)):
            raise self.fail(key, expected, value)
        return value

    def flag(self, key: str, required: bool = False) -> bool | None:
        value = self._get(key, required, "true or false")
        if value is not None and not isinstance(value, bool):
            raise self.fail(key, "true or false", value)
        return value

    def time_ns(self, key: str, required: bool = False) -> int | None:
        """Nanoseconds of the run clock: from 0 to the longest run's end (MAX_RUN_NS)."""
        return self.integer(key, 0, MAX_RUN_NS, required)

    def child(self, key: str, required: bool = False) -> Fields:
        """A nested object (an absent optional one reads as empty)."""
        value = self._get(key, required, "an object")
        return Fields({} if value is None else value, self.path, self._name(key), self.line)

    def items(self, key: str, required: bool = False) -> list[Any]:
        value = self._get(key, required, "a list")
        if value is not None and not isinstance(value, list):
            raise self.fail(key, "a list", value)
        return value or []

    def children(self, key: str, required: bool = False) -> list[Fields]:
        """A list of objects, each as Fields."""
        return [
            Fields(item, self.path, f"{self._name(key)}[{i}]", self.line)
            for i, item in enumerate(self.items(key, required))
        ]

    def int_list(self, key: str, low: int, high: int, longest: int) -> tuple[int, ...]:
        values = self.items(key)
        if len(values) > longest or not all(
            isinstance(v, int) and not isinstance(v, bool) and low <= v <= high for v in values
        ):
            raise self.fail(key, f"a list of at most {longest} integers from {low} to {high}", values)
        return tuple(values)

    def settings(self, key: str) -> dict[str, Any]:
        """Broker, topic or producer settings: scalars, the ones guarantees depend on checked."""
        settings = self.child(key)
        for name, value in settings.obj.items():
            if (expected := setting_problem(name, value)) is not None:
                raise settings.fail(name, expected, value)
        return settings.obj

    def _name(self, key: str) -> str:
        return f"{self.field}.{key}" if self.field else key


_BOUNDS = {"int": 2**31, "long": 2**63}
"""A JSON integer of a 32-bit (`int`) or 64-bit (`long`) field lies in [-bound, bound)."""


def check_types(fields: Fields, table: tuple[Field, ...]) -> None:
    """Every field of `table` (`contract.events`) that a line holds has its type, whatever the
    line's event type: Spark parses the file with the whole table as its schema, and a field of the
    wrong type there would void the line's other fields too."""
    for field in table:
        if field.type == "string":
            fields.text(field.name)
        elif field.type in _BOUNDS:
            fields.integer(field.name, -_BOUNDS[field.type], _BOUNDS[field.type] - 1)
        else:
            for entry in fields.children(field.name):
                entry.text("topic")
                entry.integer("partition", -_BOUNDS["int"], _BOUNDS["int"] - 1)
                if field.type == "offsets":
                    entry.integer("offset", -_BOUNDS["long"], _BOUNDS["long"] - 1)


def validate_run_json(run: dict[str, Any], path: Path) -> None:
    """run.json beyond its format number: every field a reader uses; topics' acks become strings."""
    top = Fields(run, path)
    topics = top.children("topics", required=True)
    if not topics or len(topics) > MAX_TOPICS:
        raise top.fail("topics", f"a non-empty list of at most {MAX_TOPICS} topics", run["topics"])
    names: set[str] = set()
    for topic in topics:
        name = topic.text("name", required=True)
        if not name or name in names:
            raise topic.fail("name", "a name no other topic has", name)
        names.add(name)
        acks = topic.obj.get("acks")
        if isinstance(acks, bool) or not isinstance(acks, str | int) or str(acks) not in ACKS_MODES:
            raise topic.fail("acks", f"one of {', '.join(ACKS_MODES)}", acks)
        topic.obj["acks"] = str(acks)
        topic.integer("partitions", 1, MAX_PARTITIONS)
        topic.integer("replication_factor", 1, MAX_NODES)
        topic.settings("config")
        topic.settings("producer")
        transactions = topic.child("transactions")  # written by transactional producers
        if transactions.obj:
            transactions.int_list("records", 1, MAX_INT64, 2)
            transactions.number("abort_rate", 0, 1)
            transactions.number("early_abort_rate", 0, 1)
    for topic in topics:  # a pipeline's output names the topics it reads, declared before or after
        pipeline = topic.child("pipeline")
        if pipeline.obj:
            pipeline.text("group", required=True)
            inputs = pipeline.items("inputs", required=True)
            if not inputs or not all(isinstance(t, str) and t in names for t in inputs):
                raise pipeline.fail("inputs", "a non-empty list of topics run.json declares", inputs)
    for key in ("run_id", "scenario", "started_at"):
        top.text(key)
    seed = run.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | str)):
        raise top.fail("seed", "an integer", seed)
    top.number("duration_s", 0, MAX_DURATION_S)
    kafka = top.child("kafka")
    kafka.text("version", longest=MAX_VERSION)
    kafka.text("image")
    kafka.text("source")
    kafka.text("java")
    cluster = top.child("cluster")
    cluster.integer("brokers", 1, MAX_NODES)
    cluster.integer("zookeepers", 0, MAX_NODES)  # 0 in KRaft mode
    metadata = cluster.text("metadata")
    if metadata is not None and metadata not in METADATA_MODES:
        raise cluster.fail("metadata", f"one of {', '.join(METADATA_MODES)}", metadata)
    cluster.integer("controllers", 0, MAX_NODES)
    disk = cluster.text("disk")
    if disk is not None and disk not in DISKS:
        raise cluster.fail("disk", f"one of {', '.join(DISKS)}", disk)
    cluster.settings("broker_config")
    top.settings("producer")
    synced = top.child("synced")
    for name in synced.obj:
        synced.integer(name, required=True)
    for partition in top.child("final_read").children("incomplete"):
        partition.text("topic", required=True)
        partition.integer("partition", 0, MAX_PARTITIONS, required=True)
        partition.text("why", longest=MAX_WHY)
    workload = top.child("workload")  # the stop bound, and the processes killed at it
    workload.number("stop_bound_s", 0, MAX_DURATION_S)
    for killed in workload.children("killed"):
        killed.text("process", required=True, longest=MAX_TOPIC_NAME)
        killed.text("why", required=True, longest=MAX_WHY)
    _check_groups(top, names)


METADATA_MODES = ("zookeeper", "kraft")
"""Who holds a cluster's metadata: a ZooKeeper ensemble, or a KRaft quorum of controllers."""
DISKS = ("plain", "lossy")
"""Where the nodes' data directories live: in the container, or on a lossy disk of their own that
drops what was not fsynced when it loses power (`harness.lossy`)."""
COMMIT_MODES = ("after-process", "before-process", "auto")
"""after-process: commit what was processed (at least once); before-process: commit, and process
only once the commit is ok (at most once); auto: the client's periodic auto-commit."""
MAX_GROUPS = 100


def _check_groups(top: Fields, topics: set[str]) -> None:
    """run.json's `groups` (optional): each a name no other group has, its topics, commit mode and
    member count; the member settings, if recorded, as settings."""
    groups = top.children("groups")
    if len(groups) > MAX_GROUPS:
        raise top.fail("groups", f"at most {MAX_GROUPS} groups", f"{len(groups)} groups")
    names: set[str] = set()
    for group in groups:
        name = group.text("name", required=True, longest=MAX_TOPIC_NAME)
        if not name or name in names:
            raise group.fail("name", "a name no other group has", name)
        names.add(name)
        read = group.items("topics", required=True)
        if not read or not all(isinstance(t, str) and t in topics for t in read):
            raise group.fail(
                "topics", f"a non-empty list of topics run.json declares ({', '.join(sorted(topics))})", read
            )
        if group.obj.get("commit") not in COMMIT_MODES:
            raise group.fail("commit", " or ".join(COMMIT_MODES), group.obj.get("commit"))
        group.flag("commit_async")
        group.integer("members", 1, MAX_NODES)
        group.child("config")


def check_fault_event(event: dict[str, Any], path: Path, line: int) -> None:
    """A line of faults.jsonl: time_ns, fault, phase start|stop, targets (names), detail (object),
    and where written, the id its start and stop share and the start's description."""
    fields = Fields(event, path, line=line)
    fields.time_ns("time_ns", required=True)
    fields.integer("id")
    fields.text("description")
    fields.text("fault", required=True)
    if event.get("phase") not in ("start", "stop"):
        raise fields.fail("phase", "start or stop", event.get("phase"))
    if not all(isinstance(t, str) for t in fields.items("targets")):
        raise fields.fail("targets", "a list of node names", event.get("targets"))
    fields.child("detail")


MAX_CLIENT_LINE = 10_000  # characters of a client log message


def check_client_line(event: dict[str, Any], path: Path, line: int) -> None:
    """A line of client.jsonl: time_ns, process, level, facility and message of a client log line."""
    fields = Fields(event, path, line=line)
    fields.time_ns("time_ns", required=True)
    fields.text("process", required=True, longest=MAX_CLIENT_LINE)
    fields.text("level", longest=MAX_CLIENT_LINE)
    fields.text("facility", longest=MAX_CLIENT_LINE)
    fields.text("message", required=True, longest=MAX_CLIENT_LINE)


def check_cluster_sample(event: dict[str, Any], path: Path, line: int) -> None:
    """A line of cluster.jsonl: time_ns, controller (and in KRaft why it is unknown), live_brokers and
    per-partition leader and ISR."""
    fields = Fields(event, path, line=line)
    fields.time_ns("time_ns", required=True)
    fields.integer("controller", -1, MAX_BROKER_ID)
    fields.integer("controller_epoch", -1, MAX_INT64)
    fields.text("controller_unknown")
    fields.int_list("live_brokers", 0, MAX_BROKER_ID, MAX_NODES)
    if len(fields.items("partitions")) > MAX_PARTITIONS:
        raise fields.fail("partitions", f"at most {MAX_PARTITIONS} partitions", "a longer list")
    for p in fields.children("partitions"):
        p.text("topic", required=True)
        p.integer("partition", 0, MAX_PARTITIONS, required=True)
        p.integer("leader", -1, MAX_BROKER_ID)
        p.integer("leader_epoch", -1, MAX_INT64)
        p.int_list("isr", 0, MAX_BROKER_ID, MAX_NODES)
        p.int_list("elr", 0, MAX_BROKER_ID, MAX_NODES)
        p.int_list("last_known_elr", 0, MAX_BROKER_ID, MAX_NODES)


MAX_VALUES_PER_LINE = 100_000
REPLICA_LINE_TYPES = ("replica", "values")
REPLICA_COUNTS = (
    "log_start",
    "log_end",
    "high_watermark",
    "recovery_point",
    "messages",
    "unreadable",
    "torn_bytes",
)


def check_replica_line(event: dict[str, Any], path: Path, line: int) -> None:
    """A line of replicas.jsonl: a `replica` (one replica's offsets and what could not be read) or
    `values` (the values it holds at consecutive offsets from `offset`)."""
    fields = Fields(event, path, line=line)
    kind = event.get("type")
    if kind not in REPLICA_LINE_TYPES:
        raise fields.fail("type", " or ".join(REPLICA_LINE_TYPES), kind)
    fields.integer("broker", 0, MAX_BROKER_ID, required=True)
    fields.text("topic", required=True, longest=MAX_TOPIC_NAME)
    fields.integer("partition", 0, MAX_PARTITIONS, required=True)
    # Each field is checked on either type of line (Spark parses both with one schema).
    for key in REPLICA_COUNTS:
        fields.integer(key)
    epochs = fields.child("producer_epochs")
    for producer_id in epochs.obj:
        if not producer_id.isdigit():
            raise epochs.fail(producer_id, "a producer id (digits) as the key", producer_id)
        epochs.integer(producer_id, 1, 2**16, required=True)
    fields.integer("offset", required=kind == "values")
    values = fields.items("values", required=kind == "values")
    if len(values) > MAX_VALUES_PER_LINE or not all(v is None or isinstance(v, str) for v in values):
        raise fields.fail("values", f"a list of at most {MAX_VALUES_PER_LINE} strings or nulls", values[:3])


CONSUME_TYPES = ("start", "assign", "poll", "commit", "revoke", "stop")
COMMIT_PHASES = ("invoke", "ok", "fail", "info")
STOP_REASONS = ("closed", "killed", "crashed")
MAX_GENERATION = 2**31 - 1


def check_consume_line(
    event: dict[str, Any], path: Path, line: int, topics: set[str], groups: set[str]
) -> None:
    """A line of consumes.jsonl (HISTORY_FORMAT.md): a group member's start, assign, poll, commit,
    revoke or stop, of a group run.json declares, on topics it declares."""
    fields = Fields(event, path, line=line)
    kind = event.get("type")
    if kind not in CONSUME_TYPES:
        raise fields.fail("type", " or ".join(CONSUME_TYPES), kind)
    check_types(fields, (*CONSUME_FIELDS, Field("error", "string")))
    fields.time_ns("time_ns", required=True)
    fields.text("process", required=True, longest=MAX_TOPIC_NAME)
    if fields.text("group", required=True) not in groups:
        raise fields.fail(
            "group", f"a group run.json declares ({', '.join(sorted(groups)) or 'none'})", event["group"]
        )
    if kind in ("start", "stop"):
        if kind == "stop" and event.get("reason") not in STOP_REASONS:
            raise fields.fail("reason", " or ".join(STOP_REASONS), event.get("reason"))
        return
    fields.integer("generation", -1, MAX_GENERATION)
    if kind == "poll":
        _check_position(fields, topics, offset=True)
        fields.text("value")
    elif kind == "commit":
        if event.get("phase") not in COMMIT_PHASES:
            raise fields.fail("phase", " or ".join(COMMIT_PHASES), event.get("phase"))
        fields.integer("commit_id", required=True)
        fields.text("error")
        for entry in fields.children("offsets", required=True):
            _check_position(entry, topics, offset=True)
    else:
        for entry in fields.children("partitions", required=True):
            _check_position(entry, topics, offset=False)


def _check_position(fields: Fields, topics: set[str], offset: bool) -> None:
    if fields.text("topic", required=True) not in topics:
        declared = ", ".join(sorted(topics))
        raise fields.fail("topic", f"a topic run.json declares ({declared})", fields.obj["topic"])
    fields.integer("partition", 0, MAX_PARTITIONS, required=True)
    if offset:
        fields.integer("offset", 0, MAX_INT64, required=True)


MAX_PRODUCER_EPOCH = 2**15 - 1  # Kafka's producer epoch is a 16-bit integer


def check_transaction_line(event: dict[str, Any], path: Path, line: int, topics: set[str]) -> None:
    """A line of transactions.jsonl (HISTORY_FORMAT.md): a transactional producer's init, begin,
    offsets, commit or abort step."""
    fields = Fields(event, path, line=line)
    kind = event.get("type")
    if kind not in TXN_STEPS:
        raise fields.fail("type", " or ".join(TXN_STEPS), kind)
    check_types(fields, TXN_FIELDS)
    fields.time_ns("time_ns", required=True)
    fields.text("process", required=True, longest=MAX_TOPIC_NAME)
    fields.text("transactional_id", required=True)
    fields.integer("txn", required=kind != "init")
    fields.integer("producer_epoch", -1, MAX_PRODUCER_EPOCH)
    phase = event.get("phase")
    if kind != "begin" and phase not in TXN_PHASES:
        raise fields.fail("phase", " or ".join(TXN_PHASES), phase)
    fields.text("error", required=phase in ("fail", "info"))
    if event.get("error_class") is not None and event["error_class"] not in ERROR_CLASSES:
        raise fields.fail("error_class", f"{' or '.join(ERROR_CLASSES)} or null", event["error_class"])
    if event.get("reason") is not None and (kind != "abort" or event["reason"] not in ABORT_REASONS):
        expected = (
            f"{' or '.join(ABORT_REASONS)} on an abort step"
            if kind == "abort"
            else "none but on an abort step"
        )
        raise fields.fail("reason", expected, event["reason"])
    if kind == "offsets":
        fields.text("group", required=True)
        for entry in fields.children("offsets", required=True):
            _check_position(entry, topics, offset=True)

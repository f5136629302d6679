"""The protocol between the conductor and a workload process (docs/CLIENTS.md), both sides' pure parts.

A workload process is started with its spec (`ProcessSpec`, one JSON argument), reports each event
as one tagged line on stdout (`writes {...}`: the history file's name, a space, the line the file
holds) and takes commands on stdin (`stop`, `freeze`, `thaw`, `stack`). Here: the spec's encoding,
the tags, the commands, the child's tagged writer (`TaggedLines`, what its recorders write to) and
the conductor's splitting of what it reads into whole lines per file (`LineRouter`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, ClassVar, Protocol

import orjson

from contract.errors import ConfigError
from contract.history import CLIENT, CONSUMES, TRANSACTIONS, WRITES, RunClock
from contract.limits import brief

TAGGED_FILES = {PurePosixPath(name).stem: name for name in (WRITES, TRANSACTIONS, CONSUMES, CLIENT)}
"""A line's tag, and the history file it goes to."""
_TAGS = {tag.encode(): tag for tag in TAGGED_FILES}
CUT = " [cut]"
"""Ends a `client` line's message cut to fit PIPE_BUF."""
PIPE_BUF = 4096
"""The longest line a process writes in one write(2) that a pipe keeps whole; a longer `client`
line is cut to fit."""

STOP, FREEZE, THAW, STACK = b"stop", b"freeze", b"thaw", b"stack"
"""The commands, one a line on stdin."""
STACK_START, STACK_END = b"-- stacks of every thread --\n", b"-- end of stacks --\n"
"""What a process writes to stderr around the stacks `stack` asked for: the conductor waits for the
end."""


class EventSink(Protocol):
    """Where a process's events go: a history file (`contract.history.HistoryWriter`) or, in a
    workload process, its stdout (`TaggedLines`)."""

    def write(self, event: Mapping[str, Any]) -> None: ...

    def write_bytes(self, data: bytes) -> None: ...

    @property
    def closed(self) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class ProcessSpec:
    """What every workload process is started with; each role's spec class adds its own fields."""

    role: ClassVar[str] = ""
    process: str
    """Its name in the history (`p-all-0`, `tx-0`, `pipe-0`, `g-alo-1`)."""
    origin_ns: int
    """The run clock's zero on the host's monotonic clock (`time.monotonic_ns()`)."""
    config: dict[str, Any]
    """The client's settings, as the scenario and the harness made them (JSON values only)."""

    @property
    def keeps_client(self) -> bool:
        """Whether the process keeps its client after its stop, until its stdin ends: it ends its
        stdout when done instead of exiting (a producer under acks=0 does)."""
        return False


def encode_spec(spec: ProcessSpec) -> str:
    """The spec as the process's one argument: `{"role": ..., "process": ..., ...}`."""
    return json.dumps({"role": spec.role, **dataclasses.asdict(spec)}, separators=(",", ":"))


def decode_spec(text: str, roles: Mapping[str, type[ProcessSpec]]) -> ProcessSpec:
    """The spec of `encode_spec`, of one of `roles` (role name -> spec class); a spec that is not one
    is a ConfigError saying which field."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"workload process spec: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"workload process spec: expected an object, got {brief(data)}")
    role = data.pop("role", None)
    if role not in roles:
        expected = ", ".join(roles)
        raise ConfigError(f"workload process spec: role: expected one of {expected}, got {brief(role)}")
    spec: ProcessSpec = _decoded(roles[role], data, "workload process spec")
    return spec


def _decoded(cls: type[Any], data: Mapping[str, Any], where: str) -> Any:
    """An instance of dataclass `cls` from its JSON fields: nested dataclasses and tuples rebuilt."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    if unknown := sorted(set(data) - {f.name for f in fields}):
        raise ConfigError(f"{where}: unknown field {unknown[0]!r}")
    required = (f.name for f in fields if f.default is f.default_factory is dataclasses.MISSING)
    if missing := [name for name in required if name not in data]:
        raise ConfigError(f"{where}: missing field {missing[0]!r}")
    values: dict[str, Any] = {}
    for name, value in data.items():
        hint = hints[name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, dict):
            value = _decoded(hint, value, f"{where}.{name}")
        elif typing.get_origin(hint) is tuple and isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return cls(**values)


def run_clock(origin_ns: int) -> RunClock:
    """The conductor's run clock, in a workload process (same zero, same monotonic clock)."""
    clock = RunClock()
    clock.origin_ns = origin_ns
    return clock


class LineEmitter:
    """A process's stdout: each line written whole (one write(2), under one lock for its threads),
    unbuffered, as it happens."""

    def __init__(self, fd: int = 1) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def __call__(self, line: bytes) -> None:
        with self._lock:
            view = memoryview(line)
            while view:  # a pipe write of at most PIPE_BUF is whole; a longer one may be cut short
                view = view[os.write(self._fd, view) :]


class TaggedLines:
    """An `EventSink` of a workload process: each event a `<tag> <json>` line to `emit`."""

    def __init__(self, tag: str, emit: Callable[[bytes], None]) -> None:
        assert tag in TAGGED_FILES, tag
        self._prefix = tag.encode() + b" "
        self._emit = emit
        self._cut = tag == "client"  # a log line may be long; it is cut, the others are short

    def write(self, event: Mapping[str, Any]) -> None:
        line = self._prefix + orjson.dumps(event) + b"\n"
        if self._cut and len(line) > PIPE_BUF:
            line = self._prefix + orjson.dumps(_cut_message(event, len(line) - PIPE_BUF)) + b"\n"
        self._emit(line)

    def write_bytes(self, data: bytes) -> None:
        """Lines already encoded, each ending in a newline (a recorder's)."""
        if data.count(b"\n") == 1:
            self._emit(self._prefix + data)
            return
        for line in data.splitlines(keepends=True):
            self._emit(self._prefix + line)

    @property
    def closed(self) -> bool:
        return False


def _cut_message(event: Mapping[str, Any], excess: int) -> dict[str, Any]:
    """`event` with its `message` cut (and marked so) to take at least `excess` bytes less JSON."""
    message = str(event.get("message", ""))
    target = len(orjson.dumps(message)) - excess
    while message and (over := len(orjson.dumps(message + CUT)) - target) > 0:
        message = message[: len(message) - max(1, over // 6)]  # a character is at most 6 bytes of JSON
    return {**event, "message": message + CUT}


@dataclass(frozen=True)
class Routed:
    """Consecutive whole lines of one tag, without their tags (`tag` None: lines of no known tag, as
    they came)."""

    tag: str | None
    lines: bytes


class LineRouter:
    """Splits what a process writes to stdout into whole lines, grouped by tag in arrival order.

    `feed` takes each chunk read; `end` the end of the stream, and returns the torn last line a
    process killed mid-write leaves (not an event: dropped)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[Routed]:
        data = self._pending + chunk
        end = data.rfind(b"\n") + 1
        self._pending = data[end:]
        return route(data[:end])

    def end(self) -> bytes:
        torn, self._pending = self._pending, b""
        return torn


def route(data: bytes) -> list[Routed]:
    """Whole lines (`data` ends in a newline, or is empty) grouped by tag, tags stripped, in order."""
    batches: list[Routed] = []
    tag: str | None = None
    lines: list[bytes] = []
    for line in data.splitlines(keepends=True):
        head, _, rest = line.partition(b" ")
        this = _TAGS.get(head) if rest else None
        if this is None:
            rest = line
        if this != tag and lines:
            batches.append(Routed(tag, b"".join(lines)))
            lines = []
        tag = this
        lines.append(rest)
    if lines:
        batches.append(Routed(tag, b"".join(lines)))
    return batches

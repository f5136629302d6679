"""One producer process's write events (HISTORY_FORMAT.md), each appended to the history as it happens.

A write's `invoke` line is appended before the write is handed to the client, and its completion
(`ok`, `fail` or `info`) when the client reports it: one write(2) per event, so a run cut short
leaves every event that happened before the cut. Lines are formatted from parts JSON-encoded once
per process (`WriteLines`): two string formats per write, not two dicts and two encodings.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from functools import partial

import orjson
from confluent_kafka import KafkaError, Message

from harness.history import HistoryWriter, RunClock
from harness.outcomes import classify, error_name

# Recent ack latencies kept for the live display; the checker computes the real statistics.
LATENCY_WINDOW = 10_000

# What the client calls with a write's delivery report (error or None, message or None).
DeliveryCallback = Callable[[KafkaError | None, Message | None], None]


class WriteLines:
    """History lines of one producer process's writes, from parts encoded once."""

    def __init__(self, process: str, topic: str) -> None:
        encoded = orjson.dumps({"process": process, "topic": topic}).decode()
        self.fields = encoded[1:-1] + ","  # '"process":...,"topic":...,'
        self.value_prefix = orjson.dumps(f"{process}:").decode()[:-1]  # '"<process>:' (value minus sequence)

    def value(self, sequence: int) -> str:
        """The JSON string of the value `<process>:<sequence>`."""
        return f'{self.value_prefix}{sequence}"'

    def invoke(self, time_ns: int, partition: int, value: str) -> bytes:
        return (
            f'{{"type":"invoke","time_ns":{time_ns},{self.fields}"partition":{partition},"value":{value}}}\n'
        ).encode()

    def ok(self, time_ns: int, partition: int, offset: int | None, value: str) -> bytes:
        """An `ok` line; a missing or negative offset (acks=0 is told none) is null."""
        offset_json = offset if offset is not None and offset >= 0 else "null"
        return (
            f'{{"type":"ok","time_ns":{time_ns},{self.fields}"partition":{partition},'
            f'"offset":{offset_json},"value":{value}}}\n'
        ).encode()

    def error(self, kind: str, time_ns: int, partition: int, error: str, value: str) -> bytes:
        return (
            f'{{"type":"{kind}","time_ns":{time_ns},{self.fields}"partition":{partition},'
            f'"offset":null,"error":{orjson.dumps(error).decode()},"value":{value}}}\n'
        ).encode()


class Recorder:
    """Records one producer process's writes and counts them (counters are read by other threads).

    Used from the process's own thread only: `invoke` before each write is produced, and the
    callback it returns from the client's poll() (or at once, for a write the client refused)."""

    def __init__(
        self, process: str, topic: str, retries: int, writer: HistoryWriter, clock: RunClock
    ) -> None:
        self._lines = WriteLines(process, topic)
        self._retries = retries
        self._append = writer.write_bytes
        self._origin_ns = clock.origin_ns
        self.attempted = 0
        self.acked = 0
        self.failed = 0
        self.indeterminate = 0
        self.latencies_ns: deque[int] = deque(maxlen=LATENCY_WINDOW)

    def _now_ns(self) -> int:
        return time.monotonic_ns() - self._origin_ns  # RunClock.now_ns, without a second call

    def invoke(self, sequence: int, partition: int) -> DeliveryCallback:
        """Record the invoke of write `sequence`; returns the callback that records its completion."""
        value = self._lines.value(sequence)
        invoked_ns = self._now_ns()
        self._append(self._lines.invoke(invoked_ns, partition, value))
        self.attempted += 1
        # A partial, not a closure: fewer objects for the cyclic garbage collector to walk with
        # thousands of writes in flight.
        return partial(self._completed, value, partition, invoked_ns)

    def _completed(
        self, value: str, partition: int, invoked_ns: int, error: KafkaError | None, message: Message | None
    ) -> None:
        now_ns = self._now_ns()
        if error is None:
            # Written where it was sent: partitions are chosen explicitly.
            offset = message.offset() if message is not None else None
            self._append(self._lines.ok(now_ns, partition, offset, value))
            self.acked += 1
            self.latencies_ns.append(now_ns - invoked_ns)
            return
        kind = classify(error.code(), self._retries)
        self._append(self._lines.error(kind, now_ns, partition, error_name(error), value))
        if kind == "fail":
            self.failed += 1
        else:
            self.indeterminate += 1

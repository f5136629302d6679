"""A producer process that records what its client was told: invoke, then ok / fail / info.

Each process is one thread with one librdkafka producer. Delivery callbacks run inside `poll()`
on that same thread, so a process's completions are written after its invokes and in the order
the client reported them. Events are appended in one write(2) per loop turn (an invoke, and the
completions its poll() delivered); when writing as fast as possible, turns are gathered until
WRITE_BATCH events or WRITE_DELAY_NS old, so a history line still reaches the file at most about a
millisecond after it happened, without a system call per write.
Values are `<process>:<sequence>`, unique in the run. Lines are formatted from parts encoded once
per process (`WriteLines`): at saturation the recording's Python is the cost that competes with
the client's own, so a write's two lines take two string formats, not two dicts and two encodings.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson
from confluent_kafka import KafkaError, KafkaException, Message, Producer

from harness.history import HistoryWriter, RunClock
from harness.outcomes import classify, error_name

# Settings that decide durability and ordering; recorded in run.json. Timeouts are short so
# that every write completes (as `info` at worst) well within a chaos run.
DEFAULT_PRODUCER_CONFIG: dict[str, Any] = {
    "retries": 3,
    "max.in.flight.requests.per.connection": 1,
    "request.timeout.ms": 5000,
    "message.timeout.ms": 15000,
    "linger.ms": 5,
    "batch.num.messages": 100,
    "queue.buffering.max.messages": 10000,
}

WRITE_BATCH = 256
WRITE_DELAY_NS = 1_000_000


class WriteLines:
    """History lines of one producer process (HISTORY_FORMAT.md write events), from parts encoded once."""

    def __init__(self, process: str, topic: str) -> None:
        encoded = orjson.dumps({"process": process, "topic": topic}).decode()
        self.fields = encoded[1:-1] + ","  # '"process":...,"topic":...,'
        self.value_prefix = orjson.dumps(f"{process}:").decode()[:-1]  # '"<process>:' (value minus sequence)

    def value(self, sequence: int) -> str:
        """The JSON string of the value `<process>:<sequence>`."""
        return f'{self.value_prefix}{sequence}"'

    def invoke(self, time_ns: int, partition: int, value: str) -> str:
        return (
            f'{{"type":"invoke","time_ns":{time_ns},{self.fields}"partition":{partition},"value":{value}}}\n'
        )

    def ok(self, time_ns: int, partition: int, offset: int | None, value: str) -> str:
        """An `ok` line; a missing or negative offset (acks=0 is told none) is null."""
        offset_json = offset if offset is not None and offset >= 0 else "null"
        return (
            f'{{"type":"ok","time_ns":{time_ns},{self.fields}"partition":{partition},'
            f'"offset":{offset_json},"value":{value}}}\n'
        )

    def error(self, kind: str, time_ns: int, partition: int, error: str, value: str) -> str:
        return (
            f'{{"type":"{kind}","time_ns":{time_ns},{self.fields}"partition":{partition},'
            f'"offset":null,"error":{orjson.dumps(error).decode()},"value":{value}}}\n'
        )


@dataclass
class ProcessCounts:
    """Live counters of one producer process (read by the progress display)."""

    attempted: int = 0
    acked: int = 0
    failed: int = 0
    indeterminate: int = 0
    # Recent ack latencies only, for the live display; the checker computes the real statistics.
    latencies_ns: deque[int] = field(default_factory=lambda: deque(maxlen=10000))

    @property
    def completed(self) -> int:
        return self.acked + self.failed + self.indeterminate


class ProducerProcess:
    """Writes unique values to one topic under one acks mode until stopped or `max_writes` reached."""

    def __init__(
        self,
        process: str,
        topic: str,
        partitions: int,
        acks: str,
        client_config: Mapping[str, Any],
        writer: HistoryWriter,
        clock: RunClock,
        rate_per_s: float = 0.0,
        message_size: int = 0,
        max_writes: int | None = None,
    ) -> None:
        self.process, self.topic, self.partitions, self.acks = process, topic, partitions, acks
        self.config = {**DEFAULT_PRODUCER_CONFIG, **client_config, "acks": acks}
        self.retries = int(self.config.get("retries", 0))
        self._writer, self._clock = writer, clock
        self._interval_s = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
        # Padding goes after a "|" that no value contains, so readers can recover the value.
        self._padding = "|" + "x" * (message_size - 1) if message_size > 0 else ""
        self._max_writes = max_writes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{process}", daemon=True)
        self.counts = ProcessCounts()
        self.error: BaseException | None = None
        # Kept until `close()`: librdkafka calls an acks=0 write delivered once it is handed to the
        # socket, and destroying the client right after flush() can drop that tail unsent.
        self._producer: Producer | None = None
        self._lines = WriteLines(process, topic)
        self._on_delivery = self._delivered  # bound once, not per write
        # Lines not yet in the history: one loop turn's, or a batch of turns' when saturating.
        self._pending: list[str] = []
        self._written_ns = 0  # when pending lines were last written

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop sending; pending writes still complete (bounded by message.timeout.ms)."""
        self._stop.set()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _write_pending(self) -> None:
        """Append the pending lines (invokes, the completions poll() delivered) in one write, in order."""
        if self._pending:
            self._writer.write_lines("".join(self._pending))
            self._pending.clear()
        self._written_ns = self._clock.now_ns()

    def _run(self) -> None:
        try:
            self._produce_loop()
        except BaseException as exc:  # surfaced by the workload, which owns the thread
            self.error = exc
        finally:
            self._write_pending()

    def close(self) -> None:
        """Release the client (after the final read, so acks=0 writes had time to arrive)."""
        self._producer = None

    def _produce_loop(self) -> None:
        producer = self._producer = Producer(self.config)
        sequence = 0
        next_send = time.monotonic()
        while not self._stop.is_set() and (self._max_writes is None or sequence < self._max_writes):
            if self._interval_s:
                delay = next_send - time.monotonic()
                if delay > 0:
                    producer.poll(min(delay, 0.1))
                    self._write_pending()
                    continue
                next_send += self._interval_s
            partition = sequence % self.partitions
            invoked_ns = self._send(producer, sequence, partition)
            sequence += 1
            producer.poll(0)
            # No line waits longer than WRITE_DELAY_NS (about: the check runs once per write).
            if len(self._pending) >= WRITE_BATCH or invoked_ns - self._written_ns >= WRITE_DELAY_NS:
                self._write_pending()
        self._write_pending()
        # Every invoked write gets its completion: flush until the queue drains
        # (message.timeout.ms bounds how long that can take).
        deadline = time.monotonic() + int(self.config["message.timeout.ms"]) / 1000 + 10
        while len(producer) and time.monotonic() < deadline:
            producer.flush(1.0)
            self._write_pending()

    def _send(self, producer: Producer, sequence: int, partition: int) -> int:
        """Produce one write, recording its invoke (and its completion, when poll() delivers it)."""
        value_json = self._lines.value(sequence)
        invoked_ns = self._clock.now_ns()
        self._pending.append(self._lines.invoke(invoked_ns, partition, value_json))
        self.counts.attempted += 1
        payload = f"{self.process}:{sequence}{self._padding}".encode()
        # A partial, not a closure: a closure's cells are more objects for the cyclic garbage
        # collector to walk, and thousands of writes can be in flight.
        on_delivery = partial(self._on_delivery, value_json, partition, invoked_ns)
        while True:
            try:
                producer.produce(self.topic, value=payload, partition=partition, on_delivery=on_delivery)
                return invoked_ns
            except BufferError:  # local queue full: let deliveries drain, then try the same write again
                producer.poll(0.1)
            except KafkaException as exc:  # refused synchronously: never sent
                self._complete_with_error(value_json, partition, exc.args[0])
                return invoked_ns

    def _delivered(
        self, value_json: str, partition: int, invoked_ns: int, err: KafkaError | None, msg: Message
    ) -> None:
        now_ns = self._clock.now_ns()
        if err is None:
            # Written where it was sent: partitions are chosen explicitly.
            self._pending.append(self._lines.ok(now_ns, partition, msg.offset(), value_json))
            counts = self.counts
            counts.acked += 1
            counts.latencies_ns.append(now_ns - invoked_ns)
        else:
            self._complete_with_error(value_json, partition, err)

    def _complete_with_error(self, value_json: str, partition: int, err: KafkaError) -> None:
        kind = classify(err.code(), self.retries)
        line = self._lines.error(kind, self._clock.now_ns(), partition, error_name(err), value_json)
        self._pending.append(line)
        if kind == "fail":
            self.counts.failed += 1
        else:
            self.counts.indeterminate += 1
